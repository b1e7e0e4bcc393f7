//! Small matchers over a typed model's nodes, for the passes that recognize patterns in it
//! ([`super::hard_swish`], [`super::direct_conv`], [`super::layer_norm`], [`super::small_matmul`]).

use std::sync::Arc;

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

/// If the value of node `id` is read by one node alone and is not a model output, and that node is
/// a `binary` op named `name` of it and a constant: the constant and that node.
pub(crate) fn constant_applied<'m>(
    model: &'m TypedModel,
    id: usize,
    name: &str,
) -> Option<(Arc<Tensor>, &'m TypedNode)> {
    let outlet = OutletId::new(id, 0);
    let node = model.node(id);
    if node.outputs.len() != 1 || node.outputs[0].successors.len() != 1 || model.outputs.contains(&outlet) {
        return None;
    }
    let next = model.node(node.outputs[0].successors[0].node);
    let other = match binary(next)? {
        (op, [a, b]) if op == name && a == outlet && b != outlet => b,
        (op, [a, b]) if op == name && b == outlet && a != outlet => a,
        _ => return None,
    };
    Some((model.outlet_fact(other).ok()?.konst.clone()?, next))
}

/// If the value of node `id` is read by one node alone, a `binary` op named `name` with a float32
/// constant of `n` values along the last axis (every other axis of length 1, no more axes than the
/// value has) that keeps the value's shape: that constant as `n` values, and the node.
pub(crate) fn affine_after(model: &TypedModel, id: usize, n: usize, name: &str) -> Option<(Arc<Tensor>, usize)> {
    let (konst, next) = constant_applied(model, id, name)?;
    let value = model.outlet_fact(OutletId::new(id, 0)).ok()?;
    let along_last = konst.datum_type() == f32::datum_type()
        && konst.rank() <= value.rank()
        && konst.shape().last() == Some(&n)
        && konst.shape().iter().rev().skip(1).all(|&d| d == 1);
    let keeps_shape = model.outlet_fact(OutletId::new(next.id, 0)).ok()?.shape == value.shape;
    if !along_last || !keeps_shape {
        return None;
    }
    let values = konst.into_tensor().into_shape(&[n]).ok()?;
    Some((values.into_arc_tensor(), next.id))
}

/// The clamp the nodes right after node `id` apply to its value (a `Max` by a constant, a `Min` by
/// a constant, either or both in either order, each the only reader of the value before it and of
/// its shape), and the last of those nodes (`id` itself when there is none).
pub(crate) fn fused_clamp(model: &TypedModel, id: usize) -> (f32, f32, usize) {
    let (mut low, mut high, mut last) = (f32::NEG_INFINITY, f32::INFINITY, id);
    let Ok(shape) = model.outlet_fact(OutletId::new(id, 0)).map(|f| f.shape.clone()) else {
        return (low, high, last);
    };
    for _ in 0..2 {
        let Some(next) = single_reader(model, last) else { break };
        let Some((name, [a, b])) = binary(next) else { break };
        let value = OutletId::new(last, 0);
        let bound = if a == value {
            uniform(model, b)
        } else if b == value {
            uniform(model, a)
        } else {
            None
        };
        let same_shape = model.outlet_fact(OutletId::new(next.id, 0)).is_ok_and(|f| f.shape == shape);
        let Some(bound) = bound.filter(|v| !v.is_nan() && same_shape) else { break };
        match name {
            "Max" if low == f32::NEG_INFINITY && bound <= high => low = bound,
            "Min" if high == f32::INFINITY && bound >= low => high = bound,
            _ => break,
        }
        last = next.id;
    }
    (low, high, last)
}

/// The one node reading node `id`'s only output, when that output is read once and is not a model
/// output.
fn single_reader(model: &TypedModel, id: usize) -> Option<&TypedNode> {
    let node = model.node(id);
    let outlet = OutletId::new(id, 0);
    let [reader] = &*node.outputs.first()?.successors else { return None };
    // `single_use_producer` checks the same from the reader's side: one output, one reader, not an
    // output of the model.
    single_use_producer(model, outlet)?;
    Some(model.node(reader.node))
}
