//! An independent, index-by-index reference for every dialect, written straight from the rules (Python's
//! `slice.indices`, the ONNX opset-13 clamping text, the AsStrided formula). Slow and obviously right:
//! it enumerates the indices of each axis and walks the output one element at a time.

#![allow(dead_code)]

use sliceops::semantics::SpecEntry;

/// `range(*slice(start, stop, step).indices(d))`, as CPython's `PySlice_AdjustIndices` does it.
pub fn python_indices(d: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> Vec<i64> {
    let (d, step) = (d as i128, step as i128);
    let (lower, upper) = if step > 0 { (0, d) } else { (-1, d - 1) };
    let adjust = |v: Option<i64>, default: i128| match v {
        None => default,
        Some(v) => {
            let mut v = v as i128;
            if v < 0 {
                v += d;
                if v < lower {
                    v = lower;
                }
            } else if v > upper {
                v = upper;
            }
            v
        }
    };
    let start = adjust(start, if step < 0 { upper } else { lower });
    let stop = adjust(stop, if step < 0 { lower } else { upper });
    walk(start, stop, step)
}

/// The ONNX Slice (opset 13) rule for one axis.
pub fn onnx_indices(d: i64, start: i64, end: i64, step: i64) -> Vec<i64> {
    let (d, step) = (d as i128, step as i128);
    let (mut s, mut e) = (start as i128, end as i128);
    if s < 0 {
        s += d;
    }
    if e < 0 {
        e += d;
    }
    if step > 0 {
        s = s.max(0).min(d);
        e = e.max(0).min(d);
    } else {
        s = s.max(0).min(d - 1);
        e = e.max(-1).min(d - 1);
    }
    walk(s, e, step)
}

fn walk(start: i128, stop: i128, step: i128) -> Vec<i64> {
    let mut out = vec![];
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        out.push(i as i64);
        i += step;
    }
    out
}

/// What one output axis or dropped axis of the reference reads.
#[derive(Debug, Clone)]
pub enum RefAxis {
    /// A new length-1 axis.
    New,
    /// These indices of input axis `.0`.
    Indices(usize, Vec<i64>),
    /// Input axis `.0` fixed at `.1` (no output axis).
    Fixed(usize, i64),
}

/// Numpy's `x[spec]` on `shape`: the list of axes, or `None` when numpy raises.
pub fn numpy_axes(spec: &[SpecEntry], shape: &[i64]) -> Option<Vec<RefAxis>> {
    let real = spec.iter().filter(|e| matches!(e, SpecEntry::Index(_) | SpecEntry::Range(..))).count();
    if real > shape.len() || spec.iter().filter(|e| **e == SpecEntry::Ellipsis).count() > 1 {
        return None;
    }
    let mut spec = spec.to_vec();
    if !spec.contains(&SpecEntry::Ellipsis) {
        spec.push(SpecEntry::Ellipsis);
    }
    let mut axes = vec![];
    let mut axis = 0;
    for e in spec {
        match e {
            SpecEntry::Ellipsis => {
                for _ in 0..shape.len() - real {
                    axes.push(RefAxis::Indices(axis, (0..shape[axis]).collect()));
                    axis += 1;
                }
            }
            SpecEntry::NewAxis => axes.push(RefAxis::New),
            SpecEntry::Index(i) => {
                let d = shape[axis];
                if i < -d || i >= d {
                    return None;
                }
                axes.push(RefAxis::Fixed(axis, if i < 0 { i + d } else { i }));
                axis += 1;
            }
            SpecEntry::Range(b, e, k) => {
                if k == 0 {
                    return None;
                }
                axes.push(RefAxis::Indices(axis, python_indices(shape[axis], b, e, k)));
                axis += 1;
            }
        }
    }
    Some(axes)
}

/// Reads `data` (row-major, `shape`) through the reference axes: `(output shape, values)`.
pub fn gather<T: Clone>(data: &[T], shape: &[i64], axes: &[RefAxis]) -> (Vec<usize>, Vec<T>) {
    let out_shape: Vec<usize> = axes
        .iter()
        .filter_map(|a| match a {
            RefAxis::New => Some(1),
            RefAxis::Indices(_, ix) => Some(ix.len()),
            RefAxis::Fixed(..) => None,
        })
        .collect();
    let numel: usize = out_shape.iter().product();
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let mut values = Vec::with_capacity(numel);
    for flat_out in 0..numel {
        // Decompose the output index, innermost output axis last.
        let mut rest = flat_out;
        let mut out_index = vec![0usize; out_shape.len()];
        for k in (0..out_shape.len()).rev() {
            out_index[k] = rest % out_shape[k];
            rest /= out_shape[k];
        }
        let mut src = 0i64;
        let mut k = 0;
        for a in axes {
            match a {
                RefAxis::New => k += 1,
                RefAxis::Indices(axis, ix) => {
                    src += ix[out_index[k]] * strides[*axis];
                    k += 1;
                }
                RefAxis::Fixed(axis, i) => src += i * strides[*axis],
            }
        }
        values.push(data[src as usize].clone());
    }
    (out_shape, values)
}

/// The AsStrided formula, element by element; `None` if an index is out of bounds or a parameter is
/// invalid.
pub fn as_strided<T: Clone>(data: &[T], size: &[i64], stride: &[i64], offset: i64) -> Option<(Vec<usize>, Vec<T>)> {
    if size.len() != stride.len() || offset < 0 || size.iter().chain(stride).any(|v| *v < 0) {
        return None;
    }
    let out_shape: Vec<usize> = size.iter().map(|s| *s as usize).collect();
    let numel: usize = out_shape.iter().product();
    let mut values = Vec::with_capacity(numel);
    for flat_out in 0..numel {
        let mut rest = flat_out;
        let mut src = offset as i128;
        for k in (0..size.len()).rev() {
            src += (rest % out_shape[k]) as i128 * stride[k] as i128;
            rest /= out_shape[k];
        }
        values.push(data.get(usize::try_from(src).ok()?)?.clone());
    }
    Some((out_shape, values))
}
