//! [`DefinedActivation`]: float32 `HardSwish` and tanh-form `Gelu` as onnx defines them, in place
//! of tract's kernels, one fused pass over the tensor.
//!
//! tract's `HardSwish` kernel computes `x * relu6(x + 3) * (1/6)`, whose `x * 6` overflows past
//! `f32::MAX / 6` (the largest float gave `inf`, onnxruntime and onnx's reference `x`); its tanh-form
//! `Gelu` goes through its fitted tanh, which stops at `-0.9999994`, so `1 + tanh` kept an error up
//! to `6e-7` below `x = -3` (`x * 3e-7` where the value is `-0`). Ours compute the definition
//! (`gelu_tanh` and `hard_swish` in `src/kernel/activation.rs`): the hard swish in the reference's own operations (its bits), the
//! Gelu as `x * sigmoid(2v)` from `exp(-|2v|)`, with no cancellation, NaN kept by both.
//!
//! Each loop is compiled for AVX-512 or AVX2 and FMA where the CPU has them (the loops vectorize:
//! every step is a select, a fused multiply-add or a bit operation; one division for the Gelu) and
//! plainly elsewhere, with the same results (every operation is IEEE's, `mul_add` fused everywhere).
//! A shared input (a value another node also reads, or a caller's) is read once into a new tensor,
//! where tract's op copies it then works in place; an input the op holds alone is worked on in
//! place. A large tensor is split in runs of values over the plan's threads ([`VALUES_PER_THREAD`]);
//! each value's result is the same on any thread.

use std::mem::MaybeUninit;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::nn::gelu_approximate::GeluApproximate;

#[cfg(target_arch = "x86_64")]
use crate::kernel::Isa;
use crate::kernel::{gelu_tanh, hard_swish, spread};

/// Values one thread is given at least before a pass is split over the plan's threads (`--threads`):
/// about 5 µs of one core's work on the hard swish, which runs 12 values a nanosecond on one core
/// of an AVX-512 machine (the Gelu takes longer a value). With the pool's workers awake while a
/// plan runs, 2 threads measured 0.64-0.74 of one thread's time on 188,160-225,792 values
/// (`benches/thread_split.py`, 2 cores; docs/performance.md, "Threads in our kernels").
const VALUES_PER_THREAD: usize = 1 << 16;

/// How many values each thread takes of a pass over `len` values on `pool`: all of them (one run)
/// without a pool or below [`VALUES_PER_THREAD`] for two threads; runs are whole cache lines.
fn run_len(pool: Option<&rayon::ThreadPool>, len: usize) -> usize {
    let threads = crate::kernel::threads_for(pool, len, VALUES_PER_THREAD, usize::MAX);
    len.div_ceil(threads).next_multiple_of(16).max(1)
}

/// Which activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Defined {
    /// `HardSwish`.
    HardSwish,
    /// `Gelu` with `approximate = "tanh"` (tract's `GeluApproximate` with `x^3`).
    GeluTanh,
}

/// tract's elementwise `HardSwish` or tanh-form `Gelu`, computed as onnx defines it on float32.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DefinedActivation {
    /// tract's op, for other element types.
    pub stock: ElementWiseOp,
    /// Which activation.
    pub kind: Defined,
}

impl DefinedActivation {
    /// Our op for tract's `op` over `fact`, if it is a float32 `HardSwish` or tanh-form `Gelu` (not
    /// the `x^2` variant tract calls fast).
    pub(crate) fn replacing(op: &ElementWiseOp, fact: &TypedFact) -> Option<DefinedActivation> {
        if op.1.is_some() || fact.datum_type != f32::datum_type() {
            return None;
        }
        let kind = match op.0.name().as_ref() {
            "HardSwish" => Defined::HardSwish,
            "GeluApproximate" if op.0.downcast_ref::<GeluApproximate>().is_some_and(|g| !g.fast_impl) => {
                Defined::GeluTanh
            }
            _ => return None,
        };
        Some(DefinedActivation { stock: op.clone(), kind })
    }
}

impl Op for DefinedActivation {
    fn name(&self) -> StaticName {
        match self.kind {
            Defined::HardSwish => "DefinedHardSwish".into(),
            Defined::GeluTanh => "DefinedGeluTanh".into(),
        }
    }

    op_as_typed_op!();
}

