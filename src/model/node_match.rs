//! Small matchers over a typed model's nodes, for the passes that recognize patterns in it
//! ([`super::hard_swish`], [`super::direct_conv`], [`super::layer_norm`]).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;

/// The name of `node`'s binary op (`Add`, `Mul`...) and its two inputs, if it is one.
pub(crate) fn binary(node: &TypedNode) -> Option<(&'static str, [OutletId; 2])> {
    let op = node.op_as::<TypedBinOp>()?;
    (node.inputs.len() == 2).then(|| (op.0.name(), [node.inputs[0], node.inputs[1]]))
}

/// The value of a constant outlet whose elements all equal one float32, if it is one.
pub(crate) fn uniform(model: &TypedModel, outlet: OutletId) -> Option<f32> {
    let k = model.outlet_fact(outlet).ok()?.konst.clone()?;
    let values = k.try_as_plain_ram().ok()?.as_slice::<f32>().ok()?.to_vec();
    let first = *values.first()?;
    values.iter().all(|v| v.to_bits() == first.to_bits()).then_some(first)
}

/// For a binary node with one constant input equal to `value`: its other input.
pub(crate) fn with_constant(model: &TypedModel, inputs: [OutletId; 2], value: f32) -> Option<OutletId> {
    match (uniform(model, inputs[0]), uniform(model, inputs[1])) {
        (_, Some(v)) if v == value => Some(inputs[0]),
        (Some(v), _) if v == value => Some(inputs[1]),
        _ => None,
    }
}

/// The node making `outlet`, when `outlet` is its only output and read by one node only, not a model
/// output.
pub(crate) fn single_use_producer(model: &TypedModel, outlet: OutletId) -> Option<&TypedNode> {
    let node = model.node(outlet.node);
    let only = node.outputs.len() == 1 && node.outputs[0].successors.len() == 1;
    let output = model.outputs.contains(&outlet);
    (only && !output).then_some(node)
}
