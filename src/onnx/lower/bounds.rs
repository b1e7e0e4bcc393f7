//! Slice bounds written so that ONNX's clamping, numpy's and onnxruntime's special values all select
//! the same elements.

use super::emit::SliceAxis;
use crate::semantics::{resolve_range, Clamp};
use anyhow::bail;
use tract_onnx::prelude::*;

/// The Slice axis for an integer index: `[i, i+1)`, exact for any dim.
pub(super) fn index_axis(axis: usize, i: i64, dim: &TDim) -> anyhow::Result<SliceAxis> {
    let a = axis as i64;
    Ok(match dim.as_i64() {
        Some(d) => {
            if i < -d || i >= d {
                bail!("shrink index {i} is out of range for axis {axis} of size {d}");
            }
            let i = if i < 0 { i + d } else { i };
            (a, i, i + 1, 1)
        }
        None if i == -1 => (a, -1, i64::MAX, 1),
        None => (a, i, i + 1, 1),
    })
}

/// Slice bounds taking exactly `len` elements from `start` by `k` on an axis of `d` (None if that is
/// the whole axis in order), written so that no clamping rule or special value can move them.
pub(super) fn resolved_axis(a: i64, start: i64, len: i64, k: i64, d: i64) -> Option<SliceAxis> {
    if len == d && k == 1 {
        return None;
    }
    if len == 0 {
        return Some((a, 0, 0, 1));
    }
    // The end just past the last element taken.
    let last = i128::from(start) + i128::from(len - 1) * i128::from(k);
    let end = if k > 0 {
        (last + 1).min(i128::from(d)) as i64
    } else if last == 0 {
        -(d + 1)
    } else {
        (last - 1) as i64
    };
    Some((a, start, end, k))
}

/// The Slice axis for `b:e:k` (None if it is the whole axis in order), exact under ONNX clamping.
pub(super) fn range_axis(
    axis: usize,
    b: Option<i64>,
    e: Option<i64>,
    k: i64,
    dim: &TDim,
) -> anyhow::Result<Option<SliceAxis>> {
    let a = axis as i64;
    if let Some(d) = dim.as_i64() {
        let r = resolve_range(&d, b, e, k, Clamp::Python)?;
        return Ok(resolved_axis(a, r.start, r.len, k, d));
    }
    // Symbolic dim: the bounds as they are. They mean the same under both rules except for a negative
    // step starting below -dim, which Python makes empty and ONNX starts at 0.
    if k < 0 && b.is_some_and(|b| b < -1) {
        bail!(
            "cannot lower {b:?}:{e:?}:{k} on symbolic axis {axis} exactly: a negative step from below -dim is \
             empty in numpy but not in ONNX"
        );
    }
    let start = b.unwrap_or(if k > 0 { 0 } else { i64::MAX });
    let end = e.unwrap_or(if k > 0 { i64::MAX } else { i64::MIN });
    if start == 0 && end == i64::MAX && k == 1 {
        return Ok(None);
    }
    Ok(Some((a, start, if k < 0 { off_sentinel(end) } else { end }, k)))
}

/// An end moved off the two values onnxruntime special-cases: with a negative step it reads an end of
/// exactly `INT32_MAX` or `INT64_MAX` as "through the first element", where ONNX (and numpy) clamp it to
/// `dim - 1`, which makes the axis empty. `INT64_MAX` becomes `2^62` and `INT32_MAX` becomes `2^31`: the
/// same end under clamping for every dim below `2^31` (dims are at most 10^9 unless assumed otherwise).
pub(super) fn off_sentinel(end: i64) -> i64 {
    match end {
        i64::MAX => 1 << 62,
        e if e == i64::from(i32::MAX) => e + 1,
        e => e,
    }
}
