//! Slice: ONNX `Slice` (every opset) and Paddle's `slice` / `strided_slice`.
//!
//! ONNX: opsets 1-9 carry `starts`, `ends`, `axes?` as attributes; opsets 10, 11 and 13 take
//! `data, starts, ends, axes?, steps?` as inputs (11 allows negative axes; 13 only widens types). The
//! semantics are the same in all of them and are resolved here: for each listed axis,
//! `x[.., starts[i]:ends[i]:steps[i], ..]` with the ONNX clamping rule ([`Clamp::Onnx`]), every other
//! axis whole. Paddle's ops have the same shape (axes, starts, ends, strides) and clamping.
//!
//! Errors: a rank-0 input, lists of unequal lengths, an axis outside `[-rank, rank)`, a repeated axis
//! (ONNX leaves it undefined, Paddle keeps the last; we refuse it), a zero step.

use super::range::{resolve_range, resolve_range_with_dims, Clamp};
use crate::error::{SliceError, SliceResult};
use crate::view::{Dim, OutAxis, Selection};
use tract_onnx::prelude::TDim;

/// Parameters of an ONNX Slice or a Paddle slice / strided_slice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Slice {
    /// First index on each listed axis.
    pub starts: Vec<i64>,
    /// End (exclusive) on each listed axis.
    pub ends: Vec<i64>,
    /// The axes; `None` means `0..starts.len()`.
    pub axes: Option<Vec<i64>>,
    /// Steps; `None` means all 1.
    pub steps: Option<Vec<i64>>,
}

impl Slice {
    /// Normalized axes, checked: in range and distinct.
    pub(crate) fn normalized_axes(&self, rank: usize) -> SliceResult<Vec<usize>> {
        if rank == 0 {
            return Err(SliceError::ScalarInput);
        }
        let n = self.starts.len();
        let axes_len = self.axes.as_ref().map_or(n, Vec::len);
        let steps_len = self.steps.as_ref().map_or(n, Vec::len);
        if self.ends.len() != n || axes_len != n || steps_len != n {
            return Err(SliceError::LengthMismatch {
                what: "starts, ends, axes and steps",
                lens: format!("{}, {}, {}, {}", n, self.ends.len(), axes_len, steps_len),
            });
        }
        let mut seen = vec![false; rank];
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let a = self.axes.as_ref().map_or(i as i64, |axes| axes[i]);
            let r = rank as i64;
            let norm = if a < 0 { a.checked_add(r) } else { Some(a) };
            let norm = match norm {
                Some(v) if (0..r).contains(&v) => v as usize,
                _ => return Err(SliceError::AxisOutOfRange { axis: a, rank }),
            };
            if std::mem::replace(&mut seen[norm], true) {
                return Err(SliceError::RepeatedAxis { axis: norm });
            }
            out.push(norm);
        }
        Ok(out)
    }

    /// Resolves against `input_shape`.
    pub fn resolve<D: Dim>(&self, input_shape: &[D]) -> SliceResult<Selection<D>> {
        let rank = input_shape.len();
        let axes = self.normalized_axes(rank)?;
        let mut out: Vec<OutAxis<D>> = (0..rank)
            .map(|axis| OutAxis::Range { axis, start: D::from_i64(0), step: 1, len: input_shape[axis].clone() })
            .collect();
        for (i, &axis) in axes.iter().enumerate() {
            let step = self.steps.as_ref().map_or(1, |s| s[i]);
            if step == 0 {
                return Err(SliceError::ZeroStep { what: "axis", index: axis });
            }
            let r = resolve_range(&input_shape[axis], Some(self.starts[i]), Some(self.ends[i]), step, Clamp::Onnx)?;
            out[axis] = OutAxis::Range { axis, start: r.start, step, len: r.len };
        }
        Ok(Selection { input_shape: input_shape.to_vec(), fixed: vec![], out })
    }
}

/// A Slice whose starts and ends may be symbolic expressions (`x[:, :T]` with `T` from a `Shape`),
/// for the output shape only: the slice itself runs once the expressions have values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimSlice {
    /// First index on each listed axis.
    pub starts: Vec<TDim>,
    /// End (exclusive) on each listed axis.
    pub ends: Vec<TDim>,
    /// The axes; `None` means `0..starts.len()`.
    pub axes: Option<Vec<i64>>,
    /// Steps; `None` means all 1.
    pub steps: Option<Vec<i64>>,
}

impl DimSlice {
    /// The exact output shape over `input_shape`, with the same checks as [`Slice::resolve`]; `None`
    /// when a bound's sign cannot be decided (then the length depends on values not known yet).
    pub fn output_shape(&self, input_shape: &[TDim]) -> SliceResult<Option<Vec<TDim>>> {
        let n = self.starts.len();
        let check = Slice {
            starts: vec![0; n],
            ends: vec![0; self.ends.len()],
            axes: self.axes.clone(),
            steps: self.steps.clone(),
        };
        let axes = check.normalized_axes(input_shape.len())?;
        let mut shape = input_shape.to_vec();
        for (i, &axis) in axes.iter().enumerate() {
            let step = self.steps.as_ref().map_or(1, |s| s[i]);
            if step == 0 {
                return Err(SliceError::ZeroStep { what: "axis", index: axis });
            }
            let range = resolve_range_with_dims(
                &input_shape[axis],
                Some(&self.starts[i]),
                Some(&self.ends[i]),
                step,
                Clamp::Onnx,
            )?;
            match range {
                Some(r) => shape[axis] = r.len,
                None => return Ok(None),
            }
        }
        Ok(Some(shape))
    }
}
