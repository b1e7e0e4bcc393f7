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
//! The sums run over the taps in the order channel, kernel row, kernel column, starting from the
//! bias; with AVX2 and FMA each step is a fused multiply-add, on other machines a multiply then an
//! add. So values agree with the definition to float32 rounding of a sum of `C·KH·KW` products, not
//! bit for bit with tract's matrix product (which sums in its own order).

use std::sync::Arc;

use rayon::ThreadPool;

use super::conv_parts::{self, Part};
use super::depthwise::{self, DepthwiseFilters};
use super::spread::spread;

/// Output channels one block computes.
const CO_BLOCK: usize = 4;
/// Float32 lanes of one vector.
const LANES: usize = 8;
/// Output pixels of the widest tile.
const TILE_PIXELS: usize = 2 * LANES;

/// The concrete geometry of one 2-D convolution, `NCHW` input and output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConvGeometry {
    /// Images (`N`).
    pub batch: usize,
    /// Input channels.
    pub c_in: usize,
    /// Input height and width.
    pub h: usize,
    /// See `h`.
    pub w: usize,
    /// Output channels.
    pub c_out: usize,
    /// Kernel height and width.
    pub kh: usize,
    /// See `kh`.
    pub kw: usize,
    /// Strides, rows then columns (each at least 1).
    pub stride: [usize; 2],
    /// Dilations, rows then columns (each at least 1).
    pub dilation: [usize; 2],
    /// Zero rows before the first input row, zero columns before the first input column.
    pub pad_before: [usize; 2],
    /// Output height and width.
    pub oh: usize,
    /// See `oh`.
    pub ow: usize,
}

impl ConvGeometry {
    /// The sizes the kernel works with, or why they overflow.
    pub(super) fn sizes(&self) -> Result<Sizes, String> {
        let over = || format!("convolution sizes overflow: {self:?}");
        let mul = |a: usize, b: usize| a.checked_mul(b).ok_or_else(over);
        let add = |a: usize, b: usize| a.checked_add(b).ok_or_else(over);
        if self.stride.contains(&0) || self.dilation.contains(&0) || self.kh == 0 || self.kw == 0 {
            return Err(format!("convolution with a zero stride, dilation or kernel size: {self:?}"));
        }
        let [sh, sw] = self.stride;
        let rows = add(self.oh, mul(self.kh - 1, self.dilation[0])? / sh)?;
        let phased = add(self.ow, mul(self.kw - 1, self.dilation[1])? / sw)?;
        // Shifted planes when the phase planes' rows would be much longer than the output's: a
        // dilated kernel's columns, or short rows.
        let shifted = phased.saturating_mul(4) > self.ow.saturating_mul(5) && self.kw <= MAX_SHIFTED;
        let (row, per_channel) = if shifted { (self.ow, mul(sh, self.kw)?) } else { (phased, mul(sh, sw)?) };
        let plane = mul(rows, row)?;
        let planes = mul(self.c_in, per_channel)?;
        // A run of pixels read past the last plane's end stays inside: TILE_PIXELS more floats.
        let prepared = add(mul(planes, plane)?, TILE_PIXELS)?;
        // Pixels of one output channel the kernel computes, rows of `row`: whole tiles.
        let pixels = if self.oh == 0 || self.ow == 0 { 0 } else { (self.oh - 1) * row + self.ow };
        let wide = mul(pixels.div_ceil(TILE_PIXELS), TILE_PIXELS)?;
        let input = mul(mul(mul(self.batch, self.c_in)?, self.h)?, self.w)?;
        let output = mul(mul(mul(self.batch, self.c_out)?, self.oh)?, self.ow)?;
        mul(wide, self.c_out)?;
        let channel = mul(per_channel, plane)?;
        Ok(Sizes { input, output, prepared, row, plane, channel, shifted, pixels, wide })
    }
}

/// The widest kernel laid out in shifted planes (one plane per kernel column).
const MAX_SHIFTED: usize = 7;

/// Sizes derived from a [`ConvGeometry`] (floats).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizes {
    /// The input, all images.
    input: usize,
    /// The output, all images.
    output: usize,
    /// The prepared input of one image.
    pub(super) prepared: usize,
    /// Elements of a plane's row (`L`).
    row: usize,
    /// One plane.
    plane: usize,
    /// The planes of one input channel.
    channel: usize,
    /// The planes are shifted ones (see the module docs), not phase planes.
    shifted: bool,
    /// Output pixels of one channel, numbered `oy·L + ox`: up to the last one output.
    pub(super) pixels: usize,
    /// `pixels` rounded up to whole tiles: one output channel in the kernel's own layout.
    wide: usize,
}

/// The weights and bias of a convolution in the order the kernel reads them, and the clamp after.
#[derive(Debug, Clone)]
pub(crate) struct PackedConv {
    c_in: usize,
    c_out: usize,
    kh: usize,
    kw: usize,
    /// Groups of input and output channels (1 for an ordinary convolution): output channel `c` of
    /// group `c / (c_out / group)` reads the `c_in / group` input channels of the same group.
    group: usize,
    /// Each output channel reads its own input channel only (`c_in == c_out`, group `c_in`).
    depthwise: bool,
    /// Per group, `[c_out / group / 4 rounded up][c_in / group·kh·kw][4]`, zeros past the group's
    /// channels; depthwise, `[c_out][kh·kw]`.
    weights: Arc<Vec<f32>>,
    /// Per group, one per output channel, zeros past the group's channels (to a multiple of 4).
    bias: Arc<Vec<f32>>,
    /// The output is `min(max(sum, low), high)`, NaN kept.
    low: f32,
    high: f32,
}

/// Equal when every number is the same float (bit for bit).
impl PartialEq for PackedConv {
    fn eq(&self, other: &PackedConv) -> bool {
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        self.dims() == other.dims()
            && self.group == other.group
            && self.depthwise == other.depthwise
            && self.low.to_bits() == other.low.to_bits()
            && self.high.to_bits() == other.high.to_bits()
            && bits(&self.weights) == bits(&other.weights)
            && bits(&self.bias) == bits(&other.bias)
    }
}

impl Eq for PackedConv {}

impl PackedConv {
    /// Packs `weights` (`[c_out][c_in][kh][kw]`, standard order) and `bias` (one per output channel,
    /// or none), with outputs clamped to `[low, high]` (infinities for no clamp).
    #[cfg(test)]
    pub(crate) fn new(
        weights: &[f32],
        bias: Option<&[f32]>,
        dims: [usize; 4],
        low: f32,
        high: f32,
    ) -> Result<PackedConv, String> {
        PackedConv::grouped(weights, bias, dims, 1, low, high)
    }

