//! The direct-conv pass ([`rewrite`], run by [`super::sweep::Sweep`]): float32 2-D convolutions
//! tract would run as an im2col matrix product, on our direct kernel ([`DirectConv`]) instead, with
//! a batch normalization and the `Relu` or `Clip` after them fused.
//!
//! The rewrite is on the decluttered model, before code generation, so tract's `Pad` before a padded
//! convolution is never made. It takes a `Conv` of any group count (ordinary, grouped, depthwise),
//! over a channels-first image of concrete shape, with constant weights
//! and bias, where the choice rule ([`super::conv_rule`]) gives it to our kernel. A `Mul` then an `Add` of one constant per
//! output channel right after it (a batch normalization, either or both) are folded into its weights
//! and bias; a `Max` by a constant and/or a `Min` by a constant after those become the kernel's
//! clamp; each of these nodes reads the value before it alone. Values are
//! the definition's to float32 rounding of the sum (see [`crate::kernel::conv2d`]); they are not
//! tract's bits, which is why it is a rewrite of the plan and not of the graph `infer` and `fold` see.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cnn::Conv;
use tract_onnx::tract_core::ops::nn::DataFormat;

use super::conv_rule::{direct_kernel_takes, ConvShape};
use super::node_match::{constant_applied, fused_clamp};
use crate::kernel::PackedConv;
use crate::plan::DirectConv;

/// The rule of the direct-conv pass (see the module docs): the patch for `node`, if it is a
/// convolution the direct kernel takes.
pub(crate) fn rewrite(model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
    let Some(conv) = node.op_as::<Conv>() else { return Ok(None) };
    let channels = conv.pool_spec.output_channels;
    let (scale, scaled) = per_channel(model, node.id, channels, "Mul").unzip();
    let (shift, shifted) = per_channel(model, scaled.unwrap_or(node.id), channels, "Add").unzip();
    let affine = Affine { scale, shift };
    let (low, high, last) = fused_clamp(model, shifted.or(scaled).unwrap_or(node.id));
    let Some(packed) = packed_weights(model, node, conv, &affine, low, high)? else { return Ok(None) };
    let Some(op) = DirectConv::new(conv.pool_spec.clone(), packed) else { return Ok(None) };
    let mut patch = TypedModelPatch::new(format!("direct conv {}", node.name));
    let tap = patch.tap_model(model, node.inputs[0])?;
    let out = patch.wire_node(&node.name, op, &[tap])?[0];
    patch.shunt_outside(model, OutletId::new(last, 0), out)?;
    Ok(Some(patch))
}

/// A scale then a shift per output channel applied to a convolution's value (a batch
/// normalization's `Mul` and `Add`), folded into its weights and bias.
struct Affine {
    scale: Option<Vec<f32>>,
    shift: Option<Vec<f32>>,
}

/// The packed weights of `conv`, scaled and shifted by `affine`, clamped to `[low, high]`, when the
/// direct kernel takes it (see the module docs).
fn packed_weights(
    model: &TypedModel,
    node: &TypedNode,
    conv: &Conv,
    affine: &Affine,
    low: f32,
    high: f32,
) -> TractResult<Option<PackedConv>> {
    let spec = &conv.pool_spec;
    let (c_in, c_out) = (spec.input_channels, spec.output_channels);
    let depthwise = conv.group > 1 && conv.group == c_in && conv.group == c_out;
    let plain = conv.q_params.is_none()
        && conv.group >= 1
        && c_in.is_multiple_of(conv.group)
        && c_out.is_multiple_of(conv.group)
        && spec.rank() == 2
        && matches!(spec.data_format, DataFormat::NCHW | DataFormat::CHW)
        && node.inputs.len() == 3;
    if !plain {
        return Ok(None);
    }
    let input = model.outlet_fact(node.inputs[0])?;
    let output = model.outlet_fact(OutletId::new(node.id, 0))?.shape.as_concrete().map(|s| s.to_vec());
    let (Some(output), true) = (output, input.datum_type == f32::datum_type() && input.shape.as_concrete().is_some())
    else {
        return Ok(None);
    };
    if output.len() < 2 {
        return Ok(None);
    }
    let (strides, dilations) = (spec.strides(), spec.dilations());
    let shape = ConvShape {
        c_in,
        group: conv.group,
        kernel: [spec.kernel_shape[0], spec.kernel_shape[1]],
        strides: [strides[0], strides[1]],
        dilations: [dilations[0], dilations[1]],
        output: [output[output.len() - 2], output[output.len() - 1]],
    };
    if !direct_kernel_takes(&shape) {
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
    let mut bias: Vec<f32> = match bias.len() {
        1 => vec![bias[0]; c_out],
        _ => bias.to_vec(),
    };
    let mut weights = weights.as_slice::<f32>()?.to_vec();
    if bias.len() != c_out || c_out == 0 || !weights.len().is_multiple_of(c_out) {
        return Ok(None);
    }
    // Each output channel's weights are one run (`[group][c_out / group][taps]`).
    let per_channel = weights.len() / c_out;
    if let Some(scale) = &affine.scale {
        for ((run, b), &s) in weights.chunks_exact_mut(per_channel).zip(&mut bias).zip(scale) {
            run.iter_mut().for_each(|w| *w *= s);
            *b *= s;
        }
    }
    if let Some(shift) = &affine.shift {
        bias.iter_mut().zip(shift).for_each(|(b, t)| *b += t);
    }
    let weights = &weights[..];
    let packed = if depthwise {
        PackedConv::depthwise(weights, Some(&bias), [c_out, kh, kw], low, high)
    } else {
        PackedConv::grouped(weights, Some(&bias), [c_out, c_in, kh, kw], conv.group, low, high)
    };
    Ok(packed.ok())
}

/// If node `id`'s value (a channels-first image of `channels` channels) is read by one node alone,
/// a binary `name` (`Mul`, `Add`) of it and a float32 constant with one value per channel (or one
/// value) that keeps its shape: the values, one per channel, and that node.
fn per_channel(model: &TypedModel, id: usize, channels: usize, name: &str) -> Option<(Vec<f32>, usize)> {
    let (konst, next) = constant_applied(model, id, name)?;
    let fact = model.outlet_fact(OutletId::new(id, 0)).ok()?;
    let rank = fact.rank();
    // The channel axis is third from the end (`CHW`, `NCHW`); every other axis of the constant,
    // aligned to the value's from the end, has length 1.
    let per_axis = |i: usize| konst.rank() - 1 - i;
    let ok = konst.datum_type() == f32::datum_type()
        && konst.rank() <= rank
        && rank >= 3
        && (0..konst.rank())
            .all(|i| konst.shape()[per_axis(i)] == 1 || (i == 2 && konst.shape()[per_axis(i)] == channels))
        && model.outlet_fact(OutletId::new(next.id, 0)).ok()?.shape == fact.shape;
    if !ok {
        return None;
    }
    let values = konst.try_as_plain_ram().ok()?;
    let values = values.as_slice::<f32>().ok()?;
    let values = match values.len() {
        1 => vec![values[0]; channels],
        n if n == channels => values.to_vec(),
        _ => return None,
    };
    Some((values, next.id))
}
