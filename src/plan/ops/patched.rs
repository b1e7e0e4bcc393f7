//! [`PatchedActivation`]: tract's float32 `HardSwish` and tanh-form `Gelu` with the values where
//! its kernel is wrong computed again by the definition; every other value keeps tract's bits.
//!
//! - `HardSwish` is `x * max(0, min(1, x/6 + 1/2))`; tract's kernel computes `x * relu6(x + 3) *
//!   (1/6)`, whose `x * 6` overflows for `x > f32::MAX / 6` (the largest float gave `inf`). There
//!   `relu6` is 6 and the definition's factor 1, so the value is `x` itself, as onnxruntime gives.
//!   Our loop computes tract's arithmetic in tract's order (its bits) and keeps `x` where a finite
//!   `x` gave an infinity, in one pass (compiled for AVX-512 or AVX2 where the CPU has it).
//! - `Gelu(approximate = "tanh")` is `x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`; tract's
//!   fitted tanh stops at `-0.9999994`, so for a negative `x` past about -3 the factor `1 + tanh`
//!   (a difference of nearly equal values) kept an error up to `6e-7`: `x * 3e-7` where the value is
//!   `-0` for `x <= -9` (and `-inf` where it is NaN, `-inf * 0`). For `x < -3` (tract's kernel runs
//!   first, those inputs kept aside) the value is `x * e / (1 + e)` with `e = exp(2v)`, `v` the
//!   tanh's argument: the same function without the cancellation in `1 + tanh(v)`, within 2e-7 of
//!   onnx's reference (which rounds the tanh to float32 first) and closer to the real value.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::nn::gelu_approximate::GeluApproximate;

/// Which activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Patched {
    /// `HardSwish`: the inputs past `f32::MAX / 6`.
    HardSwish,
    /// `Gelu` in its tanh form: the inputs below -3.
    GeluTanh,
}

/// Gelu's `sqrt(2 / pi)` and cubic coefficient, as tract's kernel has them.
const SQRT_2_OVER_PI: f32 = 0.797_884_6;
const COEF: f32 = 0.044715;

impl Patched {
    /// Whether tract's kernel is wrong at `x`.
    #[inline(always)]
    fn needs(self, x: f32) -> bool {
        match self {
            Patched::HardSwish => x > f32::MAX / 6.0 && x.is_finite(),
            Patched::GeluTanh => x < -3.0,
        }
    }

    /// The value at `x` by the definition.
    fn value(self, x: f32) -> f32 {
        match self {
            Patched::HardSwish => x,
            Patched::GeluTanh => {
                let v = SQRT_2_OVER_PI * (x + COEF * x * x * x);
                let e = (2.0 * v).exp();
                x * (e / (1.0 + e))
            }
        }
    }
}

/// tract's elementwise op, with the inputs its kernel gets wrong computed again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatchedActivation {
    /// tract's op: every value first.
    pub stock: ElementWiseOp,
    /// Which activation.
    pub kind: Patched,
}

impl PatchedActivation {
    /// Our op for tract's `op` over `fact`, if it is a float32 `HardSwish` or tanh-form `Gelu`.
    pub(crate) fn replacing(op: &ElementWiseOp, fact: &TypedFact) -> Option<PatchedActivation> {
        if op.1.is_some() || fact.datum_type != f32::datum_type() {
            return None;
        }
        let kind = match op.0.name().as_ref() {
            "HardSwish" => Patched::HardSwish,
            "GeluApproximate" if op.0.downcast_ref::<GeluApproximate>().is_some_and(|g| !g.fast_impl) => {
                Patched::GeluTanh
            }
            _ => return None,
        };
        Some(PatchedActivation { stock: op.clone(), kind })
    }
}

impl Op for PatchedActivation {
    fn name(&self) -> StaticName {
        match self.kind {
            Patched::HardSwish => "PatchedHardSwish".into(),
            Patched::GeluTanh => "PatchedGeluTanh".into(),
        }
    }

    op_as_typed_op!();
}

impl EvalOp for PatchedActivation {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        if x.datum_type() != f32::datum_type() {
            return self.stock.eval(ctx, tvec!(x));
        }
        let kind = self.kind;
        if kind == Patched::HardSwish {
            if !x.is_exclusive() {
                // Shared: read it and write a new tensor in one pass (tract's op copies it first).
                let plain = x.try_as_plain_ram()?;
                let src = plain.as_slice::<f32>()?;
                let mut y = vec![0f32; src.len()];
                hard_swish(src, &mut y);
                return Ok(tvec!(tract_ndarray::ArrayD::from_shape_vec(x.shape(), y)?.into_tvalue()));
            }
            // Ours alone: in place, as tract's op.
            let mut y = x.into_tensor();
            hard_swish_in_place(y.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?);
            return Ok(tvec!(y.into_tvalue()));
        }
        let patches: Vec<(usize, f32)> = {
            let plain = x.try_as_plain_ram()?;
            let xs = plain.as_slice::<f32>()?;
            // Blocks of 64 scanned by a loop the compiler vectorizes (no early exit); the inputs of
            // the blocks that hold one, one by one.
            let mut found = Vec::new();
            for (b, block) in xs.chunks(64).enumerate() {
                if block.iter().fold(false, |any, &v| any | kind.needs(v)) {
                    for (i, &v) in block.iter().enumerate() {
                        if kind.needs(v) {
                            found.push((b * 64 + i, kind.value(v)));
                        }
                    }
                }
            }
            found
        };
        let y = self.stock.eval(ctx, tvec!(x))?.remove(0);
        if patches.is_empty() {
            return Ok(tvec!(y));
        }
        let mut y = y.into_tensor();
        {
            let mut plain = y.try_as_plain_ram_mut()?;
            let ys = plain.as_slice_mut::<f32>()?;
            for (i, v) in patches {
                ys[i] = v;
            }
        }
        Ok(tvec!(y.into_tvalue()))
    }
}

