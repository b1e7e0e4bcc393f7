//! [`Selection`]: a view written in index space, which is what the slicing front ends produce.
//!
//! Each output axis is either a new length-1 axis or an arithmetic progression along one input axis;
//! input axes indexed by a plain integer (shrunk) disappear. Because it names input *axes* rather than
//! flat offsets, a selection composes exactly with any view, symbolic dims included ([`View::select`]).

use super::affine::{View, ViewAxis};
use super::dim::Dim;
use crate::error::{SliceError, SliceResult};

/// One output axis of a [`Selection`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OutAxis<D = i64> {
    /// A new axis of length 1 (`np.newaxis`).
    New,
    /// `len` elements of input axis `axis`: indices `start, start + step, ..`.
    Range {
        /// Input axis.
        axis: usize,
        /// First index (meaningful only when `len > 0`).
        start: D,
        /// Step between indices (non-zero).
        step: i64,
        /// Number of indices.
        len: D,
    },
}

/// A slicing of a tensor of `input_shape` in index space.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Selection<D = i64> {
    /// Shape of the input the selection was resolved against.
    pub input_shape: Vec<D>,
    /// Input axes fixed at one index (dropped from the output), as `(axis, index)`.
    pub fixed: Vec<(usize, D)>,
    /// Output axes, in order.
    pub out: Vec<OutAxis<D>>,
}

impl<D: Dim> Selection<D> {
    /// The output shape.
    pub fn output_shape(&self) -> Vec<D> {
        self.out
            .iter()
            .map(|a| match a {
                OutAxis::New => D::from_i64(1),
                OutAxis::Range { len, .. } => len.clone(),
            })
            .collect()
    }

    /// The selection as a flat view of its input's row-major buffer.
    pub fn to_view(&self) -> SliceResult<View<D>> {
        View::identity(&self.input_shape)?.select(self)
    }
}

impl<D: Dim> View<D> {
    /// The view `sel ∘ self`: `sel` indexes this view's output (its `input_shape` must be
    /// [`View::shape`]); the result reads this view's input directly. Always exact.
    pub fn select(&self, sel: &Selection<D>) -> SliceResult<View<D>> {
        let ovf = || SliceError::Overflow { what: "composed view offset" };
        if sel.input_shape.len() != self.axes.len() {
            return Err(SliceError::SelectionRank { selection: sel.input_shape.len(), view: self.axes.len() });
        }
        let mut offset = self.offset.clone();
        for (axis, index) in &sel.fixed {
            let term = index.checked_mul(&self.axes[*axis].stride).ok_or_else(ovf)?;
            offset = offset.checked_add(&term).ok_or_else(ovf)?;
        }
        let mut axes = Vec::with_capacity(sel.out.len());
        for a in &sel.out {
            match a {
                OutAxis::New => axes.push(ViewAxis { len: D::from_i64(1), stride: D::from_i64(0) }),
                OutAxis::Range { axis, start, step, len } => {
                    let base = &self.axes[*axis].stride;
                    if !len.is(0) {
                        let term = start.checked_mul(base).ok_or_else(ovf)?;
                        offset = offset.checked_add(&term).ok_or_else(ovf)?;
                    }
                    // A length-0 or length-1 axis never moves: its stride is 0 whatever the step (and a
                    // step like i64::MIN times the base stride need not fit).
                    let stride = if len.as_i64().is_some_and(|l| l <= 1) {
                        D::from_i64(0)
                    } else {
                        D::from_i64(*step).checked_mul(base).ok_or_else(ovf)?
                    };
                    axes.push(ViewAxis { len: len.clone(), stride });
                }
            }
        }
        Ok(View { offset, axes }.normalized())
    }
}
