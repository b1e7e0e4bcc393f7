//! [`ExactDiv`]: a float division in the plan, each quotient correctly rounded, as ONNX's `Div`, numpy
//! and onnxruntime compute it.
//!
//! tract's declutter rewrites every float `Div(a, b)` into `Mul(a, Recip(b))`: one rounding more
//! (1 ulp off on ordinary values: `-100 / 3` gave `-33.333336`), and `1 / b` overflows to infinity
//! for a subnormal divisor (`0 / 1e-45` gave NaN where it is 0, `1e-30 / 1e-45` infinity where it is
//! 1e15). The rewrite feeds tract's fusions of
//! decomposed normalizations and our layer-norm pass, so it stays; the pairs no fusion took are
//! turned back into this op before code generation (see `passes::exact_div`), which tract's passes
//! leave alone (it is not a `Div` they would decompose again).
//!
//! Float32 runs our loops (equal shapes, a one-value operand on either side, one divisor per run of
//! the dividend as in a per-channel normalization, or broadcasting through
//! [`super::broadcast::Plan`]), compiled for AVX where the CPU has it; float16 and float64 run tract's
//! own `Div` evaluation, which divides each pair. The per-run form was the broadcasting walk's
//! runs of one element before: `[3, 320, 320] / [3, 1, 1]` took 2.08 ms, now 0.11.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::math::Div;

use super::broadcast::Plan;
use crate::kernel::check_allocation;

/// `a / b`, elementwise with broadcasting, every quotient correctly rounded.
#[derive(Debug, Clone)]
pub(crate) struct ExactDiv {
    /// tract's `Div`: its output facts, and its evaluation for float16 and float64.
    stock: TypedBinOp,
}

impl ExactDiv {
    /// The op (tract's `Div` kept inside for its facts and the other float types).
    pub(crate) fn new() -> ExactDiv {
        ExactDiv { stock: TypedBinOp(Box::new(Div), None) }
    }
}

impl PartialEq for ExactDiv {
    fn eq(&self, _other: &ExactDiv) -> bool {
        true
    }
}

impl Eq for ExactDiv {}

impl Op for ExactDiv {
    fn name(&self) -> StaticName {
        "ExactDiv".into()
    }

    op_as_typed_op!();
}

impl TypedOp for ExactDiv {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }

    as_op!();
}

impl EvalOp for ExactDiv {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(inputs.len() == 2, "ExactDiv takes two inputs, got {}", inputs.len());
        let f32s = inputs.iter().all(|t| t.datum_type() == DatumType::F32);
        if !f32s {
            return self.stock.eval(ctx, inputs);
        }
        let (a, b) = args_2!(inputs);
        let out = divide(a, b).map_err(|e| anyhow!("Div: {e}"))?;
        Ok(tvec!(out.into_tvalue()))
    }
}

