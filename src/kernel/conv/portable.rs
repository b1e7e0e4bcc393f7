//! The portable build of the sums (any machine) and the clamp.

use super::{assert_map, ConvGeometry, Filters, Sizes, CO_BLOCK};

/// One image on any machine: the same sums as the vector build, a multiply then an add per tap.
pub(super) fn portable_image(
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
pub(in crate::kernel) fn clamp(v: f32, low: f32, high: f32) -> f32 {
    if v < low {
        low
    } else if v > high {
        high
    } else {
        v
    }
}
