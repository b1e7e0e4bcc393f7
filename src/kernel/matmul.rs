//! Small float32 matrix products, straight from the operands' memory: no packing.
//!
//! `C[i, j] = init(i, j) + Σ_p A[i, p] · B[p, j]` for `i < m`, `j < n`, `p < k`, where `A` is read
//! through any two strides (rows, depth), `C`'s rows are contiguous runs of `n` floats at any row
//! stride, and `init` is zero, a bias (`bias[i·row + j·col]`, `col` 0 or 1: one value per column, per
//! row, or per element) or `C`'s own values (to add a product to a sum begun by an earlier call). `B` is cut in tiles of 16 columns, each a run of
//! 16 contiguous floats per depth step: element `(p, j)` is at `(j / 16)·tile + p·step + j mod 16`.
//! Rows of `B` contiguous at a stride `r` are `tile = 16`, `step = r`; `B` packed in panels (each
//! tile's `k` runs of 16 one after the other, the last tile's padded) is `step = 16`, `tile = 16·k`,
//! which reads a weight matrix as one sequential stream.
//!
//! tract computes every product through its packed kernels: the activations are copied into panels
//! first, and the product pays a fixed cost for its scratch space and fused operations. On the
//! matrices of a small transformer (7 rows by 32 by 32, a few thousand multiply-adds) that fixed
//! cost is most of the time: about 2 µs a product where the arithmetic is 0.1 µs. Here each tile of
//! up to 4 rows by 16 columns keeps its sums in registers over the whole depth, reading a broadcast
//! of `A`'s element and two vectors of `B`'s tile at each step; nothing is copied at run time.
//!
//! The sums run over `p` in increasing order from `init`; with AVX2 and FMA each step is a fused
//! multiply-add, on other machines a multiply then an add. So values agree with the definition to
//! float32 rounding of a sum of `k` products, not bit for bit with tract's kernels (which sum in
//! their own order).

/// Rows of one tile.
pub(crate) const ROWS: usize = 4;
/// Float32 lanes of one vector.
const LANES: usize = 8;
/// Columns of the widest tile, and of `B`'s tiles: two vectors.
pub(crate) const COLS: usize = 2 * LANES;

/// Where the sums of [`matmul_f32`] start.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Init<'a> {
    /// From zero.
    Zero,
    /// From `values[i·row + j·col]` for `C[i, j]`, `col` 0 or 1.
    Bias {
        /// The values.
        values: &'a [f32],
        /// From row `i` to row `i + 1`.
        row: usize,
        /// From column `j` to column `j + 1`: 0 or 1.
        col: usize,
    },
    /// From the values in `C` (a product added to an earlier one).
    Accumulate,
}

/// The sizes and strides of one product (see the module docs), in elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Gemm {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `A`, rows of `B`: the depth summed over.
    pub k: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// From `A[i, p]` to `A[i + 1, p]`.
    pub a_row: usize,
    /// From `A[i, p]` to `A[i, p + 1]`.
    pub a_col: usize,
    /// From `B[p, j]` to `B[p + 1, j]`.
    pub b_step: usize,
    /// From `B[p, j]` to `B[p, j + 16]` (`B[p, j + 1]` is next to `B[p, j]` inside a tile of 16).
    pub b_tile: usize,
    /// From `C[i, j]` to `C[i + 1, j]` (`C[i, j + 1]` is next to `C[i, j]`).
    pub c_row: usize,
}

impl Gemm {
    /// How many floats from its start each operand spans, `(A, B, C)`, or `None` on overflow. An
    /// empty product spans nothing.
    pub(crate) fn spans(&self) -> Option<(usize, usize, usize)> {
        if self.m == 0 || self.n == 0 {
            return Some((0, 0, 0));
        }
        let last = |count: usize, stride: usize| (count - 1).checked_mul(stride);
        let c = last(self.m, self.c_row)?.checked_add(self.n)?;
        if self.k == 0 {
            return Some((0, 0, c));
        }
        let a = last(self.m, self.a_row)?.checked_add(last(self.k, self.a_col)?)?.checked_add(1)?;
        let tiles = self.n.div_ceil(COLS);
        let b = last(self.k, self.b_step)?
            .checked_add(last(tiles, self.b_tile)?)?
            .checked_add(self.n - (tiles - 1) * COLS)?;
        Some((a, b, c))
    }
}

