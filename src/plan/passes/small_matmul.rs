//! The small-matmul pass ([`rewrite`], run by [`super::sweep::Sweep`]): a float32 matrix product of
//! concrete small shapes as one [`SmallMatMul`], the scale, bias and clamp after it inside.
//!
//! tract generates every `EinSum` into its packed matrix product: the activations are packed into
//! panels by a node of their own (`OptMatMulPack`), then `OptMatMul` runs its kernel over the
//! panels. On a small transformer that is about 2 µs a product for a few thousand multiply-adds,
//! and more than half of the whole model's time (a Llama of hidden size 32: 19 products and 17
//! packing nodes, 0.033 of 0.059 ms).
//! The rewrite is on the decluttered model, before code generation: an `EinSum` of two float32
//! inputs of concrete shapes, without quantization, that [`SmallMatMul::plan`] can lay out as calls
//! of our kernel, with at most [`MAX_WORK`] multiply-adds a call (see [`kernel_takes`]); then, when its value is read by that node
//! alone, a `Mul` by a constant that varies along a constant operand's axes only (a batch
//! normalization's scale after a 1x1 convolution: the operand is scaled once, here), and an `Add`
//! of a constant that broadcasts to it (one value per output column, per output channel of a 1x1
//! convolution, or per element), then a `Max` and/or `Min` by a constant (`Relu`, `Clip`), each
//! read by the next node alone. Values are the definition's up to
//! float32 rounding of the sums (see [`crate::kernel::matmul_f32`]), not tract's bits, which is why
//! it is a rewrite of the plan and not of the graph `infer` and `fold` see.

use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::InOut;
use tract_onnx::tract_core::ops::einsum::EinSum;

use super::node_match::{constant_applied, fused_clamp};
use crate::plan::SmallMatMul;

/// Multiply-adds of the largest call of our kernel the pass plans (about 3 ms on one core): the
/// limit applies per call (a whole map of a 1x1 convolution, one image of a batch), not per node, so
/// a batch runs on the same kernel as one image. Our kernel measured as fast as tract's or faster
/// on every shape tried, one thread, up to 3136x96x96 and 512x256x256 (2^25, 1.0-2.6x), and on
/// MobileNetV2's 1x1 convolutions (`benches/conv_sweep.py --set k1`, one thread, ours/tract in the
/// same run): batch 1, maps of 14x14 to 112x112, 0.29-0.91 (`k1 16-96 112`, 19 M multiply-adds a
/// call: 0.415 ms against 0.879); batch 8, 0.06-0.89 (tract moves the batch axis around its product
/// and adds the bias apart: `k1 24-144 56 b8` 2.43 ms against 45.4).
pub(crate) const MAX_WORK: usize = 1 << 25;

/// Columns below which one call with a first operand of more than [`FEW_COLUMNS_BLOCK`] floats is
/// left to tract: a 1x1 convolution on a 7x7 map at batch 1 (`n = 49`: four tiles of 16 columns,
/// the last with one, each rereading the weights) measured 1.17-1.57 of tract's time (`k1 576-160
/// 7`: 0.140 ms against 0.106; `k1 960-160 7` 0.216 against 0.170), while at batch 8 (8 calls) ours
/// is faster (0.50-0.80 of tract's time) and on 14x14 maps at batch 1 too (0.72-0.91).
pub(crate) const FEW_COLUMNS: usize = 64;

/// See [`FEW_COLUMNS`]: 16,384 floats (64 KB), the weights of a 128 by 128 channel 1x1 convolution.
pub(crate) const FEW_COLUMNS_BLOCK: usize = 1 << 14;

/// Whether our kernel takes a product of `calls` calls of `m` rows, `k` deep, `n` columns (the
/// limits above).
pub(crate) fn kernel_takes([calls, m, k, n]: [usize; 4]) -> bool {
    let work = m.saturating_mul(k).saturating_mul(n);
    let few_columns = calls == 1 && n < FEW_COLUMNS && m.saturating_mul(k) > FEW_COLUMNS_BLOCK;
    work <= MAX_WORK && !few_columns
}

/// The rule of the small-matmul pass (see the module docs): the patch for `node`, if it is a small
/// float32 matrix product.
pub(crate) fn rewrite(model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
    let Some(op) = node.op_as::<EinSum>() else { return Ok(None) };
    let Some((small, last, inputs)) = small_product(model, node, op) else { return Ok(None) };
    let mut patch = TypedModelPatch::new(format!("small matmul {}", node.name));
    let mut taps = tvec![];
    for input in inputs {
        taps.push(match input {
            Operand::Wire(outlet) => patch.tap_model(model, outlet)?,
            Operand::Scaled(t) => patch.add_const(format!("{}.scaled", node.name), t)?,
        });
    }
    let out = patch.wire_node(&model.node(last).name, small, &taps)?[0];
    patch.shunt_outside(model, OutletId::new(last, 0), out)?;
    Ok(Some(patch))
}

