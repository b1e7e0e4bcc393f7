//! StridedSlice: TensorFlow's `tf.strided_slice` and MindSpore's `ops.strided_slice`, with five bit masks.
//!
//! The result is exactly numpy's `x[spec]`, entry `i` of the spec being `...` (ellipsis bit), `None`
//! (new-axis bit), the integer `begin[i]` (shrink bit), or `begin[i]:end[i]:strides[i]` with a bound
//! omitted under its mask bit. A spec shorter than the rank ends in an implicit `...`.
//!
//! MindSpore's own CPU kernel departs from numpy for some masks (it applies begin_mask to shrunk axes,
//! among others); we follow numpy, as TensorFlow does.

use super::range::{resolve_range, Clamp};
use crate::error::{SliceError, SliceResult};
use crate::view::{Dim, OutAxis, Selection};

/// Parameters of a StridedSlice, as an ONNX node or a framework call carries them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct StridedSlice {
    /// `begin[i]` of each spec entry.
    pub begin: Vec<i64>,
    /// `end[i]` of each spec entry.
    pub end: Vec<i64>,
    /// `strides[i]` of each spec entry; `None` means all 1.
    pub strides: Option<Vec<i64>>,
    /// Bit i: omit `begin[i]`.
    pub begin_mask: i64,
    /// Bit i: omit `end[i]`.
    pub end_mask: i64,
    /// Bit i: entry i is `...`.
    pub ellipsis_mask: i64,
    /// Bit i: entry i is `np.newaxis`.
    pub new_axis_mask: i64,
    /// Bit i: entry i is the integer index `begin[i]`.
    pub shrink_axis_mask: i64,
}

/// One entry of a numpy index expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecEntry {
    /// `...`
    Ellipsis,
    /// `np.newaxis`
    NewAxis,
    /// An integer index (the axis disappears).
    Index(i64),
    /// `start:end:step`, `None` for an omitted bound.
    Range(Option<i64>, Option<i64>, i64),
}

fn bit(mask: i64, i: usize) -> bool {
    i < 64 && (mask >> i) & 1 == 1
}

impl StridedSlice {
    /// The numpy index expression these parameters denote (checks lengths, masks and strides).
    pub fn spec(&self) -> SliceResult<Vec<SpecEntry>> {
        for (name, value) in [
            ("begin_mask", self.begin_mask),
            ("end_mask", self.end_mask),
            ("ellipsis_mask", self.ellipsis_mask),
            ("new_axis_mask", self.new_axis_mask),
            ("shrink_axis_mask", self.shrink_axis_mask),
        ] {
            if value < 0 {
                return Err(SliceError::NegativeMask { name, value });
            }
        }
        let n = self.begin.len();
        let strides_len = self.strides.as_ref().map_or(n, Vec::len);
        if self.end.len() != n || strides_len != n {
            return Err(SliceError::LengthMismatch {
                what: "begin, end and strides",
                lens: format!("{}, {}, {}", n, self.end.len(), strides_len),
            });
        }
        if (0..n).filter(|&i| bit(self.ellipsis_mask, i)).count() > 1 {
            return Err(SliceError::MultipleEllipsis { mask: self.ellipsis_mask });
        }
        (0..n)
            .map(|i| {
                let stride = self.strides.as_ref().map_or(1, |s| s[i]);
                if bit(self.ellipsis_mask, i) {
                    Ok(SpecEntry::Ellipsis)
                } else if bit(self.new_axis_mask, i) {
                    Ok(SpecEntry::NewAxis)
                } else if stride == 0 {
                    Err(SliceError::ZeroStep { what: "spec entry", index: i })
                } else if bit(self.shrink_axis_mask, i) {
                    if stride < 0 {
                        return Err(SliceError::NegativeShrinkStride { entry: i, stride });
                    }
                    Ok(SpecEntry::Index(self.begin[i]))
                } else {
                    let b = (!bit(self.begin_mask, i)).then_some(self.begin[i]);
                    let e = (!bit(self.end_mask, i)).then_some(self.end[i]);
                    Ok(SpecEntry::Range(b, e, stride))
                }
            })
            .collect()
    }

    /// Resolves against `input_shape`: the selection equal to numpy's `x[spec]`.
    pub fn resolve<D: Dim>(&self, input_shape: &[D]) -> SliceResult<Selection<D>> {
        resolve_spec(&self.spec()?, input_shape)
    }
}

