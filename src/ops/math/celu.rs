//! ONNX `Celu`: `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`, element-wise.
//!
//! tract-hir's `Celu` leaves out the multiplication by `alpha` (it computes
//! `max(0, x) + min(0, exp(x / alpha) - 1)`), so every negative input with an `alpha` other than 1
//! came out wrong. Here the node is wired with tract's element-wise ops, in the input's float type.

use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;

/// The Celu builder.
pub(crate) fn celu(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let alpha = crate::node::attrs::float(&label, node, "alpha")?.unwrap_or(1.0);
    if !alpha.is_finite() || alpha == 0.0 {
        return Err(label.err(format!("alpha is {alpha}: it must be a finite non-zero float")));
    }
    Expanded::new("Celu", Celu { alpha, node: label.node }, 1, Celu::rules, Celu::wire).built()
}

/// `Celu` with its `alpha`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Celu {
    /// The attribute `alpha` (1 by default).
    pub alpha: f32,
    /// Node name, for errors.
    pub node: String,
}

impl Celu {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].shape, &inputs[0].shape)
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let dt = model.outlet_fact(inputs[0])?.datum_type;
        if !dt.is_float() {
            let msg = format!("Celu is defined on floats, got {dt:?}");
            return Err(crate::NodeError::invalid(&self.node, "Celu", msg));
        }
        let x = inputs[0];
        let mut konst = |name: &str, v: f32| -> TractResult<OutletId> {
            model.add_const(format!("{prefix}.{name}"), tensor0(v).cast_to_dt(dt)?.into_owned())
        };
        let (zero, one, alpha) = (konst("zero", 0.0)?, konst("one", 1.0)?, konst("alpha", self.alpha)?);
        let mut bin = |name: &str, op: TypedBinOp, a: OutletId, b: OutletId| -> TractResult<OutletId> {
            Ok(wire_with_rank_broadcast(format!("{prefix}.{name}"), model, op, &[a, b])?[0])
        };
        let scaled = bin("x_over_alpha", math::div(), x, alpha)?;
        let exp = model.wire_node(format!("{prefix}.exp"), math::exp(), &[scaled])?[0];
        let mut bin = |name: &str, op: TypedBinOp, a: OutletId, b: OutletId| -> TractResult<OutletId> {
            Ok(wire_with_rank_broadcast(format!("{prefix}.{name}"), model, op, &[a, b])?[0])
        };
        let minus_one = bin("minus_one", math::sub(), exp, one)?;
        let times_alpha = bin("times_alpha", math::mul(), minus_one, alpha)?;
        let negative = bin("negative", math::min(), times_alpha, zero)?;
        let positive = bin("positive", math::max(), x, zero)?;
        wire_with_rank_broadcast(prefix, model, math::add(), &[positive, negative])
    }
}
