//! The affine view: `out[j0, .., jm-1] = flat[offset + j0*t0 + .. + jm-1*tm-1]` over the input's
//! row-major buffer `flat`, with signed strides.

use super::dim::Dim;
use crate::error::{SliceError, SliceResult};

/// One output axis of a view: how many elements it has and how far apart they are in the input buffer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViewAxis<D = i64> {
    /// Number of elements along the axis (`>= 0`).
    pub len: D,
    /// Distance in input elements between consecutive elements (any sign, 0 to repeat one element).
    pub stride: D,
}

/// An affine view of a row-major buffer: every slicing op, once its parameters are known, is one.
///
/// `View<i64>` is concrete and executable; `View<TDim>` is the same thing over symbolic dims, where the
/// offset and lengths are expressions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct View<D = i64> {
    /// Flat index of the first element (`out[0, .., 0]`).
    pub offset: D,
    /// The output axes, outermost first.
    pub axes: Vec<ViewAxis<D>>,
}

fn overflow(what: &'static str) -> SliceError {
    SliceError::Overflow { what }
}

/// Row-major strides of `shape`: `strides[i] = shape[i+1] * .. * shape[rank-1]`.
pub(crate) fn row_major_strides<D: Dim>(shape: &[D]) -> SliceResult<Vec<D>> {
    let mut strides = vec![D::from_i64(1); shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].checked_mul(&shape[i + 1]).ok_or_else(|| overflow("row-major stride"))?;
    }
    Ok(strides)
}

impl<D: Dim> View<D> {
    /// The view that reads a tensor of `shape` as it is (row-major, offset 0).
    pub fn identity(shape: &[D]) -> SliceResult<Self> {
        let strides = row_major_strides(shape)?;
        let axes = shape.iter().zip(strides).map(|(len, stride)| ViewAxis { len: len.clone(), stride }).collect();
        Ok(View { offset: D::from_i64(0), axes })
    }

    /// The output shape.
    pub fn shape(&self) -> Vec<D> {
        self.axes.iter().map(|a| a.len.clone()).collect()
    }

    /// Output rank.
    pub fn rank(&self) -> usize {
        self.axes.len()
    }

    /// Whether some axis is known to be empty (the view reads nothing).
    pub(crate) fn is_known_empty(&self) -> bool {
        self.axes.iter().any(|a| a.len.is(0))
    }

    /// The canonical form of the same view: the stride of a length-1 axis is 0 (it never moves), and an
    /// empty view has offset 0 and all strides 0 (it reads nothing). Two views that read the same
    /// elements in the same order and shape normalize to the same value when their dims are known.
    pub fn normalized(&self) -> Self {
        if self.is_known_empty() {
            return View {
                offset: D::from_i64(0),
                axes: self.axes.iter().map(|a| ViewAxis { len: a.len.clone(), stride: D::from_i64(0) }).collect(),
            };
        }
        View {
            offset: self.offset.clone(),
            axes: self
                .axes
                .iter()
                .map(|a| ViewAxis {
                    len: a.len.clone(),
                    stride: if a.len.is(1) { D::from_i64(0) } else { a.stride.clone() },
                })
                .collect(),
        }
    }

    /// The same elements in the same order with the fewest axes: length-1 axes dropped, and an axis merged
    /// into its outer neighbour when `outer.stride == inner.len * inner.stride` (the two walk the buffer as
    /// one). This is the layout the kernel iterates; the output *shape* is [`View::shape`], not this one's.
    pub fn coalesced(&self) -> Self {
        let mut axes: Vec<ViewAxis<D>> = Vec::with_capacity(self.axes.len());
        if self.is_known_empty() {
            return View {
                offset: D::from_i64(0),
                axes: vec![ViewAxis { len: D::from_i64(0), stride: D::from_i64(0) }],
            };
        }
        for axis in &self.axes {
            if axis.len.is(1) {
                continue;
            }
            if let Some(outer) = axes.last_mut() {
                let joint = axis.len.checked_mul(&axis.stride);
                if joint.as_ref() == Some(&outer.stride) {
                    if let Some(len) = outer.len.checked_mul(&axis.len) {
                        *outer = ViewAxis { len, stride: axis.stride.clone() };
                        continue;
                    }
                }
            }
            axes.push(axis.clone());
        }
        View { offset: self.offset.clone(), axes }
    }

    /// Whether the view reads a contiguous, increasing run of the buffer (offset, offset+1, ...).
    pub fn is_contiguous(&self) -> bool {
        let c = self.coalesced();
        c.axes.is_empty() || (c.axes.len() == 1 && c.axes[0].stride.is(1))
    }

    /// Whether the view reads the whole buffer of a tensor of `input_shape` as it is.
    pub(crate) fn is_identity_of(&self, input_shape: &[D]) -> bool {
        match View::identity(input_shape) {
            Ok(id) => self.shape() == id.shape() && self.normalized() == id.normalized(),
            Err(_) => false,
        }
    }

