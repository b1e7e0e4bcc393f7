//! [`RowResize`]: tract's core `Resize` on f32 tensors, run by our resampling kernel.
//!
//! tract resamples one axis at a time with one slice operation per output value on the last axis
//! (and copies its input first): Keras's U-Net spent half its time in two `Resize` nodes, five times
//! onnxruntime's. [`RowResize`] keeps tract's taps (its `plan_axis`: coordinates, rounding and
//! weights are tract's) and runs them with [`crate::kernel::resample_axis_on`]: whole rows for outer
//! axes, one gather loop for the last, outer blocks split over the plan's threads when large. Other
//! element types go to tract's op.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::nn::resize::Resize;

use crate::kernel::{check_allocation, resample_axis_on, AxisTaps};

/// tract's core `Resize`, evaluated by our kernel on f32 inputs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RowResize {
    /// tract's op: its taps, its output shape rule, and its evaluation for other element types.
    pub stock: Resize,
}

impl Op for RowResize {
    fn name(&self) -> StaticName {
        "RowResize".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("{} {}", self.stock.interpolator.as_str(), self.stock.coord_transformer.as_str())])
    }

    op_as_typed_op!();
}

impl EvalOp for RowResize {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let rank = inputs[0].rank();
        let scales = self.stock.optional_scales_input.and_then(|ix| inputs.get(ix));
        let scales = scales.filter(|s| s.len() == rank);
        if inputs[0].datum_type() != f32::datum_type() || scales.is_some_and(|s| s.datum_type() != f32::datum_type()) {
            return self.stock.eval(ctx, inputs);
        }
        let given: Option<Vec<f32>> = match scales {
            Some(s) => Some(s.try_as_plain_ram()?.as_slice::<f32>()?.to_vec()),
            None => None,
        };
        if let Some(bad) = given.iter().flatten().find(|s| !(s.is_finite() && **s > 0.0)) {
            bail!("Resize: scale {bad} is not a positive finite number");
        }
        // tract multiplies each length by an integral scale as usize: keep the product exact.
        for (len, s) in inputs[0].shape().iter().zip(given.iter().flatten()) {
            ensure!(
                (*len as f64) * f64::from(*s) < 2f64.powi(52),
                "Resize: scale {s} over a length of {len} is too large"
            );
        }
        let sizes = self.stock.optional_sizes_input.and_then(|ix| inputs.get(ix));
        let output_shape = self.stock.compute_output_shape(
            inputs[0].shape(),
            self.stock.optional_scales_input.and_then(|ix| inputs.get(ix)).map(|t| &**t),
            sizes.map(|t| &**t),
        )?;
        ensure!(output_shape.len() == rank, "Resize: output rank {} for an input of rank {rank}", output_shape.len());
        let numel = output_shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
        check_allocation(numel.unwrap_or(u64::MAX), 4).map_err(|e| anyhow!("Resize: {e}"))?;
        let input = inputs.into_iter().next().context("Resize has an input")?;
        let mut shape: TVec<usize> = input.shape().into();
        let scales: TVec<f32> = match given {
            Some(given) => given.into(),
            None => output_shape.iter().zip(&shape).map(|(o, i)| *o as f32 / *i as f32).collect(),
        };
        if numel == Some(0) {
            return Ok(tvec!(Tensor::zero::<f32>(&output_shape)?.into_tvalue()));
        }
        let mut data: Option<Vec<f32>> = None;
        // The plan's thread pool (`--threads`), shared with tract's kernels: outer blocks split over it.
        let pool = crate::threads::pool(ctx);
        for (axis, scale) in scales.into_iter().enumerate() {
            let (len_in, len_out) = (shape[axis], output_shape[axis]);
            if len_in == len_out && scale == 1.0 {
                continue;
            }
            ensure!(len_in > 0, "Resize: axis {axis} is empty and cannot be resized to {len_out}");
            let plan = self.stock.plan_axis(scale, len_in, len_out);
            let taps = AxisTaps::new(len_in, plan.window, &plan.indices, &plan.weights, &plan.extrapolated)
                .context("Resize: tract's taps do not fit the axis")?;
            let inner: usize = shape[axis + 1..].iter().product();
            let outer: usize = shape[..axis].iter().product();
            let size = [outer, len_out, inner].iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
            check_allocation(size.unwrap_or(u64::MAX), 4).map_err(|e| anyhow!("Resize: {e}"))?;
            let mut resampled = vec![0f32; outer * len_out * inner];
            let src = match &data {
                Some(data) => data.as_slice(),
                None => input.try_as_plain_ram()?.as_slice::<f32>()?,
            };
            resample_axis_on(pool.as_deref(), src, len_in, inner, &taps, &mut resampled)
                .map_err(|e| anyhow!("Resize: {e}"))?;
            data = Some(resampled);
            shape[axis] = len_out;
        }
        let out = match data {
            Some(data) => tract_ndarray::ArrayD::from_shape_vec(&*shape, data)?.into_tensor(),
            None => input.into_tensor(),
        };
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for RowResize {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }
}
