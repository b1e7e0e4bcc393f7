//! Softmax and log-softmax over one axis, in place, on a contiguous buffer.
//!
//! The buffer is read as `[outer, n, inner]`: `n` is the reduced axis, `inner` the product of the axes
//! after it. When the axis is the last (`inner == 1`), each row of `n` values is done in four
//! passes: its maximum, `exp(x - max)`, their sum (over 8 partial sums), the division; for rows
//! shorter than 64 the `exp` pass runs once over all rows, so a short row is not left to scalar
//! code. Otherwise each of the `outer` blocks of `n * inner` values is done in three sweeps over its `n`
//! rows of `inner` contiguous values: the running maximum of every column, then `exp(x - max)` and
//! the column sums, then the division (or, for log-softmax, `x - max - ln(sum)`). Every sweep reads
//! rows front to back, so the work is a few passes over memory that is already in cache, where a
//! lane-by-lane walk down the axis touches `n` scattered values per output column. Results are those
//! of the textbook formula in the element type, columns independent of each other, with `exp` from
//! [`super::exp`] (vectorized in f32).

use super::exp::KernelExp;

/// Which of the two functions [`softmax_axis`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SoftmaxFn {
    /// `exp(x - max) / sum(exp(x - max))`.
    Softmax,
    /// `x - max - ln(sum(exp(x - max)))`.
    LogSoftmax,
}

/// Applies `kind` over the middle axis of `data` read as `[outer, n, inner]`, in place.
///
/// `data.len()` must equal `outer * n * inner` for some `outer` (checked: an error names the
/// lengths otherwise); `n == 0` or `inner == 0` leaves nothing to do.
pub(crate) fn softmax_axis<T: KernelExp>(
    data: &mut [T],
    n: usize,
    inner: usize,
    kind: SoftmaxFn,
) -> Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // Safety: the CPU has AVX2, checked just above: the one requirement of calling a function
        // compiled with `target_feature(enable = "avx2")`.
        return unsafe { softmax_avx2(data, n, inner, kind) };
    }
    softmax_blocks(data, n, inner, kind)
}

/// [`softmax_blocks`] compiled for AVX2: eight f32 lanes where the portable build has four. The
/// arithmetic is the same operations in the same order (no fused multiply-adds: Rust does not
/// contract them), so the results are the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn softmax_avx2<T: KernelExp>(data: &mut [T], n: usize, inner: usize, kind: SoftmaxFn) -> Result<(), String> {
    softmax_blocks(data, n, inner, kind)
}

/// The body of [`softmax_axis`], inlined into each build of it.
#[inline(always)]
fn softmax_blocks<T: KernelExp>(data: &mut [T], n: usize, inner: usize, kind: SoftmaxFn) -> Result<(), String> {
    let block = n.checked_mul(inner).ok_or_else(|| format!("softmax block of {n} x {inner} values overflows"))?;
    if block == 0 {
        return Ok(());
    }
    if !data.len().is_multiple_of(block) {
        return Err(format!("{} values are not whole blocks of {n} x {inner}", data.len()));
    }
    if inner == 1 {
        if kind == SoftmaxFn::Softmax && n < SHORT_ROW {
            short_rows(data, n);
        } else {
            for row in data.chunks_exact_mut(n) {
                one_row(row, kind);
            }
        }
        return Ok(());
    }
    let mut max = vec![T::zero(); inner];
    let mut sum = vec![T::zero(); inner];
    for block in data.chunks_exact_mut(block) {
        one_block(block, inner, kind, &mut max, &mut sum);
    }
    Ok(())
}

/// The greater of `m` and `x`, NaN if either is: a column with a NaN gives NaN everywhere, as the
/// formula does.
#[inline(always)]
fn nan_max<T: KernelExp>(m: T, x: T) -> T {
    if x > m || x.is_nan() {
        x
    } else {
        m
    }
}

/// Lanes of the partial maxima and sums of a row: independent accumulators let the compiler use SIMD
/// (one running sum would make every addition wait for the previous one).
const LANES: usize = 8;