    /// The view `next ∘ self`: `next` reads the row-major buffer of this view's output; the result reads
    /// this view's input directly. `None` when no single affine view equals the pair (possible only when
    /// `next` steps across this view's axes in a way that does not line up with them).
    pub fn then(&self, next: &View<D>) -> Option<View<D>> {
        let me = self.coalesced();
        if me.axes.is_empty() || (me.axes.len() == 1 && me.axes[0].stride.is(1)) {
            // Contiguous: the output buffer is the input buffer shifted by our offset.
            let offset = me.offset.checked_add(&next.offset)?;
            return Some(View { offset, axes: next.axes.clone() });
        }
        let me_i64 = me.to_i64()?;
        let next_i64 = next.to_i64()?;
        let composed = compose_concrete(&me_i64, &next_i64)?;
        Some(composed.map_dims(&mut D::from_i64))
    }

    /// The same view with known values only, `None` if some dim is symbolic.
    pub fn to_i64(&self) -> Option<View<i64>> {
        let offset = self.offset.as_i64()?;
        let axes = self
            .axes
            .iter()
            .map(|a| Some(ViewAxis { len: a.len.as_i64()?, stride: a.stride.as_i64()? }))
            .collect::<Option<Vec<_>>>()?;
        Some(View { offset, axes })
    }

    /// Applies `f` to every dim of the view.
    pub(crate) fn map_dims<E>(&self, f: &mut impl FnMut(D) -> E) -> View<E> {
        View {
            offset: f(self.offset.clone()),
            axes: self.axes.iter().map(|a| ViewAxis { len: f(a.len.clone()), stride: f(a.stride.clone()) }).collect(),
        }
    }
}

impl View<i64> {
    /// Number of output elements, `None` on overflow.
    pub fn numel(&self) -> Option<u64> {
        self.axes.iter().try_fold(1u64, |acc, a| acc.checked_mul(u64::try_from(a.len).ok()?))
    }

    /// The smallest and largest flat index the view reads, or `None` if it reads nothing.
    pub(crate) fn index_range(&self) -> SliceResult<Option<(i64, i64)>> {
        if self.axes.iter().any(|a| a.len == 0) {
            return Ok(None);
        }
        let (mut lo, mut hi) = (self.offset, self.offset);
        for a in &self.axes {
            if a.len < 0 {
                return Err(SliceError::Negative { what: "length", value: a.len, at: String::new() });
            }
            let reach = (a.len - 1).checked_mul(a.stride).ok_or_else(|| overflow("view extent"))?;
            if reach < 0 {
                lo = lo.checked_add(reach).ok_or_else(|| overflow("view extent"))?;
            } else {
                hi = hi.checked_add(reach).ok_or_else(|| overflow("view extent"))?;
            }
        }
        Ok(Some((lo, hi)))
    }

    /// Checks, with checked arithmetic, that every index the view reads lies in `[0, numel)`.
    pub fn check_bounds(&self, numel: u64) -> SliceResult<()> {
        match self.index_range()? {
            None => Ok(()),
            Some((lo, _)) if lo < 0 => {
                Err(SliceError::OutOfBounds { max_index: lo.to_string(), numel: numel.to_string() })
            }
            Some((_, hi)) if (hi as u64) >= numel => {
                Err(SliceError::OutOfBounds { max_index: hi.to_string(), numel: numel.to_string() })
            }
            Some(_) => Ok(()),
        }
    }
}

/// Concrete composition: re-expresses each of `next`'s strides as a move along `me`'s (coalesced) axes
/// and accepts the result only if no such move ever carries from one of `me`'s axes into another over
/// `next`'s whole index box. Then the flat index `next` computes is, for every output element, the
/// row-major index of one in-range multi-index of `me`, so reading through `me` is affine.
fn compose_concrete(me: &View<i64>, next: &View<i64>) -> Option<View<i64>> {
    if next.axes.iter().any(|a| a.len == 0) {
        return Some(View { offset: 0, axes: next.axes.iter().map(|a| ViewAxis { len: a.len, stride: 0 }).collect() });
    }
    let lens: Vec<i64> = me.axes.iter().map(|a| a.len).collect();
    let radix = row_major_strides(&lens).ok()?;
    let digits = |v: i64| -> Option<Vec<i64>> {
        let (neg, mut rest) = (v < 0, v.checked_abs()?);
        let mut out = vec![0i64; lens.len()];
        for (i, r) in radix.iter().enumerate() {
            let d = if i == 0 { rest / r } else { (rest / r) % lens[i] };
            rest -= d * r;
            out[i] = if neg { -d } else { d };
        }
        Some(out)
    };
    let start = digits(next.offset)?;
    let steps: Vec<Vec<i64>> = next.axes.iter().map(|a| digits(a.stride)).collect::<Option<_>>()?;
    for i in 0..lens.len() {
        let (mut lo, mut hi) = (i128::from(start[i]), i128::from(start[i]));
        for (k, a) in next.axes.iter().enumerate() {
            let reach = i128::from(a.len - 1) * i128::from(steps[k][i]);
            if reach < 0 {
                lo += reach
            } else {
                hi += reach
            }
        }
        if lo < 0 || hi >= i128::from(lens[i]) {
            return None;
        }
    }
    let dot = |d: &[i64]| -> Option<i64> {
        d.iter().zip(&me.axes).try_fold(0i64, |acc, (d, a)| i64::checked_add(acc, i64::checked_mul(*d, a.stride)?))
    };
    let offset = me.offset.checked_add(dot(&start)?)?;
    let axes = next
        .axes
        .iter()
        .zip(&steps)
        .map(|(a, d)| Some(ViewAxis { len: a.len, stride: dot(d)? }))
        .collect::<Option<Vec<_>>>()?;
    Some(View { offset, axes })
}
