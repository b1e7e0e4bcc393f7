//! Our replacements of tract-onnx's rules for standard ops, where tract's are too weak for exported
//! models: each builder handles what tract refuses (symbolic dims, shape parameters computed from
//! `Shape`, exact integer values) and hands everything else to tract's own builder.
//!
//! - `BatchNormalization`: `training_mode=1`, normalized with the batch's statistics, with the
//!   running mean and variance (tract refused it; [`batch_norm`](super::nn::batch_norm));
//! - `BitShift`: shifts by the width or more (or by a negative amount) move every bit out, as onnx's
//!   reference computes (tract shifted modulo the width);
//! - `Celu`: with its `alpha` (tract left out the multiplication by it);
//! - `Cast`: exact integers, symbolic shape values kept through integer casts;
//! - `Conv`: float16 summed in float32 and rounded once, the bias added in float16, as onnx's
//!   reference (tract summed in float16; [`conv`](super::nn::conv));
//! - `ConstantOfShape`: float32 zeros without a `value` attribute, as the specification says;
//! - `DFT`: transformed in `f64` and rounded once, `dft_length` honoured, opset 17's `axis` typed
//!   (tract transformed float32 in float32; [`dft`](super::math::dft));
//! - `Flatten`: over symbolic dims (tract refuses a product of two symbols);
//! - `Gather`: a constant affine index table is a slicing view;
//! - `Gemm`: float16 computed as onnx's reference (tract refused a float16 `C`; [`gemm`](super::math::gemm));
//! - `LayerNormalization`: float32 on our kernel, the mean a division by `n` corrected by the
//!   deviations (tract multiplied by an inexact `1/n`: constant rows did not normalize to 0;
//!   [`layer_norm`](super::nn::layer_norm));
//! - `LogSoftmax`: one log-softmax, `x - max - ln(sum(exp(x - max)))` (tract took the log of a
//!   softmax, `-inf` once a probability underflows; [`log_softmax`](super::math::log_softmax));
//! - `MatMul`: of two 1-D tensors, their dot product (tract inferred the scalar but refused to wire
//!   it);
//! - `Mean`: typed from its inputs (tract's builder panicked on a node typed without inference facts);
//! - `OneHot`: indices out of range give a row of `off` values, as the specification says (tract
//!   panicked), int64 indices read as such;
//! - `Pad`: over a shape vector (MXNet's `reverse`), with pads computed from symbolic dims, and in
//!   `wrap` mode (tract refused it; [`wrap_pad`](super::array::pad::wrap));
//! - `QuantizeLinear`, `DequantizeLinear`: 16-bit integer types and blocked quantization (tract read
//!   every zero point as 8 bits and refused `block_size`; [`quant`](super::quant::linear));
//! - `Range`: ONNX's exact length for negative steps;
//! - `ReduceMax`, `ReduceMin`: minus and plus infinity over sets of floats that are empty or all
//!   infinite (tract gave the largest finite float); booleans (opset 20) reduced as bytes (tract's
//!   reducers refused them);
//! - `RNN`, `GRU`, `LSTM`: zero initial states over a symbolic batch, and the reverse direction
//!   (tract ran it forward); a small `LSTM` of the plain form runs as one op, [`lstm::LstmOp`],
//!   instead of tract's `Scan` (per-step overhead), which also gives `layout=1` with two directions
//!   the specification's `Y` (tract's is `[batch, 2*seq, 1, hidden]`); a small `GRU` of the plain
//!   form likewise as [`gru::GruOp`], with exact sigmoid and tanh (tract's approximate sigmoid was
//!   1e-6 off near saturation);
//! - `Scan`: body inputs without types (they take the Scan inputs'), opset 8's batched form, typed
//!   per node rather than after tract's analysis of the whole model ([`scan`](super::control::scan));
//! - `RotaryEmbedding` (opset 23): one op over the input (tract wired sixteen nodes a call);
//! - `Selu`: the specification's default `alpha` and `gamma` (tract's had five and six digits;
//!   [`selu`](super::math::selu));
//! - `Softmax`: float16 rounded where numpy rounds (tract multiplied by a rounded reciprocal;
//!   [`softmax`](super::math::softmax));
//! - `Softplus`: `max(x, 0) + ln(1 + exp(-|x|))`, float32 as one op on our kernel (tract-onnx's
//!   `Ln(Exp(x) + 1)` gave `inf` past `x = 88.7`; [`softplus`](super::math::softplus));
//! - `SpaceToDepth`: `mode="CRD"` (tract moved blocks in the default DCR order whatever the mode);
//! - `Swish`: with its `alpha` (tract ran every Swish as SiLU, alpha 1);
//! - `Reshape`: `-1` over symbolic sums, volumes equal under a requirement;
//! - `Reduce*`, `Squeeze`, `Unsqueeze`, `Expand`, `Tile`, `Split`, `ConstantOfShape`, `Reshape`,
//!   `Pad`, `Resize`: axes, sizes, pads, scales and shapes given as runtime inputs, through one mechanism for shape
//!   parameters ([`params`](super::params)).