/// The maximum of `row` (NaN if it has one), `row` not empty.
#[inline(always)]
fn row_max<T: KernelExp>(row: &[T], first: T) -> T {
    let mut lanes = [first; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (m, &x) in lanes.iter_mut().zip(chunk) {
            *m = nan_max(*m, x);
        }
    }
    let mut m = first;
    for &x in chunks.remainder().iter().chain(&lanes) {
        m = nan_max(m, x);
    }
    m
}

/// The sum of `row`, over [`LANES`] partial sums.
#[inline(always)]
fn row_sum<T: KernelExp>(row: &[T]) -> T {
    let mut lanes = [T::zero(); LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (s, &x) in lanes.iter_mut().zip(chunk) {
            *s = *s + x;
        }
    }
    let mut tail = T::zero();
    for &x in chunks.remainder() {
        tail = tail + x;
    }
    for &x in &lanes {
        tail = tail + x;
    }
    tail
}

/// Rows shorter than this are done by [`short_rows`].
const SHORT_ROW: usize = 64;

/// Softmax rows of `n < SHORT_ROW` values, `data` whole rows: the same operations as [`one_row`]
/// (so the same bits), but `exp` runs over the whole buffer in one loop after every row's maximum is
/// subtracted, so a row shorter than a vector (an attention row over 7 keys) does not leave it to
/// the loop's scalar tail.
#[inline(always)]
fn short_rows<T: KernelExp>(data: &mut [T], n: usize) {
    for row in data.chunks_exact_mut(n) {
        let max = row_max(row, row[0]);
        row.iter_mut().for_each(|x| *x = *x - max);
    }
    data.iter_mut().for_each(|x| *x = x.kernel_exp());
    for row in data.chunks_exact_mut(n) {
        let sum = row_sum(row);
        row.iter_mut().for_each(|x| *x = *x / sum);
    }
}

/// One row of a softmax over the last axis: see the module docs.
#[inline(always)]
fn one_row<T: KernelExp>(row: &mut [T], kind: SoftmaxFn) {
    let Some(&first) = row.first() else { return };
    let max = row_max(row, first);
    match kind {
        SoftmaxFn::Softmax => {
            for x in row.iter_mut() {
                *x = (*x - max).kernel_exp();
            }
            let sum = row_sum(row);
            for x in row.iter_mut() {
                *x = *x / sum;
            }
        }
        SoftmaxFn::LogSoftmax => {
            row.iter_mut().for_each(|x| *x = *x - max);
            let mut lanes = [T::zero(); LANES];
            let mut chunks = row.chunks_exact(LANES);
            for chunk in &mut chunks {
                for (s, &x) in lanes.iter_mut().zip(chunk) {
                    *s = *s + x.kernel_exp();
                }
            }
            let tail = chunks.remainder().iter().fold(T::zero(), |s, &x| s + x.kernel_exp());
            let log_sum = lanes.iter().fold(tail, |s, &x| s + x).ln();
            row.iter_mut().for_each(|x| *x = *x - log_sum);
        }
    }
}

