//! The depthwise sums of one channel in blocks of output rows (AVX-512VL, 32 vector registers):
//! each vector loaded from an input row serves every output row of the block that reads it.
//!
//! The chunk kernel ([`super::avx2`]) sums each chunk of 8 outputs over all its taps with one load
//! per multiply-add (and a broadcast of the weight per 8): on a 7x7 kernel over a 56x56 map it runs
//! about one multiply-add vector a cycle, bound by the loads (a third of which straddle two cache
//! lines). Here a block is `RB` output rows by up to `CB` chunks of 8 columns, `RB·CB` sums in
//! registers: the input rows the block reads are walked once, top to bottom, each row's `KW` column
//! shifts loaded once per chunk and multiplied into every output row of the block that reads that
//! row (`RB` of them at most: 3 of a 3x3 kernel's 9 taps reuse each load at stride 1). For a 3x3
//! kernel at stride 1 that is 6 rows of 3 loads for 4 rows of 9 multiply-adds a chunk: 0.5 loads a
//! multiply-add, plus one weight broadcast per 4 (shared by the block's chunks).
//!
//! Each output sums the same terms in the same order as the chunk kernel (bias, then taps by
//! kernel row, then column, one fused multiply-add each): the input rows are walked in increasing
//! order, and an output row reads its kernel rows in that order. So both give the same bits.
//!
//! Rows: blocks of `RB` from the top; the last block starts `RB` rows above the bottom (its first
//! rows are summed again, to the same bits) so that one block size serves every map with at least
//! `RB` output rows. Columns: blocks of `CB_MAX` chunks, the last of 1 to `CB_MAX` chunks; a chunk
//! past the row's end keeps its lanes past the end out of the output (a masked store, cheap with
//! AVX-512's mask registers, unlike AVX2's `vmaskmovps`), and reads them from the scratch's own
//! slack (the layout keeps 8 floats past every chunk it sums).
//!
//! Kernels taken (`takes`): square 3x3, 5x5 and 7x7, with a row stride of 1 and dilation of 1 or
//! 2, or a row stride of 2 and dilation of 1 (the column stride and dilation are the layout's, any it
//! takes), on maps of at least `RB` output rows and more than one chunk a row; it is chosen where
//! a row has more than two chunks ([`pays`]). Each is its own compiled body, the loops over the
//! block's input rows and output rows written out (`unroll!`), so that the test of which output row
//! reads which input row costs nothing at run time.

use std::arch::asm;
use std::arch::x86_64::*;

use super::Layout;

/// Output rows of a block.
const RB: usize = 4;
/// Chunks of a block at most.
const CB_MAX: usize = 4;
/// Float32 lanes of one vector.
const LANES: usize = 8;

/// Whether [`channel`] can sum a kernel of `kh`x`kw`, row stride `sh` and row dilation `dh` over a
/// map of `oh`x`ow` outputs: at least `RB` rows, and more than one chunk a row (a row of one chunk,
/// a 7x7 map, gives a block 4 sums, too few to keep the multiply-adds busy, each waiting on the one
/// before in its sum).
pub(super) fn takes(kh: usize, kw: usize, sh: usize, dh: usize, [oh, ow]: [usize; 2]) -> bool {
    kh == kw && matches!(kh, 3 | 5 | 7) && matches!((sh, dh), (1, 1) | (1, 2) | (2, 1)) && oh >= RB && ow > LANES
}

/// Whether [`channel`] is the faster kernel for a map of `ow` output columns that it takes: more
/// than two chunks a row. Measured against the chunk kernel (one thread, `benches/layer_profile.py`
/// and `benches/conv_sweep.py`, before/after in the same runs): on rows of one chunk (7x7 maps)
/// 1.2-1.3x its time; on 14x14 maps (two chunks, the last of 6: a block of 4 rows sums 16 rows
/// for 14) no gain, 0.94-1.25x by layer (MobileNetV2's and LR-ASPP's `dw k3 14x14`, `dw k3 s2 14x14`,
/// `dw k5 d2 14x14` at batch 1 and 8; `dw 384 d2` 1.02); from 28x28 on 0.72-0.92 (`dw k3 28x28`
/// 0.92, `dw k3 s2 28x28` at batch 8 0.81, `dw k5 28x28` 0.85-0.92, `dw 144 56` 0.84, `dw 96 k7` 0.80).
pub(super) fn pays(ow: usize) -> bool {
    ow > 2 * LANES
}

