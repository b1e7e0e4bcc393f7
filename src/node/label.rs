//! [`Label`]: the node an error is about, `node 'name' (Op)`.

use std::fmt;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;

/// Where a step came from, for error messages: `node 'name' (Op)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Label {
    /// Node name.
    pub node: String,
    /// ONNX op type.
    pub op: String,
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node '{}' ({})", self.node, self.op)
    }
}

impl Label {
    /// The label of a step absorbed from one of tract's nodes.
    pub(crate) fn of_typed(node: &TypedNode) -> Label {
        Label { node: node.name.clone(), op: node.op.name().to_string() }
    }

    /// Wraps a pure-layer error (kept typed) or a message with this node's name and op.
    pub(crate) fn err(&self, e: impl Into<crate::error::Cause>) -> TractError {
        crate::error::NodeError::of_kind(&self.node, &self.op, crate::error::NodeErrorKind::Invalid, e)
    }

    /// An output of this node that cannot be decided before running, for the reason `e`.
    pub(crate) fn not_static(&self, e: impl fmt::Display) -> TractError {
        crate::error::NodeError::not_static(&self.node, &self.op, e)
    }
}

/// A node's label for errors: its name, or its first output's when it has none.
pub(crate) fn node_label(node: &NodeProto) -> Label {
    let name = if !node.name.is_empty() { node.name.clone() } else { node.output.first().cloned().unwrap_or_default() };
    Label { node: name, op: node.op_type.clone() }
}
