//! Which convolutions go to our direct kernel ([`crate::kernel::conv2d`]) and which stay on tract's
//! path (its `im2col` and matrix product, its depthwise kernel): the choice rule of the direct-conv
//! pass ([`super::direct_conv`]), from `benches/conv_sweep.py`'s figures (one thread, ours over
//! tract's time in the same run; the table is in `docs/convolution.md`).
//!
//! The direct kernel takes every float32 2-D convolution whose kernel has more than one tap and whose
//! strides are at most 2, of any group count, except those of [`tract_is_faster`]:
//!
//! - a 1x1 kernel is a matrix product (tract's, or [`super::small_matmul`]'s);
//! - a stride above 2: a patch-embedding convolution (kernel and stride 16, a ViT's) lays its input
//!   out in 256 phase planes of a few elements each, and ran at 35 µs where tract's took 22;
//! - deep kernels on 6x6..8x8 maps: see [`DEEP_TAPS`].
//!
//! Everything else measured at most 1.06 of tract's time (noise on this loaded 2-core machine) and
//! most far below it: dilated kernels 0.05-0.9 (tract computes every tap, padding included), grouped
//! ones 0.08-0.75, ordinary ones 0.36-1.05, depthwise 0.29-0.96 at batch 1 since they go channel by
//! channel ([`crate::kernel`]'s depthwise path: `dw 96 s2` 0.33, `dw 960 7` 0.29; batch 8 0.70-1.27
//! between runs on a loaded machine).

/// The largest stride the direct kernel takes.
pub(super) const MAX_STRIDE: usize = 2;

/// Taps per output channel (`c_in / group · kh · kw`) from which a convolution over a map of
/// [`SMALL_MAP`] output pixels stays tract's: 512->512 3x3 on 7x7 (4608 taps) took 1.26-1.28 of
/// tract's time, 256->256 on 7x7 (2304) 1.19, while 1024->1024 on 3x3 took 0.88, 2048->512 on 5x5
/// 0.53, 960->256 on 10x12 0.79-1.14 and 256->256 on 14x14 0.98-1.05 (tract's matrix product
/// packs such maps into its tiles better than our 16-pixel ones, and its cost is no longer its gather).
pub(super) const DEEP_TAPS: usize = 2048;

/// Output pixels of one image (inclusive range) where [`DEEP_TAPS`] applies: 6x6 to 8x8.
pub(super) const SMALL_MAP: std::ops::RangeInclusive<usize> = 36..=64;

/// What the rule looks at of one convolution (2-D, channels first, concrete sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ConvShape {
    /// Input channels.
    pub c_in: usize,
    /// Groups of channels.
    pub group: usize,
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Strides.
    pub strides: [usize; 2],
    /// Dilations.
    pub dilations: [usize; 2],
    /// Output height and width.
    pub output: [usize; 2],
}

/// Whether our direct kernel takes the convolution (see the module docs).
pub(super) fn direct_kernel_takes(shape: &ConvShape) -> bool {
    shape.kernel.iter().product::<usize>() > 1
        && shape.strides.iter().all(|&s| (1..=MAX_STRIDE).contains(&s))
        && !tract_is_faster(shape)
}

/// The shapes where tract's path measured faster: deep ordinary kernels on small maps.
fn tract_is_faster(shape: &ConvShape) -> bool {
    let taps = (shape.c_in / shape.group.max(1)).saturating_mul(shape.kernel[0]).saturating_mul(shape.kernel[1]);
    let pixels = shape.output[0].saturating_mul(shape.output[1]);
    shape.group == 1 && shape.dilations == [1, 1] && taps >= DEEP_TAPS && SMALL_MAP.contains(&pixels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(c_in: usize, group: usize, k: usize, s: usize, d: usize, out: usize) -> ConvShape {
        ConvShape { c_in, group, kernel: [k, k], strides: [s, s], dilations: [d, d], output: [out, out] }
    }

    #[test]
    fn the_rule_follows_the_sweep() {
        // Dilated (the ASPP head), grouped (RegNet, ResNeXt), depthwise and ordinary convolutions.
        for taken in [
            shape(960, 1, 3, 1, 12, 10),
            shape(960, 1, 3, 1, 36, 10),
            shape(960, 1, 3, 1, 1, 11),
            shape(104, 8, 3, 1, 1, 28),
            shape(440, 55, 3, 1, 1, 28),
            shape(128, 32, 3, 1, 1, 56),
            shape(672, 672, 5, 2, 1, 7),
            shape(960, 960, 3, 1, 1, 7),
            shape(3, 1, 7, 2, 1, 112),
            shape(1024, 1, 3, 1, 1, 3),
            shape(2048, 1, 3, 1, 1, 5),
            shape(256, 1, 3, 1, 1, 14),
            // Deep but dilated: the parts skip the padding, tract's path does not.
            shape(512, 1, 3, 1, 2, 7),
            // Small map, shallow kernel.
            shape(128, 1, 3, 1, 1, 7),
        ] {
            assert!(direct_kernel_takes(&taken), "{taken:?}");
        }
        for left in [
            shape(512, 1, 3, 1, 1, 7),
            shape(256, 1, 3, 1, 1, 7),
            shape(256, 1, 3, 1, 1, 8),
            shape(64, 1, 1, 1, 1, 56),
            shape(3, 1, 16, 16, 1, 14),
            shape(64, 1, 3, 3, 1, 20),
        ] {
            assert!(!direct_kernel_takes(&left), "{left:?}");
        }
    }
}
