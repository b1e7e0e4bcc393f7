//! StridedSlice: TensorFlow's `tf.strided_slice` and MindSpore's `ops.strided_slice`, with five bit masks.
//!
//! The result is exactly numpy's `x[spec]`, entry `i` of the spec being `...` (ellipsis bit), `None`
//! (new-axis bit), the integer `begin[i]` (shrink bit), or `begin[i]:end[i]:strides[i]` with a bound
//! omitted under its mask bit. A spec shorter than the rank ends in an implicit `...`.
//!
//! Reading the masks, entry by entry: the ellipsis bit wins over the new-axis bit, which wins over
//! the shrink bit; `begin_mask` and `end_mask` matter only on a range entry; bits past the spec's
//! length are ignored; masks must be non-negative and at most one ellipsis bit may be set among the
//! entries. A stride of 0 is an error, on any entry but the ellipsis and new axes, and a shrunk entry
//! needs a positive stride. The index of a shrunk entry must lie in `[-dim, dim)`; range bounds clamp
//! as Python's `slice.indices` does ([`Clamp::Python`]). Indices and ranges together consume at
//! most `rank` input axes; new axes and the ellipsis consume none.
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
    /// The names of the five mask attributes, in the order of [`StridedSlice::masks`].
    pub const MASK_NAMES: [&'static str; 5] =
        ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"];

    /// The most entries a spec written with masks may have: bit 63 would make a mask negative.
    pub(crate) const MAX_ENTRIES: usize = 63;

    /// Parameters from `begin`, `end`, `strides` and the masks in the order of
    /// [`StridedSlice::MASK_NAMES`].
    pub(crate) fn with_masks(
        begin: Vec<i64>,
        end: Vec<i64>,
        strides: Option<Vec<i64>>,
        masks: [i64; 5],
    ) -> StridedSlice {
        let [begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask] = masks;
        StridedSlice { begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask }
    }

    /// The masks, in the order of [`StridedSlice::MASK_NAMES`].
    pub fn masks(&self) -> [i64; 5] {
        [self.begin_mask, self.end_mask, self.ellipsis_mask, self.new_axis_mask, self.shrink_axis_mask]
    }

    /// Encodes a numpy index expression as parameters with masks, as TensorFlow's front end does: an
    /// omitted bound is a mask bit (its number 0), an index `i` is the shrunk range `i:i+1`, the
    /// ellipsis and new axes are mask bits with the numbers `0:0:1`.
    pub fn from_spec(spec: &[SpecEntry]) -> SliceResult<StridedSlice> {
        if spec.len() > Self::MAX_ENTRIES {
            return Err(SliceError::TooManyMaskedEntries { what: "StridedSlice spec", entries: spec.len() });
        }
        let mut ss = StridedSlice::default();
        let mut strides = vec![];
        for (i, e) in spec.iter().enumerate() {
            let (b, e, s) = match *e {
                SpecEntry::Ellipsis => {
                    ss.ellipsis_mask |= 1 << i;
                    (0, 0, 1)
                }
                SpecEntry::NewAxis => {
                    ss.new_axis_mask |= 1 << i;
                    (0, 0, 1)
                }
                SpecEntry::Index(v) => {
                    ss.shrink_axis_mask |= 1 << i;
                    (v, v.wrapping_add(1), 1)
                }
                SpecEntry::Range(b, e, s) => {
                    ss.begin_mask |= i64::from(b.is_none()) << i;
                    ss.end_mask |= i64::from(e.is_none()) << i;
                    (b.unwrap_or(0), e.unwrap_or(0), s)
                }
            };
            ss.begin.push(b);
            ss.end.push(e);
            strides.push(s);
        }
        ss.strides = Some(strides);
        Ok(ss)
    }

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

/// Where one entry of an index expression lands, once the ellipsis is expanded: the spec entry it
/// comes from, the input axis it reads and the output axis it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Input axis `axis` kept whole as output axis `out` (an axis the ellipsis covers, explicit or
    /// implicit after the last entry).
    Whole {
        /// Input axis.
        axis: usize,
        /// Output axis.
        out: usize,
    },
    /// `np.newaxis` (spec entry `entry`) as output axis `out`.
    NewAxis {
        /// Spec entry.
        entry: usize,
        /// Output axis.
        out: usize,
    },
    /// The integer index `value` (spec entry `entry`) on input axis `axis`, which disappears.
    Index {
        /// Spec entry.
        entry: usize,
        /// Input axis.
        axis: usize,
        /// The index as written (negative counts from the end).
        value: i64,
    },
    /// `begin:end:step` (spec entry `entry`) on input axis `axis`, as output axis `out`.
    Range {
        /// Spec entry.
        entry: usize,
        /// Input axis.
        axis: usize,
        /// Output axis.
        out: usize,
        /// The start, `None` when omitted.
        begin: Option<i64>,
        /// The end, `None` when omitted.
        end: Option<i64>,
        /// The step (non-zero).
        step: i64,
    },
}

