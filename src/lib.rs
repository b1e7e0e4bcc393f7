//! # sliceops
//!
//! Exact, fast tensor slicing for ONNX graphs, on tract.
//!
//! Every slicing dialect models are exported with (TF/MindSpore `StridedSlice` with five masks, MXNet
//! `slice` with `None` bounds, ONNX and Paddle `Slice`, Ascend/torch `as_strided`) reduces to one
//! **affine view** of the input's row-major buffer:
//!
//! ```text
//! out[j0, .., jm-1] = flat[offset + j0*t0 + .. + jm-1*tm-1]
//! ```
//!
//! - [`view`]: the view and its algebra (normalize, merge axes, compose, bounds), concrete or symbolic.
//! - [`semantics`]: one front end per dialect, each a pure function from parameters and shape to a view.
//! - [`kernel`]: executes a view, by element size, block copies for contiguous runs, multi-threaded.
//!
//! Whole models go through [`Model`]: load, [`Model::infer`] every value's type and (symbolic) shape,
//! [`Model::run`]. [`fold`] and [`onnx::lower`] rewrite models. Errors at a node are [`NodeError`]s
//! (node, op, and the [`SliceError`] or message behind it), found in an error chain with
//! [`NodeError::find`].
//!
//! ```
//! use sliceops::tract_onnx::prelude::*;
//! use sliceops::Model;
//!
//! # fn main() -> anyhow::Result<()> {
//! // A shipped fixture: `y = x[1, ..., None, ::-1]`, a TensorFlow-style StridedSlice.
//! let model = Model::load_path("models/ss_shrink_ellipsis_new_axis_reverse/model.onnx")?;
//! let facts = model.infer()?;
//! let y = facts.iter().find(|f| f.name == "y").expect("the output's fact");
//! assert_eq!(y.shape, [4, 1, 5].map(TDim::from));
//!
//! let x = tract_ndarray::Array3::from_shape_fn((3, 4, 5), |(i, j, k)| (20 * i + 5 * j + k) as f32);
//! let outputs = model.run(vec![x.into_tensor()])?;
//! let (name, y) = &outputs[0];
//! assert_eq!((name.as_str(), y.shape()), ("y", &[4, 1, 5][..]));
//! // y[j, 0, k] = x[1, j, 4 - k]
//! assert_eq!(y.to_plain_array_view::<f32>()?[[2, 0, 1]], (20 + 5 * 2 + 3) as f32);
//! # Ok(())
//! # }
//! ```

#![warn(unreachable_pub)]

mod analysis;
mod cancel;
mod cli;
pub mod cost;
mod dims;
mod error;
pub mod fold;
mod guard;
mod io;
pub mod kernel;
mod load;
mod memory;
mod model;
mod node;
pub mod npy;
pub mod npz;
pub mod onnx;
mod ops;
mod plan;
mod profile;
pub mod report;
mod schema;
pub mod semantics;
mod slicing;
pub mod symbolic;
mod threads;
pub mod view;

pub use analysis::{
    Analysis, Case, DeclaredDim, DeclaredInput, Fallback, Origin, Requirement, SymbolInfo, ValueFact, MAX_CASES,
    MAX_ITERATIONS, MAX_TRANSLATIONS,
};
pub use cancel::{Cancel, Cancelled, Reason};
pub use dims::format_dim;
pub use error::{describe_error, Cause, NodeError, NodeErrorKind, Panicked, SliceError, SliceResult};
pub use load::read_model_file;
pub use model::Model;
pub use ops::onnx_parser;
/// The tract-onnx sliceops is built on, pinned to exactly 0.23.9 (sliceops fixes and registers ops
/// against that version's internals). Take tract's types (`Tensor`, `TDim`, facts) from here: a
/// program that depends on tract itself must use this same version, or its types are other types.
pub use tract_onnx;

/// The `sliceops` command line as the binary runs it: reads the process's arguments, runs the
/// command, and returns the exit status (0; 1 for an error, printed as one `error: ...` line; 2 for
/// bad usage). It lives in the library so that what only the command line needs (tables, profiles,
/// atomic output files) stays private.
pub fn cli_main() -> i32 {
    cli::main()
}
