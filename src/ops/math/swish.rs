//! ONNX `Swish` (opset 24): `x * sigmoid(alpha * x)`, element-wise.
//!
//! tract-onnx builds every `Swish` as its SiLU, `x * sigmoid(x)`, whatever `alpha` says. Here the
//! node is wired as `x / (1 + exp(-alpha * x))` with tract's element-wise ops ([`wire_swish`], which
//! `SwiGLU` uses too).

use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;

/// The Swish builder.
pub(crate) fn swish(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let alpha = crate::node::attrs::float(&label, node, "alpha")?.unwrap_or(1.0);
    if !alpha.is_finite() {
        return Err(label.err(format!("alpha is {alpha}: it must be finite")));
    }
    Expanded::new("Swish", Swish { alpha, node: label.node }, 1, Swish::rules, Swish::wire).built()
}

/// `Swish` with its `alpha`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Swish {
    /// The attribute `alpha` (1 by default).
    pub alpha: f32,
    /// Node name, for errors.
    pub node: String,
}

impl Swish {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].shape, &inputs[0].shape)
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        Ok(tvec![wire_swish(prefix, model, inputs[0], self.alpha, &self.node, "Swish")?])
    }
}

/// `x * sigmoid(alpha * x)` wired after `x`, errors naming node `node` of type `op`. The sigmoid is
/// `1 / (1 + exp(-alpha * x))` with tract's exact `exp` (its sigmoid kernel is an approximation, off
/// by about 1e-4 relative where the sigmoid is small); float16 is computed in float32 and rounded
/// once.
pub(crate) fn wire_swish(
    prefix: &str,
    model: &mut TypedModel,
    x: OutletId,
    alpha: f32,
    node: &str,
    op: &str,
) -> TractResult<OutletId> {
    use tract_onnx::tract_core::ops::cast::cast;
    let dt = model.outlet_fact(x)?.datum_type;
    let wide = match dt {
        DatumType::F16 => DatumType::F32,
        DatumType::F32 | DatumType::F64 => dt,
        _ => return Err(crate::NodeError::invalid(node, op, format!("{op} is defined on floats, got {dt:?}"))),
    };
    let x_wide = if wide == dt { x } else { model.wire_node(format!("{prefix}.wide"), cast(wide), &[x])?[0] };
    let konst = |model: &mut TypedModel, name: &str, v: f32| -> TractResult<OutletId> {
        model.add_const(format!("{prefix}.{name}"), tensor0(v).cast_to_dt(wide)?.into_owned())
    };
    let (minus_alpha, one) = (konst(model, "minus_alpha", -alpha)?, konst(model, "one", 1.0)?);
    let z = wire_with_rank_broadcast(format!("{prefix}.minus_alpha_x"), model, math::mul(), &[x_wide, minus_alpha])?[0];
    let e = model.wire_node(format!("{prefix}.exp"), math::exp(), &[z])?[0];
    let d = wire_with_rank_broadcast(format!("{prefix}.one_plus"), model, math::add(), &[e, one])?[0];
    let y = wire_with_rank_broadcast(format!("{prefix}.gate"), model, math::div(), &[x_wide, d])?[0];
    if wide == dt {
        Ok(y)
    } else {
        Ok(model.wire_node(prefix, cast(dt), &[y])?[0])
    }
}
