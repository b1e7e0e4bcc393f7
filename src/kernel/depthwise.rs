//! Depthwise 2-D convolution channel by channel (`NCHW`), the input read where it lies: the path
//! [`super::conv::conv2d`] takes for a depthwise convolution with a column stride of 1 or 2 whose
//! taps mostly read inside the input ([`takes`]).
//!
//! The whole-image layout of the direct kernel (every channel's padded phase planes, then the sums
//! in rows of the padded width, then a compaction) costs a depthwise convolution more than its
//! arithmetic: about 20 MB of memory traffic for 2.7 M multiply-adds on a stride-2 3x3 over 96
//! channels of 112x112, and per-row copies of a few floats each on 7x7 maps. Here each channel in
//! turn is copied into a small zero-padded scratch (one plane per column phase: a stride-2
//! convolution's even and odd padded columns de-interleaved once, so that every tap reads a
//! contiguous run), which stays in the cache while the channel's outputs are summed from it and
//! written straight into the output, row by row: no compaction, nothing written twice.
//!
//! Scratch of one channel: `SW` planes (column phases) of `R` rows by `L` floats, `R` the padded
//! rows read (`(OH-1)·SH + (KH-1)·DH + 1`) and `L = ceil(C / SW)`, `C` the padded columns read
//! (`(OW-1)·SW + (KW-1)·DW + 1`): element `(r, j)` of plane `b` is padded element `(r, b + j·SW)`.
//! Output pixel `(oy, ox)` of tap `(ky, kx)` reads plane `kx·DW mod SW`, row `oy·SH + ky·DH`,
//! element `ox + kx·DW div SW`: from a base `oy·SH·L + ox` of the pixel, at an offset of the tap's.
//! The padding's zeros lie at the same places for every channel, so the scratch is cleared once
//! per call and each channel writes its own values over the inside alone.
//!
//! The outputs of a channel go in chunks of 8 pixels of one row (the last of a row shorter), up to 8
//! chunks at a time each summing in its own register over all `KH·KW` taps from the bias, a fused
//! multiply-add per tap in tap order (kernel row, then column).
//!
//! No masked store (`vmaskmovps`): on AMD's processors one costs tens of cycles (about 20 ns on the
//! 2-core EPYC measured, where a whole store and load take 2), which was most of a 7x7 map's time. A
//! short run copied into the scratch is stored as a whole vector with zeros past its end (over
//! padding, or over a later run's place: the runs are copied in the scratch's order); a chunk of
//! fewer than 8 outputs is stored whole over the next chunks' or the next channel's pixels, stored
//! after it; only the last chunk of a thread's channels is masked. The portable build sums in the same
//! order, a multiply then an add. Channels (of all images) are split over the threads of a pool when
//! the work is large enough; each channel is summed the same way whatever the split, so every thread
//! count gives the same bits.

use rayon::ThreadPool;

use super::conv::ConvGeometry;
use super::spread::spread;

#[cfg(target_arch = "x86_64")]
mod rows;

/// Float32 lanes of one vector: pixels of one chunk.
const LANES: usize = 8;
/// Chunks summed at a time (their sums in registers).
const GROUP: usize = 8;

/// The weights, bias and clamp of a depthwise convolution: `weights` `[channels][kh·kw]`, `bias`
/// one per channel, outputs clamped to `[low, high]` (NaN kept).
#[derive(Debug, Clone, Copy)]
pub(super) struct DepthwiseFilters<'a> {
    /// `[channels][kh·kw]`.
    pub weights: &'a [f32],
    /// One per channel.
    pub bias: &'a [f32],
    /// The lower bound of the clamp.
    pub low: f32,
    /// The upper bound of the clamp.
    pub high: f32,
}

/// Whether this path takes the depthwise convolution `geo`: a column stride of 1 or 2, and at
/// least half of the taps summed read inside the input (it sums every tap, padding included; a
/// dilated kernel on a small map, most of whose taps read padding, is better computed in parts,
/// [`super::conv_parts`]).
pub(super) fn takes(geo: &ConvGeometry) -> bool {
    if !(1..=2).contains(&geo.stride[1]) || geo.oh == 0 || geo.ow == 0 {
        return false;
    }
    let inside = |out: usize, k: usize, s: usize, d: usize, pad: usize, len: usize| -> Option<(u128, u128)> {
        // For each output position, the taps whose input position `o·s + t·d - pad` is in `0..len`.
        let mut count: u128 = 0;
        for o in 0..out {
            for t in 0..k {
                let at = o.checked_mul(s)?.checked_add(t.checked_mul(d)?)?;
                if at >= pad && at - pad < len {
                    count += 1;
                }
            }
        }
        Some((count, (out as u128) * (k as u128)))
    };
    // Rows and columns are independent: the taps inside are the product of both axes' counts.
    let rows = inside(geo.oh, geo.kh, geo.stride[0], geo.dilation[0], geo.pad_before[0], geo.h);
    let cols = inside(geo.ow, geo.kw, geo.stride[1], geo.dilation[1], geo.pad_before[1], geo.w);
    match (rows, cols) {
        (Some((ri, rt)), Some((ci, ct))) => 2 * ri * ci >= rt * ct,
        _ => false,
    }
}

/// The geometry of one channel's scratch and chunks (see the module docs).
struct Layout {
    /// Floats of a plane's row (`L`).
    row: usize,
    /// Floats of one plane (`R·L`).
    plane: usize,
    /// Floats of the scratch: the planes and `LANES` more (a chunk's last lanes read past the
    /// last plane's end).
    len: usize,
    /// For each tap (kernel row, then column): where pixel `(0, 0)` reads it in the scratch.
    offsets: Vec<usize>,
    /// The chunks of a channel: scratch base, output offset (in the channel's plane), pixels.
    chunks: Vec<(usize, usize, usize)>,
    /// The runs a channel is copied in by: from an input row's element `src`, `count` floats
    /// (every other one when `evens`: a stride-2 phase) to the scratch from `dst`.
    runs: Vec<Run>,
    /// A stride-2 channel's input rows, each copied in one pass into both column phases (the rows
    /// kernel's copy-in, [`avx2::split`]); none at column stride 1.
    pairs: Vec<Pair>,
}

