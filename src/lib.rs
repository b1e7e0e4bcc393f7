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

pub mod analysis;
pub mod dims;
pub mod error;
pub mod graph;
pub mod kernel;
mod model;
pub mod npy;
pub mod onnx;
pub mod profile;
pub mod report;
pub mod semantics;
pub mod threads;
pub mod view;

pub use error::{NodeError, NodeErrorKind, Panicked, SliceError, SliceResult};
pub use graph::onnx;
pub use model::{decode_proto, Model, ValueFact};
pub use tract_onnx;