impl EvalOp for DefinedActivation {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        if x.datum_type() != f32::datum_type() {
            return self.stock.eval(ctx, tvec!(x));
        }
        if !x.is_exclusive() {
            // Shared: read it and write a new tensor in one pass (tract's op copies it first).
            let plain = x.try_as_plain_ram()?;
            let src = plain.as_slice::<f32>()?;
            // Safety: a float32 tensor of `x`'s shape, written in full just below before anything
            // reads it (a tensor of plain data has no destructor that reads its contents).
            let mut y = unsafe { Tensor::uninitialized::<f32>(x.shape())? };
            ensure!(y.len() == src.len(), "DefinedActivation: an output of {} values for {}", y.len(), src.len());
            // Safety: `y`'s buffer holds `src.len()` float32 (checked above), aligned for them, a fresh
            // allocation that does not overlap `src`; viewed as `MaybeUninit` it is only written.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(y.as_ptr_mut_unchecked::<f32>().cast::<MaybeUninit<f32>>(), src.len())
            };
            let (pool, kind) = (crate::threads::pool(ctx), self.kind);
            let run = run_len(pool.as_deref(), src.len());
            match pool.as_deref().filter(|_| run < src.len()) {
                Some(pool) => {
                    spread(pool, src.chunks(run).zip(dst.chunks_mut(run)).map(|(s, d)| move || collect(s, d, kind)))
                }
                None => collect(src, dst, kind),
            }
            return Ok(tvec!(y.into_tvalue()));
        }
        // Ours alone: in place, as tract's op.
        let mut y = x.into_tensor();
        {
            let mut plain = y.try_as_plain_ram_mut()?;
            let xs = plain.as_slice_mut::<f32>()?;
            let (pool, kind) = (crate::threads::pool(ctx), self.kind);
            let run = run_len(pool.as_deref(), xs.len());
            match pool.as_deref().filter(|_| run < xs.len()) {
                Some(pool) => spread(pool, xs.chunks_mut(run).map(|xs| move || in_place(xs, kind))),
                None => in_place(xs, kind),
            }
        }
        Ok(tvec!(y.into_tvalue()))
    }
}

impl TypedOp for DefinedActivation {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }
}

/// `kind` of every value of `src`, written to `dst` (as long).
fn collect(src: &[f32], dst: &mut [MaybeUninit<f32>], kind: Defined) {
    #[cfg(target_arch = "x86_64")]
    match (Isa::here(), kind) {
        // Safety: `Isa::here` chose `Avx512` after checking that the CPU has AVX-512F, AVX2 and
        // FMA: the one requirement of calling a function compiled with them.
        (Some(Isa::Avx512), Defined::HardSwish) => return unsafe { collect_avx512_hard_swish(src, dst) },
        // Safety: as above.
        (Some(Isa::Avx512), Defined::GeluTanh) => return unsafe { collect_avx512_gelu(src, dst) },
        // Safety: `Isa::here` chose `Fma` after checking that the CPU has AVX2 and FMA.
        (Some(Isa::Fma), Defined::HardSwish) => return unsafe { collect_fma_hard_swish(src, dst) },
        // Safety: as above.
        (Some(Isa::Fma), Defined::GeluTanh) => return unsafe { collect_fma_gelu(src, dst) },
        (None, _) => {}
    }
    match kind {
        Defined::HardSwish => collect_plain_hard_swish(src, dst),
        Defined::GeluTanh => collect_plain_gelu(src, dst),
    }
}

/// `kind` of every value of `xs`, in place.
fn in_place(xs: &mut [f32], kind: Defined) {
    #[cfg(target_arch = "x86_64")]
    match (Isa::here(), kind) {
        // Safety: as in `collect`: the CPU has AVX-512F, AVX2 and FMA.
        (Some(Isa::Avx512), Defined::HardSwish) => return unsafe { in_place_avx512_hard_swish(xs) },
        // Safety: as in `collect`: the CPU has AVX-512F, AVX2 and FMA.
        (Some(Isa::Avx512), Defined::GeluTanh) => return unsafe { in_place_avx512_gelu(xs) },
        // Safety: as in `collect`: the CPU has AVX2 and FMA.
        (Some(Isa::Fma), Defined::HardSwish) => return unsafe { in_place_fma_hard_swish(xs) },
        // Safety: as in `collect`: the CPU has AVX2 and FMA.
        (Some(Isa::Fma), Defined::GeluTanh) => return unsafe { in_place_fma_gelu(xs) },
        (None, _) => {}
    }
    match kind {
        Defined::HardSwish => in_place_plain_hard_swish(xs),
        Defined::GeluTanh => in_place_plain_gelu(xs),
    }
}

