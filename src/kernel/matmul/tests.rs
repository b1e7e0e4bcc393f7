//! The kernel against the definition, on every instruction set this machine has.

use super::*;

/// The product in float64, from `init` as [`matmul_f32`] takes it (`c`: `C` before).
fn reference(g: &Gemm, a: &[f32], b: &[f32], c: &[f32], init: Init) -> Vec<f64> {
    let mut out = vec![0.0; g.m * g.n];
    for i in 0..g.m {
        for j in 0..g.n {
            let mut s = match init {
                Init::Bias { values, row, col } => values[i * row + j * col] as f64,
                Init::Accumulate => c[i * g.c_row + j] as f64,
                Init::Zero => 0.0,
            };
            for p in 0..g.k {
                s += a[i * g.a_row + p * g.a_col] as f64 * b[j / COLS * g.b_tile + p * g.b_step + j % COLS] as f64;
            }
            out[i * g.n + j] = s;
        }
    }
    out
}

/// Deterministic values in [-1, 1).
fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 2048) as f32 / 1024.0 - 1.0
        })
        .collect()
}

/// Every tile shape and mask of every build this machine runs (rows 1 to 15: AVX-512's tiles of
/// 8, 4 and 1 to 3 rows; columns 1 to 40), transposed and padded strides, `B` in rows and in panels, every start (zero, a bias per column, per row or per element, `C`'s
/// values), against float64 within the rounding bound of `k`
/// products of values below 1; the floats around `C`'s rows are left as they were. A depth of
/// 20 makes blocks of 192 columns, so 500 columns run over two whole blocks and a third that
/// ends with a tile cut short; deeper products have blocks of one tile; 400 and 1100 are summed
/// in 2 and 5 slices of the depth.
#[test]
fn products_match_the_definition() {
    assert_eq!([block_columns(20, COLS), block_columns(20, 64), block_columns(300, COLS)], [192, 192, 16]);
    assert_eq!([depth_slices(384), depth_slices(400), depth_slices(1100)], [1, 2, 5]);
    let small = (1..=15).flat_map(|m| [1, 3, 8, 17].into_iter().flat_map(move |k| (1..=40).map(move |n| (m, k, n))));
    let blocks =
        (1..=15).flat_map(|m| [(20, 500), (300, 48), (300, 161), (400, 33), (1100, 70)].map(|(k, n)| (m, k, n)));
    let builds = Build::all_here();
    for ((m, k, n), build) in small.chain(blocks).flat_map(|s| builds.iter().map(move |b| (s, *b))) {
        for (transposed, panels) in [(false, false), (true, false), (false, true)] {
            let (a_row, a_col) = if transposed { (1, m + 2) } else { (k + 1, 1) };
            let (b_step, b_tile) = if panels { (COLS, k * COLS) } else { (n + 3, COLS) };
            let g = Gemm { m, k, n, a_row, a_col, b_step, b_tile, c_row: n + 5 };
            let (a_span, b_span, c_span) = g.spans().unwrap();
            let a = values(a_span, (m * 100 + k) as u32);
            let b = values(b_span, (n * 7 + k) as u32);
            let bias = values(m * (n + 2), n as u32);
            for start in 0..5 {
                let before = values(c_span + 4, 99);
                let mut c = before.clone();
                let init = match start {
                    0 => Init::Zero,
                    1 => Init::Bias { values: &bias[..n], row: 0, col: 1 },
                    2 => Init::Bias { values: &bias[..m], row: 1, col: 0 },
                    3 => Init::Bias { values: &bias, row: n + 2, col: 1 },
                    _ => Init::Accumulate,
                };
                product_on(build, &g, &a, &b, &mut c, init, None);
                let want = reference(&g, &a, &b, &before, init);
                let bound = (k as f64 + 2.0) * f32::EPSILON as f64 * (k as f64 + 1.0);
                for (idx, got) in c.iter().enumerate() {
                    let (i, j) = (idx / g.c_row, idx % g.c_row);
                    if i < m && j < n {
                        let w = want[i * n + j];
                        assert!(
                            (*got as f64 - w).abs() <= bound,
                            "{build:?} {g:?} start {start} [{i},{j}]: {got} vs {w}"
                        );
                    } else {
                        assert_eq!(got.to_bits(), before[idx].to_bits(), "{build:?} {g:?} wrote outside C at {idx}");
                    }
                }
            }
        }
    }
}