/// One input row of [`Layout::pairs`]: from element `src`, `n` columns; the even ones (`even.1` of
/// them) to the scratch from `even.0`, the odd ones to `odd.0`.
#[derive(Debug, Clone, Copy)]
struct Pair {
    src: usize,
    n: usize,
    even: (usize, usize),
    odd: (usize, usize),
}

/// One run of [`Layout::runs`].
#[derive(Debug, Clone, Copy)]
struct Run {
    src: usize,
    dst: usize,
    count: usize,
    evens: bool,
}

impl Layout {
    fn new(geo: &ConvGeometry) -> Result<Layout, String> {
        let over = || format!("depthwise convolution sizes overflow: {geo:?}");
        let ([sh, sw], [dh, dw]) = (geo.stride, geo.dilation);
        let reach = |o: usize, s: usize, k: usize, d: usize| -> Option<usize> {
            (o - 1).checked_mul(s)?.checked_add((k - 1).checked_mul(d)?)?.checked_add(1)
        };
        let rows = reach(geo.oh, sh, geo.kh, dh).ok_or_else(over)?;
        let cols = reach(geo.ow, sw, geo.kw, dw).ok_or_else(over)?;
        let row = cols.div_ceil(sw);
        let plane = rows.checked_mul(row).ok_or_else(over)?;
        let len = plane.checked_mul(sw).and_then(|v| v.checked_add(LANES)).ok_or_else(over)?;
        let mut offsets = Vec::with_capacity(geo.kh * geo.kw);
        for ky in 0..geo.kh {
            for kx in 0..geo.kw {
                offsets.push((kx * dw % sw) * plane + ky * dh * row + kx * dw / sw);
            }
        }
        let mut chunks = Vec::with_capacity(geo.oh * geo.ow.div_ceil(LANES));
        for oy in 0..geo.oh {
            for ox in (0..geo.ow).step_by(LANES) {
                chunks.push((oy * sh * row + ox, oy * geo.ow + ox, LANES.min(geo.ow - ox)));
            }
        }
        let mut layout = Layout { row, plane, len, offsets, chunks, runs: Vec::new(), pairs: Vec::new() };
        layout.runs = layout.runs(geo, rows);
        layout.pairs = layout.pairs(geo, rows);
        // In the scratch's order: a run copied in whole vectors writes zeros past its end, over
        // padding or over a later run's place, never over an earlier run.
        layout.runs.sort_by_key(|r| r.dst);
        // Every run and every chunk inside the scratch, the input channel and the output channel:
        // what the vector build relies on.
        let (image_in, image_out) = (geo.h * geo.w, geo.oh * geo.ow);
        for r in &layout.runs {
            let reach = if r.evens { 2 * r.count - 1 } else { r.count };
            assert!(r.src + reach <= image_in && r.dst + r.count <= plane * sw, "depthwise run outside");
        }
        for p in &layout.pairs {
            let inside = |(dst, count): (usize, usize)| dst + count <= plane * sw;
            assert!(p.src + p.n <= image_in && inside(p.even) && inside(p.odd), "depthwise pair outside");
        }
        let farthest = layout.chunks.last().map_or(0, |c| c.0) + layout.offsets.iter().max().copied().unwrap_or(0);
        assert!(farthest + LANES <= layout.len, "depthwise scratch too short");
        assert!(layout.chunks.iter().all(|&(_, at, n)| at + n <= image_out && n <= LANES));
        Ok(layout)
    }

    /// The runs copying a channel (`h` rows of `w`) into the inside of the scratch of `rows` padded
    /// rows: each input row read, whole (stride 1) or as its two column phases (stride 2).
    fn runs(&self, geo: &ConvGeometry, rows: usize) -> Vec<Run> {
        let sw = geo.stride[1];
        let [pt, pl] = geo.pad_before;
        // Input columns read: padded columns `pl..pl + nx` of the `row·sw` a plane row spans.
        let nx = geo.w.min((self.row * sw).saturating_sub(pl));
        let mut runs = Vec::new();
        for r in 0..rows {
            let Some(y) = r.checked_sub(pt).filter(|&y| y < geo.h) else { continue };
            if nx == 0 {
                continue;
            }
            if sw == 1 {
                runs.push(Run { src: y * geo.w, dst: r * self.row + pl, count: nx, evens: false });
                continue;
            }
            // Phase b holds padded columns b, b + 2, ...: input columns from (b + pl) mod 2 on.
            for b in 0..2 {
                let first = (b + pl) % 2;
                if first < nx {
                    let (src, count) = (y * geo.w + first, (nx - first).div_ceil(2));
                    runs.push(Run { src, dst: b * self.plane + r * self.row + (pl + first) / 2, count, evens: true });
                }
            }
        }
        runs
    }

    /// [`Layout::runs`] of a stride-2 channel, a row's two column phases as one [`Pair`].
    fn pairs(&self, geo: &ConvGeometry, rows: usize) -> Vec<Pair> {
        if geo.stride[1] != 2 {
            return Vec::new();
        }
        let [pt, pl] = geo.pad_before;
        let nx = geo.w.min((self.row * 2).saturating_sub(pl));
        let mut pairs = Vec::new();
        for r in 0..rows {
            let Some(y) = r.checked_sub(pt).filter(|&y| y < geo.h) else { continue };
            if nx == 0 {
                continue;
            }
            // Input column `x` is padded column `x + pl`: phase `(x + pl) mod 2`, element `(x + pl) / 2`.
            let place = |x: usize| ((x + pl) % 2) * self.plane + r * self.row + (x + pl) / 2;
            pairs.push(Pair { src: y * geo.w, n: nx, even: (place(0), nx.div_ceil(2)), odd: (place(1), nx / 2) });
        }
        pairs
    }
}

