//! The slicing ops on tract: the builders of `StridedSlice`, `Slice`, `AsStrided` and `ATen`
//! (as_strided) (`builders`), each node's parameters read into a spec (`spec`) and resolved into
//! steps (`step`), the inference op and its rules ([`SliceInference`]), the typed ops (a
//! constant-parameter [`ViewOp`] and a runtime-parameter [`DynSliceOp`]) with their declutter rules,
//! and the patterns of exported graphs that are views (`patterns`: affine gathers, axis changes).
//!
//! May import: the base layer, the pure layers and [`crate::node`].

mod builders;
mod dyn_op;
mod inference;
mod patterns;
mod spec;
mod step;
mod view_op;

pub(crate) use builders::DOMAIN;
pub(crate) use dyn_op::DynSliceOp;
pub(crate) use inference::SliceInference;
pub(crate) use patterns::AffineGather;
pub(crate) use spec::read_ints_with;
pub(crate) use step::{Label, SliceStep};
pub(crate) use view_op::{PlannedView, ViewOp};

use tract_onnx::Onnx;

/// Registers the slicing builders: `StridedSlice`, `AsStrided`, `ATen` (as_strided) and `Slice`
/// (replacing tract's).
pub(crate) fn register(onnx: &mut Onnx) {
    onnx.op_register.insert("StridedSlice", builders::strided_slice);
    onnx.op_register.insert("AsStrided", builders::as_strided);
    onnx.op_register.insert("ATen", builders::aten);
    onnx.op_register.insert("Slice", builders::slice);
}
