//! `lower`: our ops rewritten into standard ONNX (opset 13, or the model's if newer), so that any
//! runtime gives the same outputs.
//!
//! - StridedSlice → Slice (+ Squeeze for shrunk entries, + Unsqueeze for new axes). Where the input's
//!   dims are known, bounds are written already resolved (exact under any runtime's clamping, and never
//!   the `INT64_MAX` end with a negative step that onnxruntime mishandles). Where they are symbolic,
//!   bounds are translated as they are, except the one case where Python and ONNX clamping can differ
//!   (a negative step starting below `-dim`), which is refused.
//! - Paddle-form Slice (`ai.sliceops`) → ONNX Slice: same clamping rule, parameters as initializers or
//!   the node's own inputs cast to int64.
//! - AsStrided, ATen `as_strided` → `Reshape(x, [-1])` then a Slice when the view is one contiguous run,
//!   else a Gather over a constant index table (what torch.onnx itself writes).
//! - Runtime parameters: a StridedSlice without masks whose strides are constant and positive becomes a
//!   Slice of the same tensors (the two rules agree there); otherwise its bounds are computed in the
//!   graph with standard ops, exact under ONNX clamping (`lower/runtime.rs`).
//!
//! When the model's opset is below 13, the opset import is raised and the standard nodes whose form
//! changed by 13 (Slice 1-9 attributes, Squeeze/Unsqueeze attributes) are rewritten too; a model with
//! other nodes whose meaning may have changed is refused rather than silently altered.
//!
//! One file a job: `walk.rs` walks the graph and fixes the opset imports, `emit.rs` holds what one
//! lowering knows and writes (constants, fresh names, initializers, nodes, the Slice chain),
//! `ops.rs` lowers StridedSlice and Slice nodes, `as_strided.rs` AsStrided and ATen `as_strided`,
//! `bounds.rs` writes Slice bounds exact under any clamping, `runtime.rs` lowers a StridedSlice with
//! parameters known only at run time and `opset.rs` raises the standard nodes of an older opset.

mod as_strided;
mod bounds;
mod emit;
mod ops;
mod opset;
mod runtime;
mod walk;

pub use walk::{lower, lower_model, LowerReport};

/// The opset lowered models use at least.
pub(crate) const TARGET_OPSET: i64 = 13;
