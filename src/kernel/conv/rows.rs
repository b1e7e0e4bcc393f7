//! The rows path: convolutions of few input channels (a network's first layer: RGB, grey), output
//! row by output row, the sums written straight into the output.
//!
//! The whole-image path lays the padded image out in phase planes, computes tiles of 16 pixels
//! numbered along the planes' rows (`OW + (KW-1)·DW div SW` long), writes every tile to a buffer in
//! that layout and compacts it to rows of `OW` afterwards. With few taps per output (27 for a 3x3
//! kernel over RGB) that write and compaction cost as much as the sums: MobileNetV2's stem (3 -> 32,
//! 3x3, stride 2, 224x224) ran at 2.2-2.6x onnxruntime's time in the model.
//!
//! Here, for each output row `oy`, the input rows its taps read are laid out in a small buffer that
//! stays in the level-1 cache: for each input channel `c` and kernel row `ky`, input row `oy·SH +
//! ky·DH - PT` (zeros outside the input) split into its `SW` column phases, element `j` of phase `b`
//! being padded column `b + j·SW` (a stride-2 row de-interleaved once into even and odd columns),
//! each phase `R = OW rounded up to 8 + (KW-1)·DW div SW` long. Tap `(c, ky, kx)` of output column
//! `ox` reads phase `kx·DW mod SW` of `(c, ky)` at element `ox + kx·DW div SW`: every tap reads the
//! row's pixels as one contiguous run. Tiles of blocks of 4 output channels by vectors of 8 pixels
//! keep their sums in registers over all taps (the whole-image path's tile code) and are written,
//! clamped, into the output rows; the last tile of a row through a copy on the stack.
//!
//! The sums run over the taps in the whole-image path's order (channel, kernel row, kernel column,
//! from the bias), with the same fused multiply-adds (a multiply then an add on the portable build),
//! so the values are the same bits as the whole-image path's on the same machine.
//!
//! Threads: whole images per thread when the batch has at least as many images as the pool has
//! threads, else blocks of 4 output channels of each image; every output is summed the same way
//! whatever the split.

use rayon::ThreadPool;

use super::packed::{Filters, PackedConv};
use super::portable::clamp;
use super::{ConvGeometry, CO_BLOCK, LANES};
use crate::kernel::spread::spread;

/// Input channels up to which the rows path takes a convolution (see [`takes`]).
pub(super) const MAX_CHANNELS: usize = 4;

/// The shortest output rows the rows path takes: its cost per row (a call, the row buffer, a last
/// tile of a few pixels) made 28-pixel rows 1.09-1.13x the whole-image path's time (`1-32 28`, `1-16
/// b8 28`), while 64 to 160 pixels took 0.81-0.99 of it and the stems' 112 0.82-0.86.
pub(super) const MIN_ROW: usize = 32;

/// Whether the rows path takes `geo` by `conv` (`whole`: the whole-image path would compute it as
/// one part reading every tap, no split of a dilated kernel's padding): an ordinary convolution
/// (one group, not depthwise) of at most [`MAX_CHANNELS`] input channels and output rows of at
/// least [`MIN_ROW`] pixels, from the sweep's figures (`benches/conv_sweep.py --set few`,
/// docs/convolution.md).
pub(super) fn takes(geo: &ConvGeometry, conv: &PackedConv, whole: bool) -> bool {
    whole
        && !conv.depthwise
        && conv.group == 1
        && (1..=MAX_CHANNELS).contains(&geo.c_in)
        && geo.h > 0
        && geo.w > 0
        && geo.ow >= MIN_ROW
}

/// The row buffer of one output row: its phase rows' length and the taps' offsets.
#[derive(Debug, Clone)]
pub(super) struct Rows {
    /// Elements of one phase row (`R`).
    row: usize,
    /// Floats of the buffer: `c_in·KH·SW` phase rows.
    len: usize,
    /// For each tap (channel, kernel row, kernel column), where output column 0 reads it.
    offsets: Vec<usize>,
}

