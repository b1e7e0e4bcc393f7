//! The drivers: a convolution's steps (its parts), run image by image, part by part or channel
//! chunk by chunk, the blocks of output channels over the threads of a pool, with per-thread scratch.

use rayon::ThreadPool;

use super::super::conv_parts::{self, Part};
use super::geometry::{prepare, tap_offsets, Sizes};
use super::packed::PackedConv;
use super::portable::clamp;
use super::{kernel, ConvGeometry, Kernel, CO_BLOCK};
use crate::kernel::spread::spread;

/// One computation of [`conv2d`]: a part of the output, its sizes, the offsets of its taps and, when
/// it reads some of the kernel's taps only, their weight indices.
pub(super) struct Step {
    pub(super) part: Part,
    pub(super) sizes: Sizes,
    pub(super) offsets: Vec<usize>,
    pub(super) map: Option<Vec<usize>>,
}

impl Step {
    /// Writes the clamped bias of channels `channels` into its part of `out` (one image of `geo`
    /// from channel `base` on).
    fn fill_bias(
        &self,
        geo: &ConvGeometry,
        conv: &PackedConv,
        channels: std::ops::Range<usize>,
        base: usize,
        out: &mut [f32],
    ) {
        let g = &self.part.geo;
        for c in channels {
            let value = clamp(conv.bias_of(c), conv.low, conv.high);
            (0..g.oh).for_each(|oy| out[self.row_at(geo, c - base, oy)..][..g.ow].fill(value));
        }
    }

    /// Writes `sums` (channels from `first`, each `sizes.wide` long in rows of `sizes.row` pixels)
    /// into its part of `out` (one image of `geo` from channel `base` on), the first `ow` pixels of
    /// each row.
    fn place(&self, geo: &ConvGeometry, first: usize, base: usize, sums: &[f32], out: &mut [f32]) {
        let (g, sizes) = (&self.part.geo, &self.sizes);
        for (c, wide) in (first - base..).zip(sums.chunks_exact(sizes.wide)) {
            for (oy, from) in wide.chunks(sizes.row).take(g.oh).enumerate() {
                out[self.row_at(geo, c, oy)..][..g.ow].copy_from_slice(&from[..g.ow]);
            }
        }
    }

    /// Where output row `oy` of its part in channel `c` starts in one image of `geo`.
    fn row_at(&self, geo: &ConvGeometry, c: usize, oy: usize) -> usize {
        (c * geo.oh + self.part.out[0] + oy) * geo.ow + self.part.out[1]
    }
}

/// Floats of prepared input one thread lays out at least before the layout is split over threads,
/// as a shift of the multiply-adds a thread is given at least: a 64th (2^15 floats, 128 KB, for
/// the dense kernel's 2^21: a few µs of copying, against about a microsecond for a split while the
/// pool's workers are kept awake). On 2 threads, `conv b1 32-32 56x56` 0.357 -> 0.316 ms,
/// `dilated d12` 1.09 -> 0.96, `64-128 s2` 0.75 -> 0.64; none slower beyond noise
/// (`benches/thread_split.py`, `benches/conv_sweep.py --threads 2 --baseline`).
const PREPARED_SHIFT: u32 = 6;

/// [`prepare`] over the threads of `pool` (if given, with the multiply-adds a thread is given at
/// least) when the layout is large enough ([`PREPARED_SHIFT`]): runs of whole input channels per
/// thread, each channel's planes written as one thread writes them, so the prepared input is the
/// same.
fn prepare_on(
    geo: &ConvGeometry,
    sizes: &Sizes,
    image: &[f32],
    full: [usize; 2],
    origin: [usize; 2],
    prepared: &mut [f32],
    pool: Option<(&ThreadPool, usize)>,
) {
    let work = geo.c_in.saturating_mul(sizes.channel);
    let threads =
        pool.map_or(1, |(p, least)| crate::kernel::threads_for(Some(p), work, least >> PREPARED_SHIFT, geo.c_in));
    let Some((pool, _)) = pool.filter(|_| threads > 1) else {
        prepare(geo, sizes, image, full, origin, prepared);
        return;
    };
    let plane_in = full[0] * full[1];
    let mut rest = prepared;
    spread(
        pool,
        (0..threads).map(|t| {
            let (c0, c1) = (geo.c_in * t / threads, geo.c_in * (t + 1) / threads);
            // The last run takes the rest, with the floats past the last plane.
            let len = if t + 1 == threads { rest.len() } else { (c1 - c0) * sizes.channel };
            let (mine, others) = std::mem::take(&mut rest).split_at_mut(len);
            rest = others;
            let part = ConvGeometry { c_in: c1 - c0, ..*geo };
            let image = &image[c0 * plane_in..];
            move || prepare(&part, sizes, image, full, origin, mine)
        }),
    );
}