/// The spec walk: every entry of a numpy index expression over an input of rank `rank`, placed on
/// its input and output axes, the ellipsis expanded to whole axes (an expression without one ends in
/// an implicit `...`). The one place masks-as-entries become axes: resolving ([`resolve_spec`]) and
/// lowering to standard ONNX both read it.
pub(crate) fn place_spec(spec: &[SpecEntry], rank: usize) -> SliceResult<Vec<Placed>> {
    let real = spec.iter().filter(|e| matches!(e, SpecEntry::Index(_) | SpecEntry::Range(..))).count();
    if real > rank {
        return Err(SliceError::TooManyEntries { entries: real, rank });
    }
    let ellipses: Vec<usize> = (0..spec.len()).filter(|&i| spec[i] == SpecEntry::Ellipsis).collect();
    if ellipses.len() > 1 {
        let mask = ellipses.iter().filter(|&&i| i < 64).fold(0i64, |m, &i| m | 1 << i);
        return Err(SliceError::MultipleEllipsis { mask });
    }
    let mut placed = Vec::with_capacity(spec.len().max(rank));
    let (mut axis, mut out) = (0usize, 0usize);
    let whole = |placed: &mut Vec<Placed>, axis: &mut usize, out: &mut usize, count: usize| {
        for _ in 0..count {
            placed.push(Placed::Whole { axis: *axis, out: *out });
            *axis += 1;
            *out += 1;
        }
    };
    for (entry, e) in spec.iter().enumerate() {
        match *e {
            SpecEntry::Ellipsis => whole(&mut placed, &mut axis, &mut out, rank - real),
            SpecEntry::NewAxis => {
                placed.push(Placed::NewAxis { entry, out });
                out += 1;
            }
            SpecEntry::Index(value) => {
                placed.push(Placed::Index { entry, axis, value });
                axis += 1;
            }
            SpecEntry::Range(begin, end, step) => {
                placed.push(Placed::Range { entry, axis, out, begin, end, step });
                axis += 1;
                out += 1;
            }
        }
    }
    if ellipses.is_empty() {
        whole(&mut placed, &mut axis, &mut out, rank - real);
    }
    Ok(placed)
}

/// Resolves a numpy index expression (basic indexing only) against `input_shape`.
pub fn resolve_spec<D: Dim>(spec: &[SpecEntry], input_shape: &[D]) -> SliceResult<Selection<D>> {
    let mut sel = Selection { input_shape: input_shape.to_vec(), fixed: vec![], out: vec![] };
    for placed in place_spec(spec, input_shape.len())? {
        match placed {
            Placed::Whole { axis, .. } => {
                let len = input_shape[axis].clone();
                sel.out.push(OutAxis::Range { axis, start: D::from_i64(0), step: 1, len });
            }
            Placed::NewAxis { .. } => sel.out.push(OutAxis::New),
            Placed::Index { entry, axis, value: i } => {
                let dim = &input_shape[axis];
                let index = match dim.as_i64() {
                    Some(d) => {
                        if i < -d || i >= d {
                            return Err(SliceError::IndexOutOfRange { entry, axis, value: i, dim: d.to_string() });
                        }
                        D::from_i64(if i < 0 { i + d } else { i })
                    }
                    // Checked again when the dim is known; here only the position is computed.
                    None if i < 0 => dim.checked_add(&D::from_i64(i)).ok_or(SliceError::Overflow { what: "index" })?,
                    None => D::from_i64(i),
                };
                sel.fixed.push((axis, index));
            }
            Placed::Range { entry, axis, begin, end, step, .. } => {
                let r = resolve_range(&input_shape[axis], begin, end, step, Clamp::Python)
                    .map_err(|_| SliceError::ZeroStep { what: "spec entry", index: entry })?;
                sel.out.push(OutAxis::Range { axis, start: r.start, step: r.step, len: r.len });
            }
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
        if n > StridedSlice::MAX_ENTRIES {
            return Err(SliceError::TooManyMaskedEntries { what: "MXNet slice", entries: n });
        }
        let spec: Vec<SpecEntry> = (0..n)
            .map(|i| SpecEntry::Range(self.begin[i], self.end[i], self.step.get(i).copied().flatten().unwrap_or(1)))
            .collect();
        StridedSlice::from_spec(&spec)
    }

    /// Resolves against `input_shape`.
    pub fn resolve<D: Dim>(&self, input_shape: &[D]) -> SliceResult<Selection<D>> {
        self.to_strided_slice()?.resolve(input_shape)
    }
}
