//! tract integration: op builders for every slicing op, the inference op and its rules, the typed ops
//! (a constant-parameter [`ViewOp`] and a runtime-parameter [`DynSliceOp`]) with their declutter rules,
//! and the registration into tract-onnx ([`onnx_parser`]).

pub(crate) mod attrs;
mod builders;
mod dyn_op;
pub(crate) mod expanded;
mod fixes;
mod inference;
pub mod ops;
mod patterns;
mod plan_ops;
mod spec;
mod step;
pub(crate) mod typed_inputs;
mod view_op;

pub(crate) use builders::label as node_label;
pub(crate) use builders::DOMAIN;
pub use dyn_op::{DynSliceOp, OutDim};
pub use fixes::{
    BatchScan, HalfSoftmax, ParamOp, ReshapeAs, ScanForm, ScanInference, ShapePad, SymbolicCast, SymbolicPad,
};
pub use inference::SliceInference;
pub use patterns::{AffineGather, AxisChange};
pub(crate) use plan_ops::use_our_kernels;
pub use plan_ops::{
    AxisSoftmax, BroadcastBin, CubePow, DirectConv, PlaneMaxPool, RowLayerNorm, RowResize, SmallMatMul,
};
pub(crate) use spec::dims_of;
pub use spec::{NodeKind, NodeSpec};
pub use step::{Chain, Label, SliceStep};
pub use view_op::{PlannedView, ViewOp};

use tract_onnx::Onnx;

/// tract-onnx with sliceops' builders registered: `StridedSlice`, `AsStrided`, `ATen` (as_strided) and
/// `Slice` (replacing tract's). Declared shapes and types in the model (value_info, graph outputs) are
/// not imposed on the analysis: exporters write wrong ones; [`crate::Model`] compares them with what
/// inference finds and reports the differences as warnings.
pub fn onnx_parser() -> Onnx {
    let mut onnx =
        tract_onnx::onnx().with_ignore_value_info(true).with_ignore_output_shapes(true).with_ignore_output_types(true);
    onnx.op_register.insert("StridedSlice", builders::strided_slice);
    onnx.op_register.insert("AsStrided", builders::as_strided);
    onnx.op_register.insert("ATen", builders::aten);
    onnx.op_register.insert("Slice", builders::slice);
    fixes::register(&mut onnx);
    ops::register(&mut onnx);
    onnx
}