/// Every SIMD build this machine runs (AVX2's, AVX-512's) gives each value the bits of one fused
/// multiply-add chain over the whole depth from the start, so they agree bit for bit; sliced
/// depths (400 and more) included, with and without a clamp, `B` in rows and in panels.
#[cfg(target_arch = "x86_64")]
#[test]
fn sliced_depths_sum_as_one_chain() {
    let builds: Vec<Build> = Build::all_here().into_iter().filter(|b| *b != Build::Portable).collect();
    let shapes = (1..=13).flat_map(|m| [(5, 40), (64, 49), (400, 20), (600, 33), (1100, 17)].map(|(k, n)| (m, k, n)));
    for ((m, k, n), build) in shapes.flat_map(|s| builds.iter().map(move |b| (s, *b))) {
        for panels in [false, true] {
            let (b_step, b_tile) = if panels { (COLS, k * COLS) } else { (n + 3, COLS) };
            let g = Gemm { m, k, n, a_row: k, a_col: 1, b_step, b_tile, c_row: n };
            let (a_span, b_span, c_span) = g.spans().unwrap();
            let (a, b, bias) = (values(a_span, 11), values(b_span, 12), values(n, 13));
            for (init, clamp) in [
                (Init::Zero, None),
                (Init::Bias { values: &bias, row: 0, col: 1 }, None),
                (Init::Accumulate, Some([-0.5, 0.5])),
            ] {
                let before = values(c_span, 14);
                let mut c = before.clone();
                product_on(build, &g, &a, &b, &mut c, init, clamp);
                for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
                    let mut sum = match init {
                        Init::Zero => 0.0,
                        Init::Bias { values, .. } => values[j],
                        Init::Accumulate => before[i * n + j],
                    };
                    for p in 0..k {
                        sum = a[i * k + p].mul_add(b[j / COLS * b_tile + p * b_step + j % COLS], sum);
                    }
                    let want = clamp.map_or(sum, |bounds| clamped(sum, bounds));
                    assert_eq!(c[i * n + j].to_bits(), want.to_bits(), "{build:?} {g:?} [{i},{j}]");
                }
            }
        }
    }
}

/// The portable loops give the same values as the definition too (the machine's SIMD build is
/// what the test above checks on x86).
#[test]
fn portable_products_match_the_definition() {
    let g = Gemm { m: 5, k: 9, n: 21, a_row: 9, a_col: 1, b_step: 21, b_tile: COLS, c_row: 21 };
    let (a_span, b_span, c_span) = g.spans().unwrap();
    let (a, b, bias) = (values(a_span, 1), values(b_span, 2), values(5 * 21, 3));
    for init in [
        Init::Zero,
        Init::Bias { values: &bias[..21], row: 0, col: 1 },
        Init::Bias { values: &bias[..5], row: 1, col: 0 },
        Init::Bias { values: &bias, row: 21, col: 1 },
        Init::Accumulate,
    ] {
        let mut c = vec![0.5; c_span];
        portable(&g, &a, &b, &mut c, init, None);
        let want = reference(&g, &a, &b, &vec![0.5; c_span], init);
        for (got, w) in c.iter().zip(&want) {
            assert!((*got as f64 - w).abs() <= 1e-5, "{init:?}: {got} vs {w}");
        }
    }
}