/// Multiply-adds one thread is given at least before a depthwise convolution is split over threads:
/// about 10 µs of one core's work (this kernel sums 5-6 multiply-adds a nanosecond on a 7x7 map, a
/// tenth of the dense kernel's rate). With the pool's workers awake while a plan runs, 2 threads
/// measured 0.58-0.79 of one thread's time from 254,016 multiply-adds (`benches/thread_split.py`,
/// 2 cores; docs/performance.md, "Threads in our kernels").
pub(super) const MACS_PER_THREAD: usize = 1 << 16;

/// Convolves `input` (`[batch][c][h][w]`) into `output` (`[batch][c][oh][ow]`) by `filters`, over
/// the threads of `pool` (with at least `least` multiply-adds each) where the work is large enough.
/// The sizes are the caller's, checked ([`ConvGeometry::sizes`]) and matching `filters`.
pub(super) fn depthwise(
    geo: &ConvGeometry,
    filters: DepthwiseFilters<'_>,
    input: &[f32],
    output: &mut [f32],
    pool: Option<(&ThreadPool, usize)>,
) -> Result<(), String> {
    depthwise_by(Kernel::best(geo), geo, filters, input, output, pool)
}

/// The loops that sum a channel from its scratch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Kernel {
    /// Blocks of output rows, each loaded input row serving all the block's rows that read it
    /// ([`rows`]: AVX-512VL, square 3x3, 5x5, 7x7 kernels).
    Rows,
    /// Chunks of 8 outputs, a load per tap (AVX2 and FMA).
    Chunks,
    /// Any machine.
    Portable,
}

impl Kernel {
    /// The fastest this CPU has for `geo`.
    fn best(geo: &ConvGeometry) -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if Kernel::Rows.runs(geo) && rows::pays(geo.ow) {
            return Kernel::Rows;
        }
        [Kernel::Chunks].into_iter().find(|k| k.runs(geo)).unwrap_or(Kernel::Portable)
    }

    /// Whether this CPU has the kernel's instructions and the kernel takes `geo`.
    fn runs(self, geo: &ConvGeometry) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = has!("avx2") && has!("fma");
            match self {
                Kernel::Rows => {
                    let takes = rows::takes(geo.kh, geo.kw, geo.stride[0], geo.dilation[0], [geo.oh, geo.ow]);
                    takes && avx2 && has!("avx512f") && has!("avx512vl")
                }
                Kernel::Chunks => avx2,
                Kernel::Portable => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = geo;
            self == Kernel::Portable
        }
    }
}

/// [`depthwise`] by `kernel`, which must run here ([`Kernel::runs`]).
fn depthwise_by(
    kernel: Kernel,
    geo: &ConvGeometry,
    filters: DepthwiseFilters<'_>,
    input: &[f32],
    output: &mut [f32],
    pool: Option<(&ThreadPool, usize)>,
) -> Result<(), String> {
    assert!(kernel.runs(geo), "depthwise kernel {kernel:?} for {geo:?}");
    if geo.oh == 0 || geo.ow == 0 || geo.batch == 0 || geo.c_in == 0 {
        return Ok(());
    }
    let layout = Layout::new(geo)?;
    crate::kernel::check_allocation(layout.len as u64, 4).map_err(|e| e.to_string())?;
    let (image_in, image_out) = (geo.h * geo.w, geo.oh * geo.ow);
    let (channels, taps) = (geo.c_in, geo.kh * geo.kw);
    if input.len() != geo.batch * channels * image_in
        || output.len() != geo.batch * channels * image_out
        || filters.weights.len() != channels * taps
        || filters.bias.len() != channels
    {
        return Err(format!("depthwise convolution of {} floats into {} for {geo:?}", input.len(), output.len()));
    }
    let units = geo.batch * channels;
    // Units `u0..u1` (image `u / channels`, channel `u % channels`) into `out`, from unit `u0`'s plane.
    let job = |u0: usize, u1: usize, out: &mut [f32]| {
        let mut scratch = vec![0f32; layout.len];
        let units = Units { layout: &layout, geo, input, filters, first: u0, image_in, image_out, channels, taps };
        #[cfg(target_arch = "x86_64")]
        if kernel != Kernel::Portable {
            // Safety: the CPU has AVX2 and FMA, and AVX-512F and VL for the rows kernel, which takes
            // `geo` (asserted above); the layout's runs and chunks stay inside the scratch, an input
            // channel and an output channel (asserted when it was made), and `out` holds `u1 - u0`
            // output channels.
            unsafe { avx2::units(&units, kernel == Kernel::Rows, &mut scratch, out) };
            return;
        }
        for (u, out) in (u0..u1).zip(out.chunks_exact_mut(image_out)) {
            let c = u % channels;
            let channel = &input[u * image_in..][..image_in];
            for r in &layout.runs {
                let dst = &mut scratch[r.dst..][..r.count];
                let step = if r.evens { 2 } else { 1 };
                dst.iter_mut().zip(channel[r.src..].iter().step_by(step)).for_each(|(o, &v)| *o = v);
            }
            let w = &filters.weights[c * taps..][..taps];
            portable_channel(&layout, &scratch, w, filters.bias[c], [filters.low, filters.high], out);
        }
    };
    let macs = units.saturating_mul(image_out).saturating_mul(taps);
    let threads = pool.map_or(1, |(p, least)| super::threads_for(Some(p), macs, least, units));
    match pool {
        Some((pool, _)) if threads > 1 => {
            let (mut rest, job) = (output, &job);
            spread(
                pool,
                (0..threads).map(|t| {
                    let (u0, u1) = (units * t / threads, units * (t + 1) / threads);
                    let (mine, others) = std::mem::take(&mut rest).split_at_mut((u1 - u0) * image_out);
                    rest = others;
                    move || job(u0, u1, mine)
                }),
            )
        }
        _ => job(0, units, output),
    }
    Ok(())
}