/// `a / b` of two float32 tensors.
fn divide(a: TValue, b: TValue) -> TractResult<Tensor> {
    if b.len() == 1 && b.rank() <= a.rank() {
        // In place in `a` when the plan holds it alone (a copy otherwise, as a new output would be).
        let s = b.try_as_plain_ram()?.as_slice::<f32>()?[0];
        let mut t = a.into_tensor();
        div_by(t.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?, s);
        return Ok(t);
    }
    if a.shape() == b.shape() {
        let mut t = a.into_tensor();
        let plain = b.try_as_plain_ram()?;
        div_each(t.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?, plain.as_slice::<f32>()?);
        return Ok(t);
    }
    if let Some(run) = per_block(a.shape(), b.shape()) {
        // One divisor per run of `a` (a per-channel normalization, `[3, H, W] / [3, 1, 1]`): each
        // run divided in place by its value, at the corrected product's throughput.
        let mut t = a.into_tensor();
        let plain = b.try_as_plain_ram()?;
        let divisors = plain.as_slice::<f32>()?;
        let mut plain_a = t.try_as_plain_ram_mut()?;
        for (chunk, &s) in plain_a.as_slice_mut::<f32>()?.chunks_exact_mut(run).zip(divisors) {
            div_by(chunk, s);
        }
        return Ok(t);
    }
    let shape = tract_onnx::tract_core::broadcast::multi_broadcast(&[a.shape(), b.shape()])?;
    let numel = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
    check_allocation(numel.unwrap_or(u64::MAX), 4).map_err(|e| anyhow!("{e}"))?;
    let (pa, pb) = (a.try_as_plain_ram()?, b.try_as_plain_ram()?);
    let (xa, xb) = (pa.as_slice::<f32>()?, pb.as_slice::<f32>()?);
    if a.len() == 1 {
        let mut out = vec![0f32; b.len()];
        div_of(&mut out, xa[0], xb);
        let out = tract_ndarray::ArrayD::from_shape_vec(&*shape, out)?;
        return Ok(out.into_tensor());
    }
    let plan = (a.rank() == b.rank()).then(|| Plan::of(a.shape(), b.shape())).flatten();
    let Some(plan) = plan else {
        // Operands of different ranks: ndarray's broadcasting walk (the same quotients).
        let (va, vb) = (a.to_plain_array_view::<f32>()?, b.to_plain_array_view::<f32>()?);
        let (ba, bb) = (
            va.broadcast(&*shape).context("operands that do not broadcast")?,
            vb.broadcast(&*shape).context("operands that do not broadcast")?,
        );
        return Ok(tract_ndarray::Zip::from(&ba).and(&bb).map_collect(|&x, &y| x / y).into_tensor());
    };
    let mut out = vec![0f32; plan.len()];
    if plan.run > 0 {
        for (chunk, (oa, ob)) in out.chunks_exact_mut(plan.run).zip(plan.offsets()) {
            chunk.copy_from_slice(&xa[oa..oa + plan.run]);
            div_each(chunk, &xb[ob..ob + plan.run]);
        }
    }
    Ok(tract_ndarray::ArrayD::from_shape_vec(&*plan.out_shape, out)?.into_tensor())
}

/// The length of the runs of `a` that each value of `b` divides when `b` is `a`'s leading axes with
/// ones after them (`b`'s shape padded with ones on the left to `a`'s rank): `[3, H, W]` by
/// `[3, 1, 1]` or `[1, 3, 1, 1]`, `[N, C, H, W]` by `[C, 1, 1]` when `N` is 1. `None` otherwise, or
/// when the runs are shorter than a vector of 16 (the broadcasting walk takes those).
fn per_block(a: &[usize], b: &[usize]) -> Option<usize> {
    let pad = a.len().checked_sub(b.len())?;
    let b_at = |i: usize| if i < pad { 1 } else { b[i - pad] };
    // `b`'s axes equal to `a`'s up to `split`, ones from there on (where `a` is not all ones).
    let split = (0..a.len()).rev().find(|&i| b_at(i) != 1).map_or(0, |i| i + 1);
    let leading = (0..split).all(|i| b_at(i) == a[i]);
    let run: usize = a[split..].iter().product();
    (leading && run >= 16).then_some(run)
}

/// Runs `body` compiled for AVX where the CPU has it (the same operations, so the same bits).
macro_rules! with_avx {
    ($plain:ident, $avx:ident, ($($arg:ident: $ty:ty),*), $body:block) => {
        #[inline(always)]
        fn $plain($($arg: $ty),*) $body

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx")]
        fn $avx($($arg: $ty),*) {
            $plain($($arg),*)
        }
    };
}

with_avx!(div_by_plain, div_by_avx, (x: &mut [f32], s: f32), {
    x.iter_mut().for_each(|v| *v /= s);
});

with_avx!(div_each_plain, div_each_avx, (x: &mut [f32], y: &[f32]), {
    x.iter_mut().zip(y).for_each(|(v, d)| *v /= d);
});

with_avx!(div_of_plain, div_of_avx, (out: &mut [f32], s: f32, y: &[f32]), {
    out.iter_mut().zip(y).for_each(|(o, d)| *o = s / d);
});