/// A function's two loops (into another buffer, in place), compiled for `$features` (none: plain).
macro_rules! loops {
    ($($features:literal)?, $collect:ident, $in_place:ident, $f:ident) => {
        $(#[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)])?
        fn $collect(src: &[f32], dst: &mut [MaybeUninit<f32>]) {
            for (d, &x) in dst.iter_mut().zip(src) {
                d.write($f(x));
            }
        }

        $(#[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)])?
        fn $in_place(xs: &mut [f32]) {
            xs.iter_mut().for_each(|x| *x = $f(*x));
        }
    };
}

loops!("avx512f,avx2,fma", collect_avx512_hard_swish, in_place_avx512_hard_swish, hard_swish);
loops!("avx512f,avx2,fma", collect_avx512_gelu, in_place_avx512_gelu, gelu_tanh);
loops!("avx2,fma", collect_fma_hard_swish, in_place_fma_hard_swish, hard_swish);
loops!("avx2,fma", collect_fma_gelu, in_place_fma_gelu, gelu_tanh);
loops!(, collect_plain_hard_swish, in_place_plain_hard_swish, hard_swish);
loops!(, collect_plain_gelu, in_place_plain_gelu, gelu_tanh);

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::nn::gelu_approximate::gelu_approximate;
    use tract_onnx::tract_core::ops::nn::hard_swish as tract_hard_swish;

    fn eval(op: &dyn EvalOp, xs: &[f32]) -> Vec<f32> {
        let out = op.eval(&EvalContext::out_of_plan(), tvec!(tensor1(xs).into_tvalue())).unwrap();
        out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
    }

    /// [`eval`] on an input another holder shares (our op then writes a new tensor).
    fn eval_shared(op: &dyn EvalOp, xs: &[f32]) -> Vec<f32> {
        let x = tensor1(xs).into_tvalue();
        let kept = x.clone();
        let out = op.eval(&EvalContext::out_of_plan(), tvec!(x)).unwrap();
        assert_eq!(kept.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().len(), xs.len());
        out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
    }

    /// The bits of each value, every NaN as one (the paths may give NaN different signs).
    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|v| if v.is_nan() { f32::NAN.to_bits() } else { v.to_bits() }).collect()
    }

    /// Values over the float range with every special one, in a length that is no multiple of a
    /// vector (the loops' remainders run too).
    fn values() -> Vec<f32> {
        let mut v = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::MAX, f32::MIN, 1e-45, -1e-45];
        v.extend((-20_000..20_000).map(|i| i as f32 * 7.3e-4));
        for e in -149i32..=127 {
            let x = 1.3 * 2f32.powi(e);
            v.extend([x, -x]);
        }
        v.push(0.3);
        v
    }

    #[test]
    fn every_path_gives_the_elementwise_function_bit_for_bit() {
        let xs = values();
        for (stock, f) in [(tract_hard_swish(), hard_swish as fn(f32) -> f32), (gelu_approximate(false), gelu_tanh)] {
            let op = DefinedActivation::replacing(&stock, &f32::fact([1])).unwrap();
            let want: Vec<f32> = xs.iter().map(|&x| f(x)).collect();
            assert_eq!(bits(&eval(&op, &xs)), bits(&want), "{:?} in place", op.kind);
            assert_eq!(bits(&eval_shared(&op, &xs)), bits(&want), "{:?} into a new tensor", op.kind);
            let kind = op.kind;
            let mut plain = xs.clone();
            match kind {
                Defined::HardSwish => in_place_plain_hard_swish(&mut plain),
                Defined::GeluTanh => in_place_plain_gelu(&mut plain),
            }
            assert_eq!(bits(&plain), bits(&want), "{kind:?} compiled plainly");
        }
        assert!(DefinedActivation::replacing(&gelu_approximate(true), &f32::fact([1])).is_none());
        assert!(DefinedActivation::replacing(&tract_hard_swish(), &f64::fact([1])).is_none());
    }

    #[test]
    fn the_values_tracts_kernels_got_wrong() {
        let hs = DefinedActivation::replacing(&tract_hard_swish(), &f32::fact([1])).unwrap();
        let big = [f32::MAX, f32::MAX / 2.0, 1e38, -f32::MAX, f32::INFINITY, f32::NAN, 7.0, -1.5];
        let got = eval(&hs, &big);
        assert_eq!(bits(&got[..5]), bits(&[f32::MAX, f32::MAX / 2.0, 1e38, -0.0, f32::INFINITY]));
        assert!(got[5].is_nan());
        assert_eq!(got[6], 7.0);
        // -1.5 * (-1.5/6 + 0.5) = -1.5 * 0.25.
        assert_eq!(got[7], -0.375);

        let gelu = DefinedActivation::replacing(&gelu_approximate(false), &f32::fact([1])).unwrap();
        let got = eval(&gelu, &[-100.0, -88.5, -1e30, -f32::MAX, -12.0, f32::NEG_INFINITY, f32::NAN, f32::MAX, -10.0]);
        assert_eq!(bits(&got[..5]), bits(&[-0.0; 5]));
        assert!(got[5].is_nan() && got[6].is_nan());
        assert_eq!(got[7], f32::MAX);
        // -10: the real value, -10 * e^(2v) / (1 + e^(2v)) with 2v = -87.33: -1.23e-37 (tract's kernel
        // gave -3e-6), within 64 units of float32.
        let v2 = -10.0f64 * (2.0 * (2.0 / std::f64::consts::PI).sqrt()) * (1.0 + 0.044715 * 100.0);
        let want = -10.0 * v2.exp() / (1.0 + v2.exp());
        assert!((got[8] as f64 - want).abs() <= want.abs() * 64.0 * 2f64.powi(-24), "{} vs {want:e}", got[8]);
    }
}