/// Blocks of one channel of `oh`x`ow` outputs (`oh` at least `RB`): the steps [`channel`] calls back.
pub(super) fn steps(oh: usize, ow: usize) -> usize {
    oh.div_ceil(RB) * ow.div_ceil(CB_MAX * LANES)
}

/// What the blocks of one channel read and write.
pub(super) struct Channel<'a> {
    /// The channel's filled scratch (see [`Layout`]).
    pub scratch: &'a [f32],
    /// The channel's taps' weights, by kernel row then column.
    pub weights: &'a [f32],
    /// The channel's bias.
    pub bias: f32,
    /// The clamp's bounds.
    pub clamp: [f32; 2],
    /// Output rows and columns.
    pub oh: usize,
    /// See `oh`.
    pub ow: usize,
    /// Row stride, row dilation, kernel size.
    pub sh: usize,
    /// See `sh`.
    pub dh: usize,
    /// See `sh`.
    pub k: usize,
}

/// Sums one channel from its scratch into `out` (its `oh·ow` outputs), calling `step` once per block
/// (the caller's prefetches).
///
/// Safety: the CPU has AVX-512F, AVX-512VL, AVX2 and FMA; [`takes`] holds for the channel's kernel;
/// the layout is the one the scratch was filled by, and every chunk of the layout reads inside the
/// scratch (asserted by `Layout::new`); `out` holds `oh·ow` floats.
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
pub(super) unsafe fn channel(layout: &Layout, ch: &Channel<'_>, out: &mut [f32], step: &mut dyn FnMut()) {
    assert!(out.len() == ch.oh * ch.ow && ch.weights.len() == ch.k * ch.k && ch.oh >= RB);
    macro_rules! kernels {
        ($(($k:literal, $sh:literal, $dh:literal))*) => {
            match (ch.k, ch.sh, ch.dh) {
                // Safety: the caller's.
                $(($k, $sh, $dh) => unsafe { blocks::<$k, $sh, $dh>(layout, ch, out, step) },)*
                _ => unreachable!("depthwise rows kernel for {}x{} s{} d{}", ch.k, ch.k, ch.sh, ch.dh),
            }
        };
    }
    kernels!((3, 1, 1)(3, 1, 2)(3, 2, 1)(5, 1, 1)(5, 1, 2)(5, 2, 1)(7, 1, 1)(7, 1, 2)(7, 2, 1));
}

/// [`channel`] for a `K`x`K` kernel of row stride `SH` and row dilation `DH`: every block.
///
/// Safety: as [`channel`].
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn blocks<const K: usize, const SH: usize, const DH: usize>(
    layout: &Layout,
    ch: &Channel<'_>,
    out: &mut [f32],
    step: &mut dyn FnMut(),
) {
    // Where each kernel column's tap of output (0, 0) reads, from its kernel row 0.
    let columns: [usize; K] = std::array::from_fn(|kx| layout.offsets[kx]);
    let mut oy = 0;
    loop {
        // The last block ends at the last row (its first rows summed a second time, to the same bits).
        let top = oy.min(ch.oh - RB);
        let mut ox = 0;
        while ox < ch.ow {
            let chunks = (ch.ow - ox).div_ceil(LANES).min(CB_MAX);
            let at = Block { top, left: ox };
            // Safety: the caller's; the block's chunks are chunks of the layout (rows `top..top + RB`
            // below `oh`, columns from `ox` below `ow`), so each reads inside the scratch.
            unsafe {
                match chunks {
                    1 => block::<K, SH, DH, 1>(layout, ch, &columns, at, out),
                    2 => block::<K, SH, DH, 2>(layout, ch, &columns, at, out),
                    3 => block::<K, SH, DH, 3>(layout, ch, &columns, at, out),
                    _ => block::<K, SH, DH, CB_MAX>(layout, ch, &columns, at, out),
                }
            }
            step();
            ox += chunks * LANES;
        }
        if top + RB == ch.oh {
            break;
        }
        oy += RB;
    }
}

