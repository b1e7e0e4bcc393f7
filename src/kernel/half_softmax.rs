//! A float16 softmax rounded where numpy rounds it, in place on a contiguous buffer.
//!
//! onnx's reference (and numpy code generally) computes a float16 softmax as
//! `e = exp(x - max(x)); e / sum(e)`, each step a numpy float16 operation: the difference, the
//! exponential and the quotient are computed in float32 and rounded to float16 once each; the sum
//! is float16 too, and how numpy adds depends on the layout. Over the last axis (a contiguous run of
//! values) it adds in float32 in pairwise blocks of eight (below) and rounds once; over another axis
//! it adds the rows one after the other, each partial sum rounded to float16. [`softmax_f16`]
//! does exactly these operations, so its results are numpy's bits (tract's float16 softmax
//! multiplies by a rounded reciprocal instead and differs in the last bit on many values).

use half::f16;

/// numpy's `pairwise_sum` of float16 values, accumulated in float32: fewer than 8 values are added
/// in order; up to 128 go into eight running sums (value `i` into sum `i % 8`, the rest after the last
/// whole block of eight added in order at the end), combined as `((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7))`;
/// longer runs are split in two halves (the first a multiple of 8 long) summed the same way.
pub(super) fn pairwise_sum_f16(values: &[f16]) -> f32 {
    pairwise_sum(values, f16::to_f32)
}

/// numpy's `pairwise_sum` of float32 values (the same blocks as [`pairwise_sum_f16`]).
pub(super) fn pairwise_sum_f32(values: &[f32]) -> f32 {
    pairwise_sum(values, |v| v)
}

fn pairwise_sum<T: Copy>(values: &[T], wide: impl Fn(T) -> f32 + Copy) -> f32 {
    let n = values.len();
    if n < 8 {
        return values.iter().fold(0f32, |acc, &v| acc + wide(v));
    }
    if n <= 128 {
        let mut r = [0f32; 8];
        for (slot, &v) in r.iter_mut().zip(values) {
            *slot = wide(v);
        }
        let whole = n - n % 8;
        for block in values[8..whole].chunks_exact(8) {
            for (slot, &v) in r.iter_mut().zip(block) {
                *slot += wide(v);
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &v in &values[whole..] {
            res += wide(v);
        }
        return res;
    }
    let mut half = n / 2;
    half -= half % 8;
    pairwise_sum(&values[..half], wide) + pairwise_sum(&values[half..], wide)
}

/// The float32 softmax of one contiguous row as numpy computes `exp(x - max) / sum(...)` over the
/// last axis (float32 operations, numpy's pairwise sum).
pub(crate) fn softmax_row_f32(row: &mut [f32]) {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| if !m.is_nan() && (v.is_nan() || v > m) { v } else { m });
    for v in row.iter_mut() {
        *v = (*v - max).exp();
    }
    let sum = pairwise_sum_f32(row);
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// The float16 softmax of one contiguous row, as numpy computes `exp(x - max) / sum(...)` over the
/// last axis. A row holding NaN is NaN; a row of `-inf` gives NaN (`-inf - -inf`), as numpy.
pub(crate) fn softmax_row_f16(row: &mut [f16]) {
    let max = row.iter().fold(f16::NEG_INFINITY, |m, &v| if !m.is_nan() && (v.is_nan() || v > m) { v } else { m });
    for v in row.iter_mut() {
        *v = f16::from_f32((*v - max).to_f32().exp());
    }
    let sum = f16::from_f32(pairwise_sum_f16(row));
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// numpy's float16 softmax over the middle axis of `data` read as `[outer, n, inner]`, in place.
///
/// `data.len()` must be a multiple of `n * inner` (an error names the lengths otherwise); `n == 0`
/// or `inner == 0` leaves nothing to do.
pub(crate) fn softmax_f16(data: &mut [f16], n: usize, inner: usize) -> Result<(), String> {
    let block = n.checked_mul(inner).ok_or_else(|| format!("softmax blocks of {n} x {inner} values overflow"))?;
    if block == 0 {
        return Ok(());
    }
    if !data.len().is_multiple_of(block) {
        return Err(format!("a buffer of {} values is not made of blocks of {n} x {inner}", data.len()));
    }
    if inner == 1 {
        data.chunks_exact_mut(n).for_each(softmax_row_f16);
        return Ok(());
    }
    let mut acc = vec![f16::ZERO; inner];
    for values in data.chunks_exact_mut(block) {
        // The maximum of every column (NaN wins, as numpy's maximum).
        acc.copy_from_slice(&values[..inner]);
        for row in values.chunks_exact(inner).skip(1) {
            for (m, &v) in acc.iter_mut().zip(row) {
                if v.is_nan() || (!m.is_nan() && v > *m) {
                    *m = v;
                }
            }
        }
        for row in values.chunks_exact_mut(inner) {
            for (v, &m) in row.iter_mut().zip(acc.iter()) {
                *v = f16::from_f32((*v - m).to_f32().exp());
            }
        }
        // The column sums, row after row, each partial sum a float16.
        acc.copy_from_slice(&values[..inner]);
        for row in values.chunks_exact(inner).skip(1) {
            for (s, &v) in acc.iter_mut().zip(row) {
                *s += v;
            }
        }
        for row in values.chunks_exact_mut(inner) {
            for (v, &s) in row.iter_mut().zip(acc.iter()) {
                *v /= s;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn halves(v: &[f32]) -> Vec<f16> {
        v.iter().map(|&x| f16::from_f32(x)).collect()
    }

    #[test]
    fn pairwise_blocks() {
        // 9 values: eight running sums, then the ninth added last.
        let v = halves(&[1.0; 9]);
        assert_eq!(pairwise_sum_f16(&v), 9.0);
        // 2048 + 1 + 1 ...: float32 keeps every unit that a float16 running sum would drop.
        let mut w = vec![f16::from_f32(2048.0)];
        w.extend(halves(&[1.0; 300]));
        assert_eq!(pairwise_sum_f16(&w), 2348.0);
        assert_eq!(pairwise_sum_f16(&[]), 0.0);
    }

    #[test]
    fn rows_and_columns() {
        let mut row = halves(&[0.0, 0.0]);
        softmax_f16(&mut row, 2, 1).unwrap();
        assert_eq!(row, halves(&[0.5, 0.5]));
        let mut cols = halves(&[0.0, 1.0, 0.0, 1.0]);
        softmax_f16(&mut cols, 2, 2).unwrap();
        assert_eq!(cols, halves(&[0.5, 0.5, 0.5, 0.5]));
        let mut nan = halves(&[0.0, f32::NAN, 1.0]);
        softmax_f16(&mut nan, 3, 1).unwrap();
        assert!(nan.iter().all(|v| v.is_nan()));
        assert!(softmax_f16(&mut halves(&[0.0; 5]), 2, 1).is_err());
        assert!(softmax_f16(&mut [], 0, 3).is_ok());
    }
}