impl Rows {
    /// The layout for `geo`, or why its sizes overflow.
    pub(super) fn new(geo: &ConvGeometry) -> Result<Rows, String> {
        let over = || format!("convolution sizes overflow: {geo:?}");
        let ([_, sw], [_, dw]) = (geo.stride, geo.dilation);
        let reach = (geo.kw - 1).checked_mul(dw).ok_or_else(over)? / sw;
        let row = geo.ow.checked_next_multiple_of(LANES).and_then(|v| v.checked_add(reach)).ok_or_else(over)?;
        let rows = geo.c_in.checked_mul(geo.kh).and_then(|v| v.checked_mul(sw)).ok_or_else(over)?;
        let len = rows.checked_mul(row).ok_or_else(over)?;
        let mut offsets = Vec::with_capacity(geo.c_in * geo.kh * geo.kw);
        for c in 0..geo.c_in {
            for ky in 0..geo.kh {
                for kx in 0..geo.kw {
                    let phase = (c * geo.kh + ky) * sw + kx * dw % sw;
                    offsets.push(phase * row + kx * dw / sw);
                }
            }
        }
        Ok(Rows { row, len, offsets })
    }

    /// Lays out the input rows output row `oy` of `image` (one image of `geo`) reads into `buf`:
    /// the elements each phase row reads inside the input. The rest of every phase row (the
    /// padding's columns, and past them) is left as it is: zero, as [`Rows::buffer`] made it, since
    /// no call writes there.
    fn fill(&self, geo: &ConvGeometry, image: &[f32], oy: usize, buf: &mut [f32], every_second: EverySecond) {
        let ([sh, sw], [dh, _], [pt, pl]) = (geo.stride, geo.dilation, geo.pad_before);
        let mut phases = buf[..self.len].chunks_exact_mut(self.row);
        for channel in image.chunks_exact(geo.h * geo.w).take(geo.c_in) {
            for ky in 0..geo.kh {
                let y = (oy * sh + ky * dh).checked_sub(pt).filter(|&y| y < geo.h);
                for b in 0..sw {
                    let Some(out) = phases.next() else { return };
                    // Element j is input column b + j·sw - pl: inside for j in first..end.
                    let first = pl.saturating_sub(b).div_ceil(sw).min(self.row);
                    let end = (geo.w + pl).saturating_sub(b).div_ceil(sw).clamp(first, self.row);
                    let inside = &mut out[first..end];
                    let Some(n) = inside.len().checked_sub(1) else { continue };
                    let Some(y) = y else {
                        inside.fill(0.0);
                        continue;
                    };
                    let src = &channel[y * geo.w..][..geo.w];
                    let start = b + first * sw - pl;
                    match sw {
                        1 => inside.copy_from_slice(&src[start..][..n + 1]),
                        2 => every_second(&src[start..start + 2 * n + 1], inside),
                        _ => inside.iter_mut().zip(src[start..].iter().step_by(sw)).for_each(|(o, &v)| *o = v),
                    }
                }
            }
        }
    }

    /// A row buffer for [`Rows::fill`]: zeros.
    fn buffer(&self) -> Vec<f32> {
        vec![0.0; self.len]
    }
}

/// Copies every second element of `src` (from the first) into `dst`; `src` holds `2·dst.len() - 1`.
type EverySecond = fn(&[f32], &mut [f32]);

/// [`EverySecond`] on any machine.
fn every_second(src: &[f32], dst: &mut [f32]) {
    let src = &src[..(2 * dst.len()).saturating_sub(1)];
    dst.iter_mut().enumerate().for_each(|(j, o)| *o = src[2 * j]);
}

/// One build of a row's sums: `x` the row buffer of `rows`, `out` the output channels of `conv`
/// (each `plane` floats), the row starting at `at` in each, `ow` pixels long.
type RowKernel = fn(&Rows, Filters<'_>, &[f32], &mut [f32], usize, usize, usize);

/// The fastest builds the machine runs: the row's sums, the stride-2 de-interleave.
fn builds() -> (RowKernel, EverySecond) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") && has!("fma") {
            // Safety: the CPU has AVX2, checked just above.
            let split: EverySecond = |s, d| unsafe { avx2::every_second(s, d) };
            if has!("avx512f") && has!("avx512vl") {
                // Safety: the CPU has AVX2, FMA, AVX512F and AVX512VL, checked just above.
                return (|r, c, x, o, p, a, w| unsafe { avx2::row_avx512(r, c, x, o, p, a, w) }, split);
            }
            // Safety: the CPU has AVX2 and FMA, checked just above.
            return (|r, c, x, o, p, a, w| unsafe { avx2::row(r, c, x, o, p, a, w) }, split);
        }
    }
    (portable_row, every_second)
}

