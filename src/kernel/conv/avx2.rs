//! The AVX2 and FMA builds of the sums (tiles of 4 or 8 output channels by 16 pixels, depthwise
//! tiles of one channel by up to 64 pixels).

use super::{AllTaps, ConvGeometry, Filters, Sizes, SomeTaps, TapMap, CO_BLOCK, LANES, TILE_PIXELS};
use std::arch::x86_64::*;

/// The sums of `NB` blocks of 4 output channels over `V` vectors of 8 pixels.
pub(super) type Sums<const NB: usize, const V: usize> = [[[__m256; V]; CO_BLOCK]; NB];

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
/// Safety: the CPU has AVX2 and FMA; the caller (`image_tiled`, the rows path) asserted what the
/// loads need: `x[start + offset + 8·v .. + 8]` inside `x` for every tap offset and `v < V`, each
/// `w[i]` holding the 4 weights of every `map.at(tap)`.
#[target_feature(enable = "avx2,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tile<const NB: usize, const V: usize, M: TapMap>(
    x: &[f32],
    start: usize,
    offsets: &[usize],
    map: M,
    w: [&[f32]; NB],
    bias: [&[f32]; NB],
) -> Sums<NB, V> {
    // Safety: every load reads `start + offset + 8·v .. + 8` with `v < V`, `offset` a tap offset:
    // the caller asserted that the farthest such float is inside `x`. The weights read are `w[i][4·tap .. 4·tap + 4]` for
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
pub(super) fn store_row(sums: &[__m256], conv: Filters<'_>, out: &mut [f32]) {
    let (low, high) = (_mm256_set1_ps(conv.low), _mm256_set1_ps(conv.high));
    for (chunk, &sum) in out[..sums.len() * LANES].chunks_exact_mut(LANES).zip(sums) {
        // `max(low, v)` and `min(high, v)` return `v` when it is NaN.
        let v = _mm256_min_ps(high, _mm256_max_ps(low, sum));
        // Safety: `chunk` holds 8 floats.
        unsafe { _mm256_storeu_ps(chunk.as_mut_ptr(), v) };
    }
}
