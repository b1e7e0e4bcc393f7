//! `exp` for the softmax kernel: branch-free in f32 so that a loop of it vectorizes.
//!
//! `exp(x) = 2^k * exp(r)` with `k = round(x / ln 2)` and `r = x - k ln 2`, `|r| <= ln(2) / 2`;
//! `exp(r)` is its Taylor polynomial to degree 7, whose truncation error is below
//! `0.35^8 / 8! < 6e-9` relative, a tenth of f32's half-ulp. `ln 2` is split in two parts so that
//! `k ln 2` is exact for every `k` reached. `2^k` is built from its bits. Every step is a plain
//! arithmetic or select, so the compiler turns a loop over a slice into SIMD code, where the libm
//! call of `f32::exp` runs one value at a time.

use tract_core::num_traits::Float;

/// A float type's `exp` as the softmax kernel computes it.
pub(crate) trait KernelExp: Float {
    /// `e^self`: within 2 ulp for f32 (checked by the tests against f64), `f64::exp` for f64.
    fn kernel_exp(self) -> Self;
}

impl KernelExp for f64 {
    #[inline(always)]
    fn kernel_exp(self) -> f64 {
        self.exp()
    }
}

/// At or below this, `exp` is below the smallest normal f32 (1.2e-38) and the result is 0, as a
/// masked (`-inf`) logit must give. Subnormal results are flushed on purpose: x86 computes with
/// subnormals a hundred times slower than with normal floats, and a softmax row of masked logits
/// (Swin's window mask adds -100) is full of them; as a share of a sum of at least 1 they are far
/// below f32's precision.
const F32_LOW: f32 = -87.336_54;
/// Above this, `exp` overflows f32.
const F32_HIGH: f32 = 88.722_84;
/// Adding then subtracting this rounds a float of magnitude below 2^22 to an integer (ties to even).
const ROUNDER: f32 = 12_582_912.0; // 1.5 * 2^23
/// `ln 2` in two parts: the first has few significant bits so that `k * LN2_HI` is exact.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;

impl KernelExp for f32 {
    #[inline(always)]
    fn kernel_exp(self) -> f32 {
        let x = self.clamp(F32_LOW, F32_HIGH);
        let shifted = x * std::f32::consts::LOG2_E + ROUNDER;
        let k = shifted - ROUNDER;
        let r = (x - k * LN2_HI) - k * LN2_LO;
        // Horner form of 1 + r + r^2/2! + ... + r^7/7!.
        let mut p = 1.0 / 5040.0;
        p = p * r + 1.0 / 720.0;
        p = p * r + 1.0 / 120.0;
        p = p * r + 1.0 / 24.0;
        p = p * r + 1.0 / 6.0;
        p = p * r + 0.5;
        p = p * r + 1.0;
        p = p * r + 1.0;
        // 2^k from its bits: k is in -126..=128 here; 2^128 in two factors. The integer k is read
        // from `shifted`'s bits (ROUNDER + k, one binade, a unit last place): a float-to-int `as`
        // saturates, which the compiler does lane by lane and so would not vectorize the loop.
        let k = shifted.to_bits().wrapping_sub(ROUNDER.to_bits()) as i32;
        let half = k / 2;
        let scale = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
        let value = p * scale(half) * scale(k - half);
        // Selects, not branches, so that a loop of them vectorizes.
        let value = if self > F32_HIGH { f32::INFINITY } else { value };
        let value = if self <= F32_LOW { 0.0 } else { value };
        if self.is_nan() {
            self
        } else {
            value
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units in the last place between `got` and the exact `want`.
    fn ulps(got: f32, want: f64) -> f64 {
        let w = want as f32;
        let ulp = (f32::from_bits(w.to_bits() + 1) - w).abs() as f64;
        (got as f64 - want).abs() / ulp
    }

    #[test]
    fn within_two_ulp_of_the_exact_value_over_the_whole_range() {
        let mut worst: f64 = 0.0;
        let mut x = -87.0f32;
        while x < 88.0 {
            let u = ulps(x.kernel_exp(), (x as f64).exp());
            assert!(u <= 2.0, "exp({x}) = {} vs {}: {u} ulp", x.kernel_exp(), (x as f64).exp());
            worst = worst.max(u);
            x += 0.0137;
        }
        assert!(worst > 0.0, "the sweep measured something");
    }

    #[test]
    fn edges() {
        assert_eq!(0.0f32.kernel_exp(), 1.0);
        assert_eq!(f32::NEG_INFINITY.kernel_exp(), 0.0);
        assert_eq!((-200.0f32).kernel_exp(), 0.0);
        assert_eq!(f32::INFINITY.kernel_exp(), f32::INFINITY);
        assert_eq!(100.0f32.kernel_exp(), f32::INFINITY);
        assert!(f32::NAN.kernel_exp().is_nan());
        // Subnormal results are flushed to zero; the smallest normal ones are kept.
        assert_eq!((-100.0f32).kernel_exp(), 0.0);
        assert_eq!((-87.4f32).kernel_exp(), 0.0);
        let small = (-87.3f32).kernel_exp();
        assert!(small >= f32::MIN_POSITIVE && ulps(small, (-87.3f32 as f64).exp()) <= 2.0, "{small}");
    }
}
