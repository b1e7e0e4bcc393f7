//! Layer normalization over the rows of a contiguous float32 buffer, in place.
//!
//! Each row of `n` values becomes `(x - mean) / sqrt(var + eps)`, then times `scale` and plus `bias`
//! when given (one value per column), where `mean` and `var` are the row's mean and its mean
//! squared deviation from that mean (the population variance, as ONNX's `LayerNormalization`
//! defines it). Three passes over a row that is in cache: its sum, the deviations from the mean it
//! gives and their squares, the output. The mean is corrected by the deviations' mean (the sum's
//! rounding is undone: a constant row, even of 1e20, gives its value back, zero deviations, a zero
//! variance, so the bias with `eps > 0` and NaN, 0/0, with `eps = 0`), and the variance is the
//! mean squared deviation less the square of that correction. The sums run over 16 partial sums (a loop the compiler vectorizes), combined pairwise at
//! the end; every step is a plain multiply or add in float32, in the same order on every build, so
//! the portable and the AVX2 builds give the same bits. The values are the definition's up to
//! float32 rounding of the two sums: each is off by at most `n·ε` relative to the sum of the
//! magnitudes of its terms.

/// How many partial sums a row is accumulated over.
const LANES: usize = 16;

/// Normalizes every row of `n` values of `data` in place (see the module docs).
///
/// `scale` and `bias`, when given, hold `n` values. Errors name the lengths when `data` is not whole
/// rows or `scale`/`bias` are not `n` long; `n == 0` leaves nothing to do.
pub(crate) fn layer_norm_rows(
    data: &mut [f32],
    n: usize,
    eps: f32,
    scale: Option<&[f32]>,
    bias: Option<&[f32]>,
) -> Result<(), String> {
    if n == 0 {
        return Ok(());
    }
    if !data.len().is_multiple_of(n) {
        return Err(format!("{} values are not whole rows of {n}", data.len()));
    }
    for (what, v) in [("scale", scale), ("bias", bias)] {
        if let Some(v) = v.filter(|v| v.len() != n) {
            return Err(format!("the {what} has {} values for rows of {n}", v.len()));
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // Safety: the CPU has AVX2, checked just above: the one requirement of calling a function
        // compiled with `target_feature(enable = "avx2")`.
        unsafe { rows_avx2(data, n, eps, scale, bias) };
        return Ok(());
    }
    rows(data, n, eps, scale, bias);
    Ok(())
}

/// [`rows`] compiled for AVX2 (eight lanes where the portable build has four; no fused
/// multiply-adds, so the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn rows_avx2(data: &mut [f32], n: usize, eps: f32, scale: Option<&[f32]>, bias: Option<&[f32]>) {
    rows(data, n, eps, scale, bias)
}

/// The body of [`layer_norm_rows`], inlined into each build of it. `data` is whole rows of `n > 0`.
#[inline(always)]
fn rows(data: &mut [f32], n: usize, eps: f32, scale: Option<&[f32]>, bias: Option<&[f32]>) {
    let count = n as f32;
    for row in data.chunks_exact_mut(n) {
        // The sum's rounding moves the first mean off the row's (seven values of 1e20 sum to a
        // rounded 7e20): the deviations from it carry the correction, so that a constant row gets
        // its value back exactly, every deviation 0 and its variance 0.
        let first = sum(row, |x| x) / count;
        let (dev, sq) = deviations(row, first);
        let shift = dev / count;
        let mean = first + shift;
        let mut var = sq / count - shift * shift;
        if var.is_nan() && sq.is_infinite() {
            // The squared deviations overflowed float32 (values past 1e26): again from the
            // corrected mean, in float64. A constant row still gives 0; NaN in the row stays NaN.
            let m = f64::from(mean);
            let s: f64 = row.iter().map(|&x| (f64::from(x) - m) * (f64::from(x) - m)).sum();
            var = (s / f64::from(count)) as f32;
        }
        // Rounding may leave a tiny negative; NaN stays NaN.
        let var = if var < 0.0 { 0.0 } else { var };
        let inv = 1.0 / (var + eps).sqrt();
        for x in row.iter_mut() {
            *x = (*x - mean) * inv;
        }
        if let Some(scale) = scale {
            for (x, s) in row.iter_mut().zip(scale) {
                *x *= s;
            }
        }
        if let Some(bias) = bias {
            for (x, b) in row.iter_mut().zip(bias) {
                *x += b;
            }
        }
    }
}

/// The sums of `x - mean` and of `(x - mean)²` over `row`, each over [`LANES`] partial sums
/// combined pairwise.
#[inline(always)]
fn deviations(row: &[f32], mean: f32) -> (f32, f32) {
    let mut dev = [0f32; LANES];
    let mut sq = [0f32; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        for ((a, b), &x) in dev.iter_mut().zip(sq.iter_mut()).zip(chunk) {
            let d = x - mean;
            *a += d;
            *b += d * d;
        }
    }
    for ((a, b), &x) in dev.iter_mut().zip(sq.iter_mut()).zip(chunks.remainder()) {
        let d = x - mean;
        *a += d;
        *b += d * d;
    }
    (combine(dev), combine(sq))
}

/// The partial sums added pairwise.
#[inline(always)]
fn combine(mut acc: [f32; LANES]) -> f32 {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0]
}

