//! The kernel with AVX-512: tiles of 8 rows by 32 columns in sixteen 16-lane sums.
//!
//! AVX2's tile of 4 rows by 16 columns keeps 8 sums, exactly as many as two multiply-add units with
//! a latency of 4 cycles need to stay busy: any wait on a load stalls them, and on `k1 32-16 112`
//! (MobileNetV2's first projection) it reached 23 multiply-adds a nanosecond where onnxruntime's
//! kernels reach 56. With 32 registers, a tile of 8 rows by two 16-lane vectors keeps 16 sums and
//! reads, per depth step, two vectors of `B` (its two tiles of 16 columns) and 8 broadcasts of `A`.
//! Masked loads and stores of AVX-512 cost what plain ones do, so the last tile of columns is
//! written in place.

use std::arch::x86_64::*;

use super::{block_columns, depth_slices, Gemm, Init, COLS};

/// Rows of the main tile.
const ROWS: usize = 8;
/// Float32 lanes of one vector: one tile of `B`'s columns.
const LANES: usize = 16;
const _: () = assert!(LANES == COLS);

/// The operands' start, as raw pointers for the tiles, the start of the sums and the clamp.
struct Operands {
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    /// The bias' start, its row step, and whether it has one value per column (else per row).
    bias: Option<(*const f32, usize, bool)>,
    accumulate: bool,
    /// The bounds the sums are clamped to as they are stored, in every lane.
    clamp: Option<[__m512; 2]>,
}

/// [`super::matmul_f32`] with AVX-512: the depth in slices ([`depth_slices`]), each over the whole
/// product, the first from `init`, the others adding to `C`, the clamp on the last; in each, the
/// rows in blocks of 8 by tiles of 32 columns, then 4 left by tiles of 64, then 1 to 3 by tiles of
/// 128, 64 or 64 columns, so that a tile keeps 8 to 16 independent sums. A sum stored to `C`
/// between slices and loaded back is the same float32, so the values are those of one pass over
/// the depth, bit for bit, and the same as AVX2's (the same fused multiply-adds in the same order).
///
/// Safety: the CPU has AVX-512F, AVX2 and FMA; `m`, `k` and `n` are not zero; `a`, `b` and `c`
/// are at least as long as `gemm.spans()` says and a bias reaches every value it is read at.
#[target_feature(enable = "avx512f,avx2,fma")]
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
            clamp: clamp.filter(|_| s + 1 == slices).map(|bounds| bounds.map(|x| _mm512_set1_ps(x))),
        };
        let g = Gemm { k: p1 - p0, ..*gemm };
        let eights = g.m / ROWS * ROWS;
        let fours = eights + (g.m - eights) / 4 * 4;
        // Safety: the rows given to `columns` are inside `m`; the slice's operands start at its
        // depth and reach no further than the whole product's (its depth ends at `p1 <= k`), so
        // the caller's requirements hold for `g`.
        unsafe {
            if eights > 0 {
                columns::<ROWS, 2>(&g, &ops, 0, eights);
            }
            if fours > eights {
                columns::<4, 4>(&g, &ops, eights, fours);
            }
            match g.m - fours {
                1 => columns::<1, 8>(&g, &ops, fours, g.m),
                2 => columns::<2, 4>(&g, &ops, fours, g.m),
                3 => columns::<3, 4>(&g, &ops, fours, g.m),
                _ => {}
            }
        }
    }
}

/// Rows `from..to` (a multiple of `R` of them) in tiles of `R` rows and `V` vectors of columns,
/// the columns in blocks of whole tiles ([`block_columns`]), in each block every tile of rows
/// along the block; the last block also takes the last tile of columns, masked to `n`.
///
/// Safety: as [`product`], with `from <= to <= m`.
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn columns<const R: usize, const V: usize>(g: &Gemm, ops: &Operands, from: usize, to: usize) {
    let width = V * LANES;
    let whole = g.n / width * width;
    let tail = g.n - whole;
    let block = block_columns(g.k, width);
    // Safety: (every tile below) rows `i..i + R` are inside `from..to`, and its columns inside `n`
    // or masked to it, so each tile reads and writes inside the spans (see `product`).
    unsafe {
        // One block (empty of whole tiles) when there are none.
        for j0 in (0..whole.max(1)).step_by(block) {
            let j1 = (j0 + block).min(whole);
            for i in (from..to).step_by(R) {
                for j in (j0..j1).step_by(width) {
                    tile::<R, V>(g, ops, i, j, [u16::MAX; V]);
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
                    // Fewer than `width <= 128` columns are left: at most 8 vectors.
                    _ => last::<R, 8>(g, ops, i, whole),
                }
            }
        }
    }
}

