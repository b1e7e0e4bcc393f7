//! [`AxisSoftmax`]: tract's `Softmax` over one axis that is not the last, run by our kernel.
//!
//! tract runs a softmax over its trailing axes with a vectorized row kernel, and any other axis one
//! output lane at a time through ndarray views: on YOLOv8's detection head (`Softmax` over axis 1 of
//! `[1, 16, 4, anchors]`) that one node was 40% of the model's time, ten times onnxruntime's. The
//! optimized plan gets [`AxisSoftmax`] in its place (see [`super::use_our_kernels`]), which sweeps whole
//! rows ([`crate::kernel::softmax_axis`]); shapes, types and the op's meaning are unchanged.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

use crate::kernel::{softmax_axis, SoftmaxFn};

/// A float softmax or log-softmax over one axis that is not the last one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AxisSoftmax {
    /// The axis reduced.
    pub axis: usize,
    /// tract's op it replaces, which runs any input our kernel does not take.
    pub stock: Softmax,
}

impl AxisSoftmax {
    /// The op for tract's `softmax` over an input of type `fact`, if it is one our kernel runs
    /// faster: f32 or f64, one axis, not the last.
    pub fn replacing(softmax: &Softmax, fact: &TypedFact) -> Option<AxisSoftmax> {
        let float = fact.datum_type == f32::datum_type() || fact.datum_type == f64::datum_type();
        match softmax.axes.as_slice() {
            [axis] if float && softmax.quant_output_dt.is_none() && axis + 1 < fact.rank() => {
                Some(AxisSoftmax { axis: *axis, stock: softmax.clone() })
            }
            _ => None,
        }
    }

    fn function(&self) -> SoftmaxFn {
        match self.stock.kind {
            SoftmaxKind::Softmax => SoftmaxFn::Softmax,
            SoftmaxKind::LogSoftmax => SoftmaxFn::LogSoftmax,
        }
    }
}

impl Op for AxisSoftmax {
    fn name(&self) -> StaticName {
        match self.stock.kind {
            SoftmaxKind::Softmax => "AxisSoftmax".into(),
            SoftmaxKind::LogSoftmax => "AxisLogSoftmax".into(),
        }
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("axis: {}", self.axis)])
    }

    op_as_typed_op!();
}

impl EvalOp for AxisSoftmax {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let dt = input.datum_type();
        let plain = input.strides() == &*Tensor::natural_strides(input.shape());
        if !plain || !(dt == f32::datum_type() || dt == f64::datum_type()) || self.axis >= input.rank() {
            return self.stock.eval(ctx, tvec!(input));
        }
        let n = input.shape()[self.axis];
        let inner: usize = input.shape()[self.axis + 1..].iter().product();
        let mut output = input.into_tensor();
        let mut view = output.try_as_plain_ram_mut()?;
        let done = if dt == f32::datum_type() {
            softmax_axis(view.as_slice_mut::<f32>()?, n, inner, self.function())
        } else {
            softmax_axis(view.as_slice_mut::<f64>()?, n, inner, self.function())
        };
        done.map_err(|e| anyhow::anyhow!("{}: {e}", self.name()))?;
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for AxisSoftmax {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }
}
