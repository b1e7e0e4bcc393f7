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
//! The sums run over the taps in the order channel, kernel row, kernel column, starting from the
//! bias; with AVX2 and FMA each step is a fused multiply-add, on other machines a multiply then an
//! add. So values agree with the definition to float32 rounding of a sum of `C·KH·KW` products, not
//! bit for bit with tract's matrix product (which sums in its own order).

use std::sync::Arc;

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
    fn sizes(&self) -> Result<Sizes, String> {
        let over = || format!("convolution sizes overflow: {self:?}");
        let mul = |a: usize, b: usize| a.checked_mul(b).ok_or_else(over);
        let add = |a: usize, b: usize| a.checked_add(b).ok_or_else(over);
        if self.stride.contains(&0) || self.dilation.contains(&0) || self.kh == 0 || self.kw == 0 {
            return Err(format!("convolution with a zero stride, dilation or kernel size: {self:?}"));
        }
        let [sh, sw] = self.stride;
        let rows = add(self.oh, mul(self.kh - 1, self.dilation[0])? / sh)?;
        let row = add(self.ow, mul(self.kw - 1, self.dilation[1])? / sw)?;
        let plane = mul(rows, row)?;
        let planes = mul(mul(self.c_in, sh)?, sw)?;
        // A run of pixels read past the last plane's end stays inside: TILE_PIXELS more floats.
        let prepared = add(mul(planes, plane)?, TILE_PIXELS)?;
        // Pixels of one output channel the kernel computes, rows of `row`: whole tiles.
        let pixels = if self.oh == 0 || self.ow == 0 { 0 } else { (self.oh - 1) * row + self.ow };
        let wide = mul(pixels.div_ceil(TILE_PIXELS), TILE_PIXELS)?;
        let input = mul(mul(mul(self.batch, self.c_in)?, self.h)?, self.w)?;
        let output = mul(mul(mul(self.batch, self.c_out)?, self.oh)?, self.ow)?;
        mul(wide, self.c_out)?;
        Ok(Sizes { input, output, prepared, row, plane, pixels, wide })
    }
}

/// Sizes derived from a [`ConvGeometry`] (floats).
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// The input, all images.
    input: usize,
    /// The output, all images.
    output: usize,
    /// The prepared input of one image.
    prepared: usize,
    /// Elements of a phase plane's row (`L`).
    row: usize,
    /// One phase plane.
    plane: usize,
    /// Output pixels of one channel, numbered `oy·L + ox`: up to the last one output.
    pixels: usize,
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
    /// Each output channel reads its own input channel only (`c_in == c_out`, group `c_in`).
    depthwise: bool,
    /// `[c_out / 4 rounded up][c_in·kh·kw][4]`, zeros past `c_out`; depthwise, `[c_out][kh·kw]`.
    weights: Arc<Vec<f32>>,
    /// One per output channel, zeros past `c_out` (to a multiple of 4).
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
    pub fn new(
        weights: &[f32],
        bias: Option<&[f32]>,
        [c_out, c_in, kh, kw]: [usize; 4],
        low: f32,
        high: f32,
    ) -> Result<PackedConv, String> {
        let k = c_in.checked_mul(kh).and_then(|v| v.checked_mul(kw)).ok_or("kernel size overflows")?;
        let blocks = c_out.div_ceil(CO_BLOCK);
        let packed_len = blocks.checked_mul(k).and_then(|v| v.checked_mul(CO_BLOCK)).ok_or("kernel size overflows")?;
        if Some(weights.len()) != c_out.checked_mul(k) {
            return Err(format!("{} weights for a {c_out}x{c_in}x{kh}x{kw} kernel", weights.len()));
        }
        if let Some(b) = bias {
            if b.len() != c_out {
                return Err(format!("{} biases for {c_out} output channels", b.len()));
            }
        }
        let mut packed = vec![0f32; packed_len];
        for (co, filter) in weights.chunks_exact(k.max(1)).enumerate().take(c_out) {
            let (block, lane) = (co / CO_BLOCK, co % CO_BLOCK);
            for (tap, &v) in filter.iter().enumerate() {
                packed[(block * k + tap) * CO_BLOCK + lane] = v;
            }
        }
        let mut padded_bias = vec![0f32; blocks * CO_BLOCK];
        if let Some(b) = bias {
            padded_bias[..c_out].copy_from_slice(b);
        }
        let (weights, bias) = (Arc::new(packed), Arc::new(padded_bias));
        Ok(PackedConv { c_in, c_out, kh, kw, depthwise: false, weights, bias, low, high })
    }

    /// A depthwise convolution's: `weights` `[channels][kh][kw]`, `bias` one per channel or none;
    /// output channel `c` convolves input channel `c` alone.
    pub fn depthwise(
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
        Ok(PackedConv { c_in: channels, c_out: channels, kh, kw, depthwise: true, weights, bias, low, high })
    }

    /// Input channels, output channels, kernel height and width.
    pub fn dims(&self) -> [usize; 4] {
        [self.c_in, self.c_out, self.kh, self.kw]
    }
}

