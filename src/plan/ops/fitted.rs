//! [`NanActivation`]: tract's float32 `Sigmoid` and `Tanh` with NaN kept.
//!
//! tract's sigmoid and tanh (`fma_sigmoid_f32`, `fma_tanh_f32` on x86-64 with AVX2 and FMA;
//! `avx512_sigmoid_f32`, `avx512_tanh_f32` with AVX-512) clamp their input (to `[-14.5, 14.5]` and
//! `[-7.5, 7.5]`) with `vmaxps`/`vminps` ordered so that a NaN becomes the bound, then evaluate a
//! rational fit: NaN came out as `4.77e-7` (sigmoid) and `-0.9999994` (tanh). onnxruntime and onnx's
//! reference give NaN.
//!
//! On x86-64 with AVX2 and FMA, [`NanActivation`] computes the fit tract's kernel uses over the
//! tensor (each kernel has its own coefficients), in the same operations in the same order (clamp,
//! `x²`, the numerator's and the denominator's fused multiply-adds, the product by `x`, one division,
//! `+ 0.5` for the sigmoid), so every value that is not NaN gets tract's bits (but for a tanh of
//! magnitude under about 1e-36, which tract's kernel, reading denormals as zero, flushes to 0 and
//! the fit gives as about `x`, as onnxruntime does); its clamp is written
//! `if x < LOW { LOW } else { x }`, which compiles to one `vmaxps` with the operands the other way
//! round, keeping NaN at no cost. The loop is vectorized by the compiler. A shared input (a value
//! another node also reads, or a caller's) is read once into a new tensor, where tract's op copies it
//! then works in place; an input the op holds alone is worked on in place. Elsewhere it reads the
//! input once for NaN and runs tract's own op, putting NaN back where the input had one.

#[cfg(target_arch = "x86_64")]
use crate::kernel::Isa;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;

/// Which function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Activation {
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
    /// `tanh(x)`.
    Tanh,
}

/// tract's float32 sigmoid or tanh with NaN kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NanActivation {
    /// tract's op, which runs where our kernel does not (no AVX2 and FMA).
    pub stock: ElementWiseOp,
    /// Which function.
    pub activation: Activation,
}

impl NanActivation {
    /// Our op for tract's elementwise `op` over `fact`, if it is a float32 sigmoid or tanh.
    pub(crate) fn replacing(op: &ElementWiseOp, fact: &TypedFact) -> Option<NanActivation> {
        let activation = match op.0.name().as_ref() {
            "Sigmoid" => Activation::Sigmoid,
            "Tanh" => Activation::Tanh,
            _ => return None,
        };
        let f32s = op.1.is_none() && fact.datum_type == f32::datum_type();
        f32s.then(|| NanActivation { stock: op.clone(), activation })
    }
}

impl Op for NanActivation {
    fn name(&self) -> StaticName {
        match self.activation {
            Activation::Sigmoid => "NanSigmoid".into(),
            Activation::Tanh => "NanTanh".into(),
        }
    }

    op_as_typed_op!();
}

impl EvalOp for NanActivation {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        if x.datum_type() != f32::datum_type() {
            return self.stock.eval(ctx, tvec!(x));
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(isa) = Isa::here() {
            if !x.is_exclusive() {
                // Shared: read it and write a new tensor in one pass (tract's op copies it first).
                let plain = x.try_as_plain_ram()?;
                let y = isa.collect(plain.as_slice::<f32>()?, self.activation);
                return Ok(tvec!(tract_ndarray::ArrayD::from_shape_vec(x.shape(), y)?.into_tvalue()));
            }
            // Ours alone: in place, as tract's op.
            let mut y = x.into_tensor();
            {
                let mut plain = y.try_as_plain_ram_mut()?;
                isa.in_place(plain.as_slice_mut::<f32>()?, self.activation);
            }
            return Ok(tvec!(y.into_tvalue()));
        }
        stock_with_nan(&self.stock, ctx, x)
    }
}

impl TypedOp for NanActivation {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let a = inputs.first().context("NanActivation takes an input")?;
        Ok(tvec!(f32::fact(a.shape.clone())))
    }
}

