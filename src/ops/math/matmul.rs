//! ONNX `MatMul` of two 1-D tensors: their dot product, a scalar.
//!
//! numpy's `matmul` (which ONNX follows) treats a 1-D operand as a row (left) or a column (right)
//! and drops that unit axis from the result, so two vectors of `K` give a rank-0 tensor. tract's
//! `MatMul` infers that shape but refuses to wire it (it needs one operand of rank 2 or more). Here
//! the vector-vector case is one einsum `k,k->`; every other case is tract's own op, unchanged.

use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::matmul::MatMulInference;

/// The MatMul builder.
pub(crate) fn matmul(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 2 || node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("MatMul takes two inputs, A and B"));
    }
    Expanded::new(
        "MatMul",
        MatMul { node: label.node, stock: MatMulInference::default() },
        2,
        MatMul::rules,
        MatMul::wire,
    )
    .built()
}

/// `MatMul`, with the product of two vectors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct MatMul {
    /// Node name, for errors.
    pub node: String,
    /// tract's op, for every other case.
    pub stock: MatMulInference,
}

impl MatMul {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, io: Io<'r>) -> InferenceResult {
        // tract's rules give the numpy shapes, the vector-vector scalar included.
        self.stock.rules(s, io.inputs, io.outputs)
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let (a, b) = (model.outlet_fact(inputs[0])?.clone(), model.outlet_fact(inputs[1])?.clone());
        if a.rank() == 0 || b.rank() == 0 {
            let msg = format!("A and B must have rank 1 or more, got ranks {} and {}", a.rank(), b.rank());
            return Err(crate::NodeError::invalid(&self.node, "MatMul", msg));
        }
        if a.datum_type != b.datum_type {
            let msg = format!("A is {:?} and B {:?}: they must have one type", a.datum_type, b.datum_type);
            return Err(crate::NodeError::invalid(&self.node, "MatMul", msg));
        }
        if a.rank() > 1 || b.rank() > 1 {
            return self.stock.wire(prefix, model, inputs);
        }
        if let (Ok(ka), Ok(kb)) = (a.shape[0].to_i64(), b.shape[0].to_i64()) {
            if ka != kb {
                let msg = format!("A has {ka} elements and B {kb}: a dot product needs as many");
                return Err(crate::NodeError::invalid(&self.node, "MatMul", msg));
            }
        }
        let axes: AxesMapping = "k,k->".parse()?;
        model.wire_node(prefix, EinSum { axes, operating_dt: a.datum_type, q_params: None }, inputs)
    }
}
