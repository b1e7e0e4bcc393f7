//! The affine view every slicing op reduces to, and its algebra: normalization, axis merging,
//! composition and bounds checks. Pure: no graph, no ONNX.
//!
//! ```text
//! out[j0, .., jm-1] = flat[offset + j0*t0 + .. + jm-1*tm-1]
//! ```

mod affine;
mod dim;
mod resolved;
mod selection;

pub(crate) use affine::row_major_strides;
pub use affine::{View, ViewAxis};
pub use dim::Dim;
pub use resolved::Resolved;
pub use selection::{OutAxis, Selection};