/// A clamp applies to every value as it is stored, by comparisons: NaN and `-0` stay, `low`
/// wins over `high` when it is above it, as in [`clamped`]; on every SIMD build (every tile shape
/// and mask) and the portable one alike.
#[test]
fn clamped_products_keep_nan_and_signed_zero() {
    assert_eq!(clamped(f32::NAN, [0.0, 6.0]).to_bits(), f32::NAN.to_bits());
    assert_eq!(clamped(-0.0, [0.0, 6.0]).to_bits(), (-0.0f32).to_bits());
    assert_eq!(clamped(1.0, [3.0, 2.0]), 3.0);
    assert_eq!(clamped(4.0, [3.0, 2.0]), 2.0);
    let builds = Build::all_here();
    let shapes = (1..=13).flat_map(|m| [5, 16, 23, 64, 70, 130].map(|n| (m, n)));
    for ((m, n), build) in shapes.flat_map(|s| builds.iter().map(move |b| (s, *b))) {
        let k = 3;
        let g = Gemm { m, k, n, a_row: k, a_col: 1, b_step: n, b_tile: COLS, c_row: n };
        let (a_span, b_span, _) = g.spans().unwrap();
        // Products of -4..4, a row of NaN, a row of zeros and a row of infinities.
        let mut a: Vec<f32> = values(a_span, 5).iter().map(|x| x * 4.0).collect();
        let b: Vec<f32> = values(b_span, 6).iter().map(|x| x.abs() + 0.25).collect();
        a[0] = f32::NAN;
        if m > 1 {
            a[k..2 * k].fill(-0.0);
        }
        if m > 2 {
            a[2 * k] = f32::INFINITY;
        }
        for bounds in [[0.0, 6.0], [-1.0, 1.0], [3.0, 2.0], [f32::NEG_INFINITY, 0.5]] {
            let mut plain = vec![0.0; m * n];
            product_on(build, &g, &a, &b, &mut plain, Init::Zero, None);
            let want: Vec<u32> = plain.iter().map(|v| clamped(*v, bounds).to_bits()).collect();
            let mut simd = vec![0.0; m * n];
            product_on(build, &g, &a, &b, &mut simd, Init::Zero, Some(bounds));
            assert_eq!(simd.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want, "{build:?} {g:?} {bounds:?}");
            let mut unclamped = vec![0.0; m * n];
            portable(&g, &a, &b, &mut unclamped, Init::Zero, None);
            let mut port = vec![0.0; m * n];
            portable(&g, &a, &b, &mut port, Init::Zero, Some(bounds));
            let want: Vec<u32> = unclamped.iter().map(|v| clamped(*v, bounds).to_bits()).collect();
            assert_eq!(port.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want, "portable {g:?} {bounds:?}");
            assert!(simd[0].is_nan() && (m == 1 || simd[n..2 * n].iter().all(|v| *v == 0.0 || *v == bounds[0])));
        }
    }
}

/// Empty products write nothing; a depth of zero leaves the start.
#[test]
fn empty_products() {
    let mut c = vec![7.0; 6];
    matmul_f32(
        &Gemm { m: 0, k: 3, n: 2, a_row: 3, a_col: 1, b_step: 2, b_tile: COLS, c_row: 2 },
        &[],
        &[],
        &mut c,
        Init::Zero,
        None,
    );
    assert_eq!(c, [7.0; 6]);
    let g = Gemm { m: 3, k: 0, n: 2, a_row: 0, a_col: 1, b_step: 2, b_tile: COLS, c_row: 2 };
    matmul_f32(&g, &[], &[], &mut c, Init::Bias { values: &[1.0, 2.0], row: 0, col: 1 }, None);
    assert_eq!(c, [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
}

/// Overflowing strides are found, not wrapped.
#[test]
fn overflowing_strides() {
    let g = Gemm { m: 3, k: 2, n: 2, a_row: usize::MAX / 2, a_col: 1, b_step: 2, b_tile: COLS, c_row: 2 };
    assert_eq!(g.spans(), None);
}
