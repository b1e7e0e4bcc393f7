//! Standard ONNX ops on tract, where tract-onnx 0.23.9 lacks them or gets them wrong, grouped by
//! family as the ONNX operator list is: `replaced` lists the builders of tract's that ours replace
//! (and why), `added` the ops tract does not have. Each op is one file: its builder, its inference
//! rules and how it is wired into a typed model; shape parameters given as inputs go through one
//! mechanism (`params`).
//!
//! May import: the base layer, the pure layers (`view`, `semantics`, `kernel`, `symbolic`, `dims`),
//! [`crate::node`] and [`crate::slicing`]. Nothing above (analysis, plan, model, write-back).

pub(crate) mod added;
pub(crate) mod array;
pub(crate) mod control;
#[cfg(feature = "image-decoder")]
pub(crate) mod image_decoder;
pub(crate) mod math;
pub(crate) mod ml;
pub(crate) mod nn;
pub(crate) mod params;
pub(crate) mod quant;
pub(crate) mod random;
pub(crate) mod rec;
pub(crate) mod replaced;
pub(crate) mod stock_node;
pub(crate) mod training;

pub(crate) use array::cast::SymbolicCast;
pub(crate) use array::reshape::ReshapeAs;
pub(crate) use control::scan_node::ScanInference;
pub(crate) use math::softmax::HalfSoftmax;
pub(crate) use params::ParamOp;
pub(crate) use replaced::stock;

use tract_onnx::Onnx;

/// tract-onnx with sliceops' builders registered: `StridedSlice`, `AsStrided`, `ATen` (as_strided) and
/// `Slice` (replacing tract's), our replacements of tract's builders and the ops tract lacks.
/// Declared shapes and types in the model (value_info, graph outputs) are not imposed on the analysis:
/// exporters write wrong ones; [`crate::Model`] compares them with what inference finds and reports
/// the differences as warnings.
pub fn onnx_parser() -> Onnx {
    let mut onnx =
        tract_onnx::onnx().with_ignore_value_info(true).with_ignore_output_shapes(true).with_ignore_output_types(true);
    crate::slicing::register(&mut onnx);
    replaced::register(&mut onnx);
    added::register(&mut onnx);
    onnx
}
