//! [`DirectConvPass`]: float32 2-D convolutions tract would run as an im2col matrix product, on our
//! direct kernel ([`DirectConv`]) instead, with the `Relu` or `Clip` after them fused.
//!
//! The rewrite is on the decluttered model, before code generation, so tract's `Pad` before a padded
//! convolution is never made. It takes a `Conv` of group 1, or a depthwise one (as many groups as
//! input and output channels), over a channels-first image of concrete shape, with constant weights
//! and bias, a kernel of more than one tap (a 1x1 convolution is a plain matrix product, which tract
//! runs well) and strides of at most 2. A `Max` by a constant and/or a `Min` by a constant
//! right after it (each reading the convolution's value alone) become the kernel's clamp. Values are
//! the definition's to float32 rounding of the sum (see [`crate::kernel::conv2d`]); they are not
//! tract's bits, which is why it is a rewrite of the plan and not of the graph `infer` and `fold` see.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cnn::Conv;
use tract_onnx::tract_core::ops::nn::DataFormat;
use tract_onnx::tract_core::optim::{OptimizerSession, TypedPass};

use super::node_match::{binary, single_use_producer, uniform};
use crate::graph::DirectConv;
use crate::kernel::PackedConv;

/// The largest stride taken. A patch-embedding convolution (kernel and stride 16, a ViT's) lays its
/// input out in 256 phase planes of a few elements each, and ran at 35 µs where tract's took 22.
const MAX_STRIDE: usize = 2;

/// The pass (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct DirectConvPass {
    /// The first node not looked at yet in this sweep.
    next: usize,
}

impl TypedPass for DirectConvPass {
    fn reset(&mut self) -> TractResult<()> {
        self.next = 0;
        Ok(())
    }

    fn next(&mut self, _session: &mut OptimizerSession, model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        for node in model.nodes.iter().skip(self.next) {
            self.next = node.id + 1;
            let Some(conv) = node.op_as::<Conv>() else { continue };
            let (low, high, last) = fused_clamp(model, node);
            let Some(packed) = packed_weights(model, node, conv, low, high)? else { continue };
            let Some(op) = DirectConv::new(conv.pool_spec.clone(), packed) else { continue };
            let mut patch = TypedModelPatch::new(format!("direct conv {}", node.name));
            let tap = patch.tap_model(model, node.inputs[0])?;
            let out = patch.wire_node(&node.name, op, &[tap])?[0];
            patch.shunt_outside(model, OutletId::new(last, 0), out)?;
            return Ok(Some(patch));
        }
        Ok(None)
    }
}

/// The packed weights of `conv`, clamped to `[low, high]`, when the direct kernel takes it (see the
/// module docs).
fn packed_weights(
    model: &TypedModel,
    node: &TypedNode,
    conv: &Conv,
    low: f32,
    high: f32,
) -> TractResult<Option<PackedConv>> {
    let spec = &conv.pool_spec;
    let (c_in, c_out) = (spec.input_channels, spec.output_channels);
    let depthwise = conv.group > 1 && conv.group == c_in && conv.group == c_out;
    let plain = conv.q_params.is_none()
        && (conv.group == 1 || depthwise)
        && spec.rank() == 2
        && matches!(spec.data_format, DataFormat::NCHW | DataFormat::CHW)
        && spec.kernel_shape.iter().product::<usize>() > 1
        && spec.strides().iter().all(|&s| s <= MAX_STRIDE)
        && node.inputs.len() == 3;
    if !plain {
        return Ok(None);
    }
    let input = model.outlet_fact(node.inputs[0])?;
    if input.datum_type != f32::datum_type() || input.shape.as_concrete().is_none() {
        return Ok(None);
    }
    let (Some(kernel), Some(bias)) =
        (model.outlet_fact(node.inputs[1])?.konst.clone(), model.outlet_fact(node.inputs[2])?.konst.clone())
    else {
        return Ok(None);
    };
    if kernel.datum_type() != f32::datum_type() || bias.datum_type() != f32::datum_type() {
        return Ok(None);
    }
    let [kh, kw] = [spec.kernel_shape[0], spec.kernel_shape[1]];
    // [group, c_out / group, c_in / group·kh·kw], taps in channel, row, column order.
    let oihw = conv.kernel_fmt.kernel_as_group_o_ihw(&kernel, conv.group)?;
    let weights = oihw.try_as_plain_ram()?;
    let bias = bias.try_as_plain_ram()?;
    let bias = bias.as_slice::<f32>()?;
    let bias: Vec<f32> = match bias.len() {
        1 => vec![bias[0]; c_out],
        _ => bias.to_vec(),
    };
    let weights = weights.as_slice::<f32>()?;
    let packed = if depthwise {
        PackedConv::depthwise(weights, Some(&bias), [c_out, kh, kw], low, high)
    } else {
        PackedConv::new(weights, Some(&bias), [c_out, c_in, kh, kw], low, high)
    };
    Ok(packed.ok())
}

/// The clamp the nodes right after `node` apply to its value (a `Max` by a constant, a `Min` by a
/// constant, either or both in either order, each the only reader of the value before it and of its
/// shape), and the last of those nodes (`node` itself when there is none).
fn fused_clamp(model: &TypedModel, node: &TypedNode) -> (f32, f32, usize) {
    let (mut low, mut high, mut last) = (f32::NEG_INFINITY, f32::INFINITY, node.id);
    let Ok(shape) = model.outlet_fact(OutletId::new(node.id, 0)).map(|f| f.shape.clone()) else {
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
