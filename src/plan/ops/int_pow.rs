//! [`CubePow`]: `x^3` on float32 as two multiplications, in place of tract's `PowConst`.
//!
//! The tanh form of GELU that exporters write (`0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, GPT-2's
//! activation) raises `x` to the power 3 with `Pow`; tract runs a constant exponent through `powf`,
//! one call per element, which was the largest op of a GPT-2 export (two of them, 28% of its time).
//! `x·x·x` is what onnxruntime computes for an exponent of 3 as well; it can differ from `powf` in
//! the last bit.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::math::PowConst;

/// `x^3` by multiplication, for float32 (tract's op for other types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CubePow {
    /// tract's op, for other element types.
    pub stock: ElementWiseOp,
}

impl CubePow {
    /// Our op in place of `op`, when it is tract's `PowConst` with exponent 3.
    pub(crate) fn replacing(op: &ElementWiseOp) -> Option<CubePow> {
        let pow = op.0.downcast_ref::<PowConst>()?;
        (pow.exponent == 3.0).then(|| CubePow { stock: op.clone() })
    }
}

impl Op for CubePow {
    fn name(&self) -> StaticName {
        "CubePow".into()
    }

    op_as_typed_op!();
}

impl TypedOp for CubePow {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }

    as_op!();
}

impl EvalOp for CubePow {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        if inputs[0].datum_type() != f32::datum_type() {
            return self.stock.eval(ctx, inputs);
        }
        let mut x = args_1!(inputs).into_tensor();
        x.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?.iter_mut().for_each(|v| *v = *v * *v * *v);
        Ok(tvec!(x.into_tvalue()))
    }
}
