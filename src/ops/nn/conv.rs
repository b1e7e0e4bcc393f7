//! ONNX `Conv` of float16: computed in float32 and rounded once, then the bias added in float16.
//!
//! tract's float16 convolution accumulates in float16 (25 of the 64 values of ONNX's
//! `causal_conv_with_state_silu_fp16` expanded graph were one or two ulps off). onnx's reference
//! multiplies the unfolded image by the weights with numpy's float16 matmul, which sums the products
//! in float32 and rounds once, then adds the bias as a float16 operation (one more rounding);
//! onnxruntime also sums in float32. Here tract types the node as before, and a float16 convolution
//! is then wired again: input and weights cast to float32, tract's float32 convolution without the
//! bias, a cast to float16, and the bias added in float16. Other types keep tract's op, untouched.

use crate::ops::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cast::cast;
use tract_onnx::tract_core::ops::change_axes::{wire_with_rank_broadcast, AxisOp};
use tract_onnx::tract_core::ops::cnn::Conv;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_core::ops::nn::DataFormat;
use tract_onnx::tract_hir::internal::*;

/// The Conv builder: tract's, with float16 summed in float32.
pub(crate) fn conv(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    Ok(StockNode::wrap(crate::ops::stock("Conv")(ctx, node)?, HalfConv, node))
}

/// What [`conv`] adds to tract's op: float16 wired through a float32 convolution.
#[derive(Debug, Clone)]
pub(crate) struct HalfConv;

impl Fix for HalfConv {
    fn folds(_this: &StockNode<Self>, inputs: &[TValue]) -> bool {
        // Float16 is left to the typed model, where it is wired in float32.
        crate::ops::replaced::folds_unless_half(inputs)
    }

    fn to_typed(
        this: &StockNode<Self>,
        source: &InferenceModel,
        inode: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let outputs = this.stock.to_typed(source, inode, target, mapping)?;
        let [out] = &*outputs else { return Ok(outputs) };
        let node = target.node(out.node);
        let Some(op) = node.op_as::<Conv>() else { return Ok(outputs) };
        let [x, w, bias] = node.inputs[..] else { return Ok(outputs) };
        if op.q_params.is_some()
            || target.outlet_fact(x)?.datum_type != DatumType::F16
            || target.outlet_fact(w)?.datum_type != DatumType::F16
        {
            return Ok(outputs);
        }
        let (op, name) = (op.clone(), node.name.clone());
        let x32 = target.wire_node(format!("{name}.input_f32"), cast(DatumType::F32), &[x])?[0];
        let w32 = target.wire_node(format!("{name}.weights_f32"), cast(DatumType::F32), &[w])?[0];
        let zero = target.add_const(format!("{name}.no_bias"), tensor0(0f32))?;
        let y32 = target.wire_node(format!("{name}.f32"), op.clone(), &[x32, w32, zero])?[0];
        let y = target.wire_node(format!("{name}.f16"), cast(DatumType::F16), &[y32])?[0];
        if inode.inputs.len() < 3 {
            // No bias: numpy adds none (adding tract's zero would turn -0 into 0).
            return Ok(tvec![y]);
        }
        // The bias: a scalar, or one value per output channel, broadcast over the channel axis.
        let mut b = bias;
        if target.outlet_fact(bias)?.rank() == 1
            && matches!(op.pool_spec.data_format, DataFormat::NCHW | DataFormat::CHW)
        {
            for _ in 0..op.pool_spec.rank() {
                let axis = target.outlet_fact(b)?.rank();
                b = target.wire_node(format!("{name}.bias_axis_{axis}"), AxisOp::Add(axis), &[b])?[0];
            }
        }
        wire_with_rank_broadcast(format!("{name}.bias_f16"), target, math::add(), &[y, b])
    }
}