/// tract's op on `x`, NaN put back where `x` had one (where our kernel does not run).
fn stock_with_nan(stock: &ElementWiseOp, ctx: &EvalContext, x: TValue) -> TractResult<TVec<TValue>> {
    if !has_nan(x.try_as_plain_ram()?.as_slice::<f32>()?) {
        return stock.eval(ctx, tvec!(x));
    }
    let mut out = stock.eval(ctx, tvec!(x.clone()))?;
    let y = out.pop().context("the activation returned nothing")?;
    let mut y = y.into_tensor();
    {
        let mut plain = y.try_as_plain_ram_mut()?;
        let src = x.try_as_plain_ram()?;
        for (y, v) in plain.as_slice_mut::<f32>()?.iter_mut().zip(src.as_slice::<f32>()?) {
            if v.is_nan() {
                *y = *v;
            }
        }
    }
    Ok(tvec!(y.into_tvalue()))
}

/// Whether `xs` holds a NaN, in integer operations the compiler vectorizes: a NaN's magnitude bits
/// are above infinity's, so adding `0x007f_ffff` to them carries into bit 31.
fn has_nan(xs: &[f32]) -> bool {
    let carry = |acc: u32, v: &f32| acc | (v.to_bits() & 0x7fff_ffff).wrapping_add(0x007f_ffff);
    xs.chunks(4096).any(|c| c.iter().fold(0u32, carry) & 0x8000_0000 != 0)
}

/// A rational fit as tract's kernels evaluate it: `x * p(x²) / q(x²) (+ offset)` over `x` clamped
/// to `[-bound, bound]`, each polynomial by Horner's rule from its highest coefficient, one fused
/// multiply-add a step.
struct Fit {
    /// The clamp.
    bound: f32,
    /// `p`'s coefficients, highest first.
    p: &'static [f32],
    /// `q`'s coefficients, highest first.
    q: &'static [f32],
    /// Added at the end (the sigmoid's 0.5) when true.
    half: bool,
}

/// tract's `fma_sigmoid_f32` (AVX2 and FMA, 8 lanes): its coefficients, as written there.
#[allow(clippy::excessive_precision)]
const FMA_SIGMOID: Fit = Fit {
    bound: 14.5,
    p: &[
        -4.433153405e-18,
        1.169974371e-14,
        -1.875289645e-11,
        4.257889523e-8,
        0.00004811817576,
        0.008163842030,
        0.2499999971,
    ],
    q: &[3.922935744e-6, 0.001524872358, 0.1159886749, 1.0],
    half: true,
};

/// tract's `avx512_sigmoid_f32` (AVX-512, 16 lanes), which tract prefers where the CPU has AVX-512:
/// its own coefficients, as written there.
#[allow(clippy::excessive_precision)]
const AVX512_SIGMOID: Fit = Fit {
    bound: 14.5,
    p: &[4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05, 8.51377133304701e-03, 2.48287947061529e-01],
    q: &[
        6.10247389755681e-13,
        5.76102136993427e-09,
        6.29106785017040e-06,
        1.70198817374094e-03,
        1.16817656904453e-01,
        9.93151921023180e-01,
    ],
    half: true,
};

/// tract's `fma_tanh_f32`: its coefficients, as written there.
#[allow(clippy::excessive_precision)]
const FMA_TANH: Fit = Fit {
    bound: 7.5,
    p: &[
        -8.488492677e-14,
        5.277853000e-11,
        -2.022500419e-8,
        0.00001115424833,
        0.003103950131,
        0.1308400453,
        0.9999999934,
    ],
    q: &[0.0002546136580, 0.02449515379, 0.4641733162, 1.0],
    half: false,
};

/// tract's `avx512_tanh_f32`: its coefficients, as written there.
#[allow(clippy::excessive_precision)]
const AVX512_TANH: Fit = Fit {
    bound: 7.5,
    p: &[
        -2.76076847742355e-16,
        2.00018790482477e-13,
        -8.60467152213735e-11,
        5.12229709037114e-08,
        1.48572235717979e-05,
        6.37261928875436e-04,
        4.89352455891786e-03,
    ],
    q: &[1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03],
    half: false,
};

// The instruction set whose kernel tract runs on this CPU (its AVX-512 one first: tract's
// `avx512_sigmoid_f32`, else `fma_sigmoid_f32`), ours in its place.
#[cfg(target_arch = "x86_64")]
impl Isa {
    /// `activation` of every value of `src`, in a new buffer, as tract's kernel here computes it.
    fn collect(self, src: &[f32], activation: Activation) -> Vec<f32> {
        match (self, activation) {
            // Safety: `Isa::here` chose `Avx512` after checking that the CPU has AVX-512F, AVX2 and
            // FMA: the one requirement of calling a function compiled with them.
            (Isa::Avx512, Activation::Sigmoid) => unsafe { collect_avx512_sigmoid(src) },
            // Safety: as above.
            (Isa::Avx512, Activation::Tanh) => unsafe { collect_avx512_tanh(src) },
            // Safety: `Isa::here` chose `Fma` after checking that the CPU has AVX2 and FMA.
            (Isa::Fma, Activation::Sigmoid) => unsafe { collect_fma_sigmoid(src) },
            // Safety: as above.
            (Isa::Fma, Activation::Tanh) => unsafe { collect_fma_tanh(src) },
        }
    }