/// Resolves a numpy index expression (basic indexing only) against `input_shape`.
pub fn resolve_spec<D: Dim>(spec: &[SpecEntry], input_shape: &[D]) -> SliceResult<Selection<D>> {
    let rank = input_shape.len();
    let real = spec.iter().filter(|e| matches!(e, SpecEntry::Index(_) | SpecEntry::Range(..))).count();
    if real > rank {
        return Err(SliceError::TooManyEntries { entries: real, rank });
    }
    let has_ellipsis = spec.contains(&SpecEntry::Ellipsis);
    let mut sel = Selection { input_shape: input_shape.to_vec(), fixed: vec![], out: vec![] };
    let mut axis = 0usize;
    let whole = |sel: &mut Selection<D>, axis: usize| {
        let len = input_shape[axis].clone();
        sel.out.push(OutAxis::Range { axis, start: D::from_i64(0), step: 1, len });
    };
    for (entry_index, entry) in spec.iter().enumerate() {
        match *entry {
            SpecEntry::Ellipsis => {
                for _ in 0..rank - real {
                    whole(&mut sel, axis);
                    axis += 1;
                }
            }
            SpecEntry::NewAxis => sel.out.push(OutAxis::New),
            SpecEntry::Index(i) => {
                let dim = &input_shape[axis];
                let index = match dim.as_i64() {
                    Some(d) => {
                        if i < -d || i >= d {
                            return Err(SliceError::IndexOutOfRange {
                                entry: entry_index,
                                axis,
                                value: i,
                                dim: d.to_string(),
                            });
                        }
                        D::from_i64(if i < 0 { i + d } else { i })
                    }
                    // Checked again when the dim is known; here only the position is computed.
                    None if i < 0 => dim.checked_add(&D::from_i64(i)).ok_or(SliceError::Overflow { what: "index" })?,
                    None => D::from_i64(i),
                };
                sel.fixed.push((axis, index));
                axis += 1;
            }
            SpecEntry::Range(b, e, step) => {
                let r = resolve_range(&input_shape[axis], b, e, step, Clamp::Python)
                    .map_err(|_| SliceError::ZeroStep { what: "spec entry", index: entry_index })?;
                sel.out.push(OutAxis::Range { axis, start: r.start, step: r.step, len: r.len });
                axis += 1;
            }
        }
    }
    if !has_ellipsis {
        while axis < rank {
            whole(&mut sel, axis);
            axis += 1;
        }
    }
    Ok(sel)
}

/// MXNet's `slice(data, begin, end, step)`: `None` bounds are omitted (the mask bit), a `None` or absent
/// step is 1; equal to `x[b0:e0:s0, .., bm-1:em-1:sm-1]` with the remaining axes whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MxnetSlice {
    /// `begin`, `None` for MXNet's `None`.
    pub begin: Vec<Option<i64>>,
    /// `end`, `None` for MXNet's `None`.
    pub end: Vec<Option<i64>>,
    /// `step`: empty for MXNet's `()`, else one entry per bound.
    pub step: Vec<Option<i64>>,
}

impl MxnetSlice {
    /// The equivalent StridedSlice (masks for `None`).
    pub fn to_strided_slice(&self) -> SliceResult<StridedSlice> {
        let n = self.begin.len();
        if self.end.len() != n || !(self.step.is_empty() || self.step.len() == n) {
            return Err(SliceError::LengthMismatch {
                what: "begin, end and step",
                lens: format!("{}, {}, {}", n, self.end.len(), self.step.len()),
            });
        }
        if n > 63 {
            return Err(SliceError::Unsupported(format!("MXNet slice with {n} entries: at most 63 are supported")));
        }
        let mask =
            |v: &[Option<i64>]| v.iter().enumerate().fold(0i64, |m, (i, b)| if b.is_none() { m | 1 << i } else { m });
        Ok(StridedSlice {
            begin: self.begin.iter().map(|b| b.unwrap_or(0)).collect(),
            end: self.end.iter().map(|e| e.unwrap_or(0)).collect(),
            strides: Some((0..n).map(|i| self.step.get(i).copied().flatten().unwrap_or(1)).collect()),
            begin_mask: mask(&self.begin),
            end_mask: mask(&self.end),
            ..StridedSlice::default()
        })
    }

    /// Resolves against `input_shape`.
    pub fn resolve<D: Dim>(&self, input_shape: &[D]) -> SliceResult<Selection<D>> {
        self.to_strided_slice()?.resolve(input_shape)
    }
}
