//! The parts a convolution's output is computed in: the whole image at once over the zero-padded
//! input, or, where that computes much in the padding (dilated kernels on small maps: a tap that
//! reads the padding for most outputs), rectangles of output on which the taps that read inside the
//! input are the same, each one an unpadded convolution by those taps alone.
//!
//! Along one axis (rows, or columns), kernel tap `k` of output `o` reads padded element
//! `o·S + k·D`, input element `o·S + k·D - P`: inside the input for a contiguous range of `o`. The
//! bounds of those ranges cut `0..O` into intervals; on each, the taps inside the input are one
//! contiguous range of `k` (for a given `o`, the `k` with `0 <= o·S + k·D - P < N` are an interval).
//! A rectangle of a row interval by a column interval is a convolution of those kernel rows by
//! those kernel columns over the input window they read, which no padding reaches; one with no tap
//! inside the input is the bias alone.
//!
//! The split is taken when its estimated work (multiply-adds over the tiles each part computes, the
//! copies of its input window, a fixed cost per part) is under [`SPLIT_GAIN`] of the whole image's.

use std::ops::Range;

use super::ConvGeometry;

/// The split is taken when its estimated work is below this share of the whole image's.
const SPLIT_GAIN: f64 = 0.8;

/// Estimated cost of one part beyond its arithmetic and copies (calls, offsets, compaction), in the
/// units of [`cost`] (vector multiply-adds).
const PART_COST: f64 = 256.0;

/// Output pixels of one tile of the kernel (see `conv/mod.rs`).
const TILE: usize = 16;

/// One rectangle of output and the convolution computing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Part {
    /// The convolution over its input window: its own kernel size (the taps it reads), output size
    /// and padding (zero except for the whole-image part).
    pub geo: ConvGeometry,
    /// The input window's first row and column.
    pub origin: [usize; 2],
    /// The first output row and column it writes.
    pub out: [usize; 2],
    /// The kernel rows and columns of the full kernel it reads (`geo.kh` and `geo.kw` of them);
    /// empty when no tap of its outputs is inside the input (its outputs are the bias).
    pub taps: [Range<usize>; 2],
}

impl Part {
    /// Whether no tap of its outputs is inside the input: they are the bias.
    pub(super) fn bias_only(&self) -> bool {
        self.taps[0].is_empty() || self.taps[1].is_empty()
    }

    /// Whether it reads every tap of a `kh x kw` kernel.
    pub(super) fn all_taps(&self, kh: usize, kw: usize) -> bool {
        self.taps[0] == (0..kh) && self.taps[1] == (0..kw)
    }
}

/// The parts `geo`'s output is computed in (one image; `geo.batch` is kept in each part): the whole
/// image, or the split of the module docs when it saves enough. `channels` is the input channels
/// each output reads (`c_in` over the groups).
pub(super) fn parts(geo: &ConvGeometry, channels: usize) -> Vec<Part> {
    let whole = Part { geo: *geo, origin: [0, 0], out: [0, 0], taps: [0..geo.kh, 0..geo.kw] };
    if geo.oh == 0 || geo.ow == 0 {
        return vec![whole];
    }
    let rows = intervals(geo.h, geo.oh, geo.kh, geo.stride[0], geo.dilation[0], geo.pad_before[0]);
    let cols = intervals(geo.w, geo.ow, geo.kw, geo.stride[1], geo.dilation[1], geo.pad_before[1]);
    if rows.len() == 1 && cols.len() == 1 && rows[0].1 == (0..geo.kh) && cols[0].1 == (0..geo.kw) {
        // Every tap inside the input for every output: no padding is read.
        return vec![whole];
    }
    let mut split = Vec::with_capacity(rows.len() * cols.len());
    for (r, ky) in &rows {
        for (c, kx) in &cols {
            split.push(part(geo, [r.clone(), c.clone()], [ky.clone(), kx.clone()]));
        }
    }
    let total = |parts: &[Part]| parts.iter().map(|p| cost(p, geo.c_out, channels)).sum::<f64>();
    if total(&split) < SPLIT_GAIN * total(std::slice::from_ref(&whole)) {
        split
    } else {
        vec![whole]
    }
}

/// The part of output rows `out[0]` by columns `out[1]`, reading kernel rows `taps[0]` and columns
/// `taps[1]` (all inside the input for these outputs, or an empty range).
fn part(geo: &ConvGeometry, out: [Range<usize>; 2], taps: [Range<usize>; 2]) -> Part {
    let axis = |i: usize, size: usize| {
        let (o, k) = (&out[i], &taps[i]);
        if k.is_empty() {
            return (0, 0, 1);
        }
        // First input element read: output o.start, tap k.start; the window spans the last output's
        // last tap.
        let first = o.start * geo.stride[i] + k.start * geo.dilation[i] - geo.pad_before[i];
        let span = (o.len() - 1) * geo.stride[i] + (k.len() - 1) * geo.dilation[i] + 1;
        debug_assert!(first + span <= size);
        (first, span, k.len())
    };
    let (y, h, kh) = axis(0, geo.h);
    let (x, w, kw) = axis(1, geo.w);
    let sub = ConvGeometry { h, w, kh, kw, pad_before: [0, 0], oh: out[0].len(), ow: out[1].len(), ..*geo };
    Part { geo: sub, origin: [y, x], out: [out[0].start, out[1].start], taps }
}

