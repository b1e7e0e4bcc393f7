//! The geometry of a convolution, the sizes the kernel works with, and the prepared input's layout
//! (phase or shifted planes, see the module docs of [`super`]).

use super::TILE_PIXELS;

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
    pub(in crate::kernel) fn sizes(&self) -> Result<Sizes, String> {
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
pub(in crate::kernel) struct Sizes {
    /// The input, all images.
    pub(super) input: usize,
    /// The output, all images.
    pub(super) output: usize,
    /// The prepared input of one image.
    pub(in crate::kernel) prepared: usize,
    /// Elements of a plane's row (`L`).
    pub(super) row: usize,
    /// One plane.
    pub(super) plane: usize,
    /// The planes of one input channel.
    pub(super) channel: usize,
    /// The planes are shifted ones (see the module docs), not phase planes.
    pub(super) shifted: bool,
    /// Output pixels of one channel, numbered `oy·L + ox`: up to the last one output.
    pub(in crate::kernel) pixels: usize,
    /// `pixels` rounded up to whole tiles: one output channel in the kernel's own layout.
    pub(super) wide: usize,
}

/// For each tap (channel, kernel row, kernel column) of the first `channels` input channels: where
/// pixel 0 reads it in the prepared input.
pub(super) fn tap_offsets(geo: &ConvGeometry, sizes: &Sizes, channels: usize) -> Vec<usize> {
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
pub(super) fn prepare(
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
