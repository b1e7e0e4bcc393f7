//! Softplus, `ln(1 + exp(x))`, on float32 as `max(x, 0) + ln(1 + exp(-|x|))`: nothing overflows
//! (`exp(-|x|)` is at most 1), so a large `x` gives `x` (tract-onnx's `Ln(Exp(x) + 1)` gave `inf`
//! past 88.7), as onnxruntime and onnx's reference (`numpy.logaddexp(0, x)`) do.
//!
//! `ln(1 + e)` for `e` in [0, 1] is `2 atanh(s)`, `s = e / (2 + e)` in [0, 1/3], by its series
//! `2 (s + s^3/3 + ... + s^15/15)` (the rest under 2e-9 relative): no `1 + e` rounded first, so a
//! small `e` keeps its precision (`ln(1 + e)` about `e`). `e` comes from [`super::activation`]'s
//! `exp`, 0 where it would be subnormal (x below about -87.3: the value, under 2^-126, is flushed
//! to 0, as x86 computes subnormals a hundred times slower). Branch-free, so a loop vectorizes.

use std::mem::MaybeUninit;

use super::activation::exp_parts;

/// [`softplus`] of every value of `src`, written to `dst` (as long): compiled for AVX-512 or AVX2
/// and FMA where the CPU has them (the same results: every operation is IEEE's).
pub(crate) fn softplus_into(src: &[f32], dst: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    {
        match super::Isa::here() {
            // Safety: `Isa::here` chose `Avx512` after checking that the CPU has AVX-512F, AVX2 and
            // FMA: the one requirement of calling a function compiled with them.
            Some(super::Isa::Avx512) => return unsafe { into_avx512(src, dst) },
            // Safety: `Isa::here` chose `Fma` after checking that the CPU has AVX2 and FMA.
            Some(super::Isa::Fma) => return unsafe { into_fma(src, dst) },
            None => {}
        }
    }
    into_plain(src, dst)
}

/// [`softplus`] of every value of `xs`, in place (dispatched as [`softplus_into`]).
pub(crate) fn softplus_in_place(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        match super::Isa::here() {
            // Safety: `Isa::here` chose `Avx512` after checking that the CPU has AVX-512F, AVX2 and
            // FMA.
            Some(super::Isa::Avx512) => return unsafe { in_place_avx512(xs) },
            // Safety: `Isa::here` chose `Fma` after checking that the CPU has AVX2 and FMA.
            Some(super::Isa::Fma) => return unsafe { in_place_fma(xs) },
            None => {}
        }
    }
    in_place_plain(xs)
}