/// The sum of `f(x)` over `row`, over [`LANES`] partial sums combined pairwise.
#[inline(always)]
fn sum(row: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a += f(x);
        }
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        *a += f(x);
    }
    combine(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition in f64, and for each output the bound on its distance from the float32
    /// result: both sums' rounding (`n·ε` of the sum of the terms' magnitudes, carried through the
    /// normalization) and a few roundings of the output itself.
    fn reference(x: &[f32], n: usize, eps: f32, scale: Option<&[f32]>, bias: Option<&[f32]>) -> Vec<(f64, f64)> {
        let e = f32::EPSILON as f64;
        let mut out = vec![];
        for row in x.chunks_exact(n) {
            let row: Vec<f64> = row.iter().map(|&v| v as f64).collect();
            let nf = n as f64;
            let mean = row.iter().sum::<f64>() / nf;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / nf;
            let inv = 1.0 / (var + eps as f64).sqrt();
            // The error of the mean, and of the variance (its own sum plus the mean's error twice).
            let d_mean = (nf + 1.0) * e * row.iter().map(|v| v.abs()).sum::<f64>() / nf;
            let max_dev = row.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
            let d_var = (nf + 1.0) * e * var + 2.0 * d_mean * (max_dev + d_mean) + (d_mean * d_mean);
            let d_inv = inv * (0.5 * d_var / (var + eps as f64) + 4.0 * e);
            for (j, v) in row.iter().enumerate() {
                let (s, b) = (scale.map_or(1.0, |s| s[j] as f64), bias.map_or(0.0, |b| b[j] as f64));
                let y = (v - mean) * inv * s + b;
                let d_norm = (d_mean * inv + (v - mean).abs() * d_inv) * s.abs();
                out.push((y, d_norm + 4.0 * e * (y.abs() + b.abs() + ((v - mean) * inv * s).abs())));
            }
        }
        out
    }

    fn sample(len: usize, offset: f32) -> Vec<f32> {
        (0..len).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0 + offset).collect()
    }

    fn check(x: &[f32], n: usize, eps: f32, scale: Option<&[f32]>, bias: Option<&[f32]>) {
        let want = reference(x, n, eps, scale, bias);
        let mut got = x.to_vec();
        layer_norm_rows(&mut got, n, eps, scale, bias).unwrap();
        for (i, (g, (w, bound))) in got.iter().zip(&want).enumerate() {
            assert!((*g as f64 - w).abs() <= *bound, "n={n} value {i}: got {g}, want {w} within {bound}");
        }
    }

    #[test]
    fn matches_the_definition_for_every_row_length() {
        for n in [1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 64, 100, 768] {
            let x = sample(3 * n, 0.0);
            let scale: Vec<f32> = (0..n).map(|j| 0.5 + (j % 5) as f32 * 0.25).collect();
            let bias: Vec<f32> = (0..n).map(|j| (j % 3) as f32 - 1.0).collect();
            check(&x, n, 1e-5, None, None);
            check(&x, n, 1e-6, Some(&scale), None);
            check(&x, n, 1e-5, Some(&scale), Some(&bias));
            check(&x, n, 1e-5, None, Some(&bias));
        }
    }

    #[test]
    fn a_large_offset_is_removed_before_squaring() {
        // Values around 1000 with a spread of a few units: a one-pass variance (mean of squares
        // minus square of the mean) would lose most digits here.
        let x = sample(2 * 48, 1000.0);
        check(&x, 48, 1e-5, None, None);
    }

    #[test]
    fn a_constant_row_gives_zero_and_nan_stays_nan() {
        let mut x = vec![3.0f32; 8];
        layer_norm_rows(&mut x, 4, 1e-5, None, Some(&[1.0, 2.0, 3.0, 4.0])).unwrap();
        assert_eq!(x, [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]);
        let mut x = vec![1.0, f32::NAN, 2.0, 3.0, 1.0, 2.0];
        layer_norm_rows(&mut x, 3, 1e-5, None, None).unwrap();
        assert!(x[..3].iter().all(|v| v.is_nan()));
        assert!(x[3..].iter().all(|v| v.is_finite()));
    }

    #[test]
    fn constant_rows_of_any_magnitude_normalize_to_zero() {
        // Seven values of 1e20 sum to a rounded 7e20: the mean must still be 1e20 exactly.
        for v in [1e20f32, -3e34, 1e30, 3.0, 1e-30, 7.1e-45, 0.1, 123456.79] {
            for n in [7, 16, 33, 768] {
                let mut x = vec![v; 2 * n];
                let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.5).collect();
                layer_norm_rows(&mut x, n, 1e-5, Some(&vec![2.0; n]), Some(&bias)).unwrap();
                let want: Vec<f32> = bias.iter().chain(&bias).copied().collect();
                assert_eq!(x, want, "rows of {n} values {v}");
                // eps 0: 0 / 0 in every place.
                let mut x = vec![v; n];
                layer_norm_rows(&mut x, n, 0.0, None, None).unwrap();
                assert!(x.iter().all(|y| y.is_nan()), "rows of {n} values {v}, eps 0: {x:?}");
            }
        }
    }

    #[test]
    fn mismatched_lengths_are_errors() {
        let mut x = vec![0f32; 10];
        assert_eq!(layer_norm_rows(&mut x, 4, 1e-5, None, None).unwrap_err(), "10 values are not whole rows of 4");
        assert_eq!(
            layer_norm_rows(&mut x, 5, 1e-5, Some(&[1.0; 4]), None).unwrap_err(),
            "the scale has 4 values for rows of 5"
        );
        assert!(layer_norm_rows(&mut x, 0, 1e-5, None, None).is_ok());
        assert!(layer_norm_rows(&mut [], 3, 1e-5, None, None).is_ok());
    }
}