    /// Packs the weights of a convolution of `group` groups: `weights` `[c_out][c_in / group][kh][kw]`
    /// (the standard order), `bias` one per output channel or none.
    pub(crate) fn grouped(
        weights: &[f32],
        bias: Option<&[f32]>,
        [c_out, c_in, kh, kw]: [usize; 4],
        group: usize,
        low: f32,
        high: f32,
    ) -> Result<PackedConv, String> {
        if group == 0 || !c_in.is_multiple_of(group) || !c_out.is_multiple_of(group) {
            return Err(format!("{group} groups of {c_in} input and {c_out} output channels"));
        }
        let (c_in_g, c_out_g) = (c_in / group, c_out / group);
        let k = c_in_g.checked_mul(kh).and_then(|v| v.checked_mul(kw)).ok_or("kernel size overflows")?;
        let blocks = c_out_g.div_ceil(CO_BLOCK);
        let packed_len =
            blocks.checked_mul(k).and_then(|v| v.checked_mul(CO_BLOCK * group)).ok_or("kernel size overflows")?;
        if Some(weights.len()) != c_out.checked_mul(k) {
            return Err(format!("{} weights for a {c_out}x{c_in_g}x{kh}x{kw} kernel", weights.len()));
        }
        if let Some(b) = bias {
            if b.len() != c_out {
                return Err(format!("{} biases for {c_out} output channels", b.len()));
            }
        }
        let mut packed = vec![0f32; packed_len];
        let mut padded_bias = vec![0f32; group * blocks * CO_BLOCK];
        for (co, filter) in weights.chunks_exact(k.max(1)).enumerate().take(c_out) {
            let (g, c) = (co / c_out_g, co % c_out_g);
            let (block, lane) = (g * blocks + c / CO_BLOCK, c % CO_BLOCK);
            for (tap, &v) in filter.iter().enumerate() {
                packed[(block * k + tap) * CO_BLOCK + lane] = v;
            }
            if let Some(b) = bias {
                padded_bias[block * CO_BLOCK + lane] = b[co];
            }
        }
        let (weights, bias) = (Arc::new(packed), Arc::new(padded_bias));
        Ok(PackedConv { c_in, c_out, kh, kw, group, depthwise: false, weights, bias, low, high })
    }

    /// A depthwise convolution's: `weights` `[channels][kh][kw]`, `bias` one per channel or none;
    /// output channel `c` convolves input channel `c` alone.
    pub(crate) fn depthwise(
        weights: &[f32],
        bias: Option<&[f32]>,
        [channels, kh, kw]: [usize; 3],
        low: f32,
        high: f32,
    ) -> Result<PackedConv, String> {
        let len = channels.checked_mul(kh).and_then(|v| v.checked_mul(kw)).ok_or("kernel size overflows")?;
        if weights.len() != len {
            return Err(format!("{} weights for a depthwise {channels}x{kh}x{kw} kernel", weights.len()));
        }
        let bias = match bias {
            Some(b) if b.len() != channels => return Err(format!("{} biases for {channels} channels", b.len())),
            Some(b) => b.to_vec(),
            None => vec![0.0; channels],
        };
        let (weights, bias) = (Arc::new(weights.to_vec()), Arc::new(bias));
        let group = channels.max(1);
        Ok(PackedConv { c_in: channels, c_out: channels, kh, kw, group, depthwise: true, weights, bias, low, high })
    }

    /// Input channels, output channels, kernel height and width.
    pub(crate) fn dims(&self) -> [usize; 4] {
        [self.c_in, self.c_out, self.kh, self.kw]
    }

    /// The groups the kernel builds run one after the other (a depthwise convolution is one run)
    /// and the input and output channels of each.
    fn runs(&self) -> (usize, usize, usize) {
        if self.depthwise {
            (1, self.c_in, self.c_out)
        } else {
            (self.group, self.c_in / self.group, self.c_out / self.group)
        }
    }

    /// Taps per output channel in the weights: `c_in / group·kh·kw` (depthwise, `kh·kw`).
    pub(crate) fn taps(&self) -> usize {
        let (_, c_in, _) = self.runs();
        let per_channel = if self.depthwise { 1 } else { c_in };
        per_channel * self.kh * self.kw
    }

    /// What the kernel builds read of run `g` (see [`PackedConv::runs`]).
    fn filters(&self, g: usize) -> Filters<'_> {
        let (low, high, depthwise, k) = (self.low, self.high, self.depthwise, self.taps());
        if self.depthwise {
            return Filters { weights: &self.weights, bias: &self.bias, low, high, depthwise, k };
        }
        let blocks = (self.c_out / self.group).div_ceil(CO_BLOCK);
        let weights = &self.weights[g * blocks * k * CO_BLOCK..][..blocks * k * CO_BLOCK];
        let bias = &self.bias[g * blocks * CO_BLOCK..][..blocks * CO_BLOCK];
        Filters { weights, bias, low, high, depthwise, k }
    }

    /// The bias of output channel `c`.
    fn bias_of(&self, c: usize) -> f32 {
        if self.depthwise {
            return self.bias[c];
        }
        let c_out = self.c_out / self.group;
        self.bias[(c / c_out) * c_out.div_ceil(CO_BLOCK) * CO_BLOCK + c % c_out]
    }
}

/// The weights of one run of output channels (a group, or all channels of a depthwise convolution)
/// as a kernel build reads them, and the clamp after.
#[derive(Debug, Clone, Copy)]
struct Filters<'a> {
    /// `[channels / 4 rounded up][k][4]`; depthwise, `[channels][k]`.
    weights: &'a [f32],
    /// One per output channel, to a multiple of 4 (depthwise, one per channel).
    bias: &'a [f32],
    low: f32,
    high: f32,
    depthwise: bool,
    /// Taps of one output channel in `weights`.
    k: usize,
}

impl Filters<'_> {
    /// Those of output channels `c0..c1` alone (`c0` a multiple of 4 unless depthwise).
    fn channels(self, c0: usize, c1: usize) -> Self {
        let (unit, per) = if self.depthwise { (1, self.k) } else { (CO_BLOCK, self.k * CO_BLOCK) };
        let (b0, b1) = (c0 / unit, c1.div_ceil(unit));
        Filters { weights: &self.weights[b0 * per..b1 * per], bias: &self.bias[b0 * unit..b1 * unit], ..self }
    }
}

/// Which of an output channel's weights each tap of a computation reads: every tap in order, or a
/// list (the taps of a part of the output, [`conv_parts`]).
trait TapMap: Copy {
    /// The weight index of tap `tap`.
    fn at(self, tap: usize) -> usize;
}

/// Tap `i` reads weight `i`.
#[derive(Debug, Clone, Copy)]
struct AllTaps;

impl TapMap for AllTaps {
    #[inline(always)]
    fn at(self, tap: usize) -> usize {
        tap
    }
}

/// Tap `i` reads weight `self.0[i]`.
#[derive(Debug, Clone, Copy)]
struct SomeTaps<'a>(&'a [usize]);

impl TapMap for SomeTaps<'_> {
    #[inline(always)]
    fn at(self, tap: usize) -> usize {
        self.0[tap]
    }
}

/// Asserts what the weight reads of every build rely on: each tap's weight index is below `k`.
fn assert_map(conv: &Filters<'_>, offsets: &[usize], map: Option<&[usize]>) {
    match map {
        None => assert!(offsets.len() <= conv.k, "more taps than weights"),
        Some(m) => assert!(m.len() == offsets.len() && m.iter().all(|&t| t < conv.k), "tap map out of range"),
    }
}

/// One computation of [`conv2d`]: a part of the output, its sizes, the offsets of its taps and, when
/// it reads some of the kernel's taps only, their weight indices.
struct Step {
    part: Part,
    sizes: Sizes,
    offsets: Vec<usize>,
    map: Option<Vec<usize>>,
}

impl Step {
    /// Writes the clamped bias of channels `channels` into its part of `out` (one image of `geo`).
    fn fill_bias(&self, geo: &ConvGeometry, conv: &PackedConv, channels: std::ops::Range<usize>, out: &mut [f32]) {
        let g = &self.part.geo;
        for c in channels {
            let value = clamp(conv.bias_of(c), conv.low, conv.high);
            (0..g.oh).for_each(|oy| out[self.row_at(geo, c, oy)..][..g.ow].fill(value));
        }
    }

