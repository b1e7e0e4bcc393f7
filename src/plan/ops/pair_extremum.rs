//! [`PairExtremum`]: a float32 `Max` or `Min` of two tensors with NaN kept.
//!
//! tract's kernels for a max or min of two tensors (`OptBinUnicast`, and its generic binary op for
//! broadcasting operands) return the number when one side is NaN; onnxruntime and onnx's reference
//! (`numpy.maximum`, `numpy.minimum`) give NaN. A max or min by one value is [`super::ScalarSteps`];
//! this is the case of two tensors: equal shapes as one loop the compiler vectorizes, broadcasting
//! ones through ndarray's broadcasting iterator (as tract's generic op).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::{OptBinUnicast, TypedBinOp};

/// A float32 `Max` (or `Min`) of two tensors, NaN if either value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PairExtremum {
    /// `Max` if true, `Min` if false.
    pub max: bool,
}

impl PairExtremum {
    /// Our op for `node` of `model`, when it is tract's max or min of two float32 tensors (neither
    /// of one value: those are [`super::ScalarSteps`]).
    pub(crate) fn replacing(model: &TypedModel, node: &TypedNode) -> TractResult<Option<PairExtremum>> {
        let name = if let Some(u) = node.op_as::<OptBinUnicast>() {
            u.binop.name()
        } else if let Some(b) = node.op_as::<TypedBinOp>() {
            if b.1.is_some() {
                return Ok(None);
            }
            b.0.name()
        } else {
            return Ok(None);
        };
        let max = match name {
            "Max" => true,
            "Min" => false,
            _ => return Ok(None),
        };
        let [a, b] = &*node.inputs else { return Ok(None) };
        let facts = [model.outlet_fact(*a)?, model.outlet_fact(*b)?, model.outlet_fact(OutletId::new(node.id, 0))?];
        let f32s = facts.iter().all(|f| f.datum_type == f32::datum_type());
        let one_value = |f: &TypedFact| f.shape.volume().as_i64() == Some(1);
        let fits = f32s && !one_value(facts[0]) && !one_value(facts[1]) && facts[0].rank() == facts[1].rank();
        Ok(fits.then_some(PairExtremum { max }))
    }
}

/// The greater (or lesser) of `a` and `b`, NaN if either is.
#[inline(always)]
fn pick(max: bool, a: f32, b: f32) -> f32 {
    // `a < b` is false when either is NaN: `a` then, and NaN if `b` is.
    let m = if max {
        if a < b {
            b
        } else {
            a
        }
    } else if a > b {
        b
    } else {
        a
    };
    if b.is_nan() {
        b
    } else {
        m
    }
}

/// [`pick`] over two slices of one length, into a new buffer: compiled for AVX2 where the CPU has it.
fn pairs(max: bool, a: &[f32], b: &[f32]) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // Safety: the CPU has AVX2, checked just above: the one requirement of calling a function
        // compiled with `target_feature(enable = "avx2")`.
        return unsafe { pairs_avx2(max, a, b) };
    }
    pairs_plain(max, a, b)
}

/// [`pairs_plain`] compiled for AVX2 (the same operations, so the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn pairs_avx2(max: bool, a: &[f32], b: &[f32]) -> Vec<f32> {
    pairs_plain(max, a, b)
}

/// The body of [`pairs`]: one loop per operation, each vectorized by the compiler.
#[inline(always)]
fn pairs_plain(max: bool, a: &[f32], b: &[f32]) -> Vec<f32> {
    if max {
        a.iter().zip(b).map(|(&x, &y)| pick(true, x, y)).collect()
    } else {
        a.iter().zip(b).map(|(&x, &y)| pick(false, x, y)).collect()
    }
}

impl Op for PairExtremum {
    fn name(&self) -> StaticName {
        if self.max { "PairMax" } else { "PairMin" }.into()
    }

    op_as_typed_op!();
}

impl EvalOp for PairExtremum {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (a, b) = args_2!(inputs);
        let (va, vb) = (a.to_plain_array_view::<f32>()?, b.to_plain_array_view::<f32>()?);
        let max = self.max;
        let out = if a.shape() == b.shape() {
            let (sa, sb) =
                (va.as_slice().context("a contiguous tensor")?, vb.as_slice().context("a contiguous tensor")?);
            let values = pairs(max, sa, sb);
            tract_ndarray::ArrayD::from_shape_vec(a.shape(), values)?
        } else {
            let shape = tract_onnx::tract_core::broadcast::multi_broadcast(&[a.shape(), b.shape()])?;
            let numel = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
            crate::kernel::check_allocation(numel.unwrap_or(u64::MAX), 4)
                .map_err(|e| anyhow!("{}: {e}", self.name()))?;
            let (ba, bb) = (
                va.broadcast(&*shape).context("operands that do not broadcast")?,
                vb.broadcast(&*shape).context("operands that do not broadcast")?,
            );
            tract_ndarray::Zip::from(&ba).and(&bb).map_collect(|&x, &y| pick(max, x, y))
        };
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for PairExtremum {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 2, "PairExtremum takes two inputs");
        let shape = tract_onnx::tract_core::broadcast::multi_broadcast(&[&*inputs[0].shape, &*inputs[1].shape])?;
        Ok(tvec!(f32::fact(shape)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_on_either_side_is_nan_and_numbers_compare_as_numbers() {
        let nan = f32::NAN;
        for (a, b, hi, lo) in [
            (nan, 1.0, nan, nan),
            (1.0, nan, nan, nan),
            (nan, nan, nan, nan),
            (2.0, -3.0, 2.0, -3.0),
            (-3.0, 2.0, 2.0, -3.0),
            (f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY, f32::NEG_INFINITY),
        ] {
            let (gh, gl) = (pick(true, a, b), pick(false, a, b));
            assert!(gh.to_bits() == hi.to_bits() || (gh.is_nan() && hi.is_nan()), "max({a}, {b}) = {gh}");
            assert!(gl.to_bits() == lo.to_bits() || (gl.is_nan() && lo.is_nan()), "min({a}, {b}) = {gl}");
        }
    }

    #[test]
    fn equal_and_broadcasting_shapes() {
        let op = PairExtremum { max: true };
        let a = tensor2(&[[1.0f32, f32::NAN], [3.0, -4.0]]).into_tvalue();
        let b = tensor2(&[[2.0f32, 0.0], [f32::NAN, -5.0]]).into_tvalue();
        let y = op.eval(&EvalContext::out_of_plan(), tvec!(a.clone(), b)).unwrap();
        let y = y[0].to_plain_array_view::<f32>().unwrap().iter().copied().collect::<Vec<_>>();
        assert_eq!(y[0], 2.0);
        assert!(y[1].is_nan() && y[2].is_nan());
        assert_eq!(y[3], -4.0);
        let row = tensor2(&[[0.0f32, 0.0]]).into_tvalue();
        let y = PairExtremum { max: false }.eval(&EvalContext::out_of_plan(), tvec!(a, row)).unwrap();
        assert_eq!(y[0].shape(), &[2, 2]);
        let y = y[0].to_plain_array_view::<f32>().unwrap().iter().copied().collect::<Vec<_>>();
        assert_eq!(y[0], 0.0);
        assert!(y[1].is_nan());
        assert_eq!(&y[2..], &[0.0, -4.0]);
    }
}