/// The top output row and left output column of a block.
#[derive(Clone, Copy)]
struct Block {
    top: usize,
    left: usize,
}

/// Writes its body once for each of the literals, `$v` bound to it (a constant after compilation).
macro_rules! unroll {
    ($v:ident in [$($n:literal)*] $body:block) => {
        $({
            let $v: usize = $n;
            $body
        })*
    };
}

/// The `RB` rows by `CB` chunks of one block: sums in registers, each input row's column shifts
/// loaded once and multiplied into every output row of the block that reads the row.
///
/// Safety: as [`channel`], with the block's rows and chunks inside the map.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn block<const K: usize, const SH: usize, const DH: usize, const CB: usize>(
    layout: &Layout,
    ch: &Channel<'_>,
    columns: &[usize; K],
    at: Block,
    out: &mut [f32],
) {
    // Input rows the block reads, from output row `top`'s first.
    let rows = (RB - 1) * SH + (K - 1) * DH + 1;
    debug_assert!(rows <= 16);
    let base = at.top * SH * layout.row + at.left;
    let widest = columns.iter().copied().max().unwrap_or(0);
    let farthest = base + (rows - 1) * layout.row + widest + CB * LANES;
    assert!(farthest <= ch.scratch.len());
    let s = ch.scratch.as_ptr();
    // The weights in vectors: in registers for a 3x3 kernel, else the multiply-adds' memory operands.
    let weights: [[__m256; K]; K] =
        std::array::from_fn(|ky| std::array::from_fn(|kx| _mm256_set1_ps(ch.weights[ky * K + kx])));
    let mut sums = [[_mm256_set1_ps(ch.bias); CB]; RB];
    unroll!(t in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
        if t < rows {
            for (kx, &column) in columns.iter().enumerate() {
                // Safety: `base + t·row + column + CB·8` is at most `farthest`, inside the scratch.
                let v: [__m256; CB] =
                    std::array::from_fn(|c| unsafe { _mm256_loadu_ps(s.add(base + t * layout.row + column + c * LANES)) });
                unroll!(i in [0 1 2 3] {
                    // Output row `i` of the block reads input row `t` by its kernel row `ky`.
                    if i < RB && t >= i * SH && (t - i * SH).is_multiple_of(DH) && (t - i * SH) / DH < K {
                        let weight = weights[(t - i * SH) / DH][kx];
                        for c in 0..CB {
                            sums[i][c] = _mm256_fmadd_ps(v[c], weight, sums[i][c]);
                            // Safety: an empty instruction (a comment) naming the sum's register.
                            // It makes the multiply-add happen here, and as it may read and write
                            // memory the next loads stay after it: left free, the compiler moved
                            // every load of a block ahead of its multiply-adds, spilled them, and
                            // summed each output last in a chain of dependent multiply-adds
                            // (measured 1.9x slower than the chunk kernel on a 7x7 kernel).
                            unsafe { asm!("/* {0:y} */", inout(zmm_reg) sums[i][c], options(nostack, preserves_flags)) };
                        }
                    }
                });
            }
        }
    });
    let (low, high) = (_mm256_set1_ps(ch.clamp[0]), _mm256_set1_ps(ch.clamp[1]));
    for (i, row) in sums.iter().enumerate() {
        let first = (at.top + i) * ch.ow + at.left;
        for (c, &sum) in row.iter().enumerate() {
            // `max(low, v)` and `min(high, v)` return `v` when it is NaN.
            let v = _mm256_min_ps(high, _mm256_max_ps(low, sum));
            let n = (ch.ow - at.left - c * LANES).min(LANES);
            let at = first + c * LANES;
            assert!(at + n <= out.len());
            // Safety: `n` floats from `at` lie inside `out` (asserted); the mask keeps the lanes past
            // them out.
            unsafe {
                if n == LANES {
                    _mm256_storeu_ps(out.as_mut_ptr().add(at), v);
                } else {
                    _mm256_mask_storeu_ps(out.as_mut_ptr().add(at), ((1u32 << n) - 1) as __mmask8, v);
                }
            }
        }
    }
}
