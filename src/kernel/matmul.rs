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
//! A clamp to `[low, high]` (a fused `Relu` or `Clip`) is applied to each tile's sums as they are
//! stored, not by a pass over the output afterwards: comparisons, not `min`/`max`, so NaN stays NaN
//! and `-0` stays `-0`, as the separate clamp did.
//!
//! The columns are taken in blocks of several tiles (as many as keep the block's `k` rows of `B`
//! within [`PANEL_FLOATS`], a cache's worth), and within a block every tile of rows in turn: each row
//! of `C` is written as one run of the block's width, and the block of `B` is read from memory once
//! and from the cache for every tile of rows after the first. Taken one tile of 16 columns at a
//! time for all rows, a 1x1 convolution with many output channels on a large map wrote one cache
//! line into each of `m` rows far apart (96-144 at once on MobileNetV2's expansions), more streams
//! than the processor's prefetchers follow.
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
/// Floats of `B` one block of columns spans at most over the depth (16 KB, half this core's 32 KB
/// level-1 cache): its width is the most tiles whose `k` rows fit, at least one tile. A block past
/// the level-1 cache made every step of every tile of rows wait on the level-2 cache for `B` (64 KB
/// blocks: DeepLabV3's 160-to-960-channel 1x1 convolutions 10-28% slower than one tile at a time).
const PANEL_FLOATS: usize = 1 << 12;

/// Columns of one block of tiles `width` wide, for a depth of `k` (see [`PANEL_FLOATS`]).
fn block_columns(k: usize, width: usize) -> usize {
    (PANEL_FLOATS / k.max(1) / width).max(1) * width
}

/// The depth above which a product is summed in slices of at most [`DEPTH_SLICE`] (in as many
/// equal slices as that takes): a tile of 16 columns reads a 64-byte line of `B` at each depth step,
/// and past 384 steps (24 KB) its lines no longer stay in this core's 32 KB level-1 cache from one
/// tile of rows to the next, so every step waited on the level-2 cache (`k1 576-96 14`, `k1 576-160
/// 7`: about 32 multiply-adds a nanosecond against tract's 46).
const DEPTH_SLICE: usize = 256;

/// Slices of the depth `k` (see [`DEPTH_SLICE`]).
fn depth_slices(k: usize) -> usize {
    if k <= DEPTH_SLICE * 3 / 2 {
        1
    } else {
        k.div_ceil(DEPTH_SLICE)
    }
}

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

/// Computes the product `gemm` describes into `c` (see the module docs), each value then clamped to
/// `clamp`'s `[low, high]` when given (NaN kept).
///
/// # Panics
/// If an operand or a bias is shorter than its strides span ([`Gemm::spans`]), or a bias' column
/// step is not 0 or 1: callers size them from the same geometry.
pub(crate) fn matmul_f32(gemm: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], init: Init, clamp: Option<[f32; 2]>) {
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
        portable(gemm, a, b, c, init, clamp);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // Safety: the CPU has AVX2 and FMA, checked just above, and the operands span what the
        // strides reach, asserted above: the requirements of `avx2::product`.
        unsafe { avx2::product(gemm, a, b, c, init, clamp) };
        return;
    }
    portable(gemm, a, b, c, init, clamp);
}

/// `value` clamped to `[low, high]` by comparisons, so that NaN (and `-0` at a bound of `0`) stays.
#[inline]
fn clamped(value: f32, [low, high]: [f32; 2]) -> f32 {
    if value < low {
        low
    } else if value > high {
        high
    } else {
        value
    }
}