/// The last tile of columns of rows `i..i + R`, from `j`: `V` vectors (whatever it takes to cover
/// the columns left), each masked to `n`. No vector is all outside `n`: a masked load does not
/// fault, but an address past the operand may cost an assist from the processor on every step.
///
/// Safety: as [`columns`], with rows `i..i + R` inside `m` and `V` vectors reaching `n` from `j`.
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn last<const R: usize, const V: usize>(g: &Gemm, ops: &Operands, i: usize, j: usize) {
    let masks = std::array::from_fn(|v| {
        let count = (g.n - j).saturating_sub(v * LANES).min(LANES);
        ((1u32 << count) - 1) as u16
    });
    // Safety: rows `i..i + R` are inside `m`, the columns inside `n` or masked.
    unsafe { tile::<R, V>(g, ops, i, j, masks) };
}

/// One tile: rows `i..i + R`, `V` vectors of columns from `j` (a multiple of 16), each read and
/// written to the lanes of its mask (all of them but in the last tile of columns); its sums in
/// registers over the whole depth.
///
/// Safety: as [`columns`], with rows `i..i + R` inside `m` and the lanes of the vectors' masks
/// inside `n`.
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
unsafe fn tile<const R: usize, const V: usize>(g: &Gemm, ops: &Operands, i: usize, j: usize, masks: [u16; V]) {
    // Where vector `v`'s columns start in `B`, from the tile's depth step: tile `j / 16 + v`.
    let at: [usize; V] = std::array::from_fn(|v| (j / COLS + v) * g.b_tile);
    // Safety: (every access below) row `i + r < m`, depth `p < k`, and the lanes of vector `v`'s
    // mask are columns inside `n`: inside the spans of `product`. Addresses are made with
    // `wrapping_add`, which is defined whatever the result; a masked access touches none of its
    // masked-off lanes.
    unsafe {
        let load = |at: *const f32, v: usize| _mm512_maskz_loadu_ps(masks[v], at);
        let mut sums = [[_mm512_setzero_ps(); V]; R];
        if let Some((bias, step, columns)) = ops.bias {
            for (r, row) in sums.iter_mut().enumerate() {
                let at = bias.add((i + r) * step);
                *row = if columns {
                    std::array::from_fn(|v| load(at.wrapping_add(j + v * LANES), v))
                } else {
                    [_mm512_set1_ps(*at); V]
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
            let w: [__m512; V] = std::array::from_fn(|v| load(b.wrapping_add(at[v]), v));
            for (r, row) in sums.iter_mut().enumerate() {
                let x = _mm512_set1_ps(*a.add(r * g.a_row));
                for (sum, w) in row.iter_mut().zip(&w) {
                    *sum = _mm512_fmadd_ps(x, *w, *sum);
                }
            }
            a = a.wrapping_add(g.a_col);
            b = b.wrapping_add(g.b_step);
        }
        // Each row clamped and stored in turn (indexing a row's sums by constants, which keeps them
        // in registers: over the whole tile at once, the compiler kept a copy of every sum in
        // memory too, and stored it at every depth step).
        for (r, row) in sums.iter().enumerate() {
            let out = ops.c.add((i + r) * g.c_row + j);
            for (v, &sum) in row.iter().enumerate() {
                let sum = match ops.clamp {
                    // Lanes above `high` take `high`, then lanes below `low` take `low` (first, as
                    // in `clamped`, should `low` be above `high`): NaN compares false and stays.
                    Some([low, high]) => {
                        let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(sum, low);
                        let above = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(sum, high);
                        _mm512_mask_blend_ps(below, _mm512_mask_blend_ps(above, sum, high), low)
                    }
                    None => sum,
                };
                _mm512_mask_storeu_ps(out.wrapping_add(v * LANES), masks[v], sum);
            }
        }
    }
}
