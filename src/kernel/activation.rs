//! The element functions of the plan's `DefinedActivation` (`src/plan/ops/activation.rs`), one
//! float32 value at a time, branch-free (every `if` is a select between two computed values) so that
//! a loop over them vectorizes.
//!
//! - [`hard_swish`]: `x * max(0, min(1, x/6 + 1/2))` in the definition's operations and order (onnx's
//!   reference: the product by `1/6` rounded to float32, `+ 0.5`, the clamp, the product by `x`), so
//!   its bits; nothing overflows (the factor is at most 1), NaN stays.
//! - [`gelu_tanh`]: `x/2 * (1 + tanh(v))`, `v = sqrt(2/pi) * (x + 0.044715 x^3)`, computed as
//!   `x * sigmoid(2v)` (the same function: `1 + tanh(v) = 2 / (1 + exp(-2v))`), the sigmoid from
//!   `e = exp(-|2v|)` (at most 1: never overflows) as `1 / (1 + e)` for `v >= 0` and `e / (1 + e)`
//!   below, the sign of `v` restored by the select. No difference of nearly equal values: below
//!   `x = -3` the value keeps its relative precision down to the smallest normal, and is `-0` below
//!   (x in about [-10.45, -10.1] it would be subnormal: flushed, as x86 computes with subnormals a
//!   hundred times slower; onnx's reference gives `-0` from about -5.4 down, where `1 + tanh(v)` is
//!   0 in float32). `2v` is carried in two float32 (its rounding errors kept), since `exp`
//!   multiplies its relative error by up to 104.
//! - [`exp_parts`]: `exp(a)` for `a <= 0`, NaN kept, as two factors: `2^n * p(r)` (0 below -150) with `n` the nearest
//!   integer to `a / ln 2`, `r = a - n ln 2` (in two parts, fused multiply-adds), `p` the Taylor
//!   polynomial of degree 7 (`|r| <= ln 2 / 2`: truncation under 6e-9 relative), the scaling by `2^n`
//!   in two exact halves so that results down to the smallest subnormal are rounded once; a second,
//!   small part of the argument is added to `r`. Not the softmax's exp (`src/kernel/exp.rs`): that one flushes
//!   results under the smallest normal to 0 (a sum of at least 1 does not see them), where Gelu's
//!   value keeps them, and takes no second part.

/// `1/6`, as float32 (onnx's reference: `alpha = 1/6` times a float32 tensor).
const SIXTH: f32 = 1.0 / 6.0;

/// The hard swish of `x` as onnx defines it (see the module docs).
#[inline(always)]
pub(crate) fn hard_swish(x: f32) -> f32 {
    let t = x * SIXTH + 0.5;
    // `t < 0` and `t > 1` are false for NaN: a NaN `t` goes on (and `x * NaN` is NaN anyway).
    let t = if t < 0.0 { 0.0 } else { t };
    let t = if t > 1.0 { 1.0 } else { t };
    x * t
}

/// `2 * sqrt(2 / pi)` in two parts (the second the first's rounding error): the factor of `2v`.
const C1_HI: f32 = f32::from_bits(0x3fcc_422a);
const C1_LO: f32 = f32::from_bits(0xb342_bc9b);
/// `2 * sqrt(2 / pi) * 0.044715` in two parts: the cubic term's factor of `2v`.
const C3_HI: f32 = f32::from_bits(0x3d92_2279);
const C3_LO: f32 = f32::from_bits(0x3124_d8b5);
/// Past this magnitude `|2v|` is over 600: the sigmoid is 0 or 1 in float32 ([`exp_parts`] is 0
/// below -150); the argument is computed on `x` clamped to it, so that `x^3` never overflows.
const GELU_SATURATED: f32 = 20.0;