/// `x[i] /= s`.
fn div_by(x: &mut [f32], s: f32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") && has!("fma") && in_range(s) {
            // Safety: the CPU has AVX2 and FMA, checked just above: the one requirement of calling
            // a function compiled with `target_feature(enable = "avx2,fma")`.
            return unsafe { div_by_corrected(x, s) };
        }
        if has!("avx") {
            // Safety: the CPU has AVX, checked just above: the one requirement of calling a function
            // compiled with `target_feature(enable = "avx")`.
            return unsafe { div_by_avx(x, s) };
        }
    }
    div_by_plain(x, s)
}

/// Magnitudes where the corrected product of [`div_by_corrected`] is the division: `2^-60` to
/// `2^60`, so that no quotient, product or remainder below leaves float32's normal range.
#[inline(always)]
fn in_range(v: f32) -> bool {
    let a = v.abs();
    (f32::from_bits(0x2180_0000)..=f32::from_bits(0x5d80_0000)).contains(&a)
}

/// `x[i] /= s` by a product and one correction, for `s` [`in_range`]: `r = 1/s` rounded,
/// `q = x * r` (within an ulp of `x / s`), the remainder `e = x - q * s` (exact, by a fused
/// multiply-add), and `q + e * r` rounded once (Markstein's correction: the correctly rounded
/// quotient when `r` is the rounded reciprocal and nothing leaves the normal range). Blocks of 16
/// values holding one out of range (zeros, subnormals, infinities, NaN, huge or tiny values) are
/// divided. The same bits as the division (`corrected_products_are_the_division`), at the
/// throughput of products rather than of the divider.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn div_by_corrected(x: &mut [f32], s: f32) {
    let r = 1.0 / s;
    let mut blocks = x.chunks_exact_mut(16);
    for block in &mut blocks {
        let inside = block.iter().fold(true, |all, &v| all & in_range(v));
        if inside {
            for v in block.iter_mut() {
                let q = *v * r;
                let e = (-q).mul_add(s, *v);
                *v = e.mul_add(r, q);
            }
        } else {
            block.iter_mut().for_each(|v| *v /= s);
        }
    }
    blocks.into_remainder().iter_mut().for_each(|v| *v /= s);
}

/// `x[i] /= y[i]` (over the shorter of the two).
fn div_each(x: &mut [f32], y: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // Safety: as in `div_by`, the CPU has AVX.
        return unsafe { div_each_avx(x, y) };
    }
    div_each_plain(x, y)
}