/// Along one axis (input `n` long, output `o` long, kernel `k` taps, stride `s`, dilation `d`, padding
/// before `p`): the output intervals on which the taps inside the input are the same, with those taps.
fn intervals(n: usize, o: usize, k: usize, s: usize, d: usize, p: usize) -> Vec<(Range<usize>, Range<usize>)> {
    // Tap t reads input o·s + t·d - p: inside for o in lo..hi.
    let range = |t: usize| {
        let at = t * d;
        let lo = p.saturating_sub(at).div_ceil(s);
        let hi = if n + p > at { (n + p - at - 1) / s + 1 } else { 0 };
        lo.min(o)..hi.min(o).max(lo.min(o))
    };
    let ranges: Vec<Range<usize>> = (0..k).map(range).collect();
    let mut cuts: Vec<usize> = ranges.iter().flat_map(|r| [r.start, r.end]).chain([0, o]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for pair in cuts.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let live: Vec<usize> = (0..k).filter(|&t| ranges[t].start <= a && b <= ranges[t].end).collect();
        let taps = match (live.first(), live.last()) {
            (Some(&first), Some(&last)) => first..last + 1,
            _ => 0..0,
        };
        match out.last_mut() {
            Some((r, t)) if *t == taps && r.end == a => r.end = b,
            _ => out.push((a..b, taps)),
        }
    }
    out
}

/// Estimated work of one part, in vector multiply-adds: the sums of its tiles (all output channels,
/// `channels` input channels each), the copy of its input window, and [`PART_COST`].
fn cost(part: &Part, c_out: usize, channels: usize) -> f64 {
    let g = &part.geo;
    let taps = (g.kh * g.kw * channels) as f64;
    if part.bias_only() {
        return PART_COST + (c_out * g.oh * g.ow) as f64 / 8.0;
    }
    let Ok(sizes) = g.sizes() else { return f64::INFINITY };
    let tiles = sizes.pixels.div_ceil(TILE) as f64;
    let arithmetic = (c_out.next_multiple_of(4) as f64) * taps * tiles * (TILE / 8) as f64;
    // The prepared input is written once, a vector at a time.
    let copies = sizes.prepared as f64 / 8.0;
    arithmetic + copies + PART_COST
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(hw: [usize; 2], k: usize, stride: usize, dilation: usize, pad: usize) -> ConvGeometry {
        let out = |n: usize| (n + 2 * pad - (k - 1) * dilation - 1) / stride + 1;
        ConvGeometry {
            batch: 1,
            c_in: 64,
            h: hw[0],
            w: hw[1],
            c_out: 64,
            kh: k,
            kw: k,
            stride: [stride; 2],
            dilation: [dilation; 2],
            pad_before: [pad; 2],
            oh: out(hw[0]),
            ow: out(hw[1]),
        }
    }

    #[test]
    fn intervals_of_a_dilated_axis() {
        // 10 rows, 3 taps dilated 6, padded 6: tap 0 reads inside for o >= 6, tap 2 for o < 4.
        assert_eq!(intervals(10, 10, 3, 1, 6, 6), vec![(0..4, 1..3), (4..6, 1..2), (6..10, 0..2)]);
        // Dilation 36 on 12 columns: only the middle tap is ever inside.
        assert_eq!(intervals(12, 12, 3, 1, 36, 36), vec![(0..12, 1..2)]);
        // Unpadded: every tap inside everywhere.
        assert_eq!(intervals(8, 6, 3, 1, 1, 0), vec![(0..6, 0..3)]);
        // Stride 2, padding 1, 3 taps over 8: output 0 misses tap 0.
        assert_eq!(intervals(8, 4, 3, 2, 1, 1), vec![(0..1, 1..3), (1..4, 0..3)]);
        // An output row reading only padding (padding wider than the kernel reaches).
        assert_eq!(intervals(2, 4, 1, 1, 1, 1), vec![(0..1, 0..0), (1..3, 0..1), (3..4, 0..0)]);
    }

    #[test]
    fn dilated_convolutions_on_small_maps_are_split() {
        // The ASPP convolutions of a segmentation head: 3x3, dilation = padding = d, 10x12 map.
        let d36 = parts(&geo([10, 12], 3, 1, 36, 36), 960);
        assert_eq!(d36.len(), 1);
        assert_eq!(d36[0].taps, [1..2, 1..2]);
        assert_eq!(d36[0].geo.kh * d36[0].geo.kw, 1);
        assert_eq!((d36[0].origin, d36[0].out, d36[0].geo.h, d36[0].geo.w), ([0, 0], [0, 0], 10, 12));
        let d6 = parts(&geo([10, 12], 3, 1, 6, 6), 960);
        assert_eq!(d6.len(), 6);
        let pixels: usize = d6.iter().map(|p| p.geo.oh * p.geo.ow).sum();
        assert_eq!(pixels, 120);
    }

    #[test]
    fn ordinary_convolutions_stay_whole() {
        for (hw, k, s, d, p) in
            [([56, 56], 3, 1, 1, 1), ([10, 12], 3, 1, 1, 1), ([28, 28], 5, 2, 1, 2), ([7, 7], 3, 1, 1, 0)]
        {
            let g = geo(hw, k, s, d, p);
            assert_eq!(parts(&g, 64), vec![Part { geo: g, origin: [0, 0], out: [0, 0], taps: [0..k, 0..k] }]);
        }
    }
}
