//! [`SmallMatMulPass`]: a float32 matrix product of concrete small shapes as one [`SmallMatMul`],
//! a bias added after it inside.
//!
//! tract generates every `EinSum` into its packed matrix product: the activations are packed into
//! panels by a node of their own (`OptMatMulPack`), then `OptMatMul` runs its kernel over the
//! panels. On a small transformer that is about 2 µs a product for a few thousand multiply-adds,
//! and more than half of the whole model's time (a Llama of hidden size 32: 19 products and 17
//! packing nodes, 0.033 of 0.059 ms).
//! The rewrite is on the decluttered model, before code generation: an `EinSum` of two float32
//! inputs of concrete shapes, without quantization, that [`SmallMatMul::plan`] can lay out as calls
//! of our kernel, with at most [`MAX_WORK`] multiply-adds; then, when its value is read by that node
//! alone, an `Add` of a constant that broadcasts to it (one value per output column, per output
//! channel of a 1x1 convolution, or per element). Values are the definition's up to
//! float32 rounding of the sums (see [`crate::kernel::matmul_f32`]), not tract's bits, which is why
//! it is a rewrite of the plan and not of the graph `infer` and `fold` see.

use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::InOut;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::optim::{OptimizerSession, TypedPass};

use super::node_match::binary;
use crate::graph::SmallMatMul;

/// Multiply-adds of the largest product the pass rewrites (about 0.1 ms on one core). Our kernel
/// measured as fast as tract's or faster on every shape tried, one thread, up to 3136x96x96 and
/// 512x256x256 (1.0-2.6x); the bound leaves longer products to tract's kernel, which splits them
/// over threads when more than one is asked for and cuts large operands in blocks that stay in cache.
pub const MAX_WORK: usize = 1 << 22;

/// The pass (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct SmallMatMulPass {
    /// The first node not looked at yet in this sweep.
    next: usize,
}

impl TypedPass for SmallMatMulPass {
    fn reset(&mut self) -> TractResult<()> {
        self.next = 0;
        Ok(())
    }

    fn next(&mut self, _session: &mut OptimizerSession, model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        for node in model.nodes.iter().skip(self.next) {
            self.next = node.id + 1;
            let Some(op) = node.op_as::<EinSum>() else { continue };
            let Some((small, last, inputs)) = small_product(model, node, op) else { continue };
            let mut patch = TypedModelPatch::new(format!("small matmul {}", node.name));
            let taps = inputs.iter().map(|&i| patch.tap_model(model, i)).collect::<TractResult<TVec<_>>>()?;
            let out = patch.wire_node(&model.node(last).name, small, &taps)?[0];
            patch.shunt_outside(model, OutletId::new(last, 0), out)?;
            return Ok(Some(patch));
        }
        Ok(None)
    }
}

/// The op for the einsum `node`, the last node it takes in (the einsum or the bias `Add` after it)
/// and the inputs it reads, if the einsum is a small float32 matrix product.
fn small_product(model: &TypedModel, node: &TypedNode, op: &EinSum) -> Option<(SmallMatMul, usize, TVec<OutletId>)> {
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
    let konst = [facts[0].konst.as_deref(), facts[1].konst.as_deref()];
    let first = match (holds_last(0), holds_last(1), konst) {
        (true, false, _) => 1,
        (false, true, _) => 0,
        (_, _, [Some(_), None]) => 1,
        _ => 0,
    };
    let constant = konst[1 - first];
    if macs(op, shapes)? > MAX_WORK {
        return None;
    }
    let ordered = [shapes[first], shapes[1 - first]];
    let bias = constant_added(model, node.id, output);
    let inputs: TVec<OutletId> = match constant {
        Some(_) => tvec![node.inputs[first]],
        None => tvec![node.inputs[first], node.inputs[1 - first]],
    };
    if let Some((values, add)) = bias {
        if let Some(small) = SmallMatMul::plan(&op.axes, first, ordered, output, constant, Some(values)) {
            return Some((small, add, inputs));
        }
    }
    let small = SmallMatMul::plan(&op.axes, first, ordered, output, constant, None)?;
    Some((small, node.id, inputs))
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

/// If the value of node `id`, of concrete shape `output`, is read by one node alone, an `Add` of a
/// float32 constant that broadcasts to it and keeps its shape: the constant with `output`'s rank
/// (leading axes of 1 added), and the node.
fn constant_added(model: &TypedModel, id: usize, output: &[usize]) -> Option<(Arc<Tensor>, usize)> {
    let outlet = OutletId::new(id, 0);
    let node = model.node(id);
    if node.outputs.len() != 1 || node.outputs[0].successors.len() != 1 || model.outputs.contains(&outlet) {
        return None;
    }
    let next = model.node(node.outputs[0].successors[0].node);
    let other = match binary(next)? {
        ("Add", [a, b]) if a == outlet && b != outlet => b,
        ("Add", [a, b]) if b == outlet && a != outlet => a,
        _ => return None,
    };
    let konst = model.outlet_fact(other).ok()?.konst.clone()?;
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
