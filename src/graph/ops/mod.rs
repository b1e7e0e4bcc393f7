//! Standard ONNX ops tract-onnx 0.23.9 does not implement (or implements only in part), built on
//! tract's kernels where one exists:
//!
//! - `Attention` (opsets 23-25): every variant of the specification, as tract's einsums around our
//!   masked softmax ([`attention`]).

pub mod attention;
mod attrs;

use tract_onnx::Onnx;

/// Registers every op of this module (replacing tract-onnx's builder where it has one).
pub fn register(onnx: &mut Onnx) {
    onnx.op_register.insert("Attention", attention::attention);
}