/// [`matmul_f32`] on any machine: a multiply then an add at each step.
fn portable(g: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], init: Init, clamp: Option<[f32; 2]>) {
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
        if let Some(bounds) = clamp {
            row.iter_mut().for_each(|v| *v = clamped(*v, bounds));
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{block_columns, depth_slices, Gemm, Init, COLS, LANES, ROWS};

    /// The operands' start, as raw pointers for the tiles, the start of the sums and the clamp.
    struct Operands {
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        /// The bias' start, its row step, and whether it has one value per column (else per row).
        bias: Option<(*const f32, usize, bool)>,
        accumulate: bool,
        /// The bounds the sums are clamped to as they are stored, in every lane.
        clamp: Option<[__m256; 2]>,
    }

    /// [`super::matmul_f32`] with AVX2 and FMA: the depth in slices ([`depth_slices`]), each over
    /// the whole product, the first from `init`, the others adding to `C`, the clamp on the last;
    /// in each, the rows in blocks of 4, by tiles of 16 columns; the 1 to 3 rows left by tiles of
    /// 64, 32 or 24 columns, so that a tile always has 8 or 9 independent sums to keep the
    /// multiply-add units busy. A sum stored to `C` between slices and loaded back is the same
    /// float32, so the values are those of one pass over the depth, bit for bit.
    ///
    /// Safety: the CPU has AVX2 and FMA; `m`, `k` and `n` are not zero; `a`, `b` and `c` are at
    /// least as long as `gemm.spans()` says and a bias is `n` long.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn product(
        gemm: &Gemm,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        init: Init,
        clamp: Option<[f32; 2]>,
    ) {
        let slices = depth_slices(gemm.k);
        for s in 0..slices {
            let (p0, p1) = (gemm.k * s / slices, gemm.k * (s + 1) / slices);
            let first = s == 0;
            let ops = Operands {
                // Depth `p0` of `A` and `B`: inside them, as `p0 < k`.
                a: a[p0 * gemm.a_col..].as_ptr(),
                b: b[p0 * gemm.b_step..].as_ptr(),
                c: c.as_mut_ptr(),
                bias: match init {
                    Init::Bias { values, row, col } if first => Some((values.as_ptr(), row, col == 1)),
                    _ => None,
                },
                accumulate: !first || matches!(init, Init::Accumulate),
                clamp: clamp.filter(|_| s + 1 == slices).map(|bounds| bounds.map(|x| _mm256_set1_ps(x))),
            };
            let g = Gemm { k: p1 - p0, ..*gemm };
            let blocks = g.m / ROWS * ROWS;
            // Safety: the rows given to `columns` are inside `m`; the slice's operands start at its
            // depth and reach no further than the whole product's (its depth ends at `p1 <= k`),
            // so the caller's requirements hold for `g`.
            unsafe {
                if blocks > 0 {
                    columns::<ROWS, 2>(&g, &ops, 0, blocks);
                }
                match g.m - blocks {
                    1 => columns::<1, 8>(&g, &ops, blocks, g.m),
                    2 => columns::<2, 4>(&g, &ops, blocks, g.m),
                    3 => columns::<3, 3>(&g, &ops, blocks, g.m),
                    _ => {}
                }
            }
        }
    }

    /// Rows `from..to` (a multiple of `R` of them) in tiles of `R` rows and `V` vectors of columns,
    /// the columns in blocks of whole tiles ([`block_columns`]), in each block every tile of rows
    /// along the block; the last block also takes the last tile of columns, masked to `n` (so that
    /// a few columns past the whole tiles do not cost a pass of their own over `A`).
    ///
    /// Safety: as [`product`], with `from <= to <= m`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn columns<const R: usize, const V: usize>(g: &Gemm, ops: &Operands, from: usize, to: usize) {
        let width = V * LANES;
        let all = mask(LANES);
        let whole = g.n / width * width;
        let tail = g.n - whole;
        let block = block_columns(g.k, width);
        // Safety: (every tile below) rows `i..i + R` are inside `from..to`, and its columns inside
        // `n` or masked to it, so each tile reads and writes inside the spans (see `product`).
        unsafe {
            // One block (empty of whole tiles) when there are none.
            for j0 in (0..whole.max(1)).step_by(block) {
                let j1 = (j0 + block).min(whole);
                for i in (from..to).step_by(R) {
                    for j in (j0..j1).step_by(width) {
                        tile::<R, V, true>(g, ops, i, j, [all; V], LANES);
                    }
                    if j1 < whole || tail == 0 {
                        continue;
                    }
                    match tail.div_ceil(LANES) {
                        1 => last::<R, 1>(g, ops, i, whole),
                        2 => last::<R, 2>(g, ops, i, whole),
                        3 => last::<R, 3>(g, ops, i, whole),
                        4 => last::<R, 4>(g, ops, i, whole),
                        5 => last::<R, 5>(g, ops, i, whole),
                        6 => last::<R, 6>(g, ops, i, whole),
                        7 => last::<R, 7>(g, ops, i, whole),
                        // Fewer than `width <= 64` columns are left: at most 8 vectors.
                        _ => last::<R, 8>(g, ops, i, whole),
                    }
                }
            }
        }
    }

    /// The last tile of columns of rows `i..i + R`, from `j`: `V` vectors (fewer than the full
    /// tiles', whatever it takes to cover the columns left), the last one masked to `n`. No vector
    /// is all outside `n`: a masked load may not fault, but its address past the operand costs a
    /// slow assist from the processor on every step.
    ///
    /// Safety: as [`columns`], with rows `i..i + R` inside `m` and `V` vectors reaching `n` from `j`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn last<const R: usize, const V: usize>(g: &Gemm, ops: &Operands, i: usize, j: usize) {
        let masks = std::array::from_fn(|v| mask((g.n - j).saturating_sub(v * LANES)));
        let lanes = g.n - j - (V - 1) * LANES;
        // Safety: rows `i..i + R` are inside `m`, the columns inside `n` or masked.
        unsafe { tile::<R, V, false>(g, ops, i, j, masks, lanes) };
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
            if let Some([low, high]) = ops.clamp {
                for sum in sums.iter_mut().flatten() {
                    // Lanes above `high` take `high`, then lanes below `low` take `low` (first, as
                    // in `clamped`, should `low` be above `high`): NaN compares false and stays.
                    let below = _mm256_cmp_ps::<_CMP_LT_OQ>(*sum, low);
                    let above = _mm256_cmp_ps::<_CMP_GT_OQ>(*sum, high);
                    *sum = _mm256_blendv_ps(_mm256_blendv_ps(*sum, high, above), low, below);
                }
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
    /// products of values below 1; the floats around `C`'s rows are left as they were. A depth of
    /// 20 makes blocks of 192 columns, so 500 columns run over two whole blocks and a third that
    /// ends with a tile cut short; deeper products have blocks of one tile; 400 and 1100 are summed
    /// in 2 and 5 slices of the depth.
    #[test]
    fn products_match_the_definition() {
        assert_eq!([block_columns(20, COLS), block_columns(20, 4 * LANES), block_columns(300, COLS)], [192, 192, 16]);
        assert_eq!([depth_slices(384), depth_slices(400), depth_slices(1100)], [1, 2, 5]);
        let small = (1..=9).flat_map(|m| [1, 3, 8, 17].into_iter().flat_map(move |k| (1..=40).map(move |n| (m, k, n))));
        let blocks =
            (1..=9).flat_map(|m| [(20, 500), (300, 48), (300, 161), (400, 33), (1100, 70)].map(|(k, n)| (m, k, n)));
        for (m, k, n) in small.chain(blocks) {
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
                    matmul_f32(&g, &a, &b, &mut c, init, None);
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

    /// Sliced depths give the bits of one fused multiply-add chain over the whole depth from the
    /// start (what one pass computes), with and without a clamp, `B` in rows and in panels.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sliced_depths_sum_as_one_chain() {
        if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
            return;
        }
        for (m, k, n) in (1..=6).flat_map(|m| [(400, 20), (600, 33), (1100, 17)].map(|(k, n)| (m, k, n))) {
            assert!(depth_slices(k) > 1);
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
                    matmul_f32(&g, &a, &b, &mut c, init, clamp);
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
                        assert_eq!(c[i * n + j].to_bits(), want.to_bits(), "{g:?} [{i},{j}]");
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
    /// wins over `high` when it is above it, as in [`clamped`]; on the SIMD path (every tile shape
    /// and mask) and the portable one alike.
    #[test]
    fn clamped_products_keep_nan_and_signed_zero() {
        assert_eq!(clamped(f32::NAN, [0.0, 6.0]).to_bits(), f32::NAN.to_bits());
        assert_eq!(clamped(-0.0, [0.0, 6.0]).to_bits(), (-0.0f32).to_bits());
        assert_eq!(clamped(1.0, [3.0, 2.0]), 3.0);
        assert_eq!(clamped(4.0, [3.0, 2.0]), 2.0);
        for (m, n) in (1..=9).flat_map(|m| [5, 16, 23, 64, 70].map(|n| (m, n))) {
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
                matmul_f32(&g, &a, &b, &mut plain, Init::Zero, None);
                let want: Vec<u32> = plain.iter().map(|v| clamped(*v, bounds).to_bits()).collect();
                let mut simd = vec![0.0; m * n];
                matmul_f32(&g, &a, &b, &mut simd, Init::Zero, Some(bounds));
                assert_eq!(simd.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want, "{g:?} {bounds:?}");
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
}