    /// `activation` of every value of `xs`, in place, as tract's kernel here computes it.
    fn in_place(self, xs: &mut [f32], activation: Activation) {
        match (self, activation) {
            // Safety: as in `collect`: the CPU has AVX-512F, AVX2 and FMA.
            (Isa::Avx512, Activation::Sigmoid) => unsafe { in_place_avx512_sigmoid(xs) },
            // Safety: as in `collect`: the CPU has AVX-512F, AVX2 and FMA.
            (Isa::Avx512, Activation::Tanh) => unsafe { in_place_avx512_tanh(xs) },
            // Safety: as in `collect`: the CPU has AVX2 and FMA.
            (Isa::Fma, Activation::Sigmoid) => unsafe { in_place_fma_sigmoid(xs) },
            // Safety: as in `collect`: the CPU has AVX2 and FMA.
            (Isa::Fma, Activation::Tanh) => unsafe { in_place_fma_tanh(xs) },
        }
    }
}

/// Values a step of the kernels' loops takes: four 16-lane vectors, evaluated side by side (one
/// vector at a time, each step waits on the latency of the one before; tract's kernels interleave
/// four too).
const STEP: usize = 64;

/// A kernel's two loops (into a new buffer, in place) over one fit, compiled for `$features`: the
/// fit's coefficients are constants there, so the loop over them unrolls, and each step of
/// [`STEP`] values vectorizes into independent chains.
macro_rules! fitted_loops {
    ($features:literal, $collect:ident, $in_place:ident, $fit:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        fn $collect(src: &[f32]) -> Vec<f32> {
            let mut out: Vec<f32> = Vec::with_capacity(src.len());
            let spare = &mut out.spare_capacity_mut()[..src.len()];
            let mut dst = spare.chunks_exact_mut(STEP);
            let mut from = src.chunks_exact(STEP);
            for (d, s) in (&mut dst).zip(&mut from) {
                for (d, &x) in d.iter_mut().zip(s) {
                    d.write(fitted(x, &$fit));
                }
            }
            for (d, &x) in dst.into_remainder().iter_mut().zip(from.remainder()) {
                d.write(fitted(x, &$fit));
            }
            // Safety: the two loops above wrote each of the first `src.len()` slots (within the
            // capacity reserved), the steps then the remainder.
            unsafe { out.set_len(src.len()) };
            out
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        fn $in_place(xs: &mut [f32]) {
            let mut steps = xs.chunks_exact_mut(STEP);
            for step in &mut steps {
                step.iter_mut().for_each(|x| *x = fitted(*x, &$fit));
            }
            steps.into_remainder().iter_mut().for_each(|x| *x = fitted(*x, &$fit));
        }
    };
}

fitted_loops!("avx2,fma", collect_fma_sigmoid, in_place_fma_sigmoid, FMA_SIGMOID);
fitted_loops!("avx2,fma", collect_fma_tanh, in_place_fma_tanh, FMA_TANH);
fitted_loops!("avx512f,avx2,fma", collect_avx512_sigmoid, in_place_avx512_sigmoid, AVX512_SIGMOID);
fitted_loops!("avx512f,avx2,fma", collect_avx512_tanh, in_place_avx512_tanh, AVX512_TANH);

/// One value, as tract's kernel computes it step by step (its `vfmadd132ps` is `acc * x² + c`),
/// with a clamp that keeps NaN. Inlined into the functions compiled for FMA, where `mul_add` is one
/// instruction.
#[inline(always)]
fn fitted(x: f32, fit: &Fit) -> f32 {
    // NaN < -bound and NaN > bound are false: NaN goes on, and every later step keeps it.
    let x = if x < -fit.bound { -fit.bound } else { x };
    let x = if x > fit.bound { fit.bound } else { x };
    let x2 = x * x;
    let p = fit.p[1..].iter().fold(fit.p[0], |acc, &c| acc.mul_add(x2, c));
    let q = fit.q[1..].iter().fold(fit.q[0], |acc, &c| acc.mul_add(x2, c));
    let y = x * p / q;
    // Not `+ 0.0` for the tanh: that would turn -0 into +0.
    if fit.half {
        y + 0.5
    } else {
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::math::tanh;
    use tract_onnx::tract_core::ops::nn::sigmoid;

    /// Values over the whole float32 range: every power of two from 2^-149 to 2^127 with a few
    /// mantissas, both signs, the clamp bounds and their neighbours, zeros, infinities, and a dense
    /// sweep over [-20, 20], where the fit is not saturated.
    fn values() -> Vec<f32> {
        let mut v = vec![0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, f32::MIN_POSITIVE];
        for e in -149i32..=127 {
            for m in [1.0f32, 1.1, 1.5, 1.999] {
                let x = m * 2f32.powi(e);
                v.extend([x, -x]);
            }
        }
        for b in [-14.5f32, 14.5, -7.5, 7.5] {
            v.extend([b, f32::from_bits(b.to_bits() + 1), f32::from_bits(b.to_bits() - 1)]);
        }
        v.extend((0..400_001).map(|i| -20.0 + i as f32 * 1e-4));
        // A length that is no multiple of a vector, so the remainder loop is checked too.
        v.push(0.3);
        v
    }

    fn eval(op: &dyn EvalOp, xs: &[f32]) -> Vec<f32> {
        let x = tensor1(xs).into_tvalue();
        let out = op.eval(&EvalContext::out_of_plan(), tvec!(x)).unwrap();
        out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
    }

    /// [`eval`] on an input another holder shares (our op then writes a new tensor).
    fn eval_shared(op: &dyn EvalOp, xs: &[f32]) -> Vec<f32> {
        let x = tensor1(xs).into_tvalue();
        let kept = x.clone();
        let out = op.eval(&EvalContext::out_of_plan(), tvec!(x)).unwrap();
        assert_eq!(kept.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap(), xs, "the shared input is untouched");
        out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
    }

    #[test]
    fn every_value_but_nan_has_tracts_bits_and_nan_stays() {
        for (stock, activation) in [(sigmoid(), Activation::Sigmoid), (tanh(), Activation::Tanh)] {
            check_against_tract(stock, activation);
        }
    }

    fn check_against_tract(stock: ElementWiseOp, activation: Activation) {
        let ours = NanActivation { stock: stock.clone(), activation };
        let xs = values();
        let want = eval(&stock, &xs);
        for got in [eval(&ours, &xs), eval_shared(&ours, &xs)] {
            for ((x, g), w) in xs.iter().zip(&got).zip(&want) {
                if activation == Activation::Tanh && *w == 0.0 && x.abs() < 1e-30 {
                    // tract's kernel runs with denormals read as zero: where `x * p(x²)` is
                    // subnormal it returns 0; the fit itself (and onnxruntime, on the same fit)
                    // gives about x there, as tanh does.
                    assert!((g - x).abs() <= x.abs() * 2e-5 + 1e-44, "tanh({x:e}): ours {g:e}");
                    continue;
                }
                assert_eq!(g.to_bits(), w.to_bits(), "{activation:?}({x:e}): ours {g:e}, tract's {w:e}");
            }
        }
        // NaN (both signs, quiet and signalling payloads) anywhere in a run stays NaN; its
        // neighbours are unchanged.
        let mut with_nan = xs.clone();
        let nans = [f32::NAN, -f32::NAN, f32::from_bits(0x7f80_0001), f32::from_bits(0xffc0_1234)];
        for (k, i) in (0..with_nan.len()).step_by(997).enumerate() {
            with_nan[i] = nans[k % nans.len()];
        }
        let clean = eval(&ours, &xs);
        let got = eval(&ours, &with_nan);
        for (i, (x, g)) in with_nan.iter().zip(&got).enumerate() {
            if x.is_nan() {
                assert!(g.is_nan(), "{activation:?}(NaN) at {i}: {g:e}");
            } else {
                assert_eq!(g.to_bits(), clean[i].to_bits(), "{activation:?}({x:e}) next to NaN");
            }
        }
    }

    #[test]
    fn the_fallback_keeps_nan_and_tracts_values() {
        let stock = sigmoid();
        let xs = [f32::NAN, -3.0, 0.0, 2.5, f32::INFINITY];
        let out = stock_with_nan(&stock, &EvalContext::out_of_plan(), tensor1(&xs).into_tvalue()).unwrap();
        let got = out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        let want = eval(&stock, &xs);
        assert!(got[0].is_nan());
        for i in 1..xs.len() {
            assert_eq!(got[i].to_bits(), want[i].to_bits());
        }
    }
}
