//! The slicing dialects, each a pure function from its parameters and the input shape to a view (or a
//! [`Selection`](crate::view::Selection), a view in index space), or a typed error naming the entry or
//! axis, the value and the dim.
//!
//! | dialect | type | numpy equivalent |
//! |---|---|---|
//! | TF / MindSpore `strided_slice` | [`StridedSlice`] | `x[spec]` with `...`, `None`, ints, `a:b:c` |
//! | MXNet `slice` | [`MxnetSlice`] | `x[b0:e0:s0, ..]`, `None` bounds omitted |
//! | ONNX `Slice` (opsets 1, 10, 11, 13), Paddle `slice` / `strided_slice` | [`Slice`] | `x[.., s:e:k, ..]` on listed axes, ONNX clamping |
//! | Ascend / torch `as_strided` | [`AsStrided`] | `np.lib.stride_tricks.as_strided(x.ravel(), ..)` |

mod as_strided;
mod range;
mod slice;
mod strided_slice;

pub use as_strided::AsStrided;
pub use range::{resolve_range, AxisRange, Clamp};
pub use slice::{DimSlice, Slice};
pub(crate) use strided_slice::place_spec;
pub use strided_slice::{resolve_spec, MxnetSlice, Placed, SpecEntry, StridedSlice};