/// `out[i] = s / y[i]` (over the shorter of the two).
fn div_of(out: &mut [f32], s: f32, y: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // Safety: as in `div_by`, the CPU has AVX.
        return unsafe { div_of_avx(out, s, y) };
    }
    div_of_plain(out, s, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], v: &[f32]) -> TValue {
        tract_ndarray::ArrayD::from_shape_vec(shape, v.to_vec()).unwrap().into_tvalue()
    }

    fn bits(t: &Tensor) -> Vec<u32> {
        t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
    }

    fn want(pairs: impl Iterator<Item = (f32, f32)>) -> Vec<u32> {
        pairs.map(|(x, y)| (x / y).to_bits()).collect()
    }

    const SPECIAL: [f32; 12] =
        [0.0, -0.0, 1e-45, -1e-45, 3.0, -100.0, 7.0, f32::INFINITY, f32::NAN, f32::MAX, 1.0, -0.5];

    #[test]
    fn corrected_products_are_the_division() {
        // Every float32 of four binades on either side of 1, and of 2^+-50, by divisors whose
        // reciprocal is not exact (and two that are), against the division.
        let divisors = [
            3.0f32,
            7.0,
            255.0,
            0.1,
            std::f32::consts::SQRT_2,
            1.0 / 3.0,
            6.0,
            1e-15,
            3e15,
            0.999_999_94,
            1.000_000_1,
            0.5,
            1024.0,
        ];
        let mut xs = Vec::new();
        for base in [0x3f80_0000u32, 0x3d80_0000, 0x4580_0000, 0x2c80_0000, 0x5200_0000] {
            for k in (0..1u32 << 23).step_by(5) {
                let v = f32::from_bits(base + k);
                xs.push(v);
                xs.push(-v);
            }
        }
        // Blocks with a value out of range among in-range ones.
        xs.extend([0.0, 1e-40, f32::INFINITY, f32::NAN, f32::MAX, 1e30, -0.0, 5.0]);
        for &s in &divisors {
            let mut got = xs.clone();
            div_by(&mut got, s);
            for (g, &x) in got.iter().zip(&xs) {
                let want = x / s;
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "{x:e} / {s:e}: {g:e}, expected {want:e}"
                );
            }
        }
    }

    #[test]
    fn every_form_divides_each_pair_exactly() {
        let n = SPECIAL.len();
        // Equal shapes.
        let a: Vec<f32> = (0..n * n).map(|i| SPECIAL[i / n]).collect();
        let b: Vec<f32> = (0..n * n).map(|i| SPECIAL[i % n]).collect();
        let got = divide(t(&[n * n], &a), t(&[n * n], &b)).unwrap();
        assert_eq!(bits(&got), want(a.iter().copied().zip(b.iter().copied())));
        // -100 / 3 is -33.333332 (tract's -100 * (1/3) is -33.333336); 0 / subnormal is 0.
        assert_eq!(
            bits(&divide(t(&[2], &[-100.0, 0.0]), t(&[2], &[3.0, 1e-45])).unwrap()),
            [(-33.333332f32).to_bits(), 0]
        );
        // By one value, and of one value.
        for &s in &SPECIAL {
            let got = divide(t(&[n], &SPECIAL), t(&[], &[s])).unwrap();
            assert_eq!(bits(&got), want(SPECIAL.iter().map(|&x| (x, s))));
            let got = divide(t(&[1], &[s]), t(&[n], &SPECIAL)).unwrap();
            assert_eq!(bits(&got), want(SPECIAL.iter().map(|&y| (s, y))));
        }
        // Broadcasting: [3, 1, 4] / [1, 2, 4], and ranks that differ: [2, 4] / [4].
        let a: Vec<f32> = (0..12).map(|i| SPECIAL[i]).collect();
        let b: Vec<f32> = (0..8).map(|i| SPECIAL[(i + 4) % n]).collect();
        let got = divide(t(&[3, 1, 4], &a), t(&[1, 2, 4], &b)).unwrap();
        assert_eq!(got.shape(), [3, 2, 4]);
        let pairs = (0..24).map(|i| (a[(i / 8) * 4 + i % 4], b[i % 8]));
        assert_eq!(bits(&got), want(pairs));
        let got = divide(t(&[2, 4], &b), t(&[4], &a[..4])).unwrap();
        assert_eq!(got.shape(), [2, 4]);
        assert_eq!(bits(&got), want((0..8).map(|i| (b[i], a[i % 4]))));
        // One divisor per run (a per-channel normalization), runs of 40 with every special value
        // on either side: [c, 5, 8] / [c, 1, 1] and / [1, c, 1, 1] padded, [1, c, 5, 8] / [c, 1, 1].
        let c = n;
        let a: Vec<f32> = (0..c * 40).map(|i| SPECIAL[(i * 7 + i / 40) % n]).collect();
        let pairs: Vec<(f32, f32)> = (0..c * 40).map(|i| (a[i], SPECIAL[i / 40])).collect();
        for (a_shape, b_shape) in [(vec![c, 5, 8], vec![c, 1, 1]), (vec![1, c, 5, 8], vec![c, 1, 1])] {
            assert_eq!(per_block(&a_shape, &b_shape), Some(40));
            let got = divide(t(&a_shape, &a), t(&b_shape, &SPECIAL)).unwrap();
            assert_eq!(got.shape(), a_shape);
            assert_eq!(bits(&got), want(pairs.iter().copied()));
        }
        // Not one divisor per run: a trailing axis of `b` that is not one, runs under 16, a leading
        // axis of `b` that broadcasts, more axes in `b` than in `a`, equal shapes.
        assert_eq!(per_block(&[3, 5, 8], &[3, 1, 8]), None);
        assert_eq!(per_block(&[3, 2, 4], &[3, 1, 1]), None);
        assert_eq!(per_block(&[2, 3, 5, 8], &[1, 3, 1, 1]), None);
        assert_eq!(per_block(&[5, 8], &[1, 5, 1]), None);
        assert_eq!(per_block(&[4, 5, 8], &[4, 5, 8]), None);
    }
}
