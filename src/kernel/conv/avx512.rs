//! The 512-bit tiles of [`super::avx2::image_avx512`]: 16 output channels by 16 pixels.

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
        let weights: [&[f32]; 4] = std::array::from_fn(|i| &conv.weights[(g * 4 + i) * k * CO_BLOCK..][..k * CO_BLOCK]);
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