/// Convolves `input` (`[batch][c_in][h][w]`) into `output` (`[batch][c_out][oh][ow]`).
pub(crate) fn conv2d(geo: &ConvGeometry, conv: &PackedConv, input: &[f32], output: &mut [f32]) -> Result<(), String> {
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
    let wide_len = sizes.wide * geo.c_out;
    crate::kernel::check_allocation(sizes.prepared as u64 + wide_len as u64, 4).map_err(|e| e.to_string())?;
    SCRATCH.with(|scratch| {
        let (prepared, wide) = &mut *scratch.borrow_mut();
        // `prepare` writes every element the kernel reads for an output pixel, and the kernel every
        // element of `wide` compacted: what an earlier call left needs no clearing.
        prepared.resize(sizes.prepared, 0.0);
        wide.resize(wide_len, 0.0);
        let buffers = (&mut prepared[..sizes.prepared], &mut wide[..wide_len]);
        convolve(geo, &sizes, conv, input, output, buffers, kernel);
        for buffer in [prepared, wide] {
            if buffer.len() > SCRATCH_KEPT {
                *buffer = Vec::new();
            }
        }
    });
    Ok(())
}

thread_local! {
    /// The prepared input and the output in the kernel's layout of the last convolution this
    /// thread ran, reused by the next.
    static SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<f32>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// The largest scratch buffer kept for the next convolution (floats: 16 MB).
const SCRATCH_KEPT: usize = 1 << 22;

/// One build of the sums of a prepared image ([`kernel`] picks the fastest).
type Kernel = fn(&ConvGeometry, &Sizes, &PackedConv, &[usize], &[f32], &mut [f32]);

/// [`conv2d`] once the sizes are checked: `prepared` and `wide` are the sizes `sizes` says.
fn convolve(
    geo: &ConvGeometry,
    sizes: &Sizes,
    conv: &PackedConv,
    input: &[f32],
    output: &mut [f32],
    (prepared, wide): (&mut [f32], &mut [f32]),
    kernel: Kernel,
) {
    let offsets = tap_offsets(geo, sizes, if conv.depthwise { 1 } else { geo.c_in });
    let image_in = geo.c_in * geo.h * geo.w;
    let image_out = geo.c_out * geo.oh * geo.ow;
    for n in 0..geo.batch {
        prepare(geo, sizes, &input[n * image_in..][..image_in], prepared);
        kernel(geo, sizes, conv, &offsets, prepared, wide);
        // Rows of `L` pixels to rows of `OW`.
        let out = &mut output[n * image_out..][..image_out];
        for (plane, wide) in out.chunks_exact_mut(geo.oh * geo.ow).zip(wide.chunks_exact(sizes.wide)) {
            for (row, from) in plane.chunks_exact_mut(geo.ow).zip(wide.chunks(sizes.row)) {
                row.copy_from_slice(&from[..geo.ow]);
            }
        }
    }
}

/// The sums of one prepared image into `wide` (`[c_out][wide]`, pixels `oy·L + ox`), clamped, on
/// the fastest build the machine runs.
fn kernel(geo: &ConvGeometry, sizes: &Sizes, conv: &PackedConv, offsets: &[usize], x: &[f32], wide: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl") {
            // Safety: the CPU has AVX2, FMA, AVX512F and AVX512VL, checked just above: the one
            // requirement of calling a function compiled with those features.
            unsafe { avx2::image_avx512(geo, sizes, conv, offsets, x, wide) };
        } else {
            // Safety: the CPU has AVX2 and FMA, checked just above: the one requirement of calling
            // a function compiled with `target_feature(enable = "avx2,fma")`.
            unsafe { avx2::image(geo, sizes, conv, offsets, x, wide) };
        }
        return;
    }
    portable_image(geo, sizes, conv, offsets, x, wide);
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
                let plane = (c * sh + ky * dh % sh) * sw + kx * dw % sw;
                offsets.push(plane * sizes.plane + (ky * dh / sh) * sizes.row + kx * dw / sw);
            }
        }
    }
    offsets
}

