//! ONNX-ML `Binarizer` (`ai.onnx.ml`, version 1): each element 1 where it is above `threshold` (0 by
//! default), else 0 (NaN included), in the input's own type. Elements are compared as `f64`, as
//! numpy compares an array with a Python float.

use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The Binarizer builder.
pub(crate) fn binarizer(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.domain != "ai.onnx.ml" {
        return Err(label.err(format!("Binarizer is an ai.onnx.ml operator, found in domain {:?}", node.domain)));
    }
    if node.input.len() != 1 || node.input[0].is_empty() {
        return Err(label.err("Binarizer takes one input, X"));
    }
    let threshold = attrs::float(&label, node, "threshold")?.unwrap_or(0.0);
    Expanded::new("Binarizer", Binarizer { label, threshold: threshold.to_bits() }, 1, rules, as_is).built()
}

/// `Binarizer` with its threshold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Binarizer {
    /// The node, for errors.
    pub label: Label,
    /// The bits of the attribute `threshold` (an `f32`).
    pub threshold: u32,
}

fn rules<'r>(_: &'r Binarizer, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)
}

impl Binarizer {
    fn check(&self, dt: DatumType) -> TractResult<()> {
        if matches!(dt, DatumType::F32 | DatumType::F64 | DatumType::I32 | DatumType::I64) {
            Ok(())
        } else {
            Err(self.label.err(format!("X must be float, double, int32 or int64, got {dt:?}")))
        }
    }

    fn binarize<T: Datum + Copy>(&self, x: &Tensor, [zero, one]: [T; 2], wide: fn(T) -> f64) -> TractResult<Tensor> {
        let threshold = f32::from_bits(self.threshold) as f64;
        let values: Vec<T> = x
            .try_as_plain_ram()?
            .as_slice::<T>()?
            .iter()
            .map(|&v| if wide(v) > threshold { one } else { zero })
            .collect();
        Ok(tract_ndarray::ArrayD::from_shape_vec(x.shape(), values)?.into_tensor())
    }
}

impl Op for Binarizer {
    fn name(&self) -> StaticName {
        "Binarizer".into()
    }

    op_as_typed_op!();
}

impl TypedOp for Binarizer {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.check(inputs[0].datum_type)?;
        Ok(tvec![inputs[0].without_value()])
    }
}

impl EvalOp for Binarizer {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        self.check(x.datum_type())?;
        let y = match x.datum_type() {
            DatumType::F32 => self.binarize(&x, [0f32, 1.], |v| v as f64)?,
            DatumType::F64 => self.binarize(&x, [0f64, 1.], |v| v)?,
            DatumType::I32 => self.binarize(&x, [0i32, 1], |v| v as f64)?,
            _ => self.binarize(&x, [0i64, 1], |v| v as f64)?,
        };
        Ok(tvec![y.into_tvalue()])
    }
}