/// An input of the op: a value of the model, or a constant operand scaled by the `Mul` the op took
/// in.
enum Operand {
    Wire(OutletId),
    Scaled(Arc<Tensor>),
}

/// The op for the einsum `node`, the last node it takes in (the einsum, or the `Mul` and `Add` of
/// constants after it) and its inputs, if the einsum is a small float32 matrix product.
fn small_product(model: &TypedModel, node: &TypedNode, op: &EinSum) -> Option<(SmallMatMul, usize, TVec<Operand>)> {
    let f32_ = f32::datum_type();
    if op.q_params.is_some() || op.operating_dt != f32_ || node.inputs.len() != 2 {
        return None;
    }
    let facts = [model.outlet_fact(node.inputs[0]).ok()?, model.outlet_fact(node.inputs[1]).ok()?];
    let out_fact = model.outlet_fact(OutletId::new(node.id, 0)).ok()?;
    if facts.iter().any(|f| f.datum_type != f32_ || f.is_exotic()) || out_fact.datum_type != f32_ {
        return None;
    }
    let shapes = [facts[0].shape.as_concrete()?, facts[1].shape.as_concrete()?];
    let output = out_fact.shape.as_concrete()?;
    // The kernel vectorizes over the second input's columns: the input holding the output's last
    // axis plays that part, so that the output's rows are written whole; when neither or both hold
    // it, a constant input, packed once.
    let last = op.axes.axis((InOut::Out(0), output.len().checked_sub(1)?)).ok();
    let holds_last = |i: usize| last.is_some_and(|a| !a.inputs[i].is_empty());
    let mut konst = [facts[0].konst.clone(), facts[1].konst.clone()];
    let first = match (holds_last(0), holds_last(1), &konst) {
        (true, false, _) => 1,
        (false, true, _) => 0,
        (_, _, [Some(_), None]) => 1,
        _ => 0,
    };
    // The sizes overflow nothing (the work per call is bounded once the calls are known, below).
    macs(op, shapes)?;
    // A following `Mul` by a constant (a batch normalization's scale) goes into a constant operand.
    let mut last = node.id;
    let mut scaled = None;
    if let Some((scale, mul)) = broadcast_constant(model, node.id, output, "Mul") {
        if let Some((i, t)) =
            (0..2).find_map(|i| Some((i, scaled_operand(op, i, konst[i].as_deref()?, &scale, output)?)))
        {
            konst[i] = Some(t.clone());
            scaled = Some((i, t));
            last = mul;
        }
    }
    let operand = |i: usize| match &scaled {
        Some((s, t)) if *s == i => Operand::Scaled(t.clone()),
        _ => Operand::Wire(node.inputs[i]),
    };
    let constant = konst[1 - first].as_deref();
    let ordered = [shapes[first], shapes[1 - first]];
    let inputs: TVec<Operand> = match constant {
        Some(_) => tvec![operand(first)],
        None => tvec![operand(first), operand(1 - first)],
    };
    let biased = broadcast_constant(model, last, output, "Add").and_then(|(values, add)| {
        Some((SmallMatMul::plan(&op.axes, first, ordered, output, constant, Some(values))?, add))
    });
    let (small, last) = match biased {
        Some(found) => found,
        None => (SmallMatMul::plan(&op.axes, first, ordered, output, constant, None)?, last),
    };
    if !kernel_takes(small.calls()) {
        return None;
    }
    // A `Relu` or `Clip` after it (a `Max` and/or `Min` by a constant) clamps the output.
    match fused_clamp(model, last) {
        (low, high, end) if end != last => Some((small.with_clamp(low, high), end, inputs)),
        _ => Some((small, last, inputs)),
    }
}