/// Gelu in its tanh form (see the module docs).
#[inline(always)]
pub(crate) fn gelu_tanh(x: f32) -> f32 {
    let (v_hi, v_lo) = gelu_argument(x);
    // exp(-|2v|), the low part with the sign of the high one.
    let (a_hi, a_lo) = if v_hi < 0.0 { (v_hi, v_lo) } else { (-v_hi, -v_lo) };
    let (e_part, e_scale) = exp_parts(a_hi, a_lo);
    // e for the sum 1 + e, 0 where e < 2^-25 (1 + e rounds to 1 there anyway): no subnormal e is
    // formed (x86 computes with subnormals a hundred times slower).
    let e = e_part * if e_scale < SUM_SCALE { 0.0 } else { e_scale };
    // v >= 0 (and -0): x / (1 + e); below: x * e / (1 + e), the factor 2^-k of e last. A NaN v
    // gives NaN either way (e is NaN).
    let (num, scale) = if v_hi < 0.0 { (e_part, e_scale) } else { (1.0, 1.0) };
    let y = x * num / (1.0 + e);
    // Where that last factor would make the value subnormal (x in about [-10.45, -10.1]), the value
    // is flushed to -0 (x's sign), for the same reason: the exponents of y and of the factor
    // (biased by 127 each) sum to under 128. A subnormal x (v about 0, factor 1) keeps x/2.
    let exponents = ((y.to_bits() >> 23) & 0xff) + (scale.to_bits() >> 23);
    let scale = if exponents < 128 && scale < 1.0 { 0.0 } else { scale };
    y * scale
}

/// Below this factor of `exp`'s second part (`2^-20`), `e < 2^-25` and `1 + e` is 1.
const SUM_SCALE: f32 = 1.0 / 1_048_576.0;

/// `2v = x * (c1 + c3 x²)` for Gelu's tanh form, as a sum of two float32 (`hi + lo`, `lo` under
/// an ulp of `hi`): the product and sums carried with their rounding errors (fused multiply-adds
/// give each product's error exactly, a two-sum each sum's), so that `exp(2v)` (relative error
/// `|2v|` times that of `2v`, up to 104 times) keeps float32's precision. `x` beyond
/// [`GELU_SATURATED`] is clamped (NaN kept).
#[inline(always)]
fn gelu_argument(x: f32) -> (f32, f32) {
    let x = if x < -GELU_SATURATED { -GELU_SATURATED } else { x };
    let x = if x > GELU_SATURATED { GELU_SATURATED } else { x };
    // x² = q + q_lo exactly.
    let q = x * x;
    let q_lo = x.mul_add(x, -q);
    // c3_hi * q = p + p_lo exactly.
    let p = C3_HI * q;
    let p_lo = C3_HI.mul_add(q, -p);
    // c1_hi + p = m + m_lo exactly (two-sum: either may be the larger).
    let m = C1_HI + p;
    let b = m - C1_HI;
    let m_lo = (C1_HI - (m - b)) + (p - b);
    // The small terms: c1_lo + c3_lo * q + c3_hi * q_lo (c3_lo * q_lo is under 2^-48 of m).
    let small = C3_HI.mul_add(q_lo, C3_LO.mul_add(q, C1_LO + p_lo + m_lo));
    // x * (m + small) = v + v_lo: x * m exactly, plus x * small.
    let v = x * m;
    let v_lo = x.mul_add(small, x.mul_add(m, -v));
    (v, v_lo)
}

/// `log2(e)`.
const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// `ln 2` in two parts: the first exact in 9 bits (so `n * LN2_HI` is exact for `|n| < 2^15`),
/// the second the rest.
const LN2_HI: f32 = f32::from_bits(0x3f31_8000); // 0.693359375
#[allow(clippy::excessive_precision)]
const LN2_LO: f32 = -2.121_944_400_546_905_8e-4;
/// `1.5 * 2^23`: a float32 of this magnitude has no fraction bits, so adding it rounds to an
/// integer, whose value is then the low bits of the sum.
const ROUNDER: f32 = 12_582_912.0;
/// Below this [`exp_parts`] gives 0: `exp(-150)` is 7e-66, under the smallest subnormal even
/// multiplied by any `x` for which Gelu's argument gets there. The parts are normal floats above it.
const LOWEST: f32 = -150.0;

/// `exp(a + a_lo)` for `a <= 0` (or NaN, which stays NaN), `a_lo` a correction under an ulp of `a`
/// (0 for a plain `exp(a)`); `a = -inf` gives 0. See the module docs.
#[cfg(test)]
#[inline(always)]
pub(crate) fn exp_nonpositive(a: f32, a_lo: f32) -> f32 {
    let (part, scale) = exp_parts(a, a_lo);
    part * scale
}