/// Runs `f` with this thread's scratch buffers (the prepared input, the output in the kernel's
/// layout) of at least `[prepared, wide]` floats, kept for the next convolution unless large; fresh
/// buffers if this thread's are in use (a convolution run from inside another on the same thread).
pub(super) fn with_scratch(lens: [usize; 2], f: impl FnOnce((&mut [f32], &mut [f32]))) {
    SCRATCH.with(|scratch| {
        let mut fresh = (Vec::new(), Vec::new());
        let mut kept = scratch.try_borrow_mut();
        let (prepared, wide) = match kept.as_deref_mut() {
            Ok(buffers) => buffers,
            Err(_) => &mut fresh,
        };
        // `prepare` writes every element the kernel reads for an output pixel, and the kernel every
        // element of `wide` compacted: what an earlier call left needs no clearing.
        prepared.resize(lens[0], 0.0);
        wide.resize(lens[1], 0.0);
        f((prepared, wide));
        for buffer in [prepared, wide] {
            if buffer.len() > SCRATCH_KEPT {
                *buffer = Vec::new();
            }
        }
    });
}

/// The steps of `geo` by `conv`: its parts ([`conv_parts::parts`]) with their sizes and taps.
pub(super) fn steps(geo: &ConvGeometry, conv: &PackedConv) -> Result<Vec<Step>, String> {
    let (_, channels, _) = conv.runs();
    let channels = if conv.depthwise { 1 } else { channels };
    let mut steps = Vec::new();
    for part in conv_parts::parts(geo, channels) {
        if part.bias_only() {
            // Its outputs are the bias alone: no sizes, no taps.
            let sizes = Sizes {
                input: 0,
                output: 0,
                prepared: 0,
                row: 0,
                plane: 0,
                channel: 0,
                shifted: false,
                pixels: 0,
                wide: 0,
            };
            steps.push(Step { part, sizes, offsets: Vec::new(), map: None });
            continue;
        }
        let sizes = part.geo.sizes()?;
        let offsets = tap_offsets(&part.geo, &sizes, channels);
        let map = (!part.all_taps(geo.kh, geo.kw)).then(|| {
            let mut map = Vec::with_capacity(offsets.len());
            for c in 0..channels {
                for ky in part.taps[0].clone() {
                    map.extend(part.taps[1].clone().map(|kx| (c * geo.kh + ky) * geo.kw + kx));
                }
            }
            map
        });
        steps.push(Step { part, sizes, offsets, map });
    }
    Ok(steps)
}