/// Computes the product `gemm` describes into `c` (see the module docs).
///
/// # Panics
/// If an operand or a bias is shorter than its strides span ([`Gemm::spans`]), or a bias' column
/// step is not 0 or 1: callers size them from the same geometry.
pub(crate) fn matmul_f32(gemm: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], init: Init) {
    let (a_span, b_span, c_span) = gemm.spans().expect("matrix product strides overflow");
    assert!(a.len() >= a_span && b.len() >= b_span && c.len() >= c_span, "matrix product operand too short");
    if let Init::Bias { values, row, col } = init {
        let last = |count: usize, step: usize| count.saturating_sub(1).checked_mul(step);
        let reach = last(gemm.m, row).zip(last(gemm.n, col)).and_then(|(r, c)| r.checked_add(c));
        assert!(col <= 1 && reach.is_some_and(|r| gemm.m * gemm.n == 0 || r < values.len()), "bias too short");
    }
    if gemm.m == 0 || gemm.n == 0 {
        return;
    }
    if gemm.k == 0 {
        // Nothing to sum: the start alone, and `A` and `B` may be empty.
        portable(gemm, a, b, c, init);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // Safety: the CPU has AVX2 and FMA, checked just above, and the operands span what the
        // strides reach, asserted above: the requirements of `avx2::product`.
        unsafe { avx2::product(gemm, a, b, c, init) };
        return;
    }
    portable(gemm, a, b, c, init);
}