use super::{array, control, math, nn, quant, rec};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;
use tract_onnx::Onnx;

/// A tract-onnx op builder.
pub(crate) type Builder = fn(&ParsingContext, &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)>;

/// tract-onnx's own builder for `op_type`, for what a replacement leaves to tract.
pub(crate) fn stock(op_type: &'static str) -> Builder {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static STOCK: OnceLock<HashMap<String, Builder>> = OnceLock::new();
    let all = STOCK.get_or_init(|| tract_onnx::onnx().op_register.0.clone());
    *all.get(op_type).unwrap_or_else(|| panic!("tract-onnx registers {op_type}"))
}

/// Whether a fix that computes float16 its own way in the typed model lets the analysis fold a node
/// over `inputs` with tract's op: yes unless its first input is float16.
pub(crate) fn folds_unless_half(inputs: &[TValue]) -> bool {
    inputs.first().is_none_or(|x| x.datum_type() != DatumType::F16)
}

/// Registers every replacement.
pub(crate) fn register(onnx: &mut Onnx) {
    onnx.op_register.insert("BatchNormalization", nn::batch_norm::batch_norm);
    onnx.op_register.insert("BitShift", math::bit_shift::bit_shift);
    onnx.op_register.insert("Cast", array::cast::cast);
    onnx.op_register.insert("Celu", math::celu::celu);
    onnx.op_register.insert("ConstantOfShape", array::constant_of_shape::constant_of_shape);
    onnx.op_register.insert("Conv", nn::conv::conv);
    onnx.op_register.insert("DFT", math::dft::dft);
    onnx.op_register.insert("Flatten", array::flatten::flatten);
    onnx.op_register.insert("Gather", array::gather::gather);
    onnx.op_register.insert("Gemm", math::gemm::gemm);
    for op in ["HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"] {
        onnx.op_register.insert(op, math::sized_generators::generated);
    }
    onnx.op_register.insert("LayerNormalization", nn::layer_norm::layer_norm);
    onnx.op_register.insert("LogSoftmax", math::log_softmax::log_softmax);
    onnx.op_register.insert("MatMul", math::matmul::matmul);
    onnx.op_register.insert("Mean", math::mean::mean);
    onnx.op_register.insert("OneHot", array::one_hot::one_hot);
    onnx.op_register.insert("Pad", array::pad::shape_pad::pad);
    onnx.op_register.insert("QuantizeLinear", quant::linear::quantize_linear);
    onnx.op_register.insert("DequantizeLinear", quant::linear::dequantize_linear);
    onnx.op_register.insert("Range", array::range::range);
    onnx.op_register.insert("Reshape", array::reshape::reshape);
    onnx.op_register.insert("Resize", nn::resize::resize);
    onnx.op_register.insert("RotaryEmbedding", nn::rotary::rotary_embedding);
    onnx.op_register.insert("Scan", control::scan::scan);
    onnx.op_register.insert("Selu", math::selu::selu);
    for op in ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean"] {
        onnx.op_register.insert(op, math::reduce::reduce);
    }
    for op in ["ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"] {
        onnx.op_register.insert(op, math::reduce::reduce);
    }
    onnx.op_register.insert("Softmax", math::softmax::softmax);
    onnx.op_register.insert("Softplus", math::softplus::softplus);
    onnx.op_register.insert("SpaceToDepth", array::space_to_depth::space_to_depth);
    onnx.op_register.insert("Squeeze", array::squeeze::squeeze);
    onnx.op_register.insert("Swish", math::swish::swish);
    onnx.op_register.insert("Unsqueeze", array::squeeze::unsqueeze);
    onnx.op_register.insert("Expand", array::expand::expand);
    onnx.op_register.insert("Tile", array::tile::tile);
    onnx.op_register.insert("Split", array::split::split);
    for op in ["RNN", "GRU", "LSTM"] {
        onnx.op_register.insert(op, rec::stock_rec::rec);
    }
    // The ConstantOfShape builder above, wrapped for a shape known only at run time.
    onnx.op_register.insert("ConstantOfShape", array::fill::constant_of_shape);
}
