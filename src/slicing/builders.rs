//! Op builders: ONNX `NodeProto` → [`SliceInference`], one per op type we register.
//!
//! tract looks builders up by `op_type` alone, so each builder checks the node's domain itself:
//! - `StridedSlice`, `AsStrided`: any domain (`ai.sliceops` is ours);
//! - `Slice`: the default domain (`""`, `ai.onnx`) gets ONNX's semantics for the model's opset (1-9:
//!   attributes, 10+: inputs), `ai.sliceops` gets Paddle's form;
//! - `ATen`: PyTorch's fallback export, `operator = "as_strided"` only.

use super::inference::SliceInference;
use super::spec::{NodeKind, NodeSpec};
use crate::node::{node_label as label, Label};
use crate::semantics::{AsStrided, Slice, StridedSlice};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::{attribute_proto::AttributeType, AttributeProto, NodeProto};
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// Our custom domain.
pub(crate) const DOMAIN: &str = "ai.sliceops";

type Built = TractResult<(Box<dyn InferenceOp>, Vec<String>)>;

fn attr<'a>(node: &'a NodeProto, name: &str) -> Option<&'a AttributeProto> {
    node.attribute.iter().find(|a| a.name == name)
}

fn kind_of(a: &AttributeProto) -> Option<AttributeType> {
    AttributeType::try_from(a.r#type).ok()
}

fn attr_int(l: &Label, node: &NodeProto, name: &str) -> TractResult<Option<i64>> {
    match attr(node, name) {
        None => Ok(None),
        Some(a) if kind_of(a) == Some(AttributeType::Int) => Ok(Some(a.i)),
        Some(a) => Err(l.err(format!("attribute {name} must be an int, got {:?}", kind_of(a)))),
    }
}

fn attr_ints(l: &Label, node: &NodeProto, name: &str) -> TractResult<Option<Vec<i64>>> {
    match attr(node, name) {
        None => Ok(None),
        Some(a) if kind_of(a) == Some(AttributeType::Ints) => Ok(Some(a.ints.clone())),
        Some(a) => Err(l.err(format!("attribute {name} must be a list of ints, got {:?}", kind_of(a)))),
    }
}

fn required<T>(l: &Label, name: &str, v: Option<T>) -> TractResult<T> {
    v.ok_or_else(|| l.err(format!("attribute {name} is missing")))
}

fn build(l: Label, kind: NodeKind, node: &NodeProto) -> Built {
    let spec = NodeSpec::new(l, kind, &node.input)?;
    Ok((Box::new(SliceInference { spec }), vec![]))
}

/// `StridedSlice(data, begin, end, strides?)` with the five mask attributes.
pub(super) fn strided_slice(_ctx: &ParsingContext, node: &NodeProto) -> Built {
    let l = label(node);
    let mut masks = [0i64; 5];
    for (m, name) in masks.iter_mut().zip(StridedSlice::MASK_NAMES) {
        *m = attr_int(&l, node, name)?.unwrap_or(0);
        if *m < 0 {
            return Err(l.err(format!("{name} is {m}: masks must be >= 0")));
        }
    }
    build(l, NodeKind::Strided { masks }, node)
}

/// `Slice`: ONNX's for the default domain, Paddle's for `ai.sliceops`.
pub(super) fn slice(ctx: &ParsingContext, node: &NodeProto) -> Built {
    let l = label(node);
    match node.domain.as_str() {
        "" | "ai.onnx" => {
            let opset = ctx.onnx_operator_set_version;
            if (1..10).contains(&opset) {
                let starts = required(&l, "starts", attr_ints(&l, node, "starts")?)?;
                let ends = required(&l, "ends", attr_ints(&l, node, "ends")?)?;
                let axes = attr_ints(&l, node, "axes")?;
                build(l, NodeKind::OnnxSliceAttrs(Slice { starts, ends, axes, steps: None }), node)
            } else {
                build(l, NodeKind::OnnxSlice, node)
            }
        }
        DOMAIN => {
            let axes = required(&l, "axes", attr_ints(&l, node, "axes")?)?;
            let attrs = [attr_ints(&l, node, "starts")?, attr_ints(&l, node, "ends")?, attr_ints(&l, node, "strides")?];
            let inputs = &node.input;
            for (i, role) in ["starts", "ends"].iter().enumerate() {
                let as_input = inputs.get(i + 1).is_some_and(|s| !s.is_empty());
                if attrs[i].is_none() && !as_input {
                    return Err(l.err(format!("{role} is missing (neither an attribute nor an input)")));
                }
            }
            build(l, NodeKind::Paddle { axes, attrs }, node)
        }
        other => Err(l.err(format!("Slice in domain '{other}' is not supported (expected '' or '{DOMAIN}')"))),
    }
}

/// `AsStrided(data)` with attributes `size`, `stride`, `offset` (an int, or ints of length 1).
pub(super) fn as_strided(_ctx: &ParsingContext, node: &NodeProto) -> Built {
    let l = label(node);
    let size = required(&l, "size", attr_ints(&l, node, "size")?)?;
    let stride = required(&l, "stride", attr_ints(&l, node, "stride")?)?;
    let offset = match attr(node, "offset") {
        None => 0,
        Some(a) if kind_of(a) == Some(AttributeType::Int) => a.i,
        Some(a) if kind_of(a) == Some(AttributeType::Ints) && a.ints.len() == 1 => a.ints[0],
        Some(a) if kind_of(a) == Some(AttributeType::Ints) => {
            return Err(l.err(format!("offset must hold one value, got {}", a.ints.len())));
        }
        Some(a) => return Err(l.err(format!("attribute offset must be an int, got {:?}", kind_of(a)))),
    };
    let op = AsStrided { size, stride, offset };
    op.check().map_err(|e| l.err(e))?;
    build(l, NodeKind::AsStrided(op), node)
}

/// PyTorch's `ATen` fallback node; only `operator = "as_strided"` is ours.
pub(super) fn aten(_ctx: &ParsingContext, node: &NodeProto) -> Built {
    let l = label(node);
    let operator = match attr(node, "operator") {
        Some(a) if kind_of(a) == Some(AttributeType::String) => String::from_utf8_lossy(&a.s).into_owned(),
        _ => return Err(l.err("attribute operator is missing")),
    };
    if operator != "as_strided" {
        return Err(l.err(format!("ATen operator '{operator}' is not supported (only as_strided)")));
    }
    build(l, NodeKind::Aten, node)
}