/// What the units (channels of images) of one thread's job read: unit `u` is image `u / channels`,
/// channel `u % channels`, the job's output starting at unit `first`'s.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Units<'a> {
    layout: &'a Layout,
    geo: &'a ConvGeometry,
    input: &'a [f32],
    filters: DepthwiseFilters<'a>,
    first: usize,
    image_in: usize,
    image_out: usize,
    channels: usize,
    taps: usize,
}

/// One channel's outputs from its filled `scratch`, by its taps' weights `w` from `bias`, clamped,
/// on any machine: the same sums as the vector build, a multiply then an add per tap.
fn portable_channel(layout: &Layout, scratch: &[f32], w: &[f32], bias: f32, clamp: [f32; 2], out: &mut [f32]) {
    for &(base, at, n) in &layout.chunks {
        for (p, o) in out[at..][..n].iter_mut().enumerate() {
            let mut sum = bias;
            for (&offset, &weight) in layout.offsets.iter().zip(w) {
                sum += weight * scratch[base + offset + p];
            }
            *o = super::conv::clamp(sum, clamp[0], clamp[1]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Layout, Units, GROUP, LANES};
    use std::arch::x86_64::*;

    /// Every unit of `units` in turn: its channel copied into `scratch` by the layout's runs, then
    /// its outputs summed into its output channel in `out` (by blocks of rows, [`super::rows`], with
    /// `by_rows`; else by chunks), while the next unit's input and output lines are fetched into the
    /// cache ([`Ahead`]).
    ///
    /// Safety: the CPU has AVX2 and FMA, and AVX-512F and VL with `by_rows`, whose kernel takes the
    /// geometry; the layout's runs and chunks stay inside the scratch, an input channel and an
    /// output channel (asserted by `Layout::new`), `scratch` is the layout's length and `out` a
    /// whole number of output channels.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn units(units: &Units<'_>, by_rows: bool, scratch: &mut [f32], out: &mut [f32]) {
        let layout = units.layout;
        let geo = units.geo;
        assert!(scratch.len() == layout.len && out.len().is_multiple_of(units.image_out));
        let count = out.len() / units.image_out;
        assert!((units.first + count) * units.image_in <= units.input.len());
        let prefetch = units.input.len() > PREFETCH_FROM;
        let steps = if by_rows { super::rows::steps(geo.oh, geo.ow) } else { layout.chunks.len().div_ceil(GROUP) };
        for i in 0..count {
            let u = units.first + i;
            let c = u % units.channels;
            let start = u * units.image_in;
            // Safety: `start + image_in` is inside the input (asserted above); the pointer keeps
            // the whole input's bounds, as `copy` may read past the channel.
            let channel = unsafe { units.input.as_ptr().add(start) };
            // Floats of the input readable from the channel's start (later channels included).
            let readable = units.input.len() - start;
            let dst = scratch.as_mut_ptr();
            for p in layout.pairs.iter().filter(|_| by_rows) {
                // Safety: the CPU has AVX-512F (`by_rows`); the pair is inside the channel and the
                // scratch (asserted by `Layout::new`).
                unsafe { split(channel.add(p.src), p.n, dst.add(p.even.0), p.even.1, dst.add(p.odd.0), p.odd.1) };
            }
            // The rows kernel copies a stride-2 channel by its pairs, the chunk kernel by runs.
            let runs = if by_rows && !layout.pairs.is_empty() { &[][..] } else { &layout.runs[..] };
            for r in runs {
                // Safety: the run is inside the channel and the scratch (the caller's), and the
                // scratch holds `LANES` floats past its planes.
                unsafe {
                    if r.evens {
                        evens(channel.add(r.src), readable - r.src, dst.add(r.dst), r.count);
                    } else {
                        copy(channel.add(r.src), readable - r.src, dst.add(r.dst), r.count);
                    }
                }
            }
            let w = &units.filters.weights[c * units.taps..][..units.taps];
            let clamp = [units.filters.low, units.filters.high];
            let mut ahead = if i + 1 < count && prefetch {
                Ahead::new(channel.wrapping_add(units.image_in), units.image_in, steps)
            } else {
                Ahead::none()
            };
            let bias = units.filters.bias[c];
            if by_rows {
                let ch = super::rows::Channel {
                    scratch,
                    weights: w,
                    bias,
                    clamp,
                    oh: geo.oh,
                    ow: geo.ow,
                    sh: geo.stride[0],
                    dh: geo.dilation[0],
                    k: geo.kh,
                };
                let mine = &mut out[i * units.image_out..][..units.image_out];
                // Safety: the caller's.
                unsafe { super::rows::channel(layout, &ch, mine, &mut || ahead.step()) };
            } else {
                // Safety: the caller's; channel `i`'s output lies at `i·image_out` in `out`.
                unsafe { channel_sums(layout, scratch, w, bias, clamp, out, i * units.image_out, &mut ahead) };
            }
        }
    }

    /// Prefetches of the next unit's input lines, spread over the steps (groups of chunks, blocks
    /// of rows) of the current unit's sums: the next copy-in then reads from the cache, where a
    /// channel read cold stalls on memory.
    pub(super) struct Ahead {
        input: *const f32,
        end: *const f32,
        per_step: usize,
    }

    /// Floats of a 64-byte cache line.
    const LINE: usize = 16;

    /// Floats of input above which the next unit's input is prefetched ([`Ahead`]): 8 MB, a
    /// quarter of the 32 MB L3 of the EPYC measured, which the input shares with the output and
    /// the rest of the model. A larger input comes from memory: `dw 144 b8` of
    /// `benches/conv_sweep.py` (14.5 MB in, 144 channels of 56x56 at batch 8) took 0.66-0.73 of
    /// onnxruntime's time with the prefetch against 0.84-0.85 without; the batch-1 rows (1.6-4.8
    /// MB, left in the cache by the run before) 1-5% longer with it.
    const PREFETCH_FROM: usize = 2 << 20;

    impl Ahead {
        /// The `image_in` floats from `input`, over `steps` steps.
        fn new(input: *const f32, image_in: usize, steps: usize) -> Ahead {
            let per_step = image_in.div_ceil(LINE).div_ceil(steps.max(1));
            Ahead { input, end: input.wrapping_add(image_in), per_step }
        }

        /// Nothing to fetch.
        fn none() -> Ahead {
            Ahead { input: std::ptr::null(), end: std::ptr::null(), per_step: 0 }
        }

        /// The next lines of one step.
        #[inline(always)]
        pub(super) fn step(&mut self) {
            for _ in 0..self.per_step {
                if self.input >= self.end {
                    return;
                }
                // Safety: a prefetch reads nothing into the program and faults at no address.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(self.input.cast()) };
                self.input = self.input.wrapping_add(LINE);
            }
        }
    }

    /// `n` floats from `src` to `dst` in whole vectors: the last one's lanes past `n` are zeros,
    /// written past `dst + n` (up to 7 floats), and read past `src + n` (a masked load where fewer
    /// than 8 floats are readable from its start).
    ///
    /// Safety: the CPU has AVX2; `src` holds `readable >= n` floats, `dst` holds `n` rounded up to
    /// a multiple of 8 (`n >= 1`).
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn copy(src: *const f32, readable: usize, dst: *mut f32, n: usize) {
        let mut j = 0;
        // Safety: every vector loaded lies in `0..readable` or is masked to `0..n`; every vector
        // stored in `0..n` rounded up to 8.
        unsafe {
            while j + LANES <= n {
                _mm256_storeu_ps(dst.add(j), _mm256_loadu_ps(src.add(j)));
                j += LANES;
            }
            if j < n {
                let mask = mask(n - j);
                let v = if j + LANES <= readable {
                    _mm256_and_ps(_mm256_loadu_ps(src.add(j)), _mm256_castsi256_ps(mask))
                } else {
                    _mm256_maskload_ps(src.add(j), mask)
                };
                // A whole store: `_mm256_maskstore_ps` costs tens of cycles on some processors.
                _mm256_storeu_ps(dst.add(j), v);
            }
        }
    }

    /// `dst[t]` = `src[2·t]` for `t < n`: 16 floats shuffled to their 8 even ones at a time (the
    /// last vector's lanes past `n` zeros, written past `dst + n` as [`copy`] does) while 16 floats
    /// are readable, then one by one.
    ///
    /// Safety: the CPU has AVX2; `src` holds `readable >= 2·n - 1` floats and `dst` `n` rounded up
    /// to a multiple of 8 (`n >= 1`).
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn evens(src: *const f32, readable: usize, dst: *mut f32, n: usize) {
        let mut t = 0;
        // Safety: a vector step reads `src[2t..2t + 16]`, inside as `2t + 16 <= readable`, and
        // writes `dst[t..t + 8]`, inside `n` rounded up to 8 as `t < n`; the rest one by one
        // inside.
        unsafe {
            while t < n && 2 * t + 2 * LANES <= readable {
                let a = _mm256_loadu_ps(src.add(2 * t));
                let b = _mm256_loadu_ps(src.add(2 * t + LANES));
                // a0 a2 b0 b2 | a4 a6 b4 b6, then the 64-bit pairs in order 0 2 1 3.
                let mixed = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
                let mut even = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(mixed)));
                if t + LANES > n {
                    even = _mm256_and_ps(even, _mm256_castsi256_ps(mask(n - t)));
                }
                _mm256_storeu_ps(dst.add(t), even);
                t += LANES;
            }
            while t < n {
                *dst.add(t) = *src.add(2 * t);
                t += 1;
            }
        }
    }

    /// `n` floats from `src`, the even ones to `even` (`n_even` = `ceil(n / 2)`) and the odd ones to
    /// `odd` (`n_odd` = `n / 2`), 32 floats at a time by two lane permutations (AVX-512: the chunk
    /// kernel's copy reads each row twice, two loads, a shuffle and a permutation for 8 floats of
    /// one phase). The last step's loads and stores are masked (cheap with mask registers), so
    /// nothing past the row is read and nothing past either run written.
    ///
    /// Safety: the CPU has AVX-512F; `src` holds `n` floats, `even` `n_even` and `odd` `n_odd`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn split(src: *const f32, n: usize, even: *mut f32, n_even: usize, odd: *mut f32, n_odd: usize) {
        const EVENS: [i32; 16] = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30];
        const ODDS: [i32; 16] = [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31];
        let first = |k: usize| if k >= 16 { u16::MAX } else { ((1u32 << k) - 1) as u16 };
        // Safety: every load is masked to `0..n` of `src`, every store to `0..n_even` of `even` or
        // `0..n_odd` of `odd`; the pointers past them are made by wrapping and not dereferenced.
        unsafe {
            let (evens, odds) = (_mm512_loadu_epi32(EVENS.as_ptr()), _mm512_loadu_epi32(ODDS.as_ptr()));
            let mut j = 0;
            while j < n_even {
                let x = 2 * j;
                let (a, b) = if x + 32 <= n {
                    (_mm512_loadu_ps(src.add(x)), _mm512_loadu_ps(src.add(x + 16)))
                } else {
                    let a = _mm512_maskz_loadu_ps(first(n - x), src.add(x));
                    (a, _mm512_maskz_loadu_ps(first(n.saturating_sub(x + 16)), src.wrapping_add(x + 16)))
                };
                let (e, o) = (_mm512_permutex2var_ps(a, evens, b), _mm512_permutex2var_ps(a, odds, b));
                _mm512_mask_storeu_ps(even.add(j), first(n_even - j), e);
                if j < n_odd {
                    _mm512_mask_storeu_ps(odd.add(j), first(n_odd - j), o);
                }
                j += 16;
            }
        }
    }

    /// The mask of the first `n` lanes (`n <= 8`).
    #[inline(always)]
    fn mask(n: usize) -> __m256i {
        const ALL: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
        // Safety: `8 - n` is at most 8: the 8 lanes read lie inside `ALL`.
        unsafe { _mm256_loadu_si256(ALL.as_ptr().add(LANES - n.min(LANES)).cast()) }
    }

    /// One channel's sums (as [`super::portable_channel`]) in vectors: `GROUP` chunks at a time,
    /// then the rest, into `out` from `first` (the channel's output; the floats after it are later
    /// channels' or nothing).
    ///
    /// Safety: the CPU has AVX2 and FMA; every chunk reads inside `scratch` and writes inside
    /// `out[first..]`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn channel_sums(
        layout: &Layout,
        scratch: &[f32],
        w: &[f32],
        bias: f32,
        clamp: [f32; 2],
        out: &mut [f32],
        first: usize,
        ahead: &mut Ahead,
    ) {
        let mut groups = layout.chunks.chunks_exact(GROUP);
        for group in &mut groups {
            // Safety: the caller's.
            unsafe { chunks::<GROUP>(group, layout, scratch, w, bias, clamp, out, first) };
            ahead.step();
        }
        let rest = groups.remainder();
        macro_rules! tail {
            ($($n:literal)*) => {
                match rest.len() {
                    // Safety: the caller's.
                    $($n => unsafe { chunks::<$n>(rest, layout, scratch, w, bias, clamp, out, first) },)*
                    _ => {}
                }
            };
        }
        tail!(1 2 3 4 5 6 7);
    }

    /// The `G` chunks of `group`, each summed in its own register, stored in chunk order. A chunk
    /// of fewer than 8 pixels is stored whole where `out` has room: its last lanes land on the
    /// next chunks' pixels (or a later channel's), which are stored after it.
    ///
    /// Safety: as [`channel_sums`], with `group.len() == G`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn chunks<const G: usize>(
        group: &[(usize, usize, usize)],
        layout: &Layout,
        scratch: &[f32],
        w: &[f32],
        bias: f32,
        [low, high]: [f32; 2],
        out: &mut [f32],
        first: usize,
    ) {
        let mut sums = [_mm256_set1_ps(bias); G];
        let s = scratch.as_ptr();
        let bases: [usize; G] = std::array::from_fn(|i| group[i].0);
        for (&offset, &weight) in layout.offsets.iter().zip(w) {
            let weight = _mm256_set1_ps(weight);
            for (sum, &base) in sums.iter_mut().zip(&bases) {
                // Safety: the caller's: `base + offset + 8` is at most the scratch's length.
                *sum = _mm256_fmadd_ps(unsafe { _mm256_loadu_ps(s.add(base + offset)) }, weight, *sum);
            }
        }
        let (low, high) = (_mm256_set1_ps(low), _mm256_set1_ps(high));
        for (&sum, &(_, at, n)) in sums.iter().zip(group) {
            // `max(low, v)` and `min(high, v)` return `v` when it is NaN.
            let v = _mm256_min_ps(high, _mm256_max_ps(low, sum));
            let at = first + at;
            assert!(at + n <= out.len());
            // Safety: 8 floats from `at` lie inside `out` when stored whole, else `n` masked.
            unsafe {
                if at + LANES <= out.len() {
                    _mm256_storeu_ps(out.as_mut_ptr().add(at), v);
                } else {
                    _mm256_maskstore_ps(out.as_mut_ptr().add(at), mask(n), v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// The definition in f64: each output, and the sum of its terms' magnitudes.
    fn reference(geo: &ConvGeometry, x: &[f32], w: &[f32], bias: &[f32]) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let taps = geo.kh * geo.kw;
        for n in 0..geo.batch {
            for c in 0..geo.c_in {
                for oy in 0..geo.oh {
                    for ox in 0..geo.ow {
                        let (mut sum, mut size) = (bias[c] as f64, (bias[c] as f64).abs());
                        for ky in 0..geo.kh {
                            for kx in 0..geo.kw {
                                let y =
                                    (oy * geo.stride[0] + ky * geo.dilation[0]) as isize - geo.pad_before[0] as isize;
                                let x_ =
                                    (ox * geo.stride[1] + kx * geo.dilation[1]) as isize - geo.pad_before[1] as isize;
                                if y < 0 || x_ < 0 || y >= geo.h as isize || x_ >= geo.w as isize {
                                    continue;
                                }
                                let v = x[((n * geo.c_in + c) * geo.h + y as usize) * geo.w + x_ as usize] as f64;
                                let t = w[c * taps + ky * geo.kw + kx] as f64 * v;
                                sum += t;
                                size += t.abs();
                            }
                        }
                        out.push((sum, size));
                    }
                }
            }
        }
        out
    }

    /// The geometry of `c` channels of `h`x`w` by a `k`x`k` kernel, strides, dilations, pads
    /// `[top, left, bottom, right]`.
    fn geometry(
        batch: usize,
        c: usize,
        [h, w]: [usize; 2],
        k: usize,
        s: [usize; 2],
        d: [usize; 2],
        pads: [usize; 4],
    ) -> ConvGeometry {
        let out = |len: usize, before: usize, after: usize, s: usize, d: usize| {
            (len + before + after - d * (k - 1) - 1) / s + 1
        };
        ConvGeometry {
            batch,
            c_in: c,
            h,
            w,
            c_out: c,
            kh: k,
            kw: k,
            stride: s,
            dilation: d,
            pad_before: [pads[0], pads[1]],
            oh: out(h, pads[0], pads[2], s[0], d[0]),
            ow: out(w, pads[1], pads[3], s[1], d[1]),
        }
    }

    fn pool(threads: usize) -> ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }

    /// Every output within float32 rounding of a sum of `k` terms of the definition, and the same
    /// bits over 1, 2 and 8 threads (each given any work).
    #[test]
    fn depthwise_follows_the_definition_on_every_thread_count() {
        let cases = [
            // (batch, channels, [h, w], k, strides, dilations, pads)
            (1, 3, [7, 9], 3, [1, 1], [1, 1], [1, 1, 1, 1]),
            (2, 5, [13, 11], 3, [2, 2], [1, 1], [1, 1, 1, 1]),
            (1, 4, [12, 17], 3, [2, 2], [1, 1], [0, 0, 1, 1]),
            (1, 3, [15, 14], 5, [2, 2], [1, 1], [2, 2, 2, 2]),
            (1, 2, [9, 23], 7, [1, 1], [1, 1], [3, 3, 3, 3]),
            (3, 3, [11, 10], 3, [1, 1], [2, 2], [2, 2, 2, 2]),
            (1, 6, [19, 21], 5, [1, 2], [2, 1], [3, 1, 4, 2]),
            (1, 2, [5, 5], 3, [1, 1], [1, 1], [0, 0, 0, 0]),
            (1, 9, [7, 7], 3, [1, 1], [1, 1], [1, 1, 1, 1]),
            (1, 3, [33, 35], 7, [2, 2], [2, 2], [5, 6, 7, 4]),
            (2, 2, [6, 40], 3, [2, 1], [1, 1], [1, 0, 1, 2]),
        ];
        for (i, &(batch, c, hw, k, s, d, pads)) in cases.iter().enumerate() {
            let geo = geometry(batch, c, hw, k, s, d, pads);
            let x = values(batch * c * hw[0] * hw[1], i as u64);
            let w = values(c * k * k, 100 + i as u64);
            let bias = values(c, 200 + i as u64);
            let want = reference(&geo, &x, &w, &bias);
            let filters = DepthwiseFilters { weights: &w, bias: &bias, low: f32::NEG_INFINITY, high: f32::INFINITY };
            let mut first = vec![0f32; want.len()];
            depthwise(&geo, filters, &x, &mut first, None).unwrap();
            for (j, (&got, &(value, size))) in first.iter().zip(&want).enumerate() {
                let tolerance = size * (k * k + 1) as f64 * f32::EPSILON as f64 + 1e-30;
                assert!((got as f64 - value).abs() <= tolerance, "case {i} output {j}: {got} against {value}");
            }
            for threads in [1, 2, 8] {
                let mut got = vec![f32::NAN; want.len()];
                depthwise(&geo, filters, &x, &mut got, Some((&pool(threads), 1))).unwrap();
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&first), "case {i}, {threads} threads");
            }
        }
    }

    /// The kernels this CPU runs for `geo`.
    fn kernels_here(geo: &ConvGeometry) -> Vec<Kernel> {
        [Kernel::Rows, Kernel::Chunks, Kernel::Portable].into_iter().filter(|k| k.runs(geo)).collect()
    }

    /// The rows kernel on every kernel size, row stride and dilation it takes, odd widths (a row of
    /// fewer than 8 outputs, of a partial last chunk, of several blocks of 32 columns), heights that
    /// are and are not multiples of its 4 rows, column strides and dilations apart from the rows',
    /// asymmetric padding, infinities and NaN in the input: the same bits as the chunk kernel,
    /// within float32 rounding of the f64 definition, and the same bits on 1, 2 and 8 threads.
    #[test]
    fn every_kernel_gives_the_same_sums() {
        let cases = [
            // (batch, channels, [h, w], k, strides, dilations, pads)
            (1, 3, [4, 9], 3, [1, 1], [1, 1], [1, 1, 1, 1]),
            (2, 3, [7, 12], 3, [1, 1], [1, 1], [1, 1, 1, 1]),
            (1, 2, [13, 70], 3, [1, 1], [1, 1], [1, 1, 1, 1]),
            (1, 2, [9, 33], 3, [1, 2], [1, 1], [1, 0, 1, 1]),
            (1, 3, [14, 14], 3, [1, 1], [2, 2], [2, 2, 2, 2]),
            (1, 2, [11, 26], 3, [1, 1], [2, 1], [2, 1, 2, 1]),
            (2, 3, [15, 29], 3, [2, 2], [1, 1], [1, 1, 1, 1]),
            (1, 2, [16, 20], 3, [2, 2], [1, 1], [0, 0, 1, 1]),
            (1, 2, [10, 41], 3, [2, 1], [1, 2], [1, 2, 1, 2]),
            (1, 3, [8, 9], 5, [1, 1], [1, 1], [2, 2, 2, 2]),
            (1, 2, [12, 37], 5, [1, 1], [2, 2], [4, 4, 4, 4]),
            (1, 3, [17, 19], 5, [2, 2], [1, 1], [2, 2, 2, 2]),
            (1, 2, [14, 22], 5, [2, 2], [1, 1], [1, 2, 2, 1]),
            (1, 2, [9, 58], 7, [1, 1], [1, 1], [3, 3, 3, 3]),
            (1, 2, [20, 23], 7, [1, 1], [2, 2], [6, 6, 6, 6]),
            (1, 2, [21, 30], 7, [2, 2], [1, 1], [3, 3, 3, 3]),
            (1, 2, [12, 24], 7, [1, 2], [1, 1], [3, 3, 3, 3]),
        ];
        for (i, &(batch, c, hw, k, s, d, pads)) in cases.iter().enumerate() {
            let geo = geometry(batch, c, hw, k, s, d, pads);
            assert!(takes(&geo), "case {i}");
            let mut x = values(batch * c * hw[0] * hw[1], 300 + i as u64);
            x[hw[1] + 2] = f32::INFINITY;
            let late = x.len() - hw[1] - 3;
            x[late] = f32::NAN;
            let w = values(c * k * k, 400 + i as u64);
            let bias = values(c, 500 + i as u64);
            let want = reference(&geo, &x, &w, &bias);
            let filters = DepthwiseFilters { weights: &w, bias: &bias, low: f32::NEG_INFINITY, high: f32::INFINITY };
            let bits =
                |v: &[f32]| v.iter().map(|f| if f.is_nan() { u32::MAX } else { f.to_bits() }).collect::<Vec<_>>();
            let kernels = kernels_here(&geo);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx512vl") && std::arch::is_x86_feature_detected!("fma") {
                assert!(kernels.contains(&Kernel::Rows), "case {i}");
            }
            let mut fused: Option<Vec<f32>> = None;
            for kernel in kernels {
                let mut got = vec![f32::NAN; want.len()];
                depthwise_by(kernel, &geo, filters, &x, &mut got, None).unwrap();
                for (j, (&got, &(value, size))) in got.iter().zip(&want).enumerate() {
                    if value.is_nan() {
                        assert!(got.is_nan(), "{kernel:?} case {i} output {j}: {got} against NaN");
                    } else if value.is_infinite() {
                        assert_eq!(got as f64, value, "{kernel:?} case {i} output {j}");
                    } else {
                        let tolerance = size * (k * k + 1) as f64 * f32::EPSILON as f64 + 1e-30;
                        assert!(
                            (got as f64 - value).abs() <= tolerance,
                            "{kernel:?} case {i} output {j}: {got} against {value}"
                        );
                    }
                }
                // The vector kernels sum by fused multiply-adds in the same order: the same bits.
                if kernel != Kernel::Portable {
                    match &fused {
                        Some(first) => assert_eq!(bits(&got), bits(first), "{kernel:?} case {i}"),
                        None => fused = Some(got.clone()),
                    }
                }
                for threads in [2, 8] {
                    let mut split = vec![f32::NAN; want.len()];
                    depthwise_by(kernel, &geo, filters, &x, &mut split, Some((&pool(threads), 1))).unwrap();
                    assert_eq!(bits(&split), bits(&got), "{kernel:?} case {i}, {threads} threads");
                }
            }
        }
    }

    /// The rows kernel's shapes: square 3x3, 5x5, 7x7 kernels, row stride 1 (dilation 1 or 2) or 2
    /// (dilation 1), at least 4 output rows and more than 8 columns; the chunk kernel the rest.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_rows_kernel_takes_its_shapes() {
        assert!(rows::takes(3, 3, 1, 1, [56, 56]));
        assert!(rows::takes(3, 3, 2, 1, [56, 56]));
        assert!(rows::takes(3, 3, 1, 2, [14, 14]));
        assert!(rows::takes(5, 5, 2, 1, [14, 14]));
        assert!(rows::takes(7, 7, 1, 1, [4, 9]));
        assert!(!rows::takes(3, 3, 1, 1, [7, 7]));
        assert!(!rows::takes(3, 3, 1, 1, [3, 20]));
        assert!(!rows::takes(3, 3, 2, 2, [14, 14]));
        assert!(!rows::takes(3, 3, 3, 1, [14, 14]));
        assert!(!rows::takes(4, 4, 1, 1, [14, 14]));
        assert!(!rows::takes(1, 3, 1, 1, [14, 14]));
        assert!(!rows::takes(9, 9, 1, 1, [14, 14]));
        assert!(rows::pays(28) && rows::pays(17) && !rows::pays(16) && !rows::pays(14));
    }

    /// The clamp bounds every output and keeps a NaN.
    #[test]
    fn the_clamp_bounds_the_outputs_and_keeps_nan() {
        let geo = geometry(1, 2, [6, 10], 3, [1, 1], [1, 1], [1, 1, 1, 1]);
        let mut x = values(2 * 60, 7).iter().map(|v| v * 10.0).collect::<Vec<_>>();
        x[13] = f32::NAN;
        let w = values(18, 8);
        let bias = [0.5, -0.5];
        let filters = DepthwiseFilters { weights: &w, bias: &bias, low: 0.0, high: 6.0 };
        let mut out = vec![0f32; 120];
        depthwise(&geo, filters, &x, &mut out, None).unwrap();
        // Input (1, 3) reaches outputs (0..3, 2..5) of channel 0.
        assert!(out[2].is_nan() && out[10 + 3].is_nan() && out[20 + 4].is_nan());
        assert!(out.iter().filter(|v| !v.is_nan()).all(|&v| (0.0..=6.0).contains(&v)));
        assert!(out.contains(&0.0) && out.contains(&6.0));
    }

    /// The path's choice: strides of the columns 1 and 2; a dilated kernel reading padding for most
    /// taps goes to the parts.
    #[test]
    fn takes_what_it_sums_mostly_inside() {
        assert!(takes(&geometry(1, 96, [112, 112], 3, [2, 2], [1, 1], [1, 1, 1, 1])));
        assert!(takes(&geometry(1, 960, [7, 7], 3, [1, 1], [1, 1], [1, 1, 1, 1])));
        assert!(takes(&geometry(1, 384, [14, 14], 3, [1, 1], [2, 2], [2, 2, 2, 2])));
        assert!(!takes(&geometry(1, 64, [10, 12], 3, [1, 1], [36, 36], [36, 36, 36, 36])));
        assert!(!takes(&geometry(1, 8, [20, 20], 3, [3, 3], [1, 1], [1, 1, 1, 1])));
    }

    /// Sizes that do not match are errors, not panics.
    #[test]
    fn mismatched_sizes_are_errors() {
        let geo = geometry(1, 2, [6, 10], 3, [1, 1], [1, 1], [1, 1, 1, 1]);
        let (w, bias) = (values(18, 1), values(2, 2));
        let filters = DepthwiseFilters { weights: &w, bias: &bias, low: f32::NEG_INFINITY, high: f32::INFINITY };
        let mut out = vec![0f32; 120];
        assert!(depthwise(&geo, filters, &values(119, 3), &mut out, None).is_err());
        let short = DepthwiseFilters { weights: &w[..17], ..filters };
        assert!(depthwise(&geo, short, &values(120, 3), &mut out, None).is_err());
    }
}