thread_local! {
    /// The prepared input and the output in the kernel's layout of the last convolution this
    /// thread ran, reused by the next.
    static SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<f32>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// The largest scratch buffer kept for the next convolution (floats: 16 MB).
pub(super) const SCRATCH_KEPT: usize = 1 << 22;

/// [`conv2d`] once the sizes are checked: `prepared` and `wide` hold at least what every step needs.
#[allow(clippy::too_many_arguments)]
pub(super) fn convolve(
    geo: &ConvGeometry,
    steps: &[Step],
    conv: &PackedConv,
    input: &[f32],
    output: &mut [f32],
    (prepared, wide): (&mut [f32], &mut [f32]),
    kernel: Kernel,
    pool: Option<(&ThreadPool, usize)>,
) {
    let image_in = geo.c_in * geo.h * geo.w;
    let image_out = geo.c_out * geo.oh * geo.ow;
    for n in 0..geo.batch {
        let image = &input[n * image_in..][..image_in];
        let out = &mut output[n * image_out..][..image_out];
        for step in steps {
            if step.part.bias_only() {
                step.fill_bias(geo, conv, 0..geo.c_out, 0, out);
                continue;
            }
            let (part, sizes) = (&step.part, &step.sizes);
            let prepared = &mut prepared[..sizes.prepared];
            let wide = &mut wide[..sizes.wide * geo.c_out];
            prepare_on(&part.geo, sizes, image, [geo.h, geo.w], part.origin, prepared, pool);
            sums(step, conv, prepared, wide, kernel, pool);
            // Rows of `L` pixels to rows of `OW`, at the part's place.
            step.place(geo, 0, 0, wide, out);
        }
    }
}

/// Floats of weights one chunk of output channels of [`convolve_chunked`] reads (512 KB: half of a
/// core's level-2 cache on the machines measured).
pub(super) const CHUNK_WEIGHTS: usize = 1 << 17;

/// Output channels of one chunk of [`convolve_chunked`]: a multiple of 16 whose weights are at most
/// [`CHUNK_WEIGHTS`] floats, at least 16.
pub(super) fn chunk_channels(conv: &PackedConv) -> usize {
    (CHUNK_WEIGHTS / conv.taps().max(1) / 16).max(1) * 16
}

/// [`convolve`] for a split into parts of one group: every part's input laid out first, then for
/// each chunk of `chunk` output channels every part in turn, so that the chunk's weights are read
/// from memory once and from the cache by the other parts. Part after part over all channels
/// (`convolve`) reads the whole kernel once a part: a 3x3 convolution of 960 to 256 channels with
/// dilation 12 on a 14x14 map (9 parts, 8.8 MB of weights) read about 80 MB a run and took 3-5x
/// onnxruntime's time. Each channel's sums are the same as `convolve`'s (the same build over the
/// same taps in the same order), so the values are the same bits.
///
/// With `pool` (and the fewest multiply-adds a thread is given, for the dense kernel), an image's
/// chunks are split over its threads from [`super::CHUNKED_FACTOR`] times that, in runs of
/// consecutive chunks, each thread writing its own channels of the output with its own scratch for
/// the sums (the calling thread with `wide`); each part's layout is split by [`prepare_on`].
///
/// `prepared` holds every part's prepared input one after the other, `wide` one part's sums for
/// `chunk` channels.
#[allow(clippy::too_many_arguments)]
pub(super) fn convolve_chunked(
    geo: &ConvGeometry,
    steps: &[Step],
    conv: &PackedConv,
    input: &[f32],
    output: &mut [f32],
    (prepared, wide): (&mut [f32], &mut [f32]),
    chunk: usize,
    pool: Option<(&ThreadPool, usize)>,
) {
    let image_in = geo.c_in * geo.h * geo.w;
    let plane = geo.oh * geo.ow;
    let image_out = geo.c_out * plane;
    let chunks = geo.c_out.div_ceil(chunk);
    // One group (`convolve_chunked` takes no other): an image's multiply-adds as `conv2d` counts them.
    let image_macs: usize = steps.iter().map(|s| geo.c_out * s.offsets.len() * s.sizes.pixels).sum();
    let threads = pool.map_or(1, |(p, least)| {
        crate::kernel::threads_for(Some(p), image_macs, least.saturating_mul(super::CHUNKED_FACTOR), chunks)
    });
    let wide_len = wide.len();
    for n in 0..geo.batch {
        let image = &input[n * image_in..][..image_in];
        let out = &mut output[n * image_out..][..image_out];
        let mut at = 0;
        for step in steps.iter().filter(|s| !s.part.bias_only()) {
            let here = &mut prepared[at..][..step.sizes.prepared];
            prepare_on(&step.part.geo, &step.sizes, image, [geo.h, geo.w], step.part.origin, here, pool);
            at += step.sizes.prepared;
        }
        let prepared = &*prepared;
        // Chunks `k0..k1` into `out`, which starts at the first one's first channel.
        let run = |[k0, k1]: [usize; 2], out: &mut [f32], wide: &mut [f32]| {
            let base = k0 * chunk;
            for k in k0..k1 {
                let (c0, c1) = (k * chunk, ((k + 1) * chunk).min(geo.c_out));
                let mut at = 0;
                for step in steps {
                    if step.part.bias_only() {
                        step.fill_bias(geo, conv, c0..c1, base, out);
                        continue;
                    }
                    let sizes = &step.sizes;
                    let x = &prepared[at..][..sizes.prepared];
                    at += sizes.prepared;
                    let sums = &mut wide[..(c1 - c0) * sizes.wide];
                    let run_geo = ConvGeometry { c_out: c1 - c0, ..step.part.geo };
                    let filters = conv.filters(0).channels(c0, c1);
                    kernel(&run_geo, sizes, filters, &step.offsets, step.map.as_deref(), x, sums);
                    step.place(geo, c0, base, sums, out);
                }
            }
        };
        let Some((pool, _)) = pool.filter(|_| threads > 1) else {
            run([0, chunks], out, wide);
            continue;
        };
        let (run, mut rest, mut caller) = (&run, out, Some(&mut *wide));
        spread(
            pool,
            (0..threads).map(|t| {
                let (k0, k1) = (chunks * t / threads, chunks * (t + 1) / threads);
                let channels = (k1 * chunk).min(geo.c_out) - k0 * chunk;
                let (mine, others) = std::mem::take(&mut rest).split_at_mut(channels * plane);
                rest = others;
                // The last job runs on the calling thread, with its scratch; the others with theirs.
                let wide = if t + 1 == threads { caller.take() } else { None };
                move || match wide {
                    Some(wide) => run([k0, k1], mine, wide),
                    None => with_scratch([0, wide_len], |(_, wide)| run([k0, k1], mine, wide)),
                }
            }),
        );
    }
}

/// The sums of one step's prepared image `x` into `wide` (`[c_out][wide]`), run after run (group
/// after group), over the threads of `pool` when the work is large enough: each thread takes a run of
/// consecutive blocks of 4 output channels (depthwise, of channels), which are consecutive rows of
/// `wide`.
///
/// `pool` is the pool and the fewest multiply-adds a thread is given ([`MACS_PER_THREAD`]).
pub(super) fn sums(
    step: &Step,
    conv: &PackedConv,
    x: &[f32],
    wide: &mut [f32],
    kernel: Kernel,
    pool: Option<(&ThreadPool, usize)>,
) {
    let (runs, c_in, c_out) = conv.runs();
    let (geo, sizes) = (&step.part.geo, &step.sizes);
    let unit = if conv.depthwise { 1 } else { CO_BLOCK };
    let per_run = c_out.div_ceil(unit);
    let units = runs * per_run;
    // The first output channel of unit `u` (`units`: one past the last channel).
    let channel = |u: usize| (u / per_run) * c_out + ((u % per_run) * unit).min(c_out);
    let planes = c_in * sizes.channel;
    let job = |u0: usize, u1: usize, wide: &mut [f32]| {
        let mut u = u0;
        let mut at = 0;
        while u < u1 {
            let r = u / per_run;
            let end = u1.min((r + 1) * per_run);
            let (c0, c1) = ((u % per_run) * unit, ((end - r * per_run) * unit).min(c_out));
            let run_geo = ConvGeometry { c_in, c_out: c1 - c0, ..*geo };
            let x = &x[r * planes + if conv.depthwise { c0 * sizes.channel } else { 0 }..];
            let out = &mut wide[at..][..(c1 - c0) * sizes.wide];
            kernel(&run_geo, sizes, conv.filters(r).channels(c0, c1), &step.offsets, step.map.as_deref(), x, out);
            at += (c1 - c0) * sizes.wide;
            u = end;
        }
    };
    let macs = runs * c_out * step.offsets.len() * sizes.pixels;
    let threads = pool.map_or(1, |(p, least)| crate::kernel::threads_for(Some(p), macs, least, units));
    let Some((pool, _)) = pool.filter(|_| threads > 1) else {
        job(0, units, wide);
        return;
    };
    let mut rest = wide;
    let job = &job;
    spread(
        pool,
        (0..threads).map(|t| {
            let (u0, u1) = (units * t / threads, units * (t + 1) / threads);
            let (mine, others) = std::mem::take(&mut rest).split_at_mut((channel(u1) - channel(u0)) * sizes.wide);
            rest = others;
            move || job(u0, u1, mine)
        }),
    );
}