/// The two loops, compiled for `$features` (none: plain).
macro_rules! loops {
    ($($features:literal)?, $into:ident, $in_place:ident) => {
        $(#[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)])?
        fn $into(src: &[f32], dst: &mut [MaybeUninit<f32>]) {
            for (d, &x) in dst.iter_mut().zip(src) {
                d.write(softplus(x));
            }
        }

        $(#[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)])?
        fn $in_place(xs: &mut [f32]) {
            xs.iter_mut().for_each(|x| *x = softplus(*x));
        }
    };
}

loops!("avx512f,avx2,fma", into_avx512, in_place_avx512);
loops!("avx2,fma", into_fma, in_place_fma);
loops!(, into_plain, in_place_plain);

/// `max(x, 0) + ln(1 + exp(-|x|))`; NaN for NaN, `x` for `+inf`, 0 for `-inf`.
#[inline(always)]
pub(crate) fn softplus(x: f32) -> f32 {
    let (part, scale) = exp_parts(-x.abs(), 0.0);
    // The product is subnormal where the two biased exponents sum to under 128 (a NaN part's is
    // 255: kept).
    let exponents = (part.to_bits() >> 23) + (scale.to_bits() >> 23);
    let e = part * if exponents < 128 { 0.0 } else { scale };
    let s = e / (2.0 + e);
    let z = s * s;
    let p = (1.0 / 15.0f32).mul_add(z, 1.0 / 13.0);
    let p = p.mul_add(z, 1.0 / 11.0);
    let p = p.mul_add(z, 1.0 / 9.0);
    let p = p.mul_add(z, 1.0 / 7.0);
    let p = p.mul_add(z, 1.0 / 5.0);
    let p = p.mul_add(z, 1.0 / 3.0);
    let s2 = s + s;
    let ln = (s2 * z).mul_add(p, s2);
    // `x > 0` is false for NaN: 0, and `ln` (from a NaN e) is NaN.
    let positive = if x > 0.0 { x } else { 0.0 };
    positive + ln
}

#[cfg(test)]
mod tests {
    use super::*;

    fn softplus64(x: f32) -> f64 {
        let x = x as f64;
        x.max(0.0) + (-x.abs()).exp().ln_1p()
    }

    #[test]
    fn softplus_against_float64_and_its_special_values() {
        let mut worst = (0.0f64, 0.0f32);
        let mut flushed = 0.0f64;
        let bits = |x: f32| x.to_bits();
        // Every float32 step 32 in the bits, both signs, from 0 to 1e6 and to -87.3; below, the
        // flushed values.
        let positive = (bits(0.0)..=bits(1e6)).step_by(32).map(f32::from_bits);
        let negative = (bits(-0.0)..=bits(-100.0)).step_by(32).map(f32::from_bits);
        for x in positive.chain(negative) {
            let got = softplus(x);
            let want = softplus64(x);
            if want < f32::MIN_POSITIVE as f64 {
                assert!(got == 0.0 || (got as f64 - want).abs() <= want * 1e-6, "softplus({x:e}) = {got:e}");
                flushed = flushed.max(want);
                continue;
            }
            let unit = 2f64.powi(want.log2().floor() as i32 - 23);
            let err = (got as f64 - want).abs() / unit;
            if err > worst.0 {
                worst = (err, x);
            }
        }
        assert!(worst.0 <= 3.0, "softplus({:e}): {} ulps", worst.1, worst.0);
        assert!(flushed < f32::MIN_POSITIVE as f64);
        eprintln!("softplus: at most {:.2} ulps (at {:e})", worst.0, worst.1);
        for x in [f32::MAX, 1e30, 100.0, 88.75] {
            assert_eq!(softplus(x), x, "softplus({x}) = x");
        }
        assert_eq!(softplus(f32::INFINITY), f32::INFINITY);
        assert_eq!(softplus(f32::NEG_INFINITY).to_bits(), 0);
        assert_eq!(softplus(-f32::MAX).to_bits(), 0);
        assert_eq!(softplus(-100.0).to_bits(), 0, "3.7e-44, subnormal: flushed");
        assert_eq!(softplus(0.0), std::f32::consts::LN_2);
        assert_eq!(softplus(-0.0), std::f32::consts::LN_2);
        assert!(softplus(f32::NAN).is_nan());
        // -20: exp(-20) = 2.06e-9, where ln(exp(x) + 1) in float32 gives 0.
        assert!((softplus(-20.0) as f64 - softplus64(-20.0)).abs() <= 2.06e-9 * 2.4e-7);
    }

    #[test]
    fn every_loop_gives_the_function_bit_for_bit() {
        let xs: Vec<f32> =
            (-3000..3000).map(|i| i as f32 * 0.037).chain([f32::NAN, f32::INFINITY, -f32::INFINITY, 1e-45]).collect();
        let want: Vec<u32> = xs.iter().map(|&x| softplus(x).to_bits()).collect();
        let mut dst = vec![MaybeUninit::new(0f32); xs.len()];
        softplus_into(&xs, &mut dst);
        // Safety: `softplus_into` wrote every element.
        let got: Vec<u32> = dst.iter().map(|v| unsafe { v.assume_init() }.to_bits()).collect();
        let canon =
            |v: &[u32]| v.iter().map(|&b| if f32::from_bits(b).is_nan() { 0x7fc0_0000 } else { b }).collect::<Vec<_>>();
        assert_eq!(canon(&got), canon(&want));
        let mut in_place = xs.clone();
        softplus_in_place(&mut in_place);
        assert_eq!(canon(&in_place.iter().map(|v| v.to_bits()).collect::<Vec<_>>()), canon(&want));
        let mut plain = xs.clone();
        in_place_plain(&mut plain);
        assert_eq!(canon(&plain.iter().map(|v| v.to_bits()).collect::<Vec<_>>()), canon(&want));
    }
}