/// Convolves `input` into `output` (sizes checked by the caller) on the rows path, over the threads
/// of `pool` with at least `least` multiply-adds a thread.
pub(super) fn conv_rows(
    geo: &ConvGeometry,
    conv: &PackedConv,
    input: &[f32],
    output: &mut [f32],
    pool: Option<(&ThreadPool, usize)>,
) -> Result<(), String> {
    conv_rows_with(geo, conv, input, output, pool, builds())
}

/// [`conv_rows`] on the builds `kernel`.
fn conv_rows_with(
    geo: &ConvGeometry,
    conv: &PackedConv,
    input: &[f32],
    output: &mut [f32],
    pool: Option<(&ThreadPool, usize)>,
    kernel: (RowKernel, EverySecond),
) -> Result<(), String> {
    let rows = Rows::new(geo)?;
    crate::kernel::check_allocation(rows.len as u64, 4).map_err(|e| e.to_string())?;
    let (image_in, image_out) = (geo.c_in * geo.h * geo.w, geo.c_out * geo.oh * geo.ow);
    let filters = conv.filters(0);
    let macs = (geo.batch * image_out).saturating_mul(conv.taps());
    let blocks = geo.c_out.div_ceil(CO_BLOCK);
    let Some((pool, least)) = pool else {
        let mut buf = rows.buffer();
        for (image, out) in input.chunks_exact(image_in).zip(output.chunks_exact_mut(image_out)) {
            channels(geo, &rows, filters, image, out, &mut buf, kernel);
        }
        return Ok(());
    };
    let images = geo.batch >= pool.current_num_threads();
    let threads = crate::kernel::threads_for(Some(pool), macs, least, if images { geo.batch } else { blocks });
    let rows = &rows;
    if images {
        // Whole images per thread.
        spread(
            pool,
            super::image_runs(geo, input, output, threads).map(|(_, mine_in, mine_out)| {
                move || {
                    let mut buf = rows.buffer();
                    for (image, out) in mine_in.chunks_exact(image_in).zip(mine_out.chunks_exact_mut(image_out)) {
                        channels(geo, rows, filters, image, out, &mut buf, kernel);
                    }
                }
            }),
        );
        return Ok(());
    }
    // Blocks of 4 output channels of each image per thread.
    let plane = geo.oh * geo.ow;
    for (image, out) in input.chunks_exact(image_in).zip(output.chunks_exact_mut(image_out)) {
        let mut rest = out;
        spread(
            pool,
            (0..threads).map(|t| {
                let c0 = (blocks * t / threads * CO_BLOCK).min(geo.c_out);
                let c1 = (blocks * (t + 1) / threads * CO_BLOCK).min(geo.c_out);
                let (mine, others) = std::mem::take(&mut rest).split_at_mut((c1 - c0) * plane);
                rest = others;
                let geo = ConvGeometry { c_out: c1 - c0, ..*geo };
                move || {
                    let mut buf = rows.buffer();
                    channels(&geo, rows, filters.channels(c0, c1), image, mine, &mut buf, kernel);
                }
            }),
        );
    }
    Ok(())
}

/// One image: output channels `conv` (`geo.c_out` of them) into `out`, row after row.
fn channels(
    geo: &ConvGeometry,
    rows: &Rows,
    conv: Filters<'_>,
    image: &[f32],
    out: &mut [f32],
    buf: &mut [f32],
    (kernel, split): (RowKernel, EverySecond),
) {
    if geo.c_out == 0 {
        return;
    }
    let plane = geo.oh * geo.ow;
    for oy in 0..geo.oh {
        rows.fill(geo, image, oy, buf, split);
        kernel(rows, conv, buf, out, plane, oy * geo.ow, geo.ow);
    }
}

