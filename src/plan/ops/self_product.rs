//! [`SelfProduct`]: `x * x` of an integer or symbolic (`TDim`) tensor, in place of the `Square` tract's
//! declutter makes of `Mul(x, x)` and `Pow(x, 2)`.
//!
//! tract's `Square` runs floats only, so a model squaring an integer value failed to run
//! (`Square does not support I64`): torchvision's Keypoint R-CNN export computes `num_keypoints *
//! num_keypoints` in its Loop body from a shape value, which the analysis carries as a `TDim`.
//! Integers wrap on overflow (two's complement), as onnxruntime's `Mul` does; a `TDim` is multiplied
//! as an expression.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// `x * x`, element by element, for integers and `TDim`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SelfProduct;

impl SelfProduct {
    /// Whether [`SelfProduct`] (not tract's float-only `Square`) must compute `x * x` of `dt`.
    pub(crate) fn needed_for(dt: DatumType) -> bool {
        !dt.is_float() && !dt.is_quantized() && (dt.is_integer() || dt == DatumType::TDim)
    }
}

fn wrapping<T: Datum + Copy>(x: &Tensor, mul: fn(T, T) -> T) -> TractResult<Tensor> {
    let mut out = x.clone();
    out.try_as_plain_ram_mut()?.as_slice_mut::<T>()?.iter_mut().for_each(|v| *v = mul(*v, *v));
    Ok(out)
}

impl Op for SelfProduct {
    fn name(&self) -> StaticName {
        "SelfProduct".into()
    }

    op_as_typed_op!();
}

impl EvalOp for SelfProduct {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = inputs.first().context("SelfProduct takes one input")?;
        let out = match x.datum_type() {
            DatumType::I8 => wrapping::<i8>(x, i8::wrapping_mul)?,
            DatumType::I16 => wrapping::<i16>(x, i16::wrapping_mul)?,
            DatumType::I32 => wrapping::<i32>(x, i32::wrapping_mul)?,
            DatumType::I64 => wrapping::<i64>(x, i64::wrapping_mul)?,
            DatumType::U8 => wrapping::<u8>(x, u8::wrapping_mul)?,
            DatumType::U16 => wrapping::<u16>(x, u16::wrapping_mul)?,
            DatumType::U32 => wrapping::<u32>(x, u32::wrapping_mul)?,
            DatumType::U64 => wrapping::<u64>(x, u64::wrapping_mul)?,
            DatumType::TDim => {
                let mut out = x.clone().into_tensor();
                for v in out.try_as_plain_ram_mut()?.as_slice_mut::<TDim>()? {
                    *v = (v.clone() * v.clone()).simplify();
                }
                out
            }
            dt => bail!("SelfProduct computes x * x of integers and TDim, got {dt:?}"),
        };
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for SelfProduct {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs.first().context("SelfProduct takes one input")?;
        Ok(tvec!(x.datum_type.fact(x.shape.clone())))
    }

    as_op!();
}