/// One `[n, inner]` block: see the module docs.
#[inline(always)]
fn one_block<T: KernelExp>(block: &mut [T], inner: usize, kind: SoftmaxFn, max: &mut [T], sum: &mut [T]) {
    let mut rows = block.chunks_exact(inner);
    // A block holds at least one row (n > 0 here).
    if let Some(first) = rows.next() {
        max.copy_from_slice(first);
    }
    for row in rows {
        for (m, &x) in max.iter_mut().zip(row) {
            *m = nan_max(*m, x);
        }
    }
    sum.iter_mut().for_each(|s| *s = T::zero());
    for row in block.chunks_exact_mut(inner) {
        for ((x, &m), s) in row.iter_mut().zip(max.iter()).zip(sum.iter_mut()) {
            let shifted = *x - m;
            let e = shifted.kernel_exp();
            *s = *s + e;
            *x = match kind {
                SoftmaxFn::Softmax => e,
                SoftmaxFn::LogSoftmax => shifted,
            };
        }
    }
    match kind {
        SoftmaxFn::Softmax => {
            for row in block.chunks_exact_mut(inner) {
                for (x, &s) in row.iter_mut().zip(sum.iter()) {
                    *x = *x / s;
                }
            }
        }
        SoftmaxFn::LogSoftmax => {
            sum.iter_mut().for_each(|s| *s = s.ln());
            for row in block.chunks_exact_mut(inner) {
                for (x, &l) in row.iter_mut().zip(sum.iter()) {
                    *x = *x - l;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formula lane by lane, in f64, for comparison.
    fn reference(data: &[f32], n: usize, inner: usize, kind: SoftmaxFn) -> Vec<f64> {
        let mut out = vec![0.0; data.len()];
        for (b, block) in data.chunks(n * inner).enumerate() {
            for j in 0..inner {
                let lane: Vec<f64> = (0..n).map(|k| f64::from(block[k * inner + j])).collect();
                let m = lane.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = lane.iter().map(|x| (x - m).exp()).sum();
                for (k, x) in lane.iter().enumerate() {
                    out[b * n * inner + k * inner + j] = match kind {
                        SoftmaxFn::Softmax => (x - m).exp() / s,
                        SoftmaxFn::LogSoftmax => x - m - s.ln(),
                    };
                }
            }
        }
        out
    }

    fn sample(len: usize) -> Vec<f32> {
        (0..len).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect()
    }

    #[test]
    fn matches_the_formula_on_every_lane() {
        for kind in [SoftmaxFn::Softmax, SoftmaxFn::LogSoftmax] {
            for (outer, n, inner) in [(1, 16, 504), (3, 5, 7), (2, 1, 9), (4, 3, 1), (6, 49, 1)] {
                let mut data = sample(outer * n * inner);
                let expected = reference(&data, n, inner, kind);
                softmax_axis(&mut data, n, inner, kind).unwrap();
                for (got, want) in data.iter().zip(&expected) {
                    assert!((f64::from(*got) - want).abs() <= 1e-6 * want.abs().max(1.0), "{kind:?} {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn one_row_per_lane_gives_one_and_zero() {
        let mut data = vec![3.0f32, -2.0, 7.5];
        softmax_axis(&mut data, 1, 3, SoftmaxFn::Softmax).unwrap();
        assert_eq!(data, [1.0, 1.0, 1.0]);
        let mut data = vec![3.0f32, -2.0, 7.5];
        softmax_axis(&mut data, 1, 3, SoftmaxFn::LogSoftmax).unwrap();
        assert_eq!(data, [0.0, 0.0, 0.0]);
    }

    #[test]
    fn nan_and_infinity_follow_the_formula() {
        // Columns: [1, NaN] -> NaN, NaN; [inf, 0] -> NaN, NaN (inf - inf in the sum); [-inf, 0] -> 0, 1.
        let mut data = vec![1.0f32, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.0, 0.0];
        softmax_axis(&mut data, 2, 3, SoftmaxFn::Softmax).unwrap();
        assert!(data[0].is_nan() && data[3].is_nan());
        assert!(data[1].is_nan() && data[4].is_nan());
        assert_eq!((data[2], data[5]), (0.0, 1.0));
    }

    #[test]
    fn empty_and_mismatched_buffers() {
        let mut empty: Vec<f32> = vec![];
        softmax_axis(&mut empty, 0, 4, SoftmaxFn::Softmax).unwrap();
        softmax_axis(&mut empty, 4, 0, SoftmaxFn::Softmax).unwrap();
        let mut odd = vec![0.0f32; 7];
        assert_eq!(
            softmax_axis(&mut odd, 2, 3, SoftmaxFn::Softmax).unwrap_err(),
            "7 values are not whole blocks of 2 x 3"
        );
        assert!(softmax_axis(&mut odd, usize::MAX, 2, SoftmaxFn::Softmax).unwrap_err().contains("overflows"));
    }
}
