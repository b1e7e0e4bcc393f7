//! Reading an ONNX node into tract, shared by every op of ours: its attributes (`attrs`), its
//! label for errors ([`Label`]), the one tract expansion our ops are built as (`expanded`), and the
//! typed inputs a `to_typed` starts from (`typed_inputs`).
//!
//! May import: the base layer and the pure layers.

pub(crate) mod attrs;
pub(crate) mod expanded;
mod label;
pub(crate) mod typed_inputs;

pub(crate) use label::node_label;
pub(crate) use label::Label;
