//! What exported models write instead of our ops, recognized as views.
//!
//! - tract's axis changes (ONNX Squeeze, Unsqueeze, Reshape, Flatten, Transpose of one axis) and its
//!   own `Slice` are views; next to a [`ViewOp`](super::ViewOp) they join its chain, so a
//!   Slice/Squeeze/Unsqueeze/Reshape run is one copy.
//! - A `Gather` over a constant index table that is affine (`offset + Σ j_k * stride_k`, checked entry
//!   by entry) is a view too: torch exports `as_strided` and `unfold` as `Reshape(x, [-1])` + such a
//!   Gather, and integer indexing as a Gather with a scalar index.

use crate::error::{SliceError, SliceResult};
use crate::view::{row_major_strides, Dim, OutAxis, Resolved, Selection, View, ViewAxis};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::AxisOp;

/// An axis change of tract's (`AxisOp`), as a step of a chain.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum AxisChange {
    /// Insert a length-1 axis at this position.
    Add(usize),
    /// Remove this length-1 axis.
    Rm(usize),
    /// Move an axis from one position to another.
    Move(usize, usize),
    /// Replace the dims `from` at position `at` by `to` (same element count).
    Reshape {
        /// Position.
        at: usize,
        /// The dims replaced.
        from: Vec<TDim>,
        /// The new dims (at most one symbolic).
        to: Vec<TDim>,
    },
}

impl AxisChange {
    /// The change an `AxisOp` makes, if it can be a chain step.
    pub(crate) fn from_axis_op(op: &AxisOp) -> Option<AxisChange> {
        Some(match op {
            AxisOp::Add(a) => AxisChange::Add(*a),
            AxisOp::Rm(a) => AxisChange::Rm(*a),
            AxisOp::Move(f, t) => AxisChange::Move(*f, *t),
            AxisOp::Reshape(at, from, to) => {
                if to.iter().filter(|d| d.as_i64().is_none()).count() > 1 {
                    return None;
                }
                AxisChange::Reshape { at: *at, from: from.to_vec(), to: to.to_vec() }
            }
        })
    }

    /// Resolves against an input shape.
    pub(crate) fn resolve<D: Dim>(&self, shape: &[D]) -> SliceResult<Resolved<D>> {
        let rank = shape.len();
        let range = |axis: usize| OutAxis::Range { axis, start: D::from_i64(0), step: 1, len: shape[axis].clone() };
        let sel = |fixed, out| Resolved::Select(Selection { input_shape: shape.to_vec(), fixed, out });
        Ok(match self {
            AxisChange::Add(a) if *a <= rank => {
                let mut out: Vec<OutAxis<D>> = (0..rank).map(range).collect();
                out.insert(*a, OutAxis::New);
                sel(vec![], out)
            }
            AxisChange::Rm(a) if *a < rank => {
                if shape[*a].as_i64().is_some_and(|d| d != 1) {
                    return Err(SliceError::RemovedAxisNotUnit { axis: *a, dim: shape[*a].to_string() });
                }
                sel(vec![(*a, D::from_i64(0))], (0..rank).filter(|i| i != a).map(range).collect())
            }
            AxisChange::Move(from, to) if *from < rank && *to < rank => {
                let mut order: Vec<usize> = (0..rank).filter(|i| i != from).collect();
                order.insert(*to, *from);
                sel(vec![], order.into_iter().map(range).collect())
            }
            AxisChange::Reshape { at, from, to } if at + from.len() <= rank => {
                let mut new_shape: Vec<D> = shape[..*at].to_vec();
                let mut unknown = None;
                for (k, d) in to.iter().enumerate() {
                    match D::from_tdim(d) {
                        Some(d) => new_shape.push(d),
                        None => {
                            unknown = Some(new_shape.len());
                            new_shape.push(D::from_i64(1));
                            debug_assert!(k < to.len());
                        }
                    }
                }
                new_shape.extend(shape[at + from.len()..].iter().cloned());
                if let Some(ix) = unknown {
                    // A concrete shape with one symbolic target dim: it is what keeps the count.
                    let product = |dims: &[D]| -> Option<i64> {
                        dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(d.as_i64()?))
                    };
                    let before = product(&shape[*at..at + from.len()]).ok_or(SliceError::ReshapeUnknownCount)?;
                    let known = product(&new_shape[*at..at + to.len()]).filter(|&k| k > 0 && before % k == 0);
                    let known =
                        known.ok_or_else(|| SliceError::ReshapeCount { elements: before, to: format!("{to:?}") })?;
                    new_shape[ix] = D::from_i64(before / known);
                }
                Resolved::Flat(View::identity(&new_shape)?)
            }
            other => return Err(SliceError::ChangeOutOfRank { change: format!("{other:?}"), rank }),
        })
    }
}

