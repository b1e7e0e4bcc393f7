//! The weights of a convolution packed in the order the kernel reads them, and the tap maps.

use std::sync::Arc;

use super::CO_BLOCK;

/// The weights and bias of a convolution in the order the kernel reads them, and the clamp after.
#[derive(Debug, Clone)]
pub(crate) struct PackedConv {
    pub(super) c_in: usize,
    pub(super) c_out: usize,
    pub(super) kh: usize,
    pub(super) kw: usize,
    /// Groups of input and output channels (1 for an ordinary convolution): output channel `c` of
    /// group `c / (c_out / group)` reads the `c_in / group` input channels of the same group.
    pub(super) group: usize,
    /// Each output channel reads its own input channel only (`c_in == c_out`, group `c_in`).
    pub(super) depthwise: bool,
    /// Per group, `[c_out / group / 4 rounded up][c_in / group·kh·kw][4]`, zeros past the group's
    /// channels; depthwise, `[c_out][kh·kw]`.
    pub(super) weights: Arc<Vec<f32>>,
    /// Per group, one per output channel, zeros past the group's channels (to a multiple of 4).
    pub(super) bias: Arc<Vec<f32>>,
    /// The output is `min(max(sum, low), high)`, NaN kept.
    pub(super) low: f32,
    pub(super) high: f32,
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
    pub(super) fn runs(&self) -> (usize, usize, usize) {
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
    pub(super) fn filters(&self, g: usize) -> Filters<'_> {
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
    pub(super) fn bias_of(&self, c: usize) -> f32 {
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
pub(super) struct Filters<'a> {
    /// `[channels / 4 rounded up][k][4]`; depthwise, `[channels][k]`.
    pub(super) weights: &'a [f32],
    /// One per output channel, to a multiple of 4 (depthwise, one per channel).
    pub(super) bias: &'a [f32],
    pub(super) low: f32,
    pub(super) high: f32,
    pub(super) depthwise: bool,
    /// Taps of one output channel in `weights`.
    pub(super) k: usize,
}

impl Filters<'_> {
    /// Those of output channels `c0..c1` alone (`c0` a multiple of 4 unless depthwise).
    pub(super) fn channels(self, c0: usize, c1: usize) -> Self {
        let (unit, per) = if self.depthwise { (1, self.k) } else { (CO_BLOCK, self.k * CO_BLOCK) };
        let (b0, b1) = (c0 / unit, c1.div_ceil(unit));
        Filters { weights: &self.weights[b0 * per..b1 * per], bias: &self.bias[b0 * unit..b1 * unit], ..self }
    }
}

/// Which of an output channel's weights each tap of a computation reads: every tap in order, or a
/// list (the taps of a part of the output, [`crate::kernel::conv_parts`]).
pub(super) trait TapMap: Copy {
    /// The weight index of tap `tap`.
    fn at(self, tap: usize) -> usize;
}

/// Tap `i` reads weight `i`.
#[derive(Debug, Clone, Copy)]
pub(super) struct AllTaps;

impl TapMap for AllTaps {
    #[inline(always)]
    fn at(self, tap: usize) -> usize {
        tap
    }
}

/// Tap `i` reads weight `self.0[i]`.
#[derive(Debug, Clone, Copy)]
pub(super) struct SomeTaps<'a>(pub(super) &'a [usize]);

impl TapMap for SomeTaps<'_> {
    #[inline(always)]
    fn at(self, tap: usize) -> usize {
        self.0[tap]
    }
}

/// Asserts what the weight reads of every build rely on: each tap's weight index is below `k`.
pub(super) fn assert_map(conv: &Filters<'_>, offsets: &[usize], map: Option<&[usize]>) {
    match map {
        None => assert!(offsets.len() <= conv.k, "more taps than weights"),
        Some(m) => assert!(m.len() == offsets.len() && m.iter().all(|&t| t < conv.k), "tap map out of range"),
    }
}