/// Lays one image out as the module docs say (zeros where the padding is).
fn prepare(geo: &ConvGeometry, sizes: &Sizes, image: &[f32], prepared: &mut [f32]) {
    let ([sh, sw], [pt, pl]) = (geo.stride, geo.pad_before);
    // Per column phase b: element j is padded column b + j·sw, input column b + j·sw - pl: inside
    // the input for j in first..end, starting at input column `start`.
    let spans: Vec<(usize, usize, usize)> = (0..sw)
        .map(|b| {
            let first = pl.saturating_sub(b).div_ceil(sw).min(sizes.row);
            let end = (geo.w + pl).saturating_sub(b).div_ceil(sw).clamp(first, sizes.row);
            (first, end, (b + first * sw).saturating_sub(pl))
        })
        .collect();
    let mut planes = prepared.chunks_exact_mut(sizes.plane);
    for channel in image.chunks_exact(geo.h * geo.w).take(geo.c_in) {
        for a in 0..sh {
            for &(first, end, start) in &spans {
                let Some(plane) = planes.next() else { return };
                for (i, out) in plane.chunks_exact_mut(sizes.row).enumerate() {
                    // Padded row a + i·sh, input row a + i·sh - pt.
                    let Some(y) = (a + i * sh).checked_sub(pt).filter(|&y| y < geo.h) else {
                        out.fill(0.0);
                        continue;
                    };
                    let src = &channel[y * geo.w..][..geo.w];
                    out[..first].fill(0.0);
                    out[end..].fill(0.0);
                    let inside = &mut out[first..end];
                    match sw {
                        1 => inside.copy_from_slice(&src[start..][..inside.len()]),
                        2 => {
                            let src = &src[start..];
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
    conv: &PackedConv,
    offsets: &[usize],
    x: &[f32],
    wide: &mut [f32],
) {
    let k = offsets.len();
    if conv.depthwise {
        // Channel c's taps: channel 0's, one channel's planes further per channel.
        let step = geo.stride[0] * geo.stride[1] * sizes.plane;
        for (c, channel) in wide.chunks_exact_mut(sizes.wide).enumerate().take(geo.c_out) {
            let w = &conv.weights[c * k..][..k];
            for (q, o) in channel[..sizes.pixels].iter_mut().enumerate() {
                let mut sum = conv.bias[c];
                for (&weight, &offset) in w.iter().zip(offsets) {
                    sum += weight * x[c * step + offset + q];
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
                sum += w[tap * CO_BLOCK + lane] * x[offset + q];
            }
            *o = clamp(sum, conv.low, conv.high);
        }
    }
}

/// `min(max(v, low), high)`, a NaN kept.
#[inline(always)]
fn clamp(v: f32, low: f32, high: f32) -> f32 {
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
    use super::{ConvGeometry, PackedConv, Sizes, CO_BLOCK, LANES, TILE_PIXELS};
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
        conv: &PackedConv,
        offsets: &[usize],
        x: &[f32],
        wide: &mut [f32],
    ) {
        // Safety: as this function's.
        unsafe { tiled::<1, 4>(geo, sizes, conv, offsets, x, wide, 0) }
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
        conv: &PackedConv,
        offsets: &[usize],
        x: &[f32],
        wide: &mut [f32],
    ) {
        let mut first = 0;
        if !conv.depthwise && geo.c_out >= 16 {
            // Safety: as this function's.
            first = unsafe { super::avx512::groups_of_16(geo, sizes, conv, offsets, x, wide) };
        }
        // Safety: as this function's; blocks from `first` on are left.
        unsafe { tiled::<2, 8>(geo, sizes, conv, offsets, x, wide, first) }
    }

    /// One image in tiles of `NB` blocks of 4 channels from block `first` on, or, depthwise (all
    /// channels), of `DV` vectors of pixels.
    ///
    /// Safety: as [`image`].
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn tiled<const NB: usize, const DV: usize>(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: &PackedConv,
        offsets: &[usize],
        x: &[f32],
        wide: &mut [f32],
        first: usize,
    ) {
        // Safety: as this function's.
        unsafe {
            if conv.depthwise {
                depthwise_tiled::<DV>(geo, sizes, conv, offsets, x, wide)
            } else {
                image_tiled::<NB>(geo, sizes, conv, offsets, x, wide, first)
            }
        }
    }

    /// The loops of [`image`], over pairs of blocks of 4 channels from block `first` on: tiles of
    /// 16 pixels by both blocks at once when `NB` is 2, one block at a time otherwise; the last 8
    /// pixels or fewer in a tile of both blocks by 8 pixels.
    ///
    /// Safety: as [`image`].
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn image_tiled<const NB: usize>(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: &PackedConv,
        offsets: &[usize],
        x: &[f32],
        wide: &mut [f32],
        first: usize,
    ) {
        let k = offsets.len();
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
                        let sums = unsafe { tile::<NB, 2>(x, q, offsets, ws, std::array::from_fn(|i| bias(b + i))) };
                        store(&sums, conv, out, sizes.wide, q);
                    } else {
                        for i in 0..pair {
                            // Safety: the tile starts at pixel `q < pixels` (see above).
                            let sums = unsafe { tile::<1, 2>(x, q, offsets, [weights(b + i)], [bias(b + i)]) };
                            store(&sums, conv, &mut out[i * CO_BLOCK * sizes.wide..], sizes.wide, q);
                        }
                    }
                } else if pair == 2 {
                    let ws = [weights(b), weights(b + 1)];
                    // Safety: the tile starts at pixel `q < pixels` (see above).
                    let sums = unsafe { tile::<2, 1>(x, q, offsets, ws, [bias(b), bias(b + 1)]) };
                    store(&sums, conv, out, sizes.wide, q);
                } else {
                    // Safety: the tile starts at pixel `q < pixels` (see above).
                    let sums = unsafe { tile::<1, 1>(x, q, offsets, [weights(b)], [bias(b)]) };
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
    /// Safety: as [`image`].
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn depthwise_tiled<const V: usize>(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: &PackedConv,
        offsets: &[usize],
        x: &[f32],
        wide: &mut [f32],
    ) {
        const { assert!(V <= 8) };
        let k = offsets.len();
        let step = geo.stride[0] * geo.stride[1] * sizes.plane;
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
                let sums = unsafe { depthwise_tile::<V>(channel, q, offsets, w, conv.bias[c]) };
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
                            $($n => store_row(&unsafe { depthwise_tile::<$n>(channel, q, offsets, w, bias) }, conv, out),)*
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
    unsafe fn depthwise_tile<const V: usize>(
        x: &[f32],
        start: usize,
        offsets: &[usize],
        w: &[f32],
        bias: f32,
    ) -> [__m256; V] {
        // Safety: every load reads `start + offset + 8·v .. + 8` with `v < V`, which
        // `depthwise_tiled` asserted is inside `x`; `w` holds one weight per tap.
        unsafe {
            let mut acc = [_mm256_set1_ps(bias); V];
            let xp = x.as_ptr().add(start);
            for (&weight, &offset) in w.iter().zip(offsets) {
                let weight = _mm256_set1_ps(weight);
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
    unsafe fn tile<const NB: usize, const V: usize>(
        x: &[f32],
        start: usize,
        offsets: &[usize],
        w: [&[f32]; NB],
        bias: [&[f32]; NB],
    ) -> Sums<NB, V> {
        // Safety: every load reads `start + offset + 8·v .. + 8` with `v < V ≤ 2`, `offset` a tap
        // offset, `start` a pixel below `pixels`: `image_tiled` asserted that the farthest such
        // float is inside `x`. The weights read are `w[i][4·tap .. 4·tap + 4]` for
        // `tap < offsets.len()`, which each `w[i]` holds.
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
                let mut v = [_mm256_setzero_ps(); V];
                for (i, vi) in v.iter_mut().enumerate() {
                    *vi = _mm256_loadu_ps(p.add(i * LANES));
                }
                for (block, &wb) in acc.iter_mut().zip(&wp) {
                    for (c, a) in block.iter_mut().enumerate() {
                        let weight = _mm256_broadcast_ss(&*wb.add(tap * CO_BLOCK + c));
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
        conv: &PackedConv,
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
    fn store_row(sums: &[__m256], conv: &PackedConv, out: &mut [f32]) {
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
    use super::{ConvGeometry, PackedConv, Sizes, CO_BLOCK, TILE_PIXELS};
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
    pub(super) unsafe fn groups_of_16(
        geo: &ConvGeometry,
        sizes: &Sizes,
        conv: &PackedConv,
        offsets: &[usize],
        x: &[f32],
        wide: &mut [f32],
    ) -> usize {
        let k = offsets.len();
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
                let sums = unsafe { tile(x, q, offsets, weights, bias) };
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
    /// 4·tap + 4]` for `tap < offsets.len()`, which each `w[i]` holds.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    #[inline]
    unsafe fn tile(x: &[f32], start: usize, offsets: &[usize], w: [&[f32]; 4], bias: &[f32]) -> [__m512; GROUP] {
        let mut acc: [__m512; GROUP] = std::array::from_fn(|c| _mm512_set1_ps(bias[c]));
        // Safety: as this function's.
        unsafe {
            let xp = x.as_ptr().add(start);
            let wp: [*const f32; 4] = std::array::from_fn(|i| w[i].as_ptr());
            for (tap, &offset) in offsets.iter().enumerate() {
                let v = _mm512_loadu_ps(xp.add(offset));
                for (c, a) in acc.iter_mut().enumerate() {
                    let weight = _mm512_set1_ps(*wp[c / CO_BLOCK].add(tap * CO_BLOCK + c % CO_BLOCK));
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
    /// and the sum of the terms' magnitudes (for the tolerance).
    fn reference(
        geo: &ConvGeometry,
        depthwise: bool,
        w: &[f32],
        bias: &[f32],
        x: &[f32],
        low: f32,
        high: f32,
    ) -> Vec<(f64, f64)> {
        let c_per_out = if depthwise { 1 } else { geo.c_in };
        let mut out = Vec::new();
        for n in 0..geo.batch {
            for co in 0..geo.c_out {
                for oy in 0..geo.oh {
                    for ox in 0..geo.ow {
                        let (mut sum, mut size) = (bias[co] as f64, (bias[co] as f64).abs());
                        for ci in 0..c_per_out {
                            let c = if depthwise { co } else { ci };
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

    /// Every build the machine runs.
    fn builds() -> Vec<(&'static str, Kernel)> {
        let mut all: Vec<(&'static str, Kernel)> = vec![("portable", portable_image)];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                // Safety: the CPU has AVX2 and FMA, checked just above.
                all.push(("avx2", |g, s, c, o, x, w| unsafe { avx2::image(g, s, c, o, x, w) }));
            }
            if has!("avx2") && has!("fma") && has!("avx512f") && has!("avx512vl") {
                // Safety: the CPU has AVX2, FMA, AVX512F and AVX512VL, checked just above.
                all.push(("avx512", |g, s, c, o, x, w| unsafe { avx2::image_avx512(g, s, c, o, x, w) }));
            }
        }
        all
    }

    /// Within the float32 error bound of a sum of `k` products and a bias, rounded once more:
    /// `(k + 1)·ε` times the sum of the terms' magnitudes.
    fn close(got: f32, (want, size): (f64, f64), k: usize) -> bool {
        (got as f64 - want).abs() <= (k as f64 + 1.0) * f32::EPSILON as f64 * size
    }

    fn check(geo: &ConvGeometry, depthwise: bool, low: f32, high: f32, seed: u64) {
        let k = if depthwise { 1 } else { geo.c_in } * geo.kh * geo.kw;
        let (w, bias) = (values(geo.c_out * k, seed), values(geo.c_out, seed + 1));
        let x = values(geo.batch * geo.c_in * geo.h * geo.w, seed + 2);
        let packed = if depthwise {
            PackedConv::depthwise(&w, Some(&bias), [geo.c_out, geo.kh, geo.kw], low, high).unwrap()
        } else {
            PackedConv::new(&w, Some(&bias), [geo.c_out, geo.c_in, geo.kh, geo.kw], low, high).unwrap()
        };
        let expected = reference(geo, depthwise, &w, &bias, &x, low, high);
        let sizes = geo.sizes().unwrap();
        for (name, build) in builds() {
            // Scratch full of NaN: nothing the output depends on may be left unwritten.
            let mut prepared = vec![f32::NAN; sizes.prepared];
            let mut wide = vec![f32::NAN; sizes.wide * geo.c_out];
            let mut out = vec![f32::NAN; sizes.output];
            convolve(geo, &sizes, &packed, &x, &mut out, (&mut prepared, &mut wide), build);
            for (i, (&got, &want)) in out.iter().zip(&expected).enumerate() {
                assert!(close(got, want, k), "{name} {geo:?} output {i}: {got} vs {want:?}");
            }
        }
        let mut out = vec![f32::NAN; sizes.output];
        conv2d(geo, &packed, &x, &mut out).unwrap();
        assert!(out.iter().zip(&expected).all(|(&got, &want)| close(got, want, k)));
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
                            check(&geo, false, low, high, seed);
                            cases += 1;
                            // Depthwise: one output channel per input channel.
                            check(&ConvGeometry { c_out: c_in, ..geo }, true, low, high, seed);
                        }
                    }
                }
            }
        }
        assert!(cases > 1500, "{cases} cases");
    }

    #[test]
    fn a_nan_stays_nan_through_the_clamp() {
        let geo = geometry(1, [1, 1], [1, 4], [1, 2], [1, 1], [1, 1], [0, 0], [0, 0]).unwrap();
        let packed = PackedConv::new(&[1.0, 1.0], None, [1, 1, 1, 2], 0.0, 6.0).unwrap();
        let mut out = vec![0.0; 3];
        conv2d(&geo, &packed, &[f32::NAN, 1.0, 10.0, -5.0], &mut out).unwrap();
        assert!(out[0].is_nan());
        assert_eq!(&out[1..], &[6.0, 5.0]);
        // 16 output channels: the 512-bit tiles on AVX-512 machines.
        let geo = geometry(1, [1, 16], [1, 4], [1, 2], [1, 1], [1, 1], [0, 0], [0, 0]).unwrap();
        let packed = PackedConv::new(&[1.0; 32], None, [16, 1, 1, 2], 0.0, 6.0).unwrap();
        let mut out = vec![0.0; 48];
        conv2d(&geo, &packed, &[f32::NAN, 1.0, 10.0, -5.0], &mut out).unwrap();
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
        assert!(conv2d(&geo, &packed, &[0.0; 31], &mut out).is_err());
        assert!(conv2d(&geo, &packed, &[0.0; 32], &mut out[..47]).is_err());
        let other = PackedConv::new(&[0.5; 36], None, [2, 2, 3, 3], f32::NEG_INFINITY, f32::INFINITY).unwrap();
        assert!(conv2d(&geo, &other, &[0.0; 32], &mut out).is_err());
        assert!(PackedConv::new(&[0.5; 53], None, [3, 2, 3, 3], 0.0, 1.0).is_err());
        let huge = ConvGeometry { h: usize::MAX / 2, oh: usize::MAX / 2, ..geo };
        assert!(conv2d(&huge, &packed, &[0.0; 32], &mut out).is_err());
    }
}
