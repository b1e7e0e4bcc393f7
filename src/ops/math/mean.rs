//! ONNX `Mean`: the element-wise mean of its inputs, with multidirectional broadcasting.
//!
//! tract-onnx builds `Mean` as its n-ary `Add` followed by a division, and reads the element type
//! of the division's constant from the node's inferred output; a node typed without its inference
//! facts filled in (as the whole-model analysis types nodes) made tract panic. Here the type comes
//! from the typed inputs: `((x0 + x1) + ... + xn-1) / n`, summed left to right as onnxruntime does;
//! tract's optimizer then runs the division by the constant `n` as a multiplication by `1/n`
//! (within one unit of rounding of the quotient).

use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;

/// The Mean builder.
pub(crate) fn mean(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let inputs = node.input.len();
    if inputs == 0 {
        return Err(label.err("Mean needs at least one input"));
    }
    Expanded::new("Mean", Mean { node: label.node }, inputs, Mean::rules, Mean::wire).built()
}

/// The mean of the node's inputs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Mean {
    /// Node name, for errors.
    pub node: String,
}

impl Mean {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        for input in inputs {
            s.equals(&outputs[0].datum_type, &input.datum_type)?;
        }
        s.given_all(inputs.iter().map(|i| &i.shape), move |s, shapes: Vec<TVec<TDim>>| {
            let out = tract_onnx::tract_core::broadcast::multi_broadcast(&shapes)?;
            s.equals(&outputs[0].shape, ShapeFactoid::from(out))
        })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let dt = model.outlet_fact(inputs[0])?.datum_type;
        if !dt.is_float() {
            let msg = format!("Mean is defined on floats, got {dt:?}");
            return Err(crate::NodeError::invalid(&self.node, "Mean", msg));
        }
        let mut sum = inputs[0];
        for (ix, input) in inputs.iter().enumerate().skip(1) {
            let name = format!("{prefix}.add{ix}");
            sum = wire_with_rank_broadcast(name, model, math::add(), &[sum, *input])?[0];
        }
        let n = tensor0(inputs.len() as f64).cast_to_dt(dt)?.into_owned();
        let n = model.add_const(format!("{prefix}.n"), n)?;
        wire_with_rank_broadcast(prefix, model, math::div(), &[sum, n])
    }
}