/// Asserts what the row builds rely on: `conv` holds whole blocks of weights for the channels of
/// `out` (each `plane` floats, a row of `ow` from `at`), and a tile of `ow` rounded up to 8 pixels
/// from any tap offset reads inside `x`.
fn assert_row(rows: &Rows, conv: &Filters<'_>, x: &[f32], out: &[f32], plane: usize, at: usize, ow: usize) {
    let channels = out.len() / plane.max(1);
    let blocks = channels.div_ceil(CO_BLOCK);
    assert!(conv.k == rows.offsets.len() && !conv.depthwise, "weights of another convolution");
    assert!(conv.weights.len() == blocks * conv.k * CO_BLOCK && conv.bias.len() == blocks * CO_BLOCK);
    let farthest = rows.offsets.iter().max().copied().unwrap_or(0) + ow.next_multiple_of(LANES);
    assert!(farthest <= rows.len && rows.len <= x.len(), "row buffer too short for its taps");
    assert!(out.len() == channels * plane && at + ow <= plane, "output row outside its channel");
}

/// One row on any machine: the same sums as the vector builds, a multiply then an add per tap.
fn portable_row(rows: &Rows, conv: Filters<'_>, x: &[f32], out: &mut [f32], plane: usize, at: usize, ow: usize) {
    assert_row(rows, &conv, x, out, plane, at, ow);
    let k = conv.k;
    for (co, channel) in out.chunks_exact_mut(plane).enumerate() {
        let (block, lane) = (co / CO_BLOCK, co % CO_BLOCK);
        let w = &conv.weights[block * k * CO_BLOCK..][..k * CO_BLOCK];
        for (ox, o) in channel[at..at + ow].iter_mut().enumerate() {
            let mut sum = conv.bias[co];
            for (tap, &offset) in rows.offsets.iter().enumerate() {
                sum += w[tap * CO_BLOCK + lane] * x[offset + ox];
            }
            *o = clamp(sum, conv.low, conv.high);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::super::avx2::{store_row, tile, Sums};
    use super::super::packed::AllTaps;
    use super::{assert_row, Filters, Rows, CO_BLOCK, LANES};
    use std::arch::x86_64::*;

    /// One row on AVX2 and FMA: tiles of 4 channels by 16 pixels (8 sums in AVX2's 16 registers).
    ///
    /// Safety: the CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn row(
        rows: &Rows,
        conv: Filters<'_>,
        x: &[f32],
        out: &mut [f32],
        plane: usize,
        at: usize,
        ow: usize,
    ) {
        // Safety: as this function's.
        unsafe { row_tiled::<1, 2>(rows, conv, x, out, plane, at, ow) }
    }

    /// One row on AVX-512 machines: the same 256-bit sums in 32 registers, tiles of 8 channels by
    /// 24 pixels (24 sums).
    ///
    /// Safety: the CPU has AVX2, FMA, AVX512F and AVX512VL.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    pub(super) unsafe fn row_avx512(
        rows: &Rows,
        conv: Filters<'_>,
        x: &[f32],
        out: &mut [f32],
        plane: usize,
        at: usize,
        ow: usize,
    ) {
        // Safety: as this function's.
        unsafe { row_tiled::<2, 3>(rows, conv, x, out, plane, at, ow) }
    }

    /// The tiles of one row: `NB` blocks of 4 channels at a time (one at a time for the blocks
    /// left), `V` vectors of 8 pixels, the last tile of as many vectors as are left.
    ///
    /// Safety: the CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn row_tiled<const NB: usize, const V: usize>(
        rows: &Rows,
        conv: Filters<'_>,
        x: &[f32],
        out: &mut [f32],
        plane: usize,
        at: usize,
        ow: usize,
    ) {
        assert_row(rows, &conv, x, out, plane, at, ow);
        let blocks = (out.len() / plane.max(1)).div_ceil(CO_BLOCK);
        let mut b = 0;
        while b < blocks {
            let pair = (blocks - b).min(NB);
            if pair == NB {
                // Safety: the CPU has AVX2 and FMA; blocks `b..b + NB` are inside (asserted).
                unsafe { blocks_of::<NB, V>(rows, conv, x, out, plane, at, ow, b) };
            } else {
                for i in 0..pair {
                    // Safety: as above, block `b + i`.
                    unsafe { blocks_of::<1, V>(rows, conv, x, out, plane, at, ow, b + i) };
                }
            }
            b += pair;
        }
    }

    /// Blocks `b..b + NB` of one row, in tiles of `V` vectors and one of the vectors left.
    ///
    /// Safety: the CPU has AVX2 and FMA; `assert_row` held and the blocks are inside `conv`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn blocks_of<const NB: usize, const V: usize>(
        rows: &Rows,
        conv: Filters<'_>,
        x: &[f32],
        out: &mut [f32],
        plane: usize,
        at: usize,
        ow: usize,
        b: usize,
    ) {
        let k = conv.k;
        let w: [&[f32]; NB] = std::array::from_fn(|i| &conv.weights[(b + i) * k * CO_BLOCK..][..k * CO_BLOCK]);
        let bias: [&[f32]; NB] = std::array::from_fn(|i| &conv.bias[(b + i) * CO_BLOCK..][..CO_BLOCK]);
        let channels = out.len() / plane;
        let mut ox = 0;
        // Every tile reads `x[ox + offset .. + 8·vectors]` with `ox + 8·vectors` at most `ow`
        // rounded up to 8, inside `x` (asserted); the weights of `w` cover every tap.
        while ox + V * LANES <= ow {
            // Safety: the CPU has AVX2 and FMA; the tile's reads are inside (see above).
            let sums = unsafe { tile::<NB, V, AllTaps>(x, ox, &rows.offsets, AllTaps, w, bias) };
            put::<NB, V>(
                &sums,
                conv,
                &mut out[b * CO_BLOCK * plane..],
                [plane, at + ox, V * LANES, channels - b * CO_BLOCK],
            );
            ox += V * LANES;
        }
        if ox < ow {
            let rest = [plane, at + ox, ow - ox, channels - b * CO_BLOCK];
            macro_rules! rest {
                ($($n:literal)*) => {
                    match (ow - ox).div_ceil(LANES) {
                        // Safety: the CPU has AVX2 and FMA; the tile's reads are inside (see above).
                        $($n => put::<NB, $n>(&unsafe { tile::<NB, $n, AllTaps>(x, ox, &rows.offsets, AllTaps, w, bias) }, conv, &mut out[b * CO_BLOCK * plane..], rest),)*
                        _ => unreachable!("fewer than {V} vectors are left"),
                    }
                };
            }
            rest!(1 2 3);
        }
    }

    /// Writes the clamped sums of a tile into the rows of its channels: `[plane, at, n, left]` the
    /// floats of a channel, where the tile starts in each, its pixels and the channels left from
    /// its first (channels past them are the zero padding of a last block, not written). Whole
    /// vectors are stored in place. A last vector of fewer pixels is stored whole when its channel
    /// has room after it: over the start of the channel's next rows, which are written after this
    /// one (every job writes all rows of its channels, in order); in a channel's last row it goes
    /// through a copy on the stack (no masked store: about 20 ns each on AMD processors).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn put<const NB: usize, const V: usize>(sums: &Sums<NB, V>, conv: Filters<'_>, out: &mut [f32], at: [usize; 4]) {
        let [plane, start, n, left] = at;
        let whole = n / LANES;
        let partial = whole < V && n > whole * LANES;
        let spill = partial && start + (whole + 1) * LANES <= plane;
        let stored = if spill { whole + 1 } else { whole };
        for (c, row) in sums.iter().flatten().enumerate().take(left) {
            let channel = &mut out[c * plane..][..plane];
            store_row(&row[..stored], conv, &mut channel[start..]);
            if partial && !spill {
                let mut last = [0f32; LANES];
                store_row(&row[whole..whole + 1], conv, &mut last);
                for (o, &v) in channel[start + whole * LANES..start + n].iter_mut().zip(&last) {
                    *o = v;
                }
            }
        }
    }

    /// [`super::EverySecond`] on AVX2: 8 outputs from two loads, a shuffle and a permutation.
    ///
    /// Safety: the CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn every_second(src: &[f32], dst: &mut [f32]) {
        let src = &src[..(2 * dst.len()).saturating_sub(1)];
        let mut j = 0;
        // 8 outputs read 16 floats from `2·j`.
        while 2 * j + 2 * LANES <= src.len() {
            // Safety: `src[2·j .. 2·j + 16]` is inside `src` (the loop's condition) and
            // `dst[j .. j + 8]` inside `dst` (`src` holds `2·dst.len() - 1` floats).
            unsafe {
                let p = src.as_ptr().add(2 * j);
                let (a, b) = (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(LANES)));
                // [a0 a2 b0 b2 | a4 a6 b4 b6], then its 64-bit lanes 0, 2, 1, 3.
                let even = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
                let even = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(even)));
                _mm256_storeu_ps(dst[j..j + LANES].as_mut_ptr(), even);
            }
            j += LANES;
        }
        dst[j..].iter_mut().enumerate().for_each(|(i, o)| *o = src[2 * (j + i)]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{builds as whole_builds, close, geometry, reference, test_pool, values};
    use super::super::{conv2d_split, convolve, steps};
    use super::*;

    /// Every row build the machine runs, by the name of the whole-image build it matches.
    fn row_builds() -> Vec<(&'static str, (RowKernel, EverySecond))> {
        let mut all: Vec<(&'static str, (RowKernel, EverySecond))> = vec![("portable", (portable_row, every_second))];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                // Safety: the CPU has AVX2 and FMA, checked just above.
                let split: EverySecond = |s, d| unsafe { avx2::every_second(s, d) };
                // Safety: as above.
                all.push(("avx2", (|r, c, x, o, p, a, w| unsafe { avx2::row(r, c, x, o, p, a, w) }, split)));
                if has!("avx512f") && has!("avx512vl") {
                    // Safety: the CPU has AVX2, FMA, AVX512F and AVX512VL, checked just above.
                    let row: RowKernel = |r, c, x, o, p, a, w| unsafe { avx2::row_avx512(r, c, x, o, p, a, w) };
                    all.push(("avx512", (row, split)));
                }
            }
        }
        all
    }

    /// Each row build against the f64 definition, and the same bits as the whole-image path's build
    /// of the same machine (the same sums in the same order); threads against one thread.
    fn check(geo: &ConvGeometry, low: f32, high: f32, seed: u64) {
        let k = geo.c_in * geo.kh * geo.kw;
        let (w, bias) = (values(geo.c_out * k, seed), values(geo.c_out, seed + 1));
        let x = values(geo.batch * geo.c_in * geo.h * geo.w, seed + 2);
        let packed = PackedConv::new(&w, Some(&bias), [geo.c_out, geo.c_in, geo.kh, geo.kw], low, high).unwrap();
        let steps = steps(geo, &packed).unwrap();
        let expected = reference(geo, 1, &w, &bias, &x, low, high);
        let outputs = geo.batch * geo.c_out * geo.oh * geo.ow;
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        let whole = whole_builds();
        for (name, build) in row_builds() {
            let mut out = vec![f32::NAN; outputs];
            conv_rows_with(geo, &packed, &x, &mut out, None, build).unwrap();
            for (i, (&got, &want)) in out.iter().zip(&expected).enumerate() {
                assert!(close(got, want, k), "{name} {geo:?} output {i}: {got} vs {want:?}");
            }
            let (_, kernel) = whole.iter().find(|(n, _)| *n == name).unwrap();
            let (prepared, wide) = (steps[0].sizes.prepared, steps[0].sizes.wide * geo.c_out);
            let (mut prepared, mut wide) = (vec![f32::NAN; prepared], vec![f32::NAN; wide]);
            let mut old = vec![f32::NAN; outputs];
            convolve(geo, &steps, &packed, &x, &mut old, (&mut prepared, &mut wide), *kernel, None);
            assert!(bits(&out) == bits(&old), "{name} {geo:?}: not the whole-image path's bits");
            for threads in [1, 2, 8] {
                let mut split = vec![f32::NAN; outputs];
                conv_rows_with(geo, &packed, &x, &mut split, Some((test_pool(threads), 1)), build).unwrap();
                assert!(bits(&split) == bits(&out), "{name} {threads} threads {geo:?}");
            }
        }
        // The entry point (the rows path where the rule takes it), on every thread count.
        for threads in [1, 2, 8] {
            let mut out = vec![f32::NAN; outputs];
            conv2d_split(geo, &packed, &x, &mut out, Some((test_pool(threads), 1))).unwrap();
            assert!(out.iter().zip(&expected).all(|(&got, &want)| close(got, want, k)), "{threads} threads {geo:?}");
        }
    }

    #[test]
    fn every_row_build_follows_the_definition() {
        let (mut seed, mut cases, mut taken) = (0u64, 0, 0);
        for c_in in 1..=MAX_CHANNELS {
            for c_out in [1, 5, 8, 13, 32, 37] {
                for (h, w) in [(1, 1), (5, 7), (9, 24), (17, 31), (12, 50), (3, 113)] {
                    for kernel in [[1, 3], [3, 3], [2, 5], [5, 5], [7, 7]] {
                        for (stride, dilation, pads) in [
                            ([1, 1], [1, 1], [[0, 0], [0, 0]]),
                            ([2, 2], [1, 1], [[1, 1], [1, 1]]),
                            ([2, 2], [1, 1], [[0, 0], [1, 1]]),
                            ([1, 2], [1, 1], [[2, 1], [0, 3]]),
                            ([3, 2], [1, 2], [[1, 2], [2, 1]]),
                            ([2, 3], [2, 1], [[3, 0], [1, 2]]),
                        ] {
                            seed += 7;
                            if !(seed / 7).is_multiple_of(3) {
                                continue;
                            }
                            let batch = 1 + seed as usize % 3;
                            let Some(geo) =
                                geometry(batch, [c_in, c_out], [h, w], kernel, stride, dilation, pads[0], pads[1])
                            else {
                                continue;
                            };
                            let packed = PackedConv::new(
                                &values(c_out * c_in * kernel[0] * kernel[1], 1),
                                None,
                                [c_out, c_in, kernel[0], kernel[1]],
                                0.0,
                                1.0,
                            )
                            .unwrap();
                            let parts = steps(&geo, &packed).unwrap();
                            if parts.len() != 1 || parts[0].map.is_some() {
                                // A split of the padding: the whole-image path's parts.
                                continue;
                            }
                            let (low, high) =
                                [(f32::NEG_INFINITY, f32::INFINITY), (0.0, 6.0), (-1.0, 0.5)][seed as usize % 3];
                            check(&geo, low, high, seed);
                            cases += 1;
                            taken += takes(&geo, &packed, true) as usize;
                        }
                    }
                }
            }
        }
        assert!(cases > 300 && taken > 30, "{cases} cases, {taken} the rule takes");
    }

    /// The stem of MobileNetV2 (3 -> 32, 3x3, stride 2, padding 1, 224x224) at batch 2, and the
    /// rule: few input channels only, not grouped or depthwise, not a split of the padding.
    #[test]
    fn the_stem_takes_the_rows_path() {
        let geo = geometry(2, [3, 32], [224, 224], [3, 3], [2, 2], [1, 1], [1, 1], [1, 1]).unwrap();
        check(&geo, 0.0, 6.0, 5);
        let packed = |c_in: usize, group: usize| {
            let w = values(8 * c_in / group * 9, 3);
            PackedConv::grouped(&w, None, [8, c_in, 3, 3], group, 0.0, 1.0).unwrap()
        };
        let at = |c_in: usize| geometry(1, [c_in, 8], [9, 40], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]).unwrap();
        assert!(takes(&at(4), &packed(4, 1), true));
        assert!(!takes(&at(5), &packed(5, 1), true));
        assert!(!takes(&at(4), &packed(4, 2), true));
        assert!(!takes(&at(4), &packed(4, 1), false));
        // Short rows: 31 output pixels.
        let short = geometry(1, [3, 8], [9, 31], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]).unwrap();
        assert!(!takes(&short, &packed(3, 1), true));
        let dw = PackedConv::depthwise(&values(36, 1), None, [4, 3, 3], 0.0, 1.0).unwrap();
        assert!(!takes(&ConvGeometry { c_out: 4, ..at(4) }, &dw, true));
    }
}
