//! `Upsample` (opsets 9): the op `Resize` replaced at opset 10, with the same meaning.
//!
//! `Upsample(X, scales)` is `Resize` of opset 10: every output dim is `floor(d * scale)`, the
//! coordinates asymmetric (`x_in = x_out / scale`), `mode` `nearest` or `linear`. Nearest picks
//! `floor(x_in)`, as the specification's reference repeats each value `scale` times (Resize's own
//! default would round). The node is built as that Resize, through our Resize builder: its scales
//! are a shape parameter in each regime (see `src/ops/nn/resize.rs`). Opsets 7 and 8 give the
//! scales as an attribute; such a node is refused with a message saying so.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::{attribute_proto::AttributeType, AttributeProto, NodeProto};
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// The Upsample builder.
pub(crate) fn upsample(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let invalid = |m: String| crate::NodeError::invalid(&label.node, "Upsample", m);
    if node.attribute.iter().any(|a| a.name == "scales") || node.input.len() < 2 {
        return Err(invalid(format!(
            "the scales as an attribute (opset {}) are not supported: re-export at opset 9 or later",
            ctx.onnx_operator_set_version
        )));
    }
    let mode = node.attribute.iter().find(|a| a.name == "mode").map_or(&b"nearest"[..], |a| &a.s[..]);
    if mode != b"nearest" && mode != b"linear" {
        return Err(invalid(format!("mode {:?} is not one of nearest, linear", String::from_utf8_lossy(mode))));
    }
    let text = |name: &str, value: &[u8]| AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: value.to_vec(),
        ..Default::default()
    };
    let resize = NodeProto {
        op_type: "Resize".into(),
        attribute: vec![text("mode", mode), text("nearest_mode", b"floor")],
        ..node.clone()
    };
    // Resize of opset 10: inputs (X, scales), asymmetric coordinates.
    let ctx10 = ParsingContext {
        onnx_operator_set_version: 10,
        framework: ctx.framework,
        model: ctx.model,
        parent_graphs: ctx.parent_graphs.clone(),
        model_dir: ctx.model_dir,
        template: ctx.template.clone(),
    };
    crate::ops::nn::resize::resize_named(&ctx10, &resize, node)
}
