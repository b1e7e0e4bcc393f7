//! Our replacements of tract-onnx's rules for standard ops, where tract's are too weak for exported
//! models: each builder handles what tract refuses (symbolic dims, shape parameters computed from
//! `Shape`, exact integer values) and hands everything else to tract's own builder.
//!
//! - `BatchNormalization`: `training_mode=1`, normalized with the batch's statistics, with the
//!   running mean and variance (tract refused it; [`batch_norm`]);
//! - `BitShift`: shifts by the width or more (or by a negative amount) move every bit out, as onnx's
//!   reference computes (tract shifted modulo the width);
//! - `Celu`: with its `alpha` (tract left out the multiplication by it);
//! - `Cast`: exact integers, symbolic shape values kept through integer casts;
//! - `Conv`: float16 summed in float32 and rounded once, the bias added in float16, as onnx's
//!   reference (tract summed in float16; [`conv`]);
//! - `ConstantOfShape`: float32 zeros without a `value` attribute, as the specification says;
//! - `DFT`: transformed in `f64` and rounded once, `dft_length` honoured, opset 17's `axis` typed
//!   (tract transformed float32 in float32; [`dft`]);
//! - `Flatten`: over symbolic dims (tract refuses a product of two symbols);
//! - `Gather`: a constant affine index table is a slicing view;
//! - `Gemm`: float16 computed as onnx's reference (tract refused a float16 `C`; [`gemm`]);
//! - `LayerNormalization`: float32 on our kernel, the mean a division by `n` corrected by the
//!   deviations (tract multiplied by an inexact `1/n`: constant rows did not normalize to 0;
//!   [`layer_norm`]);
//! - `LogSoftmax`: one log-softmax, `x - max - ln(sum(exp(x - max)))` (tract took the log of a
//!   softmax, `-inf` once a probability underflows; [`log_softmax`]);
//! - `MatMul`: of two 1-D tensors, their dot product (tract inferred the scalar but refused to wire
//!   it);
//! - `Mean`: typed from its inputs (tract's builder panicked on a node typed without inference facts);
//! - `OneHot`: indices out of range give a row of `off` values, as the specification says (tract
//!   panicked), int64 indices read as such;
//! - `Pad`: over a shape vector (MXNet's `reverse`), with pads computed from symbolic dims, and in
//!   `wrap` mode (tract refused it; [`wrap_pad`]);
//! - `QuantizeLinear`, `DequantizeLinear`: 16-bit integer types and blocked quantization (tract read
//!   every zero point as 8 bits and refused `block_size`; [`quant`]);
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
//!   per node rather than after tract's analysis of the whole model ([`scan`]);
//! - `RotaryEmbedding` (opset 23): one op over the input (tract wired sixteen nodes a call);
//! - `Softmax`: float16 rounded where numpy rounds (tract multiplied by a rounded reciprocal;
//!   [`softmax`]);
//! - `SpaceToDepth`: `mode="CRD"` (tract moved blocks in the default DCR order whatever the mode);
//! - `Swish`: with its `alpha` (tract ran every Swish as SiLU, alpha 1);
//! - `Reshape`: `-1` over symbolic sums, volumes equal under a requirement;
//! - `Reduce*`, `Squeeze`, `Unsqueeze`, `Expand`, `Tile`, `Split`, `ConstantOfShape`, `Reshape`,
//!   `Pad`, `Resize`: axes, sizes, pads, scales and shapes given as runtime inputs, through one mechanism for shape
//!   parameters ([`params`]).

mod axes;
mod batch_norm;
mod bit_shift;
mod cast;
mod celu;
mod constant_of_shape;
mod conv;
mod dft;
mod expand;
mod extremum;
mod fill;
mod flatten;
mod gather;
mod gemm;
mod generated;
mod gru;
mod layer_norm;
mod log_softmax;
mod lstm;
mod matmul;
mod mean;
mod one_hot;
mod pad;
mod pad_params;
pub mod params;
mod quant;
mod range;
mod rec;
mod recurrent;
mod reduce;
mod reshape;
mod reshape_params;
mod resize;
mod rotary;
mod scan;
mod scan_batch;
mod scan_wire;
mod softmax;
mod space_to_depth;
mod split;
mod squeeze;
mod stock_node;
mod swish;
mod sympad;
mod tile;
mod wrap_pad;

pub use cast::SymbolicCast;
pub use pad::ShapePad;
pub use params::ParamOp;
pub use reshape::ReshapeAs;
pub(crate) use resize::resize_named;
pub use scan::{ScanForm, ScanInference};
pub use scan_batch::BatchScan;
pub use softmax::HalfSoftmax;
pub(crate) use swish::wire_swish;
pub use sympad::SymbolicPad;

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;
use tract_onnx::Onnx;

/// A tract-onnx op builder.
pub type Builder = fn(&ParsingContext, &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)>;

/// tract-onnx's own builder for `op_type`, for what a replacement leaves to tract.
pub fn stock(op_type: &'static str) -> Builder {
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
pub fn register(onnx: &mut Onnx) {
    onnx.op_register.insert("BatchNormalization", batch_norm::batch_norm);
    onnx.op_register.insert("BitShift", bit_shift::bit_shift);
    onnx.op_register.insert("Cast", cast::cast);
    onnx.op_register.insert("Celu", celu::celu);
    onnx.op_register.insert("ConstantOfShape", constant_of_shape::constant_of_shape);
    onnx.op_register.insert("Conv", conv::conv);
    onnx.op_register.insert("DFT", dft::dft);
    onnx.op_register.insert("Flatten", flatten::flatten);
    onnx.op_register.insert("Gather", gather::gather);
    onnx.op_register.insert("Gemm", gemm::gemm);
    for op in ["HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"] {
        onnx.op_register.insert(op, generated::generated);
    }
    onnx.op_register.insert("LayerNormalization", layer_norm::layer_norm);
    onnx.op_register.insert("LogSoftmax", log_softmax::log_softmax);
    onnx.op_register.insert("MatMul", matmul::matmul);
    onnx.op_register.insert("Mean", mean::mean);
    onnx.op_register.insert("OneHot", one_hot::one_hot);
    onnx.op_register.insert("Pad", pad::pad);
    onnx.op_register.insert("QuantizeLinear", quant::quantize_linear);
    onnx.op_register.insert("DequantizeLinear", quant::dequantize_linear);
    onnx.op_register.insert("Range", range::range);
    onnx.op_register.insert("Reshape", reshape::reshape);
    onnx.op_register.insert("Resize", resize::resize);
    onnx.op_register.insert("RotaryEmbedding", rotary::rotary_embedding);
    onnx.op_register.insert("Scan", scan::scan);
    for op in ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean"] {
        onnx.op_register.insert(op, reduce::reduce);
    }
    for op in ["ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"] {
        onnx.op_register.insert(op, reduce::reduce);
    }
    onnx.op_register.insert("Softmax", softmax::softmax);
    onnx.op_register.insert("SpaceToDepth", space_to_depth::space_to_depth);
    onnx.op_register.insert("Squeeze", squeeze::squeeze);
    onnx.op_register.insert("Swish", swish::swish);
    onnx.op_register.insert("Unsqueeze", squeeze::unsqueeze);
    onnx.op_register.insert("Expand", expand::expand);
    onnx.op_register.insert("Tile", tile::tile);
    onnx.op_register.insert("Split", split::split);
    for op in ["RNN", "GRU", "LSTM"] {
        onnx.op_register.insert(op, rec::rec);
    }
    // The ConstantOfShape builder above, wrapped for a shape known only at run time.
    onnx.op_register.insert("ConstantOfShape", fill::constant_of_shape);
}
