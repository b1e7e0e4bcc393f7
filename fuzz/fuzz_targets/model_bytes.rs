//! Arbitrary bytes as an ONNX model: load, infer, run (when the inputs are concrete and small), fold and
//! lower. Errors are fine; a panic in sliceops' code, an abort or a hang is a bug. Panics raised inside
//! tract (or another dependency) are logged to `fuzz/artifacts/model_bytes/foreign_panics.log` and do
//! not stop the run (`SLICEOPS_FUZZ_STRICT=1` makes them crashes too).

#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sliceops::tract_onnx::prelude::*;
use sliceops::tract_onnx::tract_hir::internal::*;
use sliceops::Model;

/// Total element count above which inputs are not built (and the model is not run).
const MAX_INPUT_ELEMENTS: usize = 4096;

/// Inputs for every graph input whose type and shape are fully known, small in total: `0, 1, 2, ..` in
/// the declared type, or all zeros (runtime slice bounds of zero are as interesting as an arange).
fn inputs(model: &Model, zeros: bool) -> Option<Vec<Tensor>> {
    let im = model.inference_model();
    let mut out = vec![];
    let mut total = 0usize;
    for ix in 0..im.inputs.len() {
        let fact = im.input_fact(ix).ok()?;
        let dt = fact.datum_type.concretize()?;
        let shape = fact.shape.concretize()?;
        let dims: Vec<usize> =
            shape.iter().map(|d| d.as_i64().and_then(|v| usize::try_from(v).ok())).collect::<Option<_>>()?;
        let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        total = total.checked_add(n)?;
        if total >= MAX_INPUT_ELEMENTS {
            return None;
        }
        let values: Vec<i64> = if zeros { vec![0; n] } else { (0..n as i64).collect() };
        let t = Tensor::from_shape(&dims, &values).ok()?;
        let t = if dt == DatumType::I64 { t } else { t.cast_to_dt(dt).ok()?.into_owned() };
        out.push(t);
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    common::panics::guard("model_bytes", data, || {
        if let Ok(model) = Model::load_bytes(data) {
            let _ = model.infer();
            if let Some(inputs) = inputs(&model, data.len() % 2 == 1) {
                let _ = model.run(inputs);
            }
        }
    });
    common::panics::guard("model_bytes", data, || {
        let _ = sliceops::fold::fold_bytes(data, None);
    });
    common::panics::guard("model_bytes", data, || {
        let _ = sliceops::onnx::lower(data, None);
    });
});