    /// Writes `sums` (channels from `first`, each `sizes.wide` long in rows of `sizes.row` pixels)
    /// into its part of `out` (one image of `geo`), the first `ow` pixels of each row.
    fn place(&self, geo: &ConvGeometry, first: usize, sums: &[f32], out: &mut [f32]) {
        let (g, sizes) = (&self.part.geo, &self.sizes);
        for (c, wide) in (first..).zip(sums.chunks_exact(sizes.wide)) {
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
    let (runs, _, c_out) = conv.runs();
    let image_macs: usize = steps.iter().map(|s| runs * c_out * s.offsets.len() * s.sizes.pixels).sum();
    let macs = image_macs.saturating_mul(geo.batch);
    let threads = pool.map_or(1, |(p, least)| super::threads_for(Some(p), macs, least, geo.batch));
    // One thread over a split of one group: the parts channel chunk by channel chunk.
    let per_chunk = (threads == 1 && steps.len() > 1 && runs == 1 && !conv.depthwise).then(|| chunk_channels(conv));
    let wide_max = steps.iter().map(|s| s.sizes.wide).max().unwrap_or(0);
    let lens = match per_chunk {
        Some(chunk) => [steps.iter().map(|s| s.sizes.prepared).sum(), wide_max * chunk.min(geo.c_out)],
        None => [steps.iter().map(|s| s.sizes.prepared).max().unwrap_or(0), wide_max * geo.c_out],
    };
    crate::kernel::check_allocation(lens[0] as u64 + lens[1] as u64, 4).map_err(|e| e.to_string())?;
    if let Some(chunk) = per_chunk {
        with_scratch(lens, |buffers| convolve_chunked(geo, &steps, conv, input, output, buffers, chunk));
        return Ok(());
    }
    match pool {
        // Whole images per thread when there are at least as many as threads: each thread lays out
        // and sums its own images in its own scratch, so the layout and compaction run in parallel
        // too, with one hand-off per thread instead of one per image.
        Some((pool, _)) if threads > 1 && geo.batch >= pool.current_num_threads() => {
            let (image_in, image_out) = (geo.c_in * geo.h * geo.w, geo.c_out * geo.oh * geo.ow);
            let (mut input, mut output) = (input, output);
            let steps = &steps;
            spread(
                pool,
                (0..threads).map(|t| {
                    let count = geo.batch * (t + 1) / threads - geo.batch * t / threads;
                    let (mine_in, rest_in) = input.split_at(count * image_in);
                    let (mine_out, rest_out) = std::mem::take(&mut output).split_at_mut(count * image_out);
                    (input, output) = (rest_in, rest_out);
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

/// Runs `f` with this thread's scratch buffers (the prepared input, the output in the kernel's
/// layout) of at least `[prepared, wide]` floats, kept for the next convolution unless large; fresh
/// buffers if this thread's are in use (a convolution run from inside another on the same thread).
fn with_scratch(lens: [usize; 2], f: impl FnOnce((&mut [f32], &mut [f32]))) {
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
fn steps(geo: &ConvGeometry, conv: &PackedConv) -> Result<Vec<Step>, String> {
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
const SCRATCH_KEPT: usize = 1 << 22;

/// One build of the sums of a prepared image ([`kernel`] picks the fastest): the taps' offsets and,
/// when they are some of the kernel's taps, their weight indices.
type Kernel = fn(&ConvGeometry, &Sizes, Filters<'_>, &[usize], Option<&[usize]>, &[f32], &mut [f32]);

/// [`conv2d`] once the sizes are checked: `prepared` and `wide` hold at least what every step needs.
#[allow(clippy::too_many_arguments)]
fn convolve(
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
                step.fill_bias(geo, conv, 0..geo.c_out, out);
                continue;
            }
            let (part, sizes) = (&step.part, &step.sizes);
            let prepared = &mut prepared[..sizes.prepared];
            let wide = &mut wide[..sizes.wide * geo.c_out];
            prepare(&part.geo, sizes, image, [geo.h, geo.w], part.origin, prepared);
            sums(step, conv, prepared, wide, kernel, pool);
            // Rows of `L` pixels to rows of `OW`, at the part's place.
            step.place(geo, 0, wide, out);
        }
    }
}

/// Floats of weights one chunk of output channels of [`convolve_chunked`] reads (512 KB: half of a
/// core's level-2 cache on the machines measured).
const CHUNK_WEIGHTS: usize = 1 << 17;

/// Output channels of one chunk of [`convolve_chunked`]: a multiple of 16 whose weights are at most
/// [`CHUNK_WEIGHTS`] floats, at least 16.
fn chunk_channels(conv: &PackedConv) -> usize {
    (CHUNK_WEIGHTS / conv.taps().max(1) / 16).max(1) * 16
}

/// [`convolve`] for a split into parts of one group on one thread: every part's input laid out
/// first, then for each chunk of `chunk` output channels every part in turn, so that the chunk's
/// weights are read from memory once and from the cache by the other parts. Part after part over
/// all channels (`convolve`) reads the whole kernel once a part: a 3x3 convolution of 960 to 256
/// channels with dilation 12 on a 14x14 map (9 parts, 8.8 MB of weights) read about 80 MB a run
/// and took 3-5x onnxruntime's time. Each channel's sums are the same as `convolve`'s (the same
/// build over the same taps in the same order), so the values are the same bits.
///
/// `prepared` holds every part's prepared input one after the other, `wide` one part's sums for
/// `chunk` channels.
fn convolve_chunked(
    geo: &ConvGeometry,
    steps: &[Step],
    conv: &PackedConv,
    input: &[f32],
    output: &mut [f32],
    (prepared, wide): (&mut [f32], &mut [f32]),
    chunk: usize,
) {
    let image_in = geo.c_in * geo.h * geo.w;
    let image_out = geo.c_out * geo.oh * geo.ow;
    for n in 0..geo.batch {
        let image = &input[n * image_in..][..image_in];
        let out = &mut output[n * image_out..][..image_out];
        let mut at = 0;
        for step in steps.iter().filter(|s| !s.part.bias_only()) {
            let here = &mut prepared[at..][..step.sizes.prepared];
            prepare(&step.part.geo, &step.sizes, image, [geo.h, geo.w], step.part.origin, here);
            at += step.sizes.prepared;
        }
        for c0 in (0..geo.c_out).step_by(chunk) {
            let c1 = (c0 + chunk).min(geo.c_out);
            let mut at = 0;
            for step in steps {
                if step.part.bias_only() {
                    step.fill_bias(geo, conv, c0..c1, out);
                    continue;
                }
                let sizes = &step.sizes;
                let x = &prepared[at..][..sizes.prepared];
                at += sizes.prepared;
                let sums = &mut wide[..(c1 - c0) * sizes.wide];
                let run_geo = ConvGeometry { c_out: c1 - c0, ..step.part.geo };
                kernel(&run_geo, sizes, conv.filters(0).channels(c0, c1), &step.offsets, step.map.as_deref(), x, sums);
                step.place(geo, c0, sums, out);
            }
        }
    }
}

/// Multiply-adds one thread is given at least before a convolution is split over threads (about
/// 40 µs on one core of an AVX2 machine): whole images per thread for a batch of at least as many
/// images as threads, else blocks of output channels of each image.
const MACS_PER_THREAD: usize = 1 << 21;

/// The sums of one step's prepared image `x` into `wide` (`[c_out][wide]`), run after run (group
/// after group), over the threads of `pool` when the work is large enough: each thread takes a run of
/// consecutive blocks of 4 output channels (depthwise, of channels), which are consecutive rows of
/// `wide`.
///
/// `pool` is the pool and the fewest multiply-adds a thread is given ([`MACS_PER_THREAD`]).
fn sums(
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
    let threads = pool.map_or(1, |(p, least)| super::threads_for(Some(p), macs, least, units));
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

/// For each tap (channel, kernel row, kernel column) of the first `channels` input channels: where
/// pixel 0 reads it in the prepared input.
fn tap_offsets(geo: &ConvGeometry, sizes: &Sizes, channels: usize) -> Vec<usize> {
    let ([sh, sw], [dh, dw]) = (geo.stride, geo.dilation);
    let mut offsets = Vec::with_capacity(channels * geo.kh * geo.kw);
    for c in 0..channels {
        for ky in 0..geo.kh {
            for kx in 0..geo.kw {
                if sizes.shifted {
                    let plane = (c * sh + ky * dh % sh) * geo.kw + kx;
                    offsets.push(plane * sizes.plane + (ky * dh / sh) * sizes.row);
                } else {
                    let plane = (c * sh + ky * dh % sh) * sw + kx * dw % sw;
                    offsets.push(plane * sizes.plane + (ky * dh / sh) * sizes.row + kx * dw / sw);
                }
            }
        }
    }
    offsets
}

/// Lays one image out as the module docs say (zeros where the padding is): the window of `geo.h`
/// rows by `geo.w` columns from row `origin[0]`, column `origin[1]` of `image`, channels of `full[0]`
/// rows by `full[1]` columns.
fn prepare(
    geo: &ConvGeometry,
    sizes: &Sizes,
    image: &[f32],
    full: [usize; 2],
    origin: [usize; 2],
    prepared: &mut [f32],
) {
    let ([sh, sw], [pt, pl]) = (geo.stride, geo.pad_before);
    // One plane per input channel, row phase and column variant; element j of a plane row is read
    // from input columns `start + k·sw` for j = first + k in first..end, zero outside.
    let spans: Vec<(usize, usize, usize)> = if sizes.shifted {
        // Shifted planes, one per kernel column kx: output column ox reads input column
        // ox·sw + kx·dw - pl, inside for ox in first..end.
        let dw = geo.dilation[1];
        (0..geo.kw)
            .map(|kx| {
                let at = kx * dw;
                let first = pl.saturating_sub(at).div_ceil(sw).min(geo.ow);
                let end = if geo.w + pl > at { ((geo.w + pl - at - 1) / sw + 1).clamp(first, geo.ow) } else { first };
                (first, end, if first < end { first * sw + at - pl } else { 0 })
            })
            .collect()
    } else {
        // Phase planes, one per column phase b: element j is padded column b + j·sw, input column
        // b + j·sw - pl: inside the input for j in first..end, starting at input column `start`.
        (0..sw)
            .map(|b| {
                let first = pl.saturating_sub(b).div_ceil(sw).min(sizes.row);
                let end = (geo.w + pl).saturating_sub(b).div_ceil(sw).clamp(first, sizes.row);
                (first, end, (b + first * sw).saturating_sub(pl))
            })
            .collect()
    };
    let mut planes = prepared.chunks_exact_mut(sizes.plane);
    for channel in image.chunks_exact(full[0] * full[1]).take(geo.c_in) {
        for a in 0..sh {
            for &(first, end, start) in &spans {
                let Some(plane) = planes.next() else { return };
                for (i, out) in plane.chunks_exact_mut(sizes.row).enumerate() {
                    // Padded row a + i·sh, input row a + i·sh - pt.
                    let Some(y) = (a + i * sh).checked_sub(pt).filter(|&y| y < geo.h) else {
                        out.fill(0.0);
                        continue;
                    };
                    let src = &channel[(origin[0] + y) * full[1] + origin[1]..][..geo.w];
                    out[..first].fill(0.0);
                    out[end..].fill(0.0);
                    let inside = &mut out[first..end];
                    if inside.is_empty() {
                        continue;
                    }
                    match sw {
                        1 => inside.copy_from_slice(&src[start..][..inside.len()]),
                        2 => {
                            // The source cut to the elements read, so the loop has no bounds
                            // checks and vectorizes (a stride-2 depthwise convolution's layout
                            // was most of its time with them).
                            let n = inside.len();
                            let src = &src[start..start + 2 * n - 1];
                            for (j, o) in inside.iter_mut().enumerate() {
                                *o = src[2 * j];
                            }
                        }
                        _ => inside.iter_mut().zip(src[start..].iter().step_by(sw)).for_each(|(o, &v)| *o = v),
                    }
                }
            }
        }
    }
}

/// One image on any machine: the same sums as the vector build, a multiply then an add per tap.
fn portable_image(
    geo: &ConvGeometry,
    sizes: &Sizes,
    conv: Filters<'_>,
    offsets: &[usize],
    map: Option<&[usize]>,
    x: &[f32],
    wide: &mut [f32],
) {
    assert_map(&conv, offsets, map);
    let k = conv.k;
    let weight = |tap: usize| map.map_or(tap, |m| m[tap]);
    if conv.depthwise {
        // Channel c's taps: channel 0's, one channel's planes further per channel.
        let step = sizes.channel;
        for (c, channel) in wide.chunks_exact_mut(sizes.wide).enumerate().take(geo.c_out) {
            let w = &conv.weights[c * k..][..k];
            for (q, o) in channel[..sizes.pixels].iter_mut().enumerate() {
                let mut sum = conv.bias[c];
                for (tap, &offset) in offsets.iter().enumerate() {
                    sum += w[weight(tap)] * x[c * step + offset + q];
                }
                *o = clamp(sum, conv.low, conv.high);
            }
        }
        return;
    }
    for (co, channel) in wide.chunks_exact_mut(sizes.wide).enumerate().take(geo.c_out) {
        let (block, lane) = (co / CO_BLOCK, co % CO_BLOCK);
        let w = &conv.weights[block * k * CO_BLOCK..][..k * CO_BLOCK];
        for (q, o) in channel[..sizes.pixels].iter_mut().enumerate() {
            let mut sum = conv.bias[co];
            for (tap, &offset) in offsets.iter().enumerate() {
                sum += w[weight(tap) * CO_BLOCK + lane] * x[offset + q];
            }
            *o = clamp(sum, conv.low, conv.high);
        }
    }
}

/// `min(max(v, low), high)`, a NaN kept.
#[inline(always)]
pub(super) fn clamp(v: f32, low: f32, high: f32) -> f32 {
    if v < low {
        low
    } else if v > high {
        high
    } else {
        v
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{AllTaps, ConvGeometry, Filters, Sizes, SomeTaps, TapMap, CO_BLOCK, LANES, TILE_PIXELS};
    use std::arch::x86_64::*;

    /// The sums of `NB` blocks of 4 output channels over `V` vectors of 8 pixels.
    type Sums<const NB: usize, const V: usize> = [[[__m256; V]; CO_BLOCK]; NB];

    /// One image, on AVX2 and FMA: tiles of 4 channels by 16 pixels (8 sums, which leaves AVX2's 16
    /// registers enough for the loads); depthwise, tiles of one channel by 32 pixels.
    ///
    /// Safety: callers make sure the CPU has AVX2 and FMA; `x` is the prepared input of `sizes` and
    /// `wide` the output in the kernel's layout, the sizes [`super::conv2d`] checked.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn image(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: Filters<'_>,
        offsets: &[usize],
        map: Option<&[usize]>,
        x: &[f32],
        wide: &mut [f32],
    ) {
        super::assert_map(&conv, offsets, map);
        // Safety: as this function's; the map is in range (asserted above).
        unsafe {
            match map {
                None => tiled::<1, 4, _>(geo, sizes, conv, offsets, AllTaps, x, wide, 0),
                Some(m) => tiled::<1, 4, _>(geo, sizes, conv, offsets, SomeTaps(m), x, wide, 0),
            }
        }
    }

    /// One image, on AVX-512 machines: tiles of 16 channels by 16 pixels in 512-bit vectors (16
    /// sums, each step one load of pixels and 16 of weights for 16 multiply-adds, twice the
    /// arithmetic of a step of 256-bit ones) while 16 whole channels are left; the channels left
    /// with the same 256-bit sums as [`image`] but 32 vector registers, so tiles of 8 channels by 16
    /// pixels (16 sums); depthwise, tiles of one channel by 64 pixels.
    ///
    /// Safety: callers make sure the CPU has AVX2, FMA, AVX512F and AVX512VL; the rest as [`image`].
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    pub(super) unsafe fn image_avx512(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: Filters<'_>,
        offsets: &[usize],
        map: Option<&[usize]>,
        x: &[f32],
        wide: &mut [f32],
    ) {
        super::assert_map(&conv, offsets, map);
        // Safety: as this function's; the map is in range (asserted above).
        unsafe {
            match map {
                None => image_avx512_mapped(geo, sizes, conv, offsets, AllTaps, x, wide),
                Some(m) => image_avx512_mapped(geo, sizes, conv, offsets, SomeTaps(m), x, wide),
            }
        }
    }

    /// [`image_avx512`] with tap `i` reading weight `map.at(i)`.
    ///
    /// Safety: as [`image_avx512`]; every `map.at(i)` for `i < offsets.len()` is below `conv.k`.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    unsafe fn image_avx512_mapped<M: TapMap>(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: Filters<'_>,
        offsets: &[usize],
        map: M,
        x: &[f32],
        wide: &mut [f32],
    ) {
        let mut first = 0;
        if !conv.depthwise && geo.c_out >= 16 {
            // Safety: as this function's.
            first = unsafe { super::avx512::groups_of_16(geo, sizes, conv, offsets, map, x, wide) };
        }
        // Safety: as this function's; blocks from `first` on are left.
        unsafe { tiled::<2, 8, M>(geo, sizes, conv, offsets, map, x, wide, first) }
    }

    /// One image in tiles of `NB` blocks of 4 channels from block `first` on, or, depthwise (all
    /// channels), of `DV` vectors of pixels.
    ///
    /// Safety: as [`image`]; every `map.at(i)` for `i < offsets.len()` is below `conv.k`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tiled<const NB: usize, const DV: usize, M: TapMap>(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: Filters<'_>,
        offsets: &[usize],
        map: M,
        x: &[f32],
        wide: &mut [f32],
        first: usize,
    ) {
        // Safety: as this function's.
        unsafe {
            if conv.depthwise {
                depthwise_tiled::<DV, M>(geo, sizes, conv, offsets, map, x, wide)
            } else {
                image_tiled::<NB, M>(geo, sizes, conv, offsets, map, x, wide, first)
            }
        }
    }

    /// The loops of [`image`], over pairs of blocks of 4 channels from block `first` on: tiles of
    /// 16 pixels by both blocks at once when `NB` is 2, one block at a time otherwise; the last 8
    /// pixels or fewer in a tile of both blocks by 8 pixels.
    ///
    /// Safety: as [`image`]; every `map.at(i)` for `i < offsets.len()` is below `conv.k`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn image_tiled<const NB: usize, M: TapMap>(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: Filters<'_>,
        offsets: &[usize],
        map: M,
        x: &[f32],
        wide: &mut [f32],
        first: usize,
    ) {
        let k = conv.k;
        super::assert_tiles_inside(geo, sizes, offsets, x, wide);
        let blocks = geo.c_out.div_ceil(CO_BLOCK);
        assert!(conv.weights.len() == blocks * k * CO_BLOCK && conv.bias.len() == blocks * CO_BLOCK);
        let weights = |b: usize| &conv.weights[b * k * CO_BLOCK..][..k * CO_BLOCK];
        let bias = |b: usize| &conv.bias[b * CO_BLOCK..][..CO_BLOCK];
        let mut b = first;
        while b < blocks {
            let pair = (blocks - b).min(2);
            let c0 = b * CO_BLOCK;
            let out = &mut wide[c0 * sizes.wide..(c0 + (pair * CO_BLOCK).min(geo.c_out - c0)) * sizes.wide];
            let mut q = 0;
            // Safety (every tile below): it starts at pixel `q < pixels`, which the assertions
            // above cover, with blocks `b.. < blocks`.
            while q < sizes.pixels {
                if sizes.pixels - q > LANES {
                    if pair == NB {
                        let ws = std::array::from_fn(|i| weights(b + i));
                        // Safety: the tile starts at pixel `q < pixels` (see above).
                        let sums =
                            unsafe { tile::<NB, 2, M>(x, q, offsets, map, ws, std::array::from_fn(|i| bias(b + i))) };
                        store(&sums, conv, out, sizes.wide, q);
                    } else {
                        for i in 0..pair {
                            // Safety: the tile starts at pixel `q < pixels` (see above).
                            let sums = unsafe { tile::<1, 2, M>(x, q, offsets, map, [weights(b + i)], [bias(b + i)]) };
                            store(&sums, conv, &mut out[i * CO_BLOCK * sizes.wide..], sizes.wide, q);
                        }
                    }
                } else if pair == 2 {
                    let ws = [weights(b), weights(b + 1)];
                    // Safety: the tile starts at pixel `q < pixels` (see above).
                    let sums = unsafe { tile::<2, 1, M>(x, q, offsets, map, ws, [bias(b), bias(b + 1)]) };
                    store(&sums, conv, out, sizes.wide, q);
                } else {
                    // Safety: the tile starts at pixel `q < pixels` (see above).
                    let sums = unsafe { tile::<1, 1, M>(x, q, offsets, map, [weights(b)], [bias(b)]) };
                    store(&sums, conv, out, sizes.wide, q);
                }
                q += TILE_PIXELS;
            }
            b += pair;
        }
    }

    /// The loops of a depthwise [`image`]: for each channel, tiles of `V` (at most 8) vectors of
    /// pixels, then one tile of the vectors left.
    ///
    /// Safety: as [`image`]; every `map.at(i)` for `i < offsets.len()` is below `conv.k`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn depthwise_tiled<const V: usize, M: TapMap>(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: Filters<'_>,
        offsets: &[usize],
        map: M,
        x: &[f32],
        wide: &mut [f32],
    ) {
        const { assert!(V <= 8) };
        let k = conv.k;
        let step = sizes.channel;
        // A vector starting at pixel q < pixels of channel c reads `c·step + offset + q .. + 8`:
        // the farthest float is inside `x` (the prepared input has 16 floats past its last plane).
        let farthest = (geo.c_out - 1) * step + offsets.iter().max().copied().unwrap_or(0) + sizes.pixels - 1 + LANES;
        assert!(farthest <= x.len(), "prepared input too short for its taps");
        assert!(conv.weights.len() == geo.c_out * k && conv.bias.len() == geo.c_out);
        assert!(wide.len() == geo.c_out * sizes.wide && sizes.wide.is_multiple_of(LANES));
        for (c, out) in wide.chunks_exact_mut(sizes.wide).enumerate() {
            let w = &conv.weights[c * k..][..k];
            let channel = &x[c * step..];
            let mut q = 0;
            // Safety (every tile below): it starts at pixel `q < pixels` of channel `c < c_out`,
            // which the assertions above cover, and spans whole vectors up to `pixels` rounded up
            // to 8, which `wide` holds.
            while q + V * LANES <= sizes.pixels.next_multiple_of(LANES) {
                // Safety: the tile starts at pixel `q < pixels` (see above).
                let sums = unsafe { depthwise_tile::<V, M>(channel, q, offsets, map, w, conv.bias[c]) };
                store_row(&sums, conv, &mut out[q..]);
                q += V * LANES;
            }
            if q < sizes.pixels {
                // The rest in one tile of as many vectors: one vector at a time would wait on the
                // latency of each multiply-add.
                let (bias, out) = (conv.bias[c], &mut out[q..]);
                macro_rules! rest {
                    ($($n:literal)*) => {
                        match (sizes.pixels - q).div_ceil(LANES) {
                            // Safety: the tile starts at pixel `q < pixels` (see above).
                            $($n => store_row(&unsafe { depthwise_tile::<$n, M>(channel, q, offsets, map, w, bias) }, conv, out),)*
                            _ => unreachable!("fewer than {V} vectors are left"),
                        }
                    };
                }
                rest!(1 2 3 4 5 6 7);
            }
        }
    }

    /// The sums of one channel (tap weights `w`, bias `bias`) over `V` vectors of pixels starting at
    /// `start`, over every tap.
    ///
    /// Safety: `depthwise_tiled` asserted what the loads need.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn depthwise_tile<const V: usize, M: TapMap>(
        x: &[f32],
        start: usize,
        offsets: &[usize],
        map: M,
        w: &[f32],
        bias: f32,
    ) -> [__m256; V] {
        // Safety: every load reads `start + offset + 8·v .. + 8` with `v < V`, which
        // `depthwise_tiled` asserted is inside `x`; `w` holds one weight per tap.
        unsafe {
            let mut acc = [_mm256_set1_ps(bias); V];
            let xp = x.as_ptr().add(start);
            for (tap, &offset) in offsets.iter().enumerate() {
                let weight = _mm256_set1_ps(w[map.at(tap)]);
                let p = xp.add(offset);
                for (i, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps(weight, _mm256_loadu_ps(p.add(i * LANES)), *a);
                }
            }
            acc
        }
    }

    /// The sums of `NB` blocks of 4 output channels (weights `w`, biases `bias`) over `V` vectors of
    /// pixels starting at `start`, over every tap.
    ///
    /// Safety: `image_tiled` asserted what the loads need (see inside).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile<const NB: usize, const V: usize, M: TapMap>(
        x: &[f32],
        start: usize,
        offsets: &[usize],
        map: M,
        w: [&[f32]; NB],
        bias: [&[f32]; NB],
    ) -> Sums<NB, V> {
        // Safety: every load reads `start + offset + 8·v .. + 8` with `v < V ≤ 2`, `offset` a tap
        // offset, `start` a pixel below `pixels`: `image_tiled` asserted that the farthest such
        // float is inside `x`. The weights read are `w[i][4·tap .. 4·tap + 4]` for
        // `tap < offsets.len()`, `map.at(tap) < k` (the caller's promise), which each `w[i]` holds.
        unsafe {
            let mut acc: Sums<NB, V> = [[[_mm256_setzero_ps(); V]; CO_BLOCK]; NB];
            for (block, b) in acc.iter_mut().zip(bias) {
                for (a, &value) in block.iter_mut().zip(b) {
                    *a = [_mm256_set1_ps(value); V];
                }
            }
            let xp = x.as_ptr().add(start);
            let wp: [*const f32; NB] = std::array::from_fn(|i| w[i].as_ptr());
            for (tap, &offset) in offsets.iter().enumerate() {
                let p = xp.add(offset);
                let at = map.at(tap) * CO_BLOCK;
                let mut v = [_mm256_setzero_ps(); V];
                for (i, vi) in v.iter_mut().enumerate() {
                    *vi = _mm256_loadu_ps(p.add(i * LANES));
                }
                for (block, &wb) in acc.iter_mut().zip(&wp) {
                    for (c, a) in block.iter_mut().enumerate() {
                        let weight = _mm256_broadcast_ss(&*wb.add(at + c));
                        for i in 0..V {
                            a[i] = _mm256_fmadd_ps(weight, v[i], a[i]);
                        }
                    }
                }
            }
            acc
        }
    }

    /// Writes the sums of each output channel `out` holds (`stride` floats each), clamped, at pixel
    /// `q`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn store<const NB: usize, const V: usize>(
        sums: &Sums<NB, V>,
        conv: Filters<'_>,
        out: &mut [f32],
        stride: usize,
        q: usize,
    ) {
        for (channel, row) in out.chunks_exact_mut(stride).zip(sums.iter().flatten()) {
            store_row(row, conv, &mut channel[q..]);
        }
    }

    /// Writes `sums`, clamped, at the start of `out`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn store_row(sums: &[__m256], conv: Filters<'_>, out: &mut [f32]) {
        let (low, high) = (_mm256_set1_ps(conv.low), _mm256_set1_ps(conv.high));
        for (chunk, &sum) in out[..sums.len() * LANES].chunks_exact_mut(LANES).zip(sums) {
            // `max(low, v)` and `min(high, v)` return `v` when it is NaN.
            let v = _mm256_min_ps(high, _mm256_max_ps(low, sum));
            // Safety: `chunk` holds 8 floats.
            unsafe { _mm256_storeu_ps(chunk.as_mut_ptr(), v) };
        }
    }
}
/// The 512-bit tiles of [`avx2::image_avx512`].
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{ConvGeometry, Filters, Sizes, TapMap, CO_BLOCK, TILE_PIXELS};
    use std::arch::x86_64::*;

