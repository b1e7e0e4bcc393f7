//! Direct 2-D convolution of float32 channel planes (`NCHW`), bias and a clamp fused.
//!
//! tract runs a small convolution as a matrix product over an im2col matrix it gathers panel by
//! panel: on the 3x3 convolutions of small feature maps (OCR, U-Nets, detectors: 8 to 48 channels,
//! maps of a few thousand pixels) the gather takes as long as the product, and each padded one also
//! pays for a `Pad` node before it. Here the input is laid out once so that every tap reads the
//! output pixels' inputs as one contiguous run, then each block of 4 (or 8) output channels and 16
//! output pixels keeps its sums in registers over all `C·KH·KW` taps.
//!
//! The prepared input: the zero-padded image split by row phase (`row mod SH`) and column phase
//! (`column mod SW`), each of the `C·SH·SW` phase planes `I = OH + (KH-1)·DH div SH` rows of `L = OW +
//! (KW-1)·DW div SW` elements: element `(i, j)` of plane `(c, a, b)` is padded element `(a + i·SH,
//! b + j·SW)` of channel `c`. Output pixel `(oy, ox)` of tap `(c, ky, kx)` reads padded element
//! `(oy·SH + ky·DH, ox·SW + kx·DW)`: plane `(c, ky·DH mod SH, kx·DW mod SW)`, element `(oy + ky·DH div
//! SH, ox + kx·DW div SW)`. Numbering the output pixels `q = oy·L + ox` (the `L - OW` last of each row
//! are never output), every tap reads pixels `q..q+n` from one contiguous run starting at its own
//! offset, whatever the strides and however short the rows: the kernel computes runs of `q` and the
//! output is compacted from rows of `L` to rows of `OW` at the end.
//!
//! Where `L` would be much longer than `OW` (a dilated kernel's columns, short rows: `4·L > 5·OW`),
//! the input is laid out in shifted planes instead, one per channel, row phase and kernel column:
//! element `(i, ox)` of plane `(c, a, kx)` is padded element `(a + i·SH, ox·SW + kx·DW)`, rows of `OW`
//! (`L = OW`), so no pixel computed is thrown away; it copies the input `KW` times where the phase
//! planes copy it once. Tap `(c, ky, kx)` reads plane `(c, ky·DH mod SH, kx)` from row `ky·DH div SH`.
//!
//! Groups of channels run one after the other, each reading its own input planes. A dilated kernel
//! on a small map, whose taps read the padding for most outputs, is computed in parts
//! ([`super::conv_parts`]): rectangles of output over which the same taps read inside the input,
//! each an unpadded convolution by those taps alone, so no tap that reads only padding is summed.
//! The blocks of output channels are split over the threads of a pool when the work is large enough.
//!
//! Convolutions of 1-4 input channels with rows of at least 32 output pixels (a network's first
//! layer), not split into parts, go output row by output row instead ([`rows`]): the same sums in
//! the same order, written straight into the output rows, with no whole-image layout or compaction.
//!
//! The sums run over the taps in the order channel, kernel row, kernel column, starting from the
//! bias; with AVX2 and FMA each step is a fused multiply-add, on other machines a multiply then an
//! add. So values agree with the definition to float32 rounding of a sum of `C·KH·KW` products, not
//! bit for bit with tract's matrix product (which sums in its own order).

use rayon::ThreadPool;

use super::depthwise::{self, DepthwiseFilters};
use super::spread::spread;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod drivers;
mod geometry;
mod packed;
mod portable;
mod rows;
#[cfg(test)]
mod tests;

use drivers::{chunk_channels, convolve, convolve_chunked, steps, with_scratch};
pub(crate) use geometry::ConvGeometry;
use geometry::Sizes;
pub(crate) use packed::PackedConv;
use packed::{assert_map, Filters};
#[cfg(target_arch = "x86_64")]
use packed::{AllTaps, SomeTaps, TapMap};
pub(super) use portable::clamp;
use portable::portable_image;

/// Output channels one block computes.
const CO_BLOCK: usize = 4;
/// Float32 lanes of one vector.
const LANES: usize = 8;
/// Output pixels of the widest tile.
const TILE_PIXELS: usize = 2 * LANES;

