//! The layer-norm pass ([`rewrite`], run by [`super::sweep::Sweep`]): a layer normalization over
//! the last axis of a float32 tensor as one [`RowLayerNorm`], with the scale and bias after it
//! inside.
//!
//! tract declutters ONNX's `LayerNormalization` into `Reduce<Sum>` over the last axis, a `Mul` by
//! `1/n` (the mean), `Sub(x, mean)` and its own `RmsNorm` of the difference, then a `Mul` by the
//! scale and an `Add` of the bias: six ops, six passes over the tensor and five allocations, where
//! the work is three passes over each row in cache (a transformer's layer norm over `[25, 32]` took
//! 3.7 µs in those ops). The rewrite is on the decluttered model, before code generation, on float32
//! only: `Reduce<Sum>` of `x` over its last axis (of concrete length `n`), times `1/n` (or divided by
//! `n`), subtracted from `x`, normalized by `RmsNorm` over the last axis; then, when the
//! normalization's value is read by that node alone, a `Mul` by a constant of `n` values along the
//! last axis, and after it (or alone) an `Add` of one. Each intermediate value is read by the next
//! node only. Values are the definition's up to float32 rounding of the sums (see
//! [`crate::kernel::layer_norm_rows`]), not tract's bits, which is why it is a rewrite of the plan
//! and not of the graph `infer` and `fold` see.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::nn::{Reduce, Reducer, RmsNorm};

use super::node_match::{affine_after, binary, single_use_producer, uniform};
use crate::plan::RowLayerNorm;

/// The rule of the layer-norm pass (see the module docs): the patch for `node`, if it is the
/// `RmsNorm` of a decomposed layer normalization.
pub(crate) fn rewrite(model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
    let Some(rms) = node.op_as::<RmsNorm>() else { return Ok(None) };
    let Some((x, n)) = centered_input(model, node, rms) else { return Ok(None) };
    let (scale, last) = match affine_after(model, node.id, n, "Mul") {
        Some((scale, mul)) => (Some(scale), mul),
        None => (None, node.id),
    };
    let (bias, last) = match affine_after(model, last, n, "Add") {
        Some((bias, add)) => (Some(bias), add),
        None => (None, last),
    };
    let op = RowLayerNorm { eps: rms.eps.clone(), scale, bias };
    let mut patch = TypedModelPatch::new(format!("layer norm {}", node.name));
    let tap = patch.tap_model(model, x)?;
    let out = patch.wire_node(&model.node(last).name, op, &[tap])?[0];
    patch.shunt_outside(model, OutletId::new(last, 0), out)?;
    Ok(Some(patch))
}

/// If the `RmsNorm` `node` normalizes `x - mean(x)` over the last axis of a float32 `x`: `x` and the
/// axis' length.
fn centered_input(model: &TypedModel, node: &TypedNode, rms: &RmsNorm) -> Option<(OutletId, usize)> {
    let fact = model.outlet_fact(OutletId::new(node.id, 0)).ok()?;
    if fact.datum_type != f32::datum_type() || fact.rank() == 0 || rms.axis != fact.rank() - 1 {
        return None;
    }
    let n = usize::try_from(fact.shape.last()?.as_i64()?).ok().filter(|&n| n > 0)?;
    let sub = single_use_producer(model, *node.inputs.first()?)?;
    let ("Sub", [x, mean]) = binary(sub)? else { return None };
    if model.outlet_fact(x).ok()?.shape != fact.shape {
        return None;
    }
    let scaled = single_use_producer(model, mean)?;
    let sum = match binary(scaled)? {
        ("Mul", [a, b]) if is_reciprocal(uniform(model, b), n) => a,
        ("Mul", [a, b]) if is_reciprocal(uniform(model, a), n) => b,
        ("Div", [a, b]) if uniform(model, b) == Some(n as f32) => a,
        _ => return None,
    };
    let reduce = single_use_producer(model, sum)?;
    let op = reduce.op_as::<Reduce>()?;
    let sums_x = op.reducer == Reducer::Sum && op.axes[..] == [fact.rank() - 1] && reduce.inputs[..] == [x];
    sums_x.then_some((x, n))
}

/// Whether `v` is `1/n` rounded to float32 (by either rounding: from the exact value, or through
/// float64).
fn is_reciprocal(v: Option<f32>, n: usize) -> bool {
    v.is_some_and(|v| v == 1.0 / n as f32 || v == (1.0 / n as f64) as f32)
}
