//! ONNX `ConstantOfShape` without a `value` attribute: a float32 zero, as the specification says.
//!
//! tract-onnx fills such a node with a float64 zero, so `infer` gave its output as `float64` and `run`
//! wrote float64 values where onnxruntime writes float32 ones. With a `value`, tract's builder is used.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::array::ConstantOfShape;

/// The ConstantOfShape builder.
pub(crate) fn constant_of_shape(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    if node.attribute.iter().any(|a| a.name == "value") {
        return crate::ops::stock("ConstantOfShape")(ctx, node);
    }
    Ok((expand(ConstantOfShape::new(rctensor0(0f32))), vec![]))
}