    /// Output channels of one tile: four blocks.
    const GROUP: usize = 4 * CO_BLOCK;

    /// The sums of every group of 16 output channels that are all inside `c_out`, in tiles of 16
    /// channels by 16 pixels; returns the first block of 4 channels left to the caller.
    ///
    /// Safety: the CPU has AVX512F; `x` is the prepared input of `sizes` and `wide` the output in
    /// the kernel's layout, the sizes [`super::conv2d`] checked; the convolution is not depthwise.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    #[inline(never)]
    pub(super) unsafe fn groups_of_16<M: TapMap>(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: Filters<'_>,
        offsets: &[usize],
        map: M,
        x: &[f32],
        wide: &mut [f32],
    ) -> usize {
        let k = conv.k;
        super::assert_tiles_inside(geo, sizes, offsets, x, wide);
        let groups = geo.c_out / GROUP;
        assert!(conv.weights.len() >= groups * GROUP * k && conv.bias.len() >= groups * GROUP);
        for g in 0..groups {
            let weights: [&[f32]; 4] =
                std::array::from_fn(|i| &conv.weights[(g * 4 + i) * k * CO_BLOCK..][..k * CO_BLOCK]);
            let bias = &conv.bias[g * GROUP..][..GROUP];
            let out = &mut wide[g * GROUP * sizes.wide..][..GROUP * sizes.wide];
            let (low, high) = (_mm512_set1_ps(conv.low), _mm512_set1_ps(conv.high));
            for q in (0..sizes.pixels).step_by(TILE_PIXELS) {
                // Safety: the tile starts at pixel `q < pixels`, which the assertions above cover.
                let sums = unsafe { tile(x, q, offsets, map, weights, bias) };
                for (channel, sum) in out.chunks_exact_mut(sizes.wide).zip(sums) {
                    // `max(low, v)` and `min(high, v)` return `v` when it is NaN.
                    let v = _mm512_min_ps(high, _mm512_max_ps(low, sum));
                    // Safety: `q + 16 <= wide`, a multiple of 16 above `pixels`: inside `channel`.
                    unsafe { _mm512_storeu_ps(channel[q..q + TILE_PIXELS].as_mut_ptr(), v) };
                }
            }
        }
        groups * 4
    }

