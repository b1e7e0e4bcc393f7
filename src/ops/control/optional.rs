//! ONNX `OptionalHasElement` (15, 18) and `OptionalGetElement` (15, 18), as far as tract's graphs
//! carry them: tract has no optional (or sequence) values, so every value reaching these nodes is a
//! plain tensor, which always holds an element.
//!
//! - `OptionalHasElement` with no input (none given, or an empty name): a scalar `false`; with a
//!   tensor input: a scalar `true`, whatever the tensor;
//! - `OptionalGetElement` of a tensor: the tensor itself. Without an input it is an error (there is
//!   no element to get).

use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The given (non-empty) inputs of a node.
fn given(node: &NodeProto) -> usize {
    node.input.iter().filter(|i| !i.is_empty()).count()
}

/// The OptionalHasElement builder.
pub(crate) fn optional_has_element(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() > 1 {
        return Err(label.err(format!("OptionalHasElement takes at most one input, got {}", node.input.len())));
    }
    let inputs = given(node);
    Expanded::new("OptionalHasElement", HasElement { label, present: inputs == 1 }, inputs, has_rules, has_wire).built()
}

/// `OptionalHasElement`: whether its input was given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HasElement {
    /// The node, for errors.
    pub label: Label,
    /// Whether the node has an input (a tensor: an element).
    pub present: bool,
}

fn has_rules<'r>(_: &'r HasElement, s: &mut Solver<'r>, Io { outputs, .. }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, DatumType::Bool)?;
    s.equals(&outputs[0].rank, 0)
}

/// A constant: the input's value is never needed.
fn has_wire(op: &HasElement, prefix: &str, model: &mut TypedModel, _: &[OutletId]) -> TractResult<TVec<OutletId>> {
    Ok(tvec![model.add_const(prefix, tensor0(op.present))?])
}

/// The OptionalGetElement builder.
pub(crate) fn optional_get_element(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 1 || node.input[0].is_empty() {
        return Err(label.err("OptionalGetElement takes one input, the optional value (an empty one has no element)"));
    }
    Expanded::new("OptionalGetElement", GetElement { label }, 1, get_rules, get_wire).built()
}

/// `OptionalGetElement` of a tensor: the tensor.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct GetElement {
    /// The node, for errors.
    pub label: Label,
}

fn get_rules<'r>(_: &'r GetElement, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)
}

/// No node: the output is the input's outlet.
fn get_wire(_: &GetElement, _: &str, _: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    Ok(tvec![inputs[0]])
}
