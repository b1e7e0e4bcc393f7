//! The kernel with AVX2 and FMA: tiles of 4 rows by 16 columns in eight 8-lane sums.

use std::arch::x86_64::*;

use super::{block_columns, depth_slices, Gemm, Init, COLS};

/// Rows of one tile.
const ROWS: usize = 4;
/// Float32 lanes of one vector.
const LANES: usize = 8;

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
pub(super) unsafe fn product(gemm: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], init: Init, clamp: Option<[f32; 2]>) {
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
