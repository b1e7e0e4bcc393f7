//! [`DirectConv`]: a float32 2-D convolution over channel planes, on our direct kernel
//! ([`crate::kernel::conv2d`]), its bias and a following clamp (`Relu`, `Clip`) fused.
//!
//! Put in place of tract's `Conv` before code generation by the direct-convolution pass
//! (`plan::passes::direct_conv`), which decides where it pays; it has one input, the image, and carries its
//! packed weights.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::PoolSpec;
use tract_onnx::tract_core::ops::nn::DataFormat;

use crate::kernel::{check_allocation, conv2d, ConvGeometry, PackedConv};

/// A 2-D convolution of float32 `NCHW` (or `CHW`) images by constant weights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DirectConv {
    /// The convolution's geometry, as tract's op had it (2-D, channels first; group 1 or depthwise).
    pub pool_spec: PoolSpec,
    /// Its weights, bias and clamp.
    pub(crate) packed: PackedConv,
}

impl DirectConv {
    /// The op for `pool_spec` (2-D, channels first) with these packed weights, or `None` when the
    /// geometry is not one the kernel runs.
    pub(crate) fn new(pool_spec: PoolSpec, packed: PackedConv) -> Option<DirectConv> {
        let [c_in, c_out, kh, kw] = packed.dims();
        let fits = matches!(pool_spec.data_format, DataFormat::NCHW | DataFormat::CHW)
            && pool_spec.rank() == 2
            && pool_spec.kernel_shape[..] == [kh, kw]
            && pool_spec.input_channels == c_in
            && pool_spec.output_channels == c_out;
        fits.then_some(DirectConv { pool_spec, packed })
    }
}

impl Op for DirectConv {
    fn name(&self) -> StaticName {
        "DirectConv".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(self.pool_spec.info())
    }

    op_as_typed_op!();
}

impl TypedOp for DirectConv {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 1 && inputs[0].datum_type == f32::datum_type(), "DirectConv takes one f32 input");
        self.pool_spec.output_facts(inputs)
    }

    /// One multiply-add per output value and tap (the plan's work, for the default thread budget).
    fn cost(&self, inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let output = self.output_facts(inputs)?;
        let values: TDim = output[0].shape.iter().product();
        Ok(tvec!((Cost::FMA(f32::datum_type()), values * self.packed.taps())))
    }

    as_op!();
}

impl EvalOp for DirectConv {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let shape = self.pool_spec.data_format.shape(input.shape())?;
        let hw = shape.hw_dims();
        let padding = self.pool_spec.computed_padding(hw);
        let output_shape = self.pool_spec.output_shape(input.shape())?;
        let [c_in, c_out, kh, kw] = self.packed.dims();
        let geo = ConvGeometry {
            batch: shape.n().copied().unwrap_or(1),
            c_in,
            h: hw[0],
            w: hw[1],
            c_out,
            kh,
            kw,
            stride: [self.pool_spec.stride(0), self.pool_spec.stride(1)],
            dilation: [self.pool_spec.dilation(0), self.pool_spec.dilation(1)],
            pad_before: [padding[0].pad_before, padding[1].pad_before],
            oh: padding[0].convoluted,
            ow: padding[1].convoluted,
        };
        ensure!(*shape.c() == c_in, "DirectConv: {} input channels, the kernel takes {c_in}", shape.c());
        let numel = output_shape.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
        check_allocation(numel.unwrap_or(u64::MAX), 4).map_err(|e| anyhow!("Conv: {e}"))?;
        let data = input.try_as_plain_ram()?;
        let data = data.as_slice::<f32>()?;
        // Written in place: an array made apart and turned into a tensor was copied once more (a
        // tenth of a stem convolution's time).
        let mut out = Tensor::zero::<f32>(&output_shape.shape)?;
        // The plan's thread pool (`--threads`, `Model::set_threads`), shared with tract's kernels.
        let executor = crate::threads::budget(ctx).map(crate::threads::executor);
        let pool = match &executor {
            Some(tract_linalg::multithread::Executor::MultiThread(pool)) => Some(&**pool),
            _ => None,
        };
        {
            let mut plain = out.try_as_plain_ram_mut()?;
            let values = plain.as_slice_mut::<f32>()?;
            conv2d(&geo, &self.packed, data, values, pool).map_err(|e| anyhow!("Conv: {e}"))?;
        }
        Ok(tvec!(out.into_tvalue()))
    }
}