/// Convolves `input` (`[batch][c_in][h][w]`) into `output` (`[batch][c_out][oh][ow]`), over the
/// threads of `pool` where the work is large enough.
pub(crate) fn conv2d(
    geo: &ConvGeometry,
    conv: &PackedConv,
    input: &[f32],
    output: &mut [f32],
    pool: Option<&ThreadPool>,
) -> Result<(), String> {
    // A depthwise convolution sums a few multiply-adds per value read: its threads need fewer.
    let least = if conv.depthwise && depthwise::takes(geo) { depthwise::MACS_PER_THREAD } else { MACS_PER_THREAD };
    conv2d_split(geo, conv, input, output, pool.map(|p| (p, least)))
}

/// [`conv2d`] over the threads of `pool` with at least `least` multiply-adds a thread.
fn conv2d_split(
    geo: &ConvGeometry,
    conv: &PackedConv,
    input: &[f32],
    output: &mut [f32],
    pool: Option<(&ThreadPool, usize)>,
) -> Result<(), String> {
    if [geo.c_in, geo.c_out, geo.kh, geo.kw] != [conv.c_in, conv.c_out, conv.kh, conv.kw] {
        return Err(format!("convolution geometry {geo:?} does not match its kernel {:?}", conv.dims()));
    }
    let sizes = geo.sizes()?;
    if input.len() != sizes.input || output.len() != sizes.output {
        return Err(format!("convolution of {} floats into {} for {geo:?}", input.len(), output.len()));
    }
    if sizes.output == 0 {
        return Ok(());
    }
    if conv.depthwise && depthwise::takes(geo) {
        let filters = DepthwiseFilters { weights: &conv.weights, bias: &conv.bias, low: conv.low, high: conv.high };
        return depthwise::depthwise(geo, filters, input, output, pool);
    }
    let steps = steps(geo, conv)?;
    let whole = steps.len() == 1 && steps[0].map.is_none() && !steps[0].part.bias_only();
    if rows::takes(geo, conv, whole) {
        return rows::conv_rows(geo, conv, input, output, pool);
    }
    let (runs, _, c_out) = conv.runs();
    let image_macs: usize = steps.iter().map(|s| runs * c_out * s.offsets.len() * s.sizes.pixels).sum();
    let macs = image_macs.saturating_mul(geo.batch);
    let threads = pool.map_or(1, |(p, least)| super::threads_for(Some(p), macs, least, geo.batch));
    // A split of one group into parts: channel chunk by channel chunk, the chunks over the threads
    // when there are fewer images than threads, cut small enough that every thread the work is
    // worth gets one.
    let split = pool.map_or(1, |(p, least)| {
        super::threads_for(Some(p), image_macs, least.saturating_mul(CHUNKED_FACTOR), usize::MAX)
    });
    let per_chunk = (threads == 1 && steps.len() > 1 && runs == 1 && !conv.depthwise)
        .then(|| chunk_channels(conv).min(geo.c_out.div_ceil(split).next_multiple_of(16)));
    let wide_max = steps.iter().map(|s| s.sizes.wide).max().unwrap_or(0);
    let lens = match per_chunk {
        Some(chunk) => [steps.iter().map(|s| s.sizes.prepared).sum(), wide_max * chunk.min(geo.c_out)],
        None => [steps.iter().map(|s| s.sizes.prepared).max().unwrap_or(0), wide_max * geo.c_out],
    };
    crate::kernel::check_allocation(lens[0] as u64 + lens[1] as u64, 4).map_err(|e| e.to_string())?;
    if let Some(chunk) = per_chunk {
        with_scratch(lens, |buffers| convolve_chunked(geo, &steps, conv, input, output, buffers, chunk, pool));
        return Ok(());
    }
    match pool {
        // Whole images per thread when there are at least as many as threads: each thread lays out
        // and sums its own images in its own scratch, so the layout and compaction run in parallel
        // too, with one hand-off per thread instead of one per image.
        Some((pool, _)) if threads > 1 && geo.batch >= pool.current_num_threads() => {
            let steps = &steps;
            spread(
                pool,
                image_runs(geo, input, output, threads).map(|(count, mine_in, mine_out)| {
                    let geo = ConvGeometry { batch: count, ..*geo };
                    move || {
                        with_scratch(lens, |buffers| {
                            convolve(&geo, steps, conv, mine_in, mine_out, buffers, kernel, None)
                        })
                    }
                }),
            );
        }
        _ => with_scratch(lens, |buffers| convolve(geo, &steps, conv, input, output, buffers, kernel, pool)),
    }
    Ok(())
}