/// tract's hard swish of `src`, `x * relu6(x + 3) * (1/6)` in its order, into `out` (of its
/// length); `x` where a finite `x` overflowed.
fn hard_swish(src: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // Safety: the CPU has AVX-512F, checked just above: the one requirement of calling a
            // function compiled with `target_feature(enable = "avx512f")`.
            return unsafe { hard_swish_avx512(src, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // Safety: the CPU has AVX2, checked just above (as for AVX-512F).
            return unsafe { hard_swish_avx2(src, out) };
        }
    }
    hard_swish_plain(src, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn hard_swish_avx512(src: &[f32], out: &mut [f32]) {
    hard_swish_plain(src, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn hard_swish_avx2(src: &[f32], out: &mut [f32]) {
    hard_swish_plain(src, out)
}

/// [`hard_swish`] in place.
fn hard_swish_in_place(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // Safety: the CPU has AVX2, checked just above (as in `hard_swish`).
        return unsafe { hard_swish_in_place_avx2(xs) };
    }
    xs.iter_mut().for_each(|v| *v = hard_swish_one(*v));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn hard_swish_in_place_avx2(xs: &mut [f32]) {
    xs.iter_mut().for_each(|v| *v = hard_swish_one(*v));
}

/// The body of [`hard_swish`], one loop the compiler vectorizes.
#[inline(always)]
fn hard_swish_plain(src: &[f32], out: &mut [f32]) {
    for (v, &x) in out.iter_mut().zip(src) {
        *v = hard_swish_one(x);
    }
}

/// One value of [`hard_swish`].
#[inline(always)]
fn hard_swish_one(x: f32) -> f32 {
    const INV6: f32 = 1.0 / 6.0;
    let relu6 = (x + 3.0).max(0.0).min(6.0);
    let y = x * relu6 * INV6;
    if y.is_infinite() && x.is_finite() {
        x
    } else {
        y
    }
}

impl TypedOp for PatchedActivation {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::nn::{gelu_approximate::gelu_approximate, hard_swish};

    fn eval(op: &dyn EvalOp, xs: &[f32]) -> Vec<f32> {
        let out = op.eval(&EvalContext::out_of_plan(), tvec!(tensor1(xs).into_tvalue())).unwrap();
        out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
    }

    /// `got` and `want` bit for bit, the first difference named.
    fn same_bits(got: &[f32], want: &[f32], xs: &[f32]) {
        assert_eq!(got.len(), want.len());
        if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
            panic!("at x = {:e}: {:e}, tract's {:e}", xs[i], got[i], want[i]);
        }
    }

    fn ours(stock: ElementWiseOp) -> PatchedActivation {
        PatchedActivation::replacing(&stock, &f32::fact([1])).unwrap()
    }

    #[test]
    fn hard_swish_of_the_largest_floats_is_x_and_tracts_bits_elsewhere() {
        let op = ours(hard_swish());
        let big = [f32::MAX, f32::MAX / 2.0, 1e38, -f32::MAX, f32::INFINITY];
        assert_eq!(eval(&op, &big)[..4], [f32::MAX, f32::MAX / 2.0, 1e38, -0.0]);
        assert_eq!(eval(&op, &big)[4], f32::INFINITY);
        let xs: Vec<f32> = (-4000..4000).map(|i| i as f32 * 0.0037).chain([5e37, -5e37, 0.0, -0.0]).collect();
        same_bits(&eval(&op, &xs), &eval(&hard_swish(), &xs), &xs);
    }

    #[test]
    fn gelu_tanh_reaches_zero_for_large_negative_x_and_keeps_tracts_bits_from_minus_three() {
        let op = ours(gelu_approximate(false));
        assert!(PatchedActivation::replacing(&gelu_approximate(true), &f32::fact([1])).is_none());
        let got = eval(&op, &[-100.0, -88.5, -1e30, -10.0, f32::NEG_INFINITY]);
        assert_eq!(got[..3].iter().map(|v| v.to_bits()).collect::<Vec<_>>(), [(-0.0f32).to_bits(); 3]);
        // -10: the real value, -1.2e-37 (tract's kernel: -3e-6).
        assert!(got[3] < 0.0 && got[3] > -2e-37, "{}", got[3]);
        assert!(got[4].is_nan());
        // Below -3: the function by float64, within 1e-3 relative or 1e-10 (the argument of exp is rounded
        // to float32, and its error grows with it).
        for k in 1..400 {
            let x = -3.0f64 - k as f64 * 0.015625;
            let exact = 0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh());
            let got = eval(&op, &[x as f32])[0] as f64;
            assert!((got - exact).abs() <= 1e-3 * exact.abs() + 1e-10, "gelu({x}) = {got}, expected {exact}");
        }
        let xs: Vec<f32> = (-3000..3000).map(|i| i as f32 / 1000.0).collect();
        same_bits(&eval(&op, &xs), &eval(&gelu_approximate(false), &xs), &xs);
    }
}
