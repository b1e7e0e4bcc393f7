//! AsStrided: Ascend's `AsStridedOperation` and `torch.as_strided`.
//!
//! `out[j] = flat[offset + Σ j_k * stride_k]` over the input's row-major buffer. Sizes, strides and the
//! offset are non-negative (a zero stride repeats an element, overlapping windows are fine). A view with
//! an empty axis reads nothing and needs no bounds; any other must satisfy
//! `offset + Σ (size_k - 1) * stride_k < numel`, computed with checked arithmetic (overflow is an
//! error, not a wrap). No rank limit (Ascend's kernel stops at 8; the semantics do not).

use crate::error::{SliceError, SliceResult};
use crate::view::{Dim, View, ViewAxis};

/// Parameters of an AsStrided.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AsStrided {
    /// Output shape.
    pub size: Vec<i64>,
    /// Stride of each output axis, in input elements.
    pub stride: Vec<i64>,
    /// Flat index of the first element.
    pub offset: i64,
}

impl AsStrided {
    /// Checks the parameters on their own (lengths and signs).
    pub fn check(&self) -> SliceResult<()> {
        if self.size.len() != self.stride.len() {
            return Err(SliceError::LengthMismatch {
                what: "size and stride",
                lens: format!("{}, {}", self.size.len(), self.stride.len()),
            });
        }
        for (what, values) in [("size", &self.size), ("stride", &self.stride)] {
            if let Some((i, &v)) = values.iter().enumerate().find(|(_, v)| **v < 0) {
                return Err(SliceError::Negative { what, value: v, at: format!(" at index {i}") });
            }
        }
        if self.offset < 0 {
            return Err(SliceError::Negative { what: "offset", value: self.offset, at: String::new() });
        }
        Ok(())
    }

    /// The view over a tensor of `input_shape`. With concrete dims the bounds are checked here; with
    /// symbolic ones they are checked when the dims are known (the graph re-resolves at run time).
    pub fn resolve<D: Dim>(&self, input_shape: &[D]) -> SliceResult<View<D>> {
        self.check()?;
        let view = View {
            offset: self.offset,
            axes: self.size.iter().zip(&self.stride).map(|(&len, &stride)| ViewAxis { len, stride }).collect(),
        };
        // Known dims: check now. Symbolic ones: checked when the graph runs with concrete shapes.
        if let Some(dims) = input_shape.iter().map(Dim::as_i64).collect::<Option<Vec<i64>>>() {
            let numel = dims
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))
                .ok_or(SliceError::Overflow { what: "input element count" })?;
            view.check_bounds(numel)?;
        }
        Ok(view.normalized().map_dims(&mut D::from_i64))
    }
}
