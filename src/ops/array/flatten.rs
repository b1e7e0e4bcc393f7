//! ONNX `Flatten` over symbolic dims.
//!
//! `Flatten(x, axis)` is `x` reshaped to `[prod(dims[..axis]), prod(dims[axis..])]`. tract refuses it
//! as soon as two dims are symbolic ("square of symbols"), though `batch*sequence` is a plain dim:
//! transformers exported by torch flatten `[batch, sequence]` into one axis before their embeddings.
//! Here the products are dims whatever they hold, and the node is one reshape.

use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_hir::internal::*;

/// The Flatten builder.
pub(crate) fn flatten(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let axis = node.attribute.iter().find(|a| a.name == "axis").map_or(1, |a| a.i);
    let op = Flatten { axis, node: crate::node::node_label(node).node };
    Expanded::new("Flatten", op, 1, Flatten::rules, Flatten::wire).built()
}

/// `Flatten` with symbolic products.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Flatten {
    /// The ONNX axis (may be negative).
    pub axis: i64,
    /// Node name, for errors.
    pub node: String,
}

impl Flatten {
    /// The two output dims over `shape`.
    fn output_shape(&self, shape: &[TDim]) -> TractResult<[TDim; 2]> {
        let rank = shape.len() as i64;
        let axis = if self.axis < 0 { self.axis + rank } else { self.axis };
        if !(0..=rank).contains(&axis) {
            return Err(crate::NodeError::invalid(
                &self.node,
                "Flatten",
                format!("axis {} is out of range for rank {rank}", self.axis),
            ));
        }
        let (front, back) = shape.split_at(axis as usize);
        let product = |dims: &[TDim]| dims.iter().fold(TDim::Val(1), |acc, d| acc * d.clone()).simplify();
        Ok([product(front), product(back)])
    }
}

impl Flatten {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].rank, 2)?;
        s.given(&inputs[0].shape, move |s, shape| {
            let [a, b] = self.output_shape(&shape)?;
            s.equals(&outputs[0].shape, ShapeFactoid::from(vec![a, b]))
        })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let shape = model.outlet_fact(inputs[0])?.shape.to_tvec();
        let [a, b] = self.output_shape(&shape)?;
        model.wire_node(prefix, AxisOp::Reshape(0, shape, tvec![a, b]), inputs)
    }
}
