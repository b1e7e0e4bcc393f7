//! [`AxisSoftmax`]: tract's float `Softmax`, run by our kernel where tract's is slow.
//!
//! tract runs an f32 softmax over trailing axes whose rows are a multiple of 4 long with a vectorized
//! row kernel. Anything else takes slower paths: another axis goes one output lane at a time through
//! ndarray views (YOLOv8's detection head, a `Softmax` over axis 1 of `[1, 16, 4, anchors]`: 40% of
//! the model's time, ten times onnxruntime's), and rows of other lengths call three kernels per row
//! (attention over 7x7 windows has rows of 49). The optimized plan
//! gets [`AxisSoftmax`] in its place (see [`super::use_our_kernels`]); it runs
//! [`crate::kernel::softmax_axis`] and leaves tract's row kernel the rows it is fast on. Shapes,
//! types and the op's meaning are unchanged.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

use crate::kernel::{softmax_axis, SoftmaxFn};

/// A float softmax or log-softmax over consecutive axes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AxisSoftmax {
    /// The first axis reduced.
    pub axis: usize,
    /// How many axes are reduced, from `axis` on.
    pub count: usize,
    /// tract's op it replaces, which runs any input our kernel does not take.
    pub stock: Softmax,
}

impl AxisSoftmax {
    /// The op for tract's `softmax` over an input of type `fact`, if our kernel takes it: f32 or
    /// f64 (not quantized), over consecutive axes.
    pub(crate) fn replacing(softmax: &Softmax, fact: &TypedFact) -> Option<AxisSoftmax> {
        let float = fact.datum_type == f32::datum_type() || fact.datum_type == f64::datum_type();
        let mut axes = softmax.axes.to_vec();
        axes.sort_unstable();
        let (&axis, count) = (axes.first()?, axes.len());
        let consecutive = axes.iter().enumerate().all(|(i, &a)| a == axis + i);
        let within = axis.checked_add(count).is_some_and(|end| end <= fact.rank());
        (float && softmax.quant_output_dt.is_none() && consecutive && within).then(|| AxisSoftmax {
            axis,
            count,
            stock: softmax.clone(),
        })
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
        Ok(vec![format!("axes: {}..{}", self.axis, self.axis + self.count)])
    }

    op_as_typed_op!();
}

impl EvalOp for AxisSoftmax {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let dt = input.datum_type();
        let plain = input.strides() == &*Tensor::natural_strides(input.shape());
        let end = self.axis + self.count;
        if !plain || !(dt == f32::datum_type() || dt == f64::datum_type()) || end > input.rank() {
            return self.stock.eval(ctx, tvec!(input));
        }
        let n: usize = input.shape()[self.axis..end].iter().product();
        let inner: usize = input.shape()[end..].iter().product();
        // tract's own row kernel: f32 softmax rows a multiple of 4 long, when this machine has it.
        let rows_kernel = inner == 1
            && dt == f32::datum_type()
            && self.stock.kind == SoftmaxKind::Softmax
            && n.is_multiple_of(4)
            && tract_linalg::routines::softmax_rows_f32().is_some();
        if rows_kernel {
            return self.stock.eval(ctx, tvec!(input));
        }
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