    /// The sums of 16 output channels (the four blocks of `w`) over the 16 pixels from `start`, from
    /// their biases, one 512-bit vector a channel.
    ///
    /// Safety: as [`groups_of_16`]; every load reads `start + offset .. + 16` with `offset` a tap
    /// offset and `start` a pixel below `pixels`, inside `x`; the weights read are `w[i][4·tap ..
    /// 4·tap + 4]` for `tap = map.at(i) < k`, which each `w[i]` holds.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    #[inline]
    unsafe fn tile<M: TapMap>(
        x: &[f32],
        start: usize,
        offsets: &[usize],
        map: M,
        w: [&[f32]; 4],
        bias: &[f32],
    ) -> [__m512; GROUP] {
        let mut acc: [__m512; GROUP] = std::array::from_fn(|c| _mm512_set1_ps(bias[c]));
        // Safety: as this function's.
        unsafe {
            let xp = x.as_ptr().add(start);
            let wp: [*const f32; 4] = std::array::from_fn(|i| w[i].as_ptr());
            for (tap, &offset) in offsets.iter().enumerate() {
                let v = _mm512_loadu_ps(xp.add(offset));
                let at = map.at(tap) * CO_BLOCK;
                for (c, a) in acc.iter_mut().enumerate() {
                    let weight = _mm512_set1_ps(*wp[c / CO_BLOCK].add(at + c % CO_BLOCK));
                    *a = _mm512_fmadd_ps(weight, v, *a);
                }
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values in [-2, 2) from a seed, deterministic.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
            })
            .collect()
    }