/// A Gather along `axis` by a constant affine index table: `out[.., j, ..] = x[.., offset + Σ j_k *
/// strides[k], ..]`, the table's shape being `sizes`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AffineGather {
    /// The gathered axis.
    pub axis: usize,
    /// Index of the table's first entry (non-negative).
    pub offset: i64,
    /// Shape of the index table.
    pub sizes: Vec<i64>,
    /// Step of the index along each table axis (any sign).
    pub strides: Vec<i64>,
}

impl AffineGather {
    /// Recognizes an index table (int32/int64) as affine; negative indices are taken from the end of an
    /// axis of known size `dim` (without it, any negative index means no). Every entry is checked.
    pub(crate) fn from_table(axis: usize, table: &Tensor, dim: Option<i64>) -> Option<AffineGather> {
        let values: Vec<i64> = match table.datum_type() {
            DatumType::I64 => table.try_as_plain_ram().ok()?.as_slice::<i64>().ok()?.to_vec(),
            DatumType::I32 => {
                table.try_as_plain_ram().ok()?.as_slice::<i32>().ok()?.iter().map(|&v| v as i64).collect()
            }
            _ => return None,
        };
        let values: Vec<i64> =
            values.into_iter().map(|v| if v < 0 { dim.map(|d| v + d) } else { Some(v) }).collect::<Option<_>>()?;
        let sizes: Vec<i64> = table.shape().iter().map(|&d| d as i64).collect();
        if values.is_empty() {
            return Some(AffineGather { axis, offset: 0, sizes: sizes.clone(), strides: vec![0; sizes.len()] });
        }
        let unit = row_major_strides(&sizes).ok()?;
        let offset = values[0];
        // The step along table axis k: the entry one unit along it, minus the first (0 if the axis has
        // one entry).
        let strides: Vec<i64> =
            unit.iter().zip(&sizes).map(|(&u, &n)| if n > 1 { values[u as usize] - offset } else { 0 }).collect();
        let mut index = vec![0i64; sizes.len()];
        let mut expected = i128::from(offset);
        for &v in &values {
            if i128::from(v) != expected {
                return None;
            }
            for k in (0..sizes.len()).rev() {
                index[k] += 1;
                expected += i128::from(strides[k]);
                if index[k] < sizes[k] {
                    break;
                }
                expected -= i128::from(strides[k]) * i128::from(sizes[k]);
                index[k] = 0;
            }
        }
        Some(AffineGather { axis, offset, sizes, strides })
    }

    /// Resolves against an input shape: a flat view of the input's buffer.
    pub(crate) fn resolve<D: Dim>(&self, shape: &[D]) -> SliceResult<Resolved<D>> {
        let a = self.axis;
        if a >= shape.len() {
            return Err(SliceError::AxisOutOfRange { axis: a as i64, rank: shape.len() });
        }
        // Along the gathered axis, the indices must stay in [0, dim).
        let along = View {
            offset: self.offset,
            axes: self.sizes.iter().zip(&self.strides).map(|(&len, &stride)| ViewAxis { len, stride }).collect(),
        };
        if let (Some(d), Some((lo, hi))) = (shape[a].as_i64(), along.index_range()?) {
            if lo < 0 || hi >= d {
                return Err(SliceError::IndexOutOfRange {
                    entry: 0,
                    axis: a,
                    value: if lo < 0 { lo } else { hi },
                    dim: d.to_string(),
                });
            }
        }
        let id = View::identity(shape)?;
        let base = id.axes[a].stride.clone();
        let ovf = || SliceError::Overflow { what: "gather view" };
        let mut axes: Vec<ViewAxis<D>> = id.axes[..a].to_vec();
        for (&len, &stride) in self.sizes.iter().zip(&self.strides) {
            let stride = D::from_i64(stride).checked_mul(&base).ok_or_else(ovf)?;
            axes.push(ViewAxis { len: D::from_i64(len), stride });
        }
        axes.extend(id.axes[a + 1..].iter().cloned());
        let offset = D::from_i64(self.offset).checked_mul(&base).ok_or_else(ovf)?;
        Ok(Resolved::Flat(View { offset, axes }.normalized()))
    }
}