/// [`exp_nonpositive`] as two factors: the value scaled by a power of two (at least `2^-109`,
/// normal, or 0 below [`LOWEST`]), and that power's inverse (at least `2^-109` too), whose product
/// rounds once.
#[inline(always)]
pub(crate) fn exp_parts(a: f32, a_lo: f32) -> (f32, f32) {
    // NaN < LOWEST is false: NaN goes on, and every later step keeps it.
    let low = a < LOWEST;
    let a = if low { LOWEST } else { a };
    let t = a.mul_add(LOG2_E, ROUNDER);
    let n = t - ROUNDER;
    let r = n.mul_add(-LN2_HI, a);
    let r = n.mul_add(-LN2_LO, r) + a_lo;
    // 1 + r + r²/2 + ... + r^7/7!, by Horner's rule.
    let p = (1.0 / 5040.0f32).mul_add(r, 1.0 / 720.0);
    let p = p.mul_add(r, 1.0 / 120.0);
    let p = p.mul_add(r, 1.0 / 24.0);
    let p = p.mul_add(r, 1.0 / 6.0);
    let p = p.mul_add(r, 0.5);
    let p = p.mul_add(r, 1.0);
    let p = p.mul_add(r, 1.0);
    // n (in [-217, 0]) from the bits of t; 2^n as 2^n1 * 2^n2, each in [-109, 0] (a normal float).
    let k = (t.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    let k1 = k >> 1;
    let k2 = k.wrapping_sub(k1);
    let s1 = f32::from_bits((k1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((k2.wrapping_add(127) as u32) << 23);
    (if low { 0.0 } else { p * s1 }, s2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units in the last place of float32 between `got` and the float64 `want` (where `want` rounds
    /// to a float32 of magnitude at least the smallest normal; below, in units of the smallest
    /// subnormal): how far `got` is from the real value, in `got`'s own precision.
    fn ulps(got: f32, want: f64) -> f64 {
        let w = want.abs();
        let unit = if w < f32::MIN_POSITIVE as f64 {
            2f64.powi(-149)
        } else {
            // The ulp of a float32 in [2^e, 2^(e+1)): 2^(e-23).
            2f64.powi(w.log2().floor() as i32 - 23)
        };
        (got as f64 - want).abs() / unit
    }

    /// Every float32 from `lo` to `hi` (same sign, `lo` nearer zero for the positives) stepping by
    /// `step` in their bits: a dense sweep that covers each binade evenly.
    fn sweep(lo: f32, hi: f32, step: u32) -> impl Iterator<Item = f32> {
        let (a, b) = (lo.to_bits().min(hi.to_bits()), lo.to_bits().max(hi.to_bits()));
        (a..=b).step_by(step as usize).map(f32::from_bits)
    }

    #[test]
    fn exp_is_within_one_ulp_over_every_nonpositive_float_and_exact_at_the_ends() {
        let mut worst = (0.0f64, 0.0f32);
        // Every float32 from -0 to -104 (and beyond), step 7 in the bits: about 160 million / 7.
        for a in sweep(-0.0, -110.0, 7) {
            let got = exp_nonpositive(a, 0.0);
            let err = ulps(got, (a as f64).exp());
            if err > worst.0 {
                worst = (err, a);
            }
        }
        assert!(worst.0 <= 1.0, "exp({:e}): {} ulps", worst.1, worst.0);
        eprintln!("exp: at most {:.3} ulps (at {:e})", worst.0, worst.1);
        assert_eq!(exp_nonpositive(0.0, 0.0), 1.0);
        assert_eq!(exp_nonpositive(-0.0, 0.0), 1.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY, 0.0).to_bits(), 0);
        assert_eq!(exp_nonpositive(-f32::MAX, 0.0).to_bits(), 0);
        assert_eq!(exp_nonpositive(-104.0, 0.0).to_bits(), 0);
        // The smallest subnormal: exp(-103.279) = 2^-149 (1.5 units rounds to... the nearest).
        assert_eq!(exp_nonpositive(-103.27893, 0.0).to_bits(), 1);
        assert!(exp_nonpositive(f32::NAN, 0.0).is_nan());
        assert!(exp_nonpositive(-f32::NAN, 0.0).is_nan());
    }

    /// Gelu's tanh form in float64 on the float32 `x`, as `x / (1 + exp(-2v))` (`1 + tanh(v)`
    /// cancels in float64 too, below `v = -19`).
    fn gelu64(x: f32) -> f64 {
        let x = x as f64;
        let v = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
        x / (1.0 + (-2.0 * v).exp())
    }

    #[test]
    fn gelu_tanh_against_float64_and_its_special_values() {
        // Every float32 step 64 in the bits over both signs, up to where the value is x or -0: the
        // error in units of the result's last place, worst first by region.
        let mut worst_near = 0.0f64;
        let mut worst_below = (0.0f64, 0.0f32);
        let mut flushed = 0.0f64;
        for x in sweep(0.0, 1e6, 64).chain(sweep(-0.0, -12.0, 64)) {
            let got = gelu_tanh(x);
            let want = gelu64(x);
            if x < -10.0 && got == 0.0 {
                // Flushed where the value is under the smallest normal.
                assert_eq!(got.to_bits(), (-0f32).to_bits(), "gelu({x:e})");
                flushed = flushed.max(want.abs());
                continue;
            }
            let err = ulps(got, want);
            if x >= -3.0 {
                worst_near = worst_near.max(err);
            } else if err > worst_below.0 {
                worst_below = (err, x);
            }
        }
        assert!(worst_near <= 4.0, "gelu from -3 up: {worst_near} ulps");
        assert!(flushed <= f32::MIN_POSITIVE as f64, "a flushed value was {flushed:e}");
        assert!(worst_below.0 <= 4.0, "gelu({:e}): {} ulps", worst_below.1, worst_below.0);
        eprintln!("gelu: at most {worst_near:.2} ulps from -3 up, {:.2} below (at {:e})", worst_below.0, worst_below.1);
        let exact = |x: f32| gelu_tanh(x).to_bits();
        assert_eq!(exact(0.0), 0f32.to_bits());
        assert_eq!(exact(-0.0), (-0f32).to_bits());
        assert_eq!(exact(f32::INFINITY), f32::INFINITY.to_bits());
        assert!(gelu_tanh(f32::NEG_INFINITY).is_nan(), "-inf * 0, as the definition");
        assert!(gelu_tanh(f32::NAN).is_nan());
        for x in [f32::MAX, 1e30, 100.0, 88.5, 10.0] {
            assert_eq!(exact(x), x.to_bits(), "gelu({x}) = x");
        }
        for x in [-f32::MAX, -1e30, -100.0, -88.5, -12.0] {
            assert_eq!(exact(x), (-0f32).to_bits(), "gelu({x}) = -0");
        }
        // The smallest magnitudes: x/2, subnormal or not.
        assert_eq!(gelu_tanh(f32::MIN_POSITIVE), f32::MIN_POSITIVE / 2.0);
        assert_eq!(gelu_tanh(-1e-40), -1e-40 / 2.0);
        // x/2 = 2^-150 rounds to even, +0 (the value, a hair above it, rounds to 2^-149: one unit).
        assert_eq!(gelu_tanh(1e-45).to_bits(), 0);
        assert_eq!(gelu_tanh(-1e-20), -5e-21);
    }

    #[test]
    fn hard_swish_is_the_definition_at_every_float() {
        // The definition in float64 (exact here for the clamp) against ours; the only rounding is the
        // definition's own (x/6 rounded, + 0.5 rounded, x * t rounded), so compare with the float32
        // steps written out, then spot values.
        for x in sweep(0.0, f32::MAX, 4099).chain(sweep(-0.0, -f32::MAX, 4099)) {
            let t = ((x * (1.0f32 / 6.0)) + 0.5).clamp(0.0, 1.0);
            assert_eq!(hard_swish(x).to_bits(), (x * t).to_bits(), "hard_swish({x:e})");
        }
        assert_eq!(hard_swish(f32::MAX), f32::MAX);
        assert_eq!(hard_swish(1e38), 1e38);
        assert_eq!(hard_swish(f32::INFINITY), f32::INFINITY);
        assert_eq!(hard_swish(-f32::MAX).to_bits(), (-0f32).to_bits());
        assert!(hard_swish(f32::NEG_INFINITY).is_nan(), "-inf * 0, as the definition");
        assert_eq!(hard_swish(-0.0).to_bits(), (-0f32).to_bits());
        assert_eq!(hard_swish(1.0), 1.0 * (1.0f32 / 6.0 + 0.5));
        assert_eq!(hard_swish(3.0), 3.0);
        assert_eq!(hard_swish(-3.0).to_bits(), (-0f32).to_bits());
        assert!(hard_swish(f32::NAN).is_nan());
    }
}