    /// The definition, in f64: each output the bias plus every tap inside the input, then clamped;
    /// and the sum of the terms' magnitudes (for the tolerance). `group` groups of channels.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        geo: &ConvGeometry,
        group: usize,
        w: &[f32],
        bias: &[f32],
        x: &[f32],
        low: f32,
        high: f32,
    ) -> Vec<(f64, f64)> {
        let (c_per_out, co_per_group) = (geo.c_in / group, geo.c_out / group);
        let mut out = Vec::new();
        for n in 0..geo.batch {
            for co in 0..geo.c_out {
                for oy in 0..geo.oh {
                    for ox in 0..geo.ow {
                        let (mut sum, mut size) = (bias[co] as f64, (bias[co] as f64).abs());
                        for ci in 0..c_per_out {
                            let c = (co / co_per_group) * c_per_out + ci;
                            for ky in 0..geo.kh {
                                for kx in 0..geo.kw {
                                    let y =
                                        (oy * geo.stride[0] + ky * geo.dilation[0]) as i64 - geo.pad_before[0] as i64;
                                    let xx =
                                        (ox * geo.stride[1] + kx * geo.dilation[1]) as i64 - geo.pad_before[1] as i64;
                                    if y < 0 || xx < 0 || y >= geo.h as i64 || xx >= geo.w as i64 {
                                        continue;
                                    }
                                    let v = x[((n * geo.c_in + c) * geo.h + y as usize) * geo.w + xx as usize] as f64;
                                    let k = w[((co * c_per_out + ci) * geo.kh + ky) * geo.kw + kx] as f64;
                                    sum += v * k;
                                    size += (v * k).abs();
                                }
                            }
                        }
                        out.push((sum.max(low as f64).min(high as f64), size));
                    }
                }
            }
        }
        out
    }

    /// The geometry of an `h x w` image, output size from the padding after (the ONNX rule).
    #[allow(clippy::too_many_arguments)]
    fn geometry(
        batch: usize,
        [c_in, c_out]: [usize; 2],
        [h, w]: [usize; 2],
        [kh, kw]: [usize; 2],
        stride: [usize; 2],
        dilation: [usize; 2],
        pad_before: [usize; 2],
        pad_after: [usize; 2],
    ) -> Option<ConvGeometry> {
        let out = |i: usize, size: usize, k: usize| {
            let span = (k - 1) * dilation[i] + 1;
            (size + pad_before[i] + pad_after[i]).checked_sub(span).map(|v| v / stride[i] + 1)
        };
        let (oh, ow) = (out(0, h, kh)?, out(1, w, kw)?);
        Some(ConvGeometry { batch, c_in, h, w, c_out, kh, kw, stride, dilation, pad_before, oh, ow })
    }

    /// A pool of `threads` threads (1, 2 or 8), made once.
    fn test_pool(threads: usize) -> &'static ThreadPool {
        static POOLS: std::sync::OnceLock<Vec<ThreadPool>> = std::sync::OnceLock::new();
        let pools = POOLS.get_or_init(|| {
            [1, 2, 8].iter().map(|&n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap()).collect()
        });
        &pools[[1, 2, 8].iter().position(|&n| n == threads).unwrap()]
    }

    /// Every build the machine runs.
    fn builds() -> Vec<(&'static str, Kernel)> {
        let mut all: Vec<(&'static str, Kernel)> = vec![("portable", portable_image)];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                // Safety: the CPU has AVX2 and FMA, checked just above.
                all.push(("avx2", |g, s, c, o, m, x, w| unsafe { avx2::image(g, s, c, o, m, x, w) }));
            }
            if has!("avx2") && has!("fma") && has!("avx512f") && has!("avx512vl") {
                // Safety: the CPU has AVX2, FMA, AVX512F and AVX512VL, checked just above.
                all.push(("avx512", |g, s, c, o, m, x, w| unsafe { avx2::image_avx512(g, s, c, o, m, x, w) }));
            }
        }
        all
    }

    /// Within the float32 error bound of a sum of `k` products and a bias, rounded once more:
    /// `(k + 1)·ε` times the sum of the terms' magnitudes.
    fn close(got: f32, (want, size): (f64, f64), k: usize) -> bool {
        (got as f64 - want).abs() <= (k as f64 + 1.0) * f32::EPSILON as f64 * size
    }

    /// Checks every build and [`conv2d`] against the definition; `group` 0 for depthwise.
    fn check(geo: &ConvGeometry, group: usize, low: f32, high: f32, seed: u64) {
        let depthwise = group == 0;
        let group = if depthwise { geo.c_in } else { group };
        let k = geo.c_in / group * geo.kh * geo.kw;
        let (w, bias) = (values(geo.c_out * k, seed), values(geo.c_out, seed + 1));
        let x = values(geo.batch * geo.c_in * geo.h * geo.w, seed + 2);
        let packed = if depthwise {
            PackedConv::depthwise(&w, Some(&bias), [geo.c_out, geo.kh, geo.kw], low, high).unwrap()
        } else {
            PackedConv::grouped(&w, Some(&bias), [geo.c_out, geo.c_in, geo.kh, geo.kw], group, low, high).unwrap()
        };
        let expected = reference(geo, group, &w, &bias, &x, low, high);
        let steps = steps(geo, &packed).unwrap();
        let prepared_len = steps.iter().map(|s| s.sizes.prepared).max().unwrap();
        let wide_len = steps.iter().map(|s| s.sizes.wide).max().unwrap() * geo.c_out;
        let outputs = geo.batch * geo.c_out * geo.oh * geo.ow;
        for (name, build) in builds() {
            // Scratch full of NaN: nothing the output depends on may be left unwritten.
            let mut prepared = vec![f32::NAN; prepared_len];
            let mut wide = vec![f32::NAN; wide_len];
            let mut out = vec![f32::NAN; outputs];
            convolve(geo, &steps, &packed, &x, &mut out, (&mut prepared, &mut wide), build, None);
            for (i, (&got, &want)) in out.iter().zip(&expected).enumerate() {
                assert!(close(got, want, k), "{name} {geo:?} group {group} output {i}: {got} vs {want:?}");
            }
        }
        // Threads: every unit of work its own job where there are enough (one multiply-add a
        // thread): whole images per thread when the batch has as many as the pool has threads, else
        // blocks of output channels; the same bits as on one thread, which follows the definition.
        let mut one = vec![f32::NAN; outputs];
        conv2d(geo, &packed, &x, &mut one, None).unwrap();
        for (i, (&got, &want)) in one.iter().zip(&expected).enumerate() {
            assert!(close(got, want, k), "one thread {geo:?} group {group} output {i}: {got} vs {want:?}");
        }
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for threads in [1, 2, 8] {
            let mut out = vec![f32::NAN; outputs];
            conv2d_split(geo, &packed, &x, &mut out, Some((test_pool(threads), 1))).unwrap();
            assert!(bits(&out) == bits(&one), "{threads} threads {geo:?} group {group}");
        }
    }

    #[test]
    fn every_build_follows_the_definition() {
        let mut seed = 0;
        let mut cases = 0;
        for (c_in, c_out) in [(1, 1), (3, 8), (2, 5), (5, 9), (4, 16), (3, 17), (6, 13), (11, 11), (2, 36)] {
            for (h, w) in [(1, 1), (5, 7), (9, 24), (12, 3), (16, 31), (7, 40)] {
                for kernel in [[1, 3], [3, 3], [2, 5], [3, 1]] {
                    for stride in [[1, 1], [2, 2], [1, 2], [2, 1], [3, 2]] {
                        for (dilation, pads) in
                            [([1, 1], [[0, 0], [0, 0]]), ([1, 1], [[1, 1], [1, 1]]), ([2, 1], [[2, 0], [0, 1]])]
                        {
                            seed += 3;
                            let Some(geo) = geometry(
                                1 + seed as usize % 2,
                                [c_in, c_out],
                                [h, w],
                                kernel,
                                stride,
                                dilation,
                                pads[0],
                                pads[1],
                            ) else {
                                continue;
                            };
                            let (low, high) =
                                [(f32::NEG_INFINITY, f32::INFINITY), (0.0, f32::INFINITY), (0.0, 6.0), (-1.0, 0.5)]
                                    [seed as usize % 4];
                            check(&geo, 1, low, high, seed);
                            cases += 1;
                            // Depthwise: one output channel per input channel.
                            check(&ConvGeometry { c_out: c_in, ..geo }, 0, low, high, seed);
                        }
                    }
                }
            }
        }
        assert!(cases > 1500, "{cases} cases");
    }

    #[test]
    fn dilated_and_grouped_convolutions_follow_the_definition() {
        let (mut seed, mut cases, mut split, mut bias_only) = (7, 0, 0, 0);
        // (input channels, output channels, groups; 0 for depthwise)
        for (c_in, c_out, group) in [(3, 8, 1), (8, 20, 4), (6, 6, 0), (12, 36, 3), (16, 32, 2), (4, 4, 4)] {
            for (h, w) in [(10, 12), (5, 7), (3, 3), (9, 20)] {
                for k in [1, 3, 5] {
                    for d in [1, 2, 6, 12] {
                        for s in [1, 2] {
                            seed += 5;
                            // Padding as wide as the kernel's reach (same size output), or beyond it.
                            let pad = (k - 1) / 2 * d + (seed as usize).is_multiple_of(3) as usize;
                            let Some(geo) = geometry(
                                1 + seed as usize % 2,
                                [c_in, c_out],
                                [h, w],
                                [k, k],
                                [s, s],
                                [d, d],
                                [pad, pad],
                                [pad, pad + 1],
                            ) else {
                                continue;
                            };
                            let (low, high) = [(f32::NEG_INFINITY, f32::INFINITY), (0.0, 6.0)][seed as usize % 2];
                            check(&geo, group, low, high, seed);
                            let group_of = if group == 0 { c_in } else { group };
                            let packed = PackedConv::grouped(
                                &values(c_out * c_in / group_of * k * k, 1),
                                None,
                                [c_out, c_in, k, k],
                                group_of,
                                low,
                                high,
                            )
                            .unwrap();
                            let parts = steps(&geo, &packed).unwrap();
                            split += (parts.len() > 1 || parts[0].map.is_some()) as usize;
                            bias_only += parts.iter().any(|p| p.part.bias_only()) as usize;
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert!(cases > 400 && split > 100 && bias_only > 20, "{cases} cases, {split} split, {bias_only} bias only");
    }

    /// A split over parts with deep taps runs channel chunk by channel chunk on one thread (16 of
    /// the 40 channels at a time here): the definition's values, and the bits of the threaded path
    /// (part after part over blocks of channels), as `check` asserts.
    #[test]
    fn a_deep_split_runs_in_channel_chunks() {
        let geo = geometry(1, [600, 40], [14, 14], [3, 3], [1, 1], [6, 6], [6, 6], [6, 6]).unwrap();
        let packed = PackedConv::new(&values(40 * 600 * 9, 1), None, [40, 600, 3, 3], 0.0, 1.0).unwrap();
        assert_eq!(steps(&geo, &packed).unwrap().len(), 9);
        assert_eq!(chunk_channels(&packed), 16);
        check(&geo, 1, f32::NEG_INFINITY, f32::INFINITY, 91);
    }

    #[test]
    fn grouped_weights_are_checked() {
        // 2 output channels of 2 groups: each reads 2 of the 4 input channels, 2·2·3·3 weights.
        assert!(PackedConv::grouped(&[0.0; 36], None, [2, 4, 3, 3], 2, 0.0, 1.0).is_ok());
        assert!(PackedConv::grouped(&[0.0; 36], None, [2, 4, 3, 3], 3, 0.0, 1.0).is_err());
        assert!(PackedConv::grouped(&[0.0; 36], None, [2, 4, 3, 3], 0, 0.0, 1.0).is_err());
        assert!(PackedConv::grouped(&[0.0; 18], None, [2, 4, 3, 3], 2, 0.0, 1.0).is_err());
        assert!(PackedConv::grouped(&[0.0; 72], None, [2, 4, 3, 3], 1, 0.0, 1.0).is_ok());
    }

    #[test]
    fn a_nan_stays_nan_through_the_clamp() {
        let geo = geometry(1, [1, 1], [1, 4], [1, 2], [1, 1], [1, 1], [0, 0], [0, 0]).unwrap();
        let packed = PackedConv::new(&[1.0, 1.0], None, [1, 1, 1, 2], 0.0, 6.0).unwrap();
        let mut out = vec![0.0; 3];
        conv2d(&geo, &packed, &[f32::NAN, 1.0, 10.0, -5.0], &mut out, None).unwrap();
        assert!(out[0].is_nan());
        assert_eq!(&out[1..], &[6.0, 5.0]);
        // 16 output channels: the 512-bit tiles on AVX-512 machines.
        let geo = geometry(1, [1, 16], [1, 4], [1, 2], [1, 1], [1, 1], [0, 0], [0, 0]).unwrap();
        let packed = PackedConv::new(&[1.0; 32], None, [16, 1, 1, 2], 0.0, 6.0).unwrap();
        let mut out = vec![0.0; 48];
        conv2d(&geo, &packed, &[f32::NAN, 1.0, 10.0, -5.0], &mut out, None).unwrap();
        for channel in out.chunks(3) {
            assert!(channel[0].is_nan());
            assert_eq!(&channel[1..], &[6.0, 5.0]);
        }
    }

    #[test]
    fn mismatched_sizes_are_errors() {
        let geo = geometry(1, [2, 3], [4, 4], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]).unwrap();
        let packed = PackedConv::new(&[0.5; 54], None, [3, 2, 3, 3], f32::NEG_INFINITY, f32::INFINITY).unwrap();
        let mut out = vec![0.0; 48];
        assert!(conv2d(&geo, &packed, &[0.0; 31], &mut out, None).is_err());
        assert!(conv2d(&geo, &packed, &[0.0; 32], &mut out[..47], None).is_err());
        let other = PackedConv::new(&[0.5; 36], None, [2, 2, 3, 3], f32::NEG_INFINITY, f32::INFINITY).unwrap();
        assert!(conv2d(&geo, &other, &[0.0; 32], &mut out, None).is_err());
        assert!(PackedConv::new(&[0.5; 53], None, [3, 2, 3, 3], 0.0, 1.0).is_err());
        let huge = ConvGeometry { h: usize::MAX / 2, oh: usize::MAX / 2, ..geo };
        assert!(conv2d(&huge, &packed, &[0.0; 32], &mut out, None).is_err());
    }
}