/// Operand `i` of the einsum, the constant `x`, times the constant `scale` (of the output's rank,
/// broadcasting to it) where the product is multiplied by it: `x'[..] = x[..] · scale[..]` at the
/// output position of each of `x`'s axes, when every axis `scale` varies along is one of `x`'s (the
/// product is then scaled term by term). `None` otherwise.
fn scaled_operand(op: &EinSum, i: usize, x: &Tensor, scale: &Tensor, output: &[usize]) -> Option<Arc<Tensor>> {
    let scale_strides: Vec<usize> = {
        let mut s = vec![0; output.len()];
        let mut step = 1;
        for p in (0..output.len()).rev() {
            s[p] = if scale.shape()[p] == 1 { 0 } else { step };
            step *= scale.shape()[p];
        }
        s
    };
    let covered = (0..output.len())
        .all(|p| scale.shape()[p] == 1 || op.axes.axis((InOut::Out(0), p)).is_ok_and(|a| !a.inputs[i].is_empty()));
    if !covered || x.datum_type() != f32::datum_type() || scale.datum_type() != f32::datum_type() {
        return None;
    }
    // For each axis of `x`, the scale's stride along its output position (0 when it has none).
    let along: Vec<usize> = (0..x.rank())
        .map(|q| {
            let axis = op.axes.axis((InOut::In(i), q)).ok()?;
            Some(axis.outputs[0].first().map_or(0, |&p| scale_strides[p]))
        })
        .collect::<Option<_>>()?;
    let values = x.try_as_plain_ram().ok()?;
    let values = values.as_slice::<f32>().ok()?;
    let factors = scale.try_as_plain_ram().ok()?;
    let factors = factors.as_slice::<f32>().ok()?;
    let mut out = Vec::with_capacity(values.len());
    for (flat, v) in values.iter().enumerate() {
        let (mut rest, mut at) = (flat, 0);
        for (q, &d) in x.shape().iter().enumerate().rev() {
            at += (rest % d) * along[q];
            rest /= d;
        }
        out.push(v * factors[at]);
    }
    Some(Arc::new(Tensor::from_shape(x.shape(), &out).ok()?))
}

/// The multiply-adds of the einsum: the product of the lengths of all its axes.
fn macs(op: &EinSum, shapes: [&[usize]; 2]) -> Option<usize> {
    op.axes.iter_all_axes().try_fold(1usize, |total, axis| {
        let len = (0..2)
            .flat_map(|i| axis.inputs[i].iter().map(move |&p| shapes[i].get(p).copied()))
            .try_fold(1usize, |len, d| Some(len.max(d?)))?;
        total.checked_mul(len)
    })
}

/// If the value of node `id`, of concrete shape `output`, is read by one node alone, a binary op
/// named `name` (`Add`, `Mul`) of it and a float32 constant that broadcasts to it and keeps its
/// shape: the constant with `output`'s rank (leading axes of 1 added), and the node.
fn broadcast_constant(model: &TypedModel, id: usize, output: &[usize], name: &str) -> Option<(Arc<Tensor>, usize)> {
    let (konst, next) = constant_applied(model, id, name)?;
    let rank = output.len();
    if konst.datum_type() != f32::datum_type() || konst.rank() > rank {
        return None;
    }
    let mut shape = vec![1; rank - konst.rank()];
    shape.extend_from_slice(konst.shape());
    let broadcasts = shape.iter().zip(output).all(|(&d, &o)| d == 1 || d == o);
    let keeps_shape = model.outlet_fact(OutletId::new(next.id, 0)).ok()?.shape.as_concrete() == Some(output);
    if !broadcasts || !keeps_shape {
        return None;
    }
    Some((konst.into_tensor().into_shape(&shape).ok()?.into_arc_tensor(), next.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule at MobileNetV2's 1x1 convolutions (`[calls, m = output channels, k = input
    /// channels, n = pixels]`): a batch of 8 is 8 calls of one image's product.
    #[test]
    fn the_rule_follows_the_sweep() {
        // Whole maps of 112x112 to 14x14, at batch 1 and 8.
        for calls in [1, 8] {
            assert!(kernel_takes([calls, 96, 16, 112 * 112]));
            assert!(kernel_takes([calls, 144, 24, 56 * 56]));
            assert!(kernel_takes([calls, 64, 384, 14 * 14]));
        }
        // 7x7 maps: tract's at batch 1 (its packed product is faster there), ours at batch 8.
        assert!(!kernel_takes([1, 160, 576, 49]));
        assert!(kernel_takes([8, 160, 576, 49]));
        // Small weights on a small map stay ours at batch 1.
        assert!(kernel_takes([1, 64, 64, 49]));
        // A call past 2^25 multiply-adds is tract's, however many there are.
        assert!(!kernel_takes([1, 512, 512, 256]));
        assert!(!kernel_takes([8, 512, 512, 256]));
        assert!(kernel_takes([8, 512, 256, 256]));
    }
}
