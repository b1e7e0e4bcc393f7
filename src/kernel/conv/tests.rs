//! The kernel against the f64 definition: every build, every thread count, odd shapes.

use super::*;

/// Values in [-2, 2) from a seed, deterministic.
pub(super) fn values(n: usize, seed: u64) -> Vec<f32> {
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
pub(super) fn reference(
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
                                let y = (oy * geo.stride[0] + ky * geo.dilation[0]) as i64 - geo.pad_before[0] as i64;
                                let xx = (ox * geo.stride[1] + kx * geo.dilation[1]) as i64 - geo.pad_before[1] as i64;
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
pub(super) fn geometry(
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
pub(super) fn test_pool(threads: usize) -> &'static ThreadPool {
    static POOLS: std::sync::OnceLock<Vec<ThreadPool>> = std::sync::OnceLock::new();
    let pools = POOLS.get_or_init(|| {
        [1, 2, 8].iter().map(|&n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap()).collect()
    });
    &pools[[1, 2, 8].iter().position(|&n| n == threads).unwrap()]
}

/// Every build the machine runs.
pub(super) fn builds() -> Vec<(&'static str, Kernel)> {
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
pub(super) fn close(got: f32, (want, size): (f64, f64), k: usize) -> bool {
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
    // blocks of output channels (of a split into parts, runs of channel chunks), the layout of the
    // input in runs of channels; the same bits as on one thread, which follows the definition.
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

/// A split over parts with deep taps runs channel chunk by channel chunk (16 of the 40 channels at
/// a time here; on 2 and 8 threads, the 3 chunks in runs per thread): the definition's values, and
/// the same bits on every thread count, as `check` asserts.
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
