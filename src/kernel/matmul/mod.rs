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
//! cost is most of the time: about 2 µs a product where the arithmetic is 0.1 µs. Here each tile
//! (up to 4 rows by 16 columns with AVX2, 8 rows by 32 with AVX-512: [`avx2`], [`avx512`]) keeps its
//! sums in registers over the whole depth, reading a broadcast of `A`'s element per row and the
//! vectors of `B`'s tiles at each step; nothing is copied at run time.
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
//! The sums run over `p` in increasing order from `init`; with AVX2 and FMA or AVX-512 each step is
//! a fused multiply-add (the two builds give the same bits), on other machines a multiply then an
//! add. So values agree with the definition to
//! float32 rounding of a sum of `k` products, not bit for bit with tract's kernels (which sum in
//! their own order).

/// Rows of the tallest tile (AVX-512's; AVX2's are 4): callers that split a product's rows over
/// threads cut it at multiples of this, so that every thread's rows run in whole tiles.
pub(crate) const ROWS: usize = 8;
/// Columns of `B`'s tiles (see the module docs): two AVX2 vectors, one AVX-512 vector.
pub(crate) const COLS: usize = 16;
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

/// Which of the kernels computes a product: the portable loops, or a SIMD build for an instruction
/// set of this CPU's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    /// A multiply then an add at each step, on any machine.
    Portable,
    /// AVX2's tiles ([`avx2`]) or AVX-512's ([`avx512`]).
    #[cfg(target_arch = "x86_64")]
    Simd(crate::kernel::Isa),
}

impl Build {
    /// The fastest this CPU runs.
    fn here() -> Build {
        #[cfg(target_arch = "x86_64")]
        if let Some(isa) = crate::kernel::Isa::here() {
            return Build::Simd(isa);
        }
        Build::Portable
    }

    /// Every build this CPU runs (for tests: each gives the same values).
    #[cfg(test)]
    fn all_here() -> Vec<Build> {
        let mut all = vec![Build::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            use crate::kernel::Isa;
            match Isa::here() {
                Some(Isa::Avx512) => all.extend([Build::Simd(Isa::Fma), Build::Simd(Isa::Avx512)]),
                Some(Isa::Fma) => all.push(Build::Simd(Isa::Fma)),
                None => {}
            }
        }
        all
    }
}

/// Computes the product `gemm` describes into `c` (see the module docs), each value then clamped to
/// `clamp`'s `[low, high]` when given (NaN kept).
///
/// # Panics
/// If an operand or a bias is shorter than its strides span ([`Gemm::spans`]), or a bias' column
/// step is not 0 or 1: callers size them from the same geometry.
pub(crate) fn matmul_f32(gemm: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], init: Init, clamp: Option<[f32; 2]>) {
    product_on(Build::here(), gemm, a, b, c, init, clamp);
}

/// [`matmul_f32`] on `build`, which this CPU runs.
fn product_on(build: Build, gemm: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], init: Init, clamp: Option<[f32; 2]>) {
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
    match build {
        Build::Portable => portable(gemm, a, b, c, init, clamp),
        // Safety: `build` is one this CPU runs (from `Build::here` or `all_here`), and the operands
        // span what the strides reach, asserted above: the requirements of both kernels.
        #[cfg(target_arch = "x86_64")]
        Build::Simd(crate::kernel::Isa::Avx512) => unsafe { avx512::product(gemm, a, b, c, init, clamp) },
        // Safety: as above.
        #[cfg(target_arch = "x86_64")]
        Build::Simd(crate::kernel::Isa::Fma) => unsafe { avx2::product(gemm, a, b, c, init, clamp) },
    }
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
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(test)]
mod tests;
