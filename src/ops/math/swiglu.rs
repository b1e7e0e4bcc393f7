//! ONNX `SwiGLU` (opset 28): `a * sigmoid(alpha * a) * b`, element-wise over two inputs of one shape
//! and type (no broadcasting, as the specification says).

use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;

/// The SwiGLU builder.
pub(crate) fn swiglu(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let alpha = crate::node::attrs::float(&label, node, "alpha")?.unwrap_or(1.0);
    if !alpha.is_finite() {
        return Err(label.err(format!("alpha is {alpha}: it must be finite")));
    }
    Expanded::new("SwiGLU", SwiGlu { alpha, node: label.node }, 2, SwiGlu::rules, SwiGlu::wire).built()
}

/// `SwiGLU` with its `alpha`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SwiGlu {
    /// The attribute `alpha` (1 by default), inside the sigmoid.
    pub alpha: f32,
    /// Node name, for errors.
    pub node: String,
}

impl SwiGlu {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&inputs[1].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].shape, &inputs[0].shape)
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let (a, b) = (model.outlet_fact(inputs[0])?.clone(), model.outlet_fact(inputs[1])?.clone());
        if a.shape != b.shape || a.datum_type != b.datum_type {
            let msg = format!("A and B must have one shape and type, got {a:?} and {b:?}");
            return Err(crate::NodeError::invalid(&self.node, "SwiGLU", msg));
        }
        let gate = crate::ops::math::swish::wire_swish(
            &format!("{prefix}.swish"),
            model,
            inputs[0],
            self.alpha,
            &self.node,
            "SwiGLU",
        )?;
        model.wire_node(prefix, math::mul(), &[gate, inputs[1]])
    }
}
