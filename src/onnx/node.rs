//! Reading and writing nodes of our prost types (`proto/`): op type and domain, name, attributes.
//! One set for every transform that edits a decoded model (`lower` here, and `fold`).

use super::proto::{self, attribute_proto::AttributeType, NodeProto};

/// A node's op type.
pub(crate) fn op_type(n: &NodeProto) -> &str {
    n.op_type.as_deref().unwrap_or("")
}

/// Whether a node is in the default ONNX domain.
pub(crate) fn is_onnx(n: &NodeProto) -> bool {
    is_onnx_domain(n.domain.as_deref())
}

/// Whether a domain (of a node or an opset import) is the default ONNX domain: unset, `""` or
/// `ai.onnx`.
pub(crate) fn is_onnx_domain(domain: Option<&str>) -> bool {
    matches!(domain, None | Some("") | Some("ai.onnx"))
}

/// Whether a node carries subgraphs (If, Loop, Scan): those read outer values by name.
pub(crate) fn has_subgraphs(n: &NodeProto) -> bool {
    n.attribute.iter().any(|a| a.g.is_some() || !a.graphs.is_empty())
}

/// A node's name, or its first output's when it has none (as everywhere in sliceops).
pub(crate) fn node_name(node: &NodeProto) -> String {
    node.name.clone().filter(|n| !n.is_empty()).or_else(|| node.output.first().cloned()).unwrap_or_default()
}

/// An attribute of a node.
pub(crate) fn attr<'a>(n: &'a NodeProto, name: &str) -> Option<&'a proto::AttributeProto> {
    n.attribute.iter().find(|a| a.name.as_deref() == Some(name))
}

/// An int attribute.
pub(crate) fn attr_i(n: &NodeProto, name: &str) -> Option<i64> {
    attr(n, name).and_then(|a| a.i)
}

/// An ints attribute: typed `INTS`, or with values.
pub(crate) fn attr_ints(n: &NodeProto, name: &str) -> Option<Vec<i64>> {
    attr(n, name).filter(|a| a.r#type == Some(AttributeType::Ints as i32) || !a.ints.is_empty()).map(|a| a.ints.clone())
}

/// An ints attribute, or a single int given in its place (as some exporters write a one-entry list).
pub(crate) fn attr_ints_or_int(n: &NodeProto, name: &str) -> Option<Vec<i64>> {
    attr(n, name).map(|a| if a.ints.is_empty() { a.i.into_iter().collect() } else { a.ints.clone() })
}

/// A new int attribute.
pub(crate) fn int_attr(name: &str, value: i64) -> proto::AttributeProto {
    proto::AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(value),
        ..Default::default()
    }
}