/// The batch's images in `threads` runs of whole images, in order: each run's image count, its
/// input and its output (`geo`'s image sizes).
pub(super) fn image_runs<'a>(
    geo: &ConvGeometry,
    mut input: &'a [f32],
    mut output: &'a mut [f32],
    threads: usize,
) -> impl Iterator<Item = (usize, &'a [f32], &'a mut [f32])> {
    let (image_in, image_out) = (geo.c_in * geo.h * geo.w, geo.c_out * geo.oh * geo.ow);
    let batch = geo.batch;
    (0..threads).map(move |t| {
        let count = batch * (t + 1) / threads - batch * t / threads;
        let (mine_in, rest_in) = input.split_at(count * image_in);
        let (mine_out, rest_out) = std::mem::take(&mut output).split_at_mut(count * image_out);
        (input, output) = (rest_in, rest_out);
        (count, mine_in, mine_out)
    })
}

/// Multiply-adds one thread is given at least before a convolution is split over threads (about
/// 40 µs on one core of an AVX2 machine): whole images per thread for a batch of at least as many
/// images as threads, else blocks of output channels of each image.
const MACS_PER_THREAD: usize = 1 << 21;

/// How many times [`MACS_PER_THREAD`] one thread is given at least (8 times: 2^24 multiply-adds)
/// before the channel chunks of a convolution split into parts (a dilated one) are split over
/// threads: the layout of the parts stays on one thread, so smaller ones gained nothing or lost (`benches/conv_sweep.py --threads 2`,
/// 2 cores: `dilated d12`, 115 M multiply-adds, 1.40 -> 1.13 ms; `dilated d6`, 29 M, 0.53 -> 0.49;
/// `dilated d6 k5`, 10 M, 0.38 -> 0.55).
pub(super) const CHUNKED_FACTOR: usize = 8;

/// One build of the sums of a prepared image ([`kernel`] picks the fastest): the taps' offsets and,
/// when they are some of the kernel's taps, their weight indices.
type Kernel = fn(&ConvGeometry, &Sizes, Filters<'_>, &[usize], Option<&[usize]>, &[f32], &mut [f32]);

/// The sums of one prepared image into `wide` (`[c_out][wide]`, pixels `oy·L + ox`), clamped, on
/// the fastest build the machine runs.
fn kernel(
    geo: &ConvGeometry,
    sizes: &Sizes,
    conv: Filters<'_>,
    offsets: &[usize],
    map: Option<&[usize]>,
    x: &[f32],
    wide: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl") {
            // Safety: the CPU has AVX2, FMA, AVX512F and AVX512VL, checked just above: the one
            // requirement of calling a function compiled with those features.
            unsafe { avx2::image_avx512(geo, sizes, conv, offsets, map, x, wide) };
        } else {
            // Safety: the CPU has AVX2 and FMA, checked just above: the one requirement of calling
            // a function compiled with `target_feature(enable = "avx2,fma")`.
            unsafe { avx2::image(geo, sizes, conv, offsets, map, x, wide) };
        }
        return;
    }
    portable_image(geo, sizes, conv, offsets, map, x, wide);
}

/// Asserts what the tiles of 16 pixels of the vector builds rely on: a tile starting at a pixel
/// below `pixels` reads `offset + q .. + 16` for each tap offset, and that farthest float is inside
/// `x`; `wide` holds the output channels in rows of whole tiles.
#[cfg(target_arch = "x86_64")]
fn assert_tiles_inside(geo: &ConvGeometry, sizes: &Sizes, offsets: &[usize], x: &[f32], wide: &[f32]) {
    let farthest = offsets.iter().max().copied().unwrap_or(0) + sizes.pixels - 1 + TILE_PIXELS;
    assert!(farthest <= x.len(), "prepared input too short for its taps");
    assert!(wide.len() == geo.c_out * sizes.wide && sizes.wide.is_multiple_of(TILE_PIXELS));
}