/// [`matmul_f32`] on any machine: a multiply then an add at each step.
fn portable(g: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], init: Init) {
    for i in 0..g.m {
        let row = &mut c[i * g.c_row..][..g.n];
        match init {
            Init::Zero => row.fill(0.0),
            Init::Bias { values, row: step, col: 1 } => row.copy_from_slice(&values[i * step..][..g.n]),
            Init::Bias { values, row: step, .. } => row.fill(values[i * step]),
            Init::Accumulate => {}
        }
        for p in 0..g.k {
            let x = a[i * g.a_row + p * g.a_col];
            for (t, outs) in row.chunks_mut(COLS).enumerate() {
                for (out, w) in outs.iter_mut().zip(&b[t * g.b_tile + p * g.b_step..]) {
                    *out += x * w;
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Gemm, Init, COLS, LANES, ROWS};

    /// The operands' start, as raw pointers for the tiles, and the start of the sums.
    struct Operands {
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        /// The bias' start, its row step, and whether it has one value per column (else per row).
        bias: Option<(*const f32, usize, bool)>,
        accumulate: bool,
    }

    /// [`super::matmul_f32`] with AVX2 and FMA: the rows in blocks of 4, by tiles of 16 columns;
    /// the 1 to 3 rows left by tiles of 64, 32 or 24 columns, so that a tile always has 8 or 9
    /// independent sums to keep the multiply-add units busy.
    ///
    /// Safety: the CPU has AVX2 and FMA; `m`, `k` and `n` are not zero; `a`, `b` and `c` are at
    /// least as long as `gemm.spans()` says and a bias is `n` long.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn product(gemm: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], init: Init) {
        let ops = Operands {
            a: a.as_ptr(),
            b: b.as_ptr(),
            c: c.as_mut_ptr(),
            bias: if let Init::Bias { values, row, col } = init {
                Some((values.as_ptr(), row, col == 1))
            } else {
                None
            },
            accumulate: matches!(init, Init::Accumulate),
        };
        let blocks = gemm.m / ROWS * ROWS;
        // Safety: the rows given to `columns` are inside `m`, and the caller's requirements hold.
        unsafe {
            if blocks > 0 {
                columns::<ROWS, 2>(gemm, &ops, 0, blocks);
            }
            match gemm.m - blocks {
                1 => columns::<1, 8>(gemm, &ops, blocks, gemm.m),
                2 => columns::<2, 4>(gemm, &ops, blocks, gemm.m),
                3 => columns::<3, 3>(gemm, &ops, blocks, gemm.m),
                _ => {}
            }
        }
    }

    /// Rows `from..to` (a multiple of `R` of them) in tiles of `R` rows and `V` vectors of columns:
    /// for each tile of columns, every tile of rows; the last tile of columns masked to `n`.
    ///
    /// Safety: as [`product`], with `from <= to <= m`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn columns<const R: usize, const V: usize>(g: &Gemm, ops: &Operands, from: usize, to: usize) {
        let width = V * LANES;
        let all = mask(LANES);
        let mut j = 0;
        // Safety: (every tile below) rows `i..i + R` are inside `from..to`, and its columns inside
        // `n` or masked to it, so each tile reads and writes inside the spans (see `product`).
        unsafe {
            while j + width <= g.n {
                for i in (from..to).step_by(R) {
                    tile::<R, V, true>(g, ops, i, j, [all; V], LANES);
                }
                j += width;
            }
            if j < g.n {
                match (g.n - j).div_ceil(LANES) {
                    1 => last::<R, 1>(g, ops, from, to, j),
                    2 => last::<R, 2>(g, ops, from, to, j),
                    3 => last::<R, 3>(g, ops, from, to, j),
                    4 => last::<R, 4>(g, ops, from, to, j),
                    5 => last::<R, 5>(g, ops, from, to, j),
                    6 => last::<R, 6>(g, ops, from, to, j),
                    7 => last::<R, 7>(g, ops, from, to, j),
                    // Fewer than `width <= 64` columns are left: at most 8 vectors.
                    _ => last::<R, 8>(g, ops, from, to, j),
                }
            }
        }
    }

    /// The last tile of columns, from `j`: `V` vectors (fewer than the full tiles', whatever it
    /// takes to cover the columns left), the last one masked to `n`. No vector is all outside `n`:
    /// a masked load may not fault, but its address past the operand costs a slow assist from the
    /// processor on every step.
    ///
    /// Safety: as [`columns`], with `V` vectors reaching `n` from `j`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn last<const R: usize, const V: usize>(g: &Gemm, ops: &Operands, from: usize, to: usize, j: usize) {
        let masks = std::array::from_fn(|v| mask((g.n - j).saturating_sub(v * LANES)));
        let lanes = g.n - j - (V - 1) * LANES;
        for i in (from..to).step_by(R) {
            // Safety: rows `i..i + R` are inside `from..to`, the columns inside `n` or masked.
            unsafe { tile::<R, V, false>(g, ops, i, j, masks, lanes) };
        }
    }

    /// A mask of the first `count` lanes (all of them from 8 on).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn mask(count: usize) -> __m256i {
        const FIRST: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
        let from = LANES - count.min(LANES);
        // Safety: `from + 8 <= 16`: the load reads inside `FIRST`.
        unsafe { _mm256_loadu_si256(FIRST[from..].as_ptr().cast()) }
    }

    /// One tile: rows `i..i + R`, `V` vectors of columns from `j` (a multiple of 8), each whole when
    /// `FULL`, else all whole but the last, which is read to the lanes of its mask and written to
    /// its first `lanes`; its sums in registers over the whole depth. The last vector is written
    /// through a copy on the stack: `_mm256_maskstore_ps` costs tens of cycles on some processors
    /// (AMD's), more than a tile's sums over a short depth.
    ///
    /// Safety: as [`columns`], with rows `i..i + R` inside `m` and the vectors' columns (whole, or
    /// to their masks; `lanes` the last one's when not `FULL`, 1 to 8) inside `n`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn tile<const R: usize, const V: usize, const FULL: bool>(
        g: &Gemm,
        ops: &Operands,
        i: usize,
        j: usize,
        masks: [__m256i; V],
        lanes: usize,
    ) {
        // Where vector `v`'s columns start in `B`, from the tile's depth step.
        let at: [usize; V] = std::array::from_fn(|v| {
            let col = j + v * LANES;
            col / COLS * g.b_tile + col % COLS
        });
        // Safety: (every access below) row `i + r < m`, depth `p < k`, and the columns of vector
        // `v` are `j + 8v..`, whole or masked to what is inside `n`: inside the spans of `product`.
        // Addresses are made with `wrapping_add`, which is defined whatever the result; a masked
        // access touches none of its masked-off lanes.
        unsafe {
            let load = |at: *const f32, v: usize| {
                if FULL || v + 1 < V {
                    _mm256_loadu_ps(at)
                } else {
                    _mm256_maskload_ps(at, masks[v])
                }
            };
            let mut sums = [[_mm256_setzero_ps(); V]; R];
            if let Some((bias, step, columns)) = ops.bias {
                for (r, row) in sums.iter_mut().enumerate() {
                    let at = bias.add((i + r) * step);
                    *row = if columns {
                        std::array::from_fn(|v| load(at.wrapping_add(j + v * LANES), v))
                    } else {
                        [_mm256_set1_ps(*at); V]
                    };
                }
            } else if ops.accumulate {
                for (r, row) in sums.iter_mut().enumerate() {
                    let c = ops.c.add((i + r) * g.c_row + j);
                    *row = std::array::from_fn(|v| load(c.wrapping_add(v * LANES), v));
                }
            }
            // Advanced with `wrapping_add`: past the last step they point nowhere, unread.
            let mut a = ops.a.wrapping_add(i * g.a_row);
            let mut b = ops.b;
            for _ in 0..g.k {
                let w: [__m256; V] = std::array::from_fn(|v| load(b.wrapping_add(at[v]), v));
                for (r, row) in sums.iter_mut().enumerate() {
                    let x = _mm256_set1_ps(*a.add(r * g.a_row));
                    for (sum, w) in row.iter_mut().zip(&w) {
                        *sum = _mm256_fmadd_ps(x, *w, *sum);
                    }
                }
                a = a.wrapping_add(g.a_col);
                b = b.wrapping_add(g.b_step);
            }
            for (r, row) in sums.iter().enumerate() {
                let out = ops.c.add((i + r) * g.c_row + j);
                for (v, sum) in row.iter().enumerate() {
                    if FULL || v + 1 < V {
                        _mm256_storeu_ps(out.wrapping_add(v * LANES), *sum);
                    } else {
                        let mut last = [0f32; LANES];
                        _mm256_storeu_ps(last.as_mut_ptr(), *sum);
                        std::ptr::copy_nonoverlapping(last.as_ptr(), out.wrapping_add(v * LANES), lanes.min(LANES));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
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

    /// Every tile shape and mask (rows 1 to 9, columns 1 to 40), transposed and padded strides, `B`
    /// in rows and in panels, every start (zero, a bias per column, per row or per element, `C`'s
    /// values), against float64 within the rounding bound of `k`
    /// products of values below 1; the floats around `C`'s rows are left as they were.
    #[test]
    fn products_match_the_definition() {
        for (m, k, n) in
            (1..=9).flat_map(|m| [1, 3, 8, 17].into_iter().flat_map(move |k| (1..=40).map(move |n| (m, k, n))))
        {
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
                    matmul_f32(&g, &a, &b, &mut c, init);
                    let want = reference(&g, &a, &b, &before, init);
                    let bound = (k as f64 + 2.0) * f32::EPSILON as f64 * (k as f64 + 1.0);
                    for (idx, got) in c.iter().enumerate() {
                        let (i, j) = (idx / g.c_row, idx % g.c_row);
                        if i < m && j < n {
                            let w = want[i * n + j];
                            assert!((*got as f64 - w).abs() <= bound, "{g:?} start {start} [{i},{j}]: {got} vs {w}");
                        } else {
                            assert_eq!(got.to_bits(), before[idx].to_bits(), "{g:?} wrote outside C at {idx}");
                        }
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
            portable(&g, &a, &b, &mut c, init);
            let want = reference(&g, &a, &b, &vec![0.5; c_span], init);
            for (got, w) in c.iter().zip(&want) {
                assert!((*got as f64 - w).abs() <= 1e-5, "{init:?}: {got} vs {w}");
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
        );
        assert_eq!(c, [7.0; 6]);
        let g = Gemm { m: 3, k: 0, n: 2, a_row: 0, a_col: 1, b_step: 2, b_tile: COLS, c_row: 2 };
        matmul_f32(&g, &[], &[], &mut c, Init::Bias { values: &[1.0, 2.0], row: 0, col: 1 });
        assert_eq!(c, [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
    }

    /// Overflowing strides are found, not wrapped.
    #[test]
    fn overflowing_strides() {
        let g = Gemm { m: 3, k: 2, n: 2, a_row: usize::MAX / 2, a_col: 1, b_step: 2, b_tile: COLS, c_row: 2 };
        assert_eq!(g.spans(), None);
    }
}
