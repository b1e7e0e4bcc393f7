//! ONNX `Range` with an exact length for negative steps.
//!
//! Exporters write descending ranges (MXNet's `reverse` gathers over `Range(d-1, -1, -1)`). tract's
//! rule divides by the step cast to an unsigned integer, which is wrong for a negative step, and its
//! second analysis pass then rejects the graph ("Impossible to unify Val(3) with Val(5)"). This wrapper
//! states ONNX's length, `max(ceil((limit - start) / delta), 0)`, and leaves the rest to tract's Range.

use crate::node::expanded::{Expanded, Io};
use crate::view::Dim;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The Range builder.
pub(crate) fn range(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let op = ExactRange { node: crate::node::node_label(node).node };
    Expanded::new("Range", op, 3, ExactRange::rules, ExactRange::wire).built()
}

/// tract's Range with ONNX's length rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ExactRange {
    /// Node name, for errors.
    pub node: String,
}

/// `max(ceil((limit - start) / delta), 0)`.
pub(crate) fn range_len(start: &TDim, limit: &TDim, delta: i64) -> TractResult<TDim> {
    let ovf = || anyhow::anyhow!("range length overflows");
    let span = if delta > 0 { limit.checked_sub(start) } else { start.checked_sub(limit) }.ok_or_else(ovf)?;
    match delta {
        0 => bail!("delta is 0"),
        d => Ok(span.max_with(&TDim::Val(0)).div_ceil_by(d.unsigned_abs())),
    }
}

impl ExactRange {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.given_3(&inputs[0].datum_type, &inputs[1].datum_type, &inputs[2].datum_type, move |s, a, b, c| {
            let dt = DatumType::super_type_for([a, b, c]).context("Range inputs have no common type")?;
            s.equals(&outputs[0].datum_type, if dt.is_tdim() { i64::datum_type() } else { dt })
        })?;
        for input in inputs {
            s.equals(&input.rank, 0)?;
        }
        s.equals(&outputs[0].rank, 1)?;
        s.given_3(&inputs[0].value, &inputs[1].value, &inputs[2].value, move |s, start, limit, delta| {
            let scalar = |t: &Tensor| -> TractResult<TDim> {
                crate::dims::dims_of(t)?.into_iter().next().context("Range inputs are scalars")
            };
            let Ok(delta) = scalar(&delta)?.to_i64() else { return Ok(()) };
            if !delta_is_integer(&inputs_dt(&start, &limit)) {
                return Ok(());
            }
            let len = range_len(&scalar(&start)?, &scalar(&limit)?, delta)
                .map_err(|e| crate::error::NodeError::invalid(&self.node, "Range", e))?;
            s.equals(&outputs[0].shape[0], len)
        })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        // With known integer bounds, check the length (overflow, memory) before tract computes it with
        // unchecked arithmetic. Bounds are known as constants, or as uniform dims when tract evaluates
        // the op eagerly during analysis.
        let mut known = vec![];
        for o in inputs {
            let fact = model.outlet_fact(*o)?;
            let integer = fact.datum_type.is_integer() || fact.datum_type.is_tdim();
            let value = match (&fact.konst, &fact.uniform_tdim) {
                (Some(k), _) if k.datum_type().is_tdim() && k.len() == 1 => {
                    k.try_as_plain_ram()?.as_slice::<TDim>()?[0].as_i64()
                }
                // Read as i64 directly: tract's cast of a large i64 to a dim does not keep the value.
                (Some(k), _) if integer && k.len() == 1 => {
                    Some(k.cast_to::<i64>()?.try_as_plain_ram()?.as_slice::<i64>()?[0])
                }
                (None, Some(u)) if integer => u.as_i64(),
                _ => None,
            };
            known.push(value);
        }
        if let [Some(s), Some(l), Some(delta)] = known[..] {
            let err = |e: String| crate::error::NodeError::invalid(&self.node, "Range", e);
            if delta == 0 {
                return Err(err("delta is 0".into()));
            }
            let span = if delta > 0 { i128::from(l) - i128::from(s) } else { i128::from(s) - i128::from(l) };
            let step = i128::from(delta.unsigned_abs());
            let len = (span.max(0) + step - 1) / step;
            let dt = model.outlet_fact(inputs[0])?.datum_type;
            let size = if dt.is_tdim() { 8 } else { dt.size_of() };
            crate::kernel::check_allocation(u64::try_from(len).unwrap_or(u64::MAX), size)
                .map_err(|e| err(format!("range from {s} to {l} by {delta}: {e}")))?;
        }
        tract_onnx::tract_hir::ops::array::Range.wire(prefix, model, inputs)
    }
}

fn inputs_dt(a: &Tensor, b: &Tensor) -> [DatumType; 2] {
    [a.datum_type(), b.datum_type()]
}

/// Float ranges keep tract's own handling; only integer (and dim) ranges get the exact rule here.
fn delta_is_integer(dts: &[DatumType; 2]) -> bool {
    dts.iter().all(|dt| dt.is_integer() || dt.is_tdim())
}
