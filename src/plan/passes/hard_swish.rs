//! The hard-swish pass ([`rewrite`], run by [`super::sweep::Sweep`]): a decomposed hard swish,
//! `x * clip(x + 3, 0, 6) / 6`, as tract's `HardSwish`.
//!
//! Exporters write MobileNetV3's activation as four or five nodes (`Add`, `Clip`, `Mul`, `Div`):
//! tract runs them as two element-wise chains over the whole feature map, a fifth of an OCR
//! classifier's time, where its own `HardSwish` op is one vectorized pass (`x * max(0, min(1, x/6 +
//! 1/2))`). The rewrite is on the decluttered model, before code generation, on float32 only:
//! `Add(x, 3)`, then `Max(·, 0)` and `Min(·, 6)` in either order, `Mul` by `x`, then `Mul` by 1/6 or
//! `Div` by 6, each value read by the next node only. After code generation the op runs as our
//! [`crate::plan::ops::DefinedActivation`], `x * clamp(x/6 + 1/2, 0, 1)`: the result can differ from
//! the decomposed form's in the last bit (the two round differently), and past `f32::MAX / 6`, where
//! the graph's `x * 6` overflows to `inf`, it is `x` (the function's value), which is why it is a
//! rewrite of the plan and not of the graph `infer` and `fold` see.

use tract_onnx::prelude::*;

use super::node_match::{binary, single_use_producer, uniform, with_constant};

/// The rule of the hard-swish pass (see the module docs): the patch for `node`, if it ends a
/// decomposed hard swish.
pub(crate) fn rewrite(model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
    let Some(x) = hard_swish_input(model, node)? else { return Ok(None) };
    let mut patch = TypedModelPatch::new(format!("hard swish {}", node.name));
    let tap = patch.tap_model(model, x)?;
    let out = patch.wire_node(&node.name, tract_onnx::tract_core::ops::nn::hard_swish(), &[tap])?[0];
    patch.shunt_outside(model, OutletId::new(node.id, 0), out)?;
    Ok(Some(patch))
}

/// If `node` ends a decomposed hard swish over float32: its `x`.
fn hard_swish_input(model: &TypedModel, node: &TypedNode) -> TractResult<Option<OutletId>> {
    if node.outputs.len() != 1 || model.outlet_fact(OutletId::new(node.id, 0))?.datum_type != DatumType::F32 {
        return Ok(None);
    }
    Ok(match_chain(model, node))
}

fn match_chain(model: &TypedModel, node: &TypedNode) -> Option<OutletId> {
    // `/ 6` or `* (1/6)`.
    let (name, inputs) = binary(node)?;
    let product = match name {
        "Div" => (uniform(model, inputs[1]) == Some(6.0)).then_some(inputs[0])?,
        "Mul" => with_constant(model, inputs, 1.0 / 6.0)?,
        _ => return None,
    };
    // `x * clip(x + 3, 0, 6)`.
    let mul = single_use_producer(model, product)?;
    let (name, [p, q]) = binary(mul)?;
    if name != "Mul" {
        return None;
    }
    for (x, clipped) in [(p, q), (q, p)] {
        if let Some(add_input) = clipped_shift(model, clipped) {
            if add_input == x
                && model.outlet_fact(x).ok()?.shape == model.outlet_fact(OutletId::new(node.id, 0)).ok()?.shape
            {
                return Some(x);
            }
        }
    }
    None
}

/// If `outlet` is `clip(x + 3, 0, 6)` (a `Max` by 0 and a `Min` by 6 in either order, each value
/// read once): its `x`.
fn clipped_shift(model: &TypedModel, outlet: OutletId) -> Option<OutletId> {
    let outer = single_use_producer(model, outlet)?;
    let (outer_name, outer_inputs) = binary(outer)?;
    let (outer_bound, inner_name) = match outer_name {
        "Min" => (6.0, "Max"),
        "Max" => (0.0, "Min"),
        _ => return None,
    };
    let inner_out = with_constant(model, outer_inputs, outer_bound)?;
    let inner = single_use_producer(model, inner_out)?;
    let (name, inner_inputs) = binary(inner)?;
    if name != inner_name {
        return None;
    }
    let inner_bound = if inner_name == "Max" { 0.0 } else { 6.0 };
    let shifted = with_constant(model, inner_inputs, inner_bound)?;
    let add = single_use_producer(model, shifted)?;
    let (name, add_inputs) = binary(add)?;
    (name == "Add").then(|| with_constant(model, add_inputs, 3.0))?
}
