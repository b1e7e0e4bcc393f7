//! [`RowLayerNorm`]: layer normalization over the last axis of a float32 tensor, in one op on our
//! kernel ([`crate::kernel::layer_norm_rows`]), with its scale and bias inside.
//!
//! tract types ONNX's `LayerNormalization` as four ops (a sum, its product by `1/n`, the
//! subtraction, then its own `RmsNorm`) and a scale and a bias multiply after them, six passes
//! over the tensor with an allocation each; the layer-norm pass (`model::layer_norm`) puts this op
//! in their place before code generation.

use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

use crate::kernel::layer_norm_rows;

/// `(x - mean) / sqrt(var + eps) * scale + bias` over the last axis of a float32 tensor.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RowLayerNorm {
    /// The epsilon added to the variance.
    pub eps: Arc<Tensor>,
    /// The scale, one float32 per column (rank 1), if any.
    pub scale: Option<Arc<Tensor>>,
    /// The bias, one float32 per column (rank 1), if any.
    pub bias: Option<Arc<Tensor>>,
}

impl Op for RowLayerNorm {
    fn name(&self) -> StaticName {
        "RowLayerNorm".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("eps: {:?}, scale: {}, bias: {}", self.eps, self.scale.is_some(), self.bias.is_some())])
    }

    op_as_typed_op!();
}

impl TypedOp for RowLayerNorm {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 1 && inputs[0].datum_type == f32::datum_type(), "RowLayerNorm takes one f32 input");
        ensure!(inputs[0].rank() > 0, "RowLayerNorm normalizes the last axis of a tensor of rank 1 or more");
        Ok(tvec!(f32::fact(inputs[0].shape.clone())))
    }

    as_op!();
}

impl EvalOp for RowLayerNorm {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let mut x = args_1!(inputs).into_tensor();
        let n = *x.shape().last().context("RowLayerNorm of a scalar")?;
        let eps = self.eps.cast_to_scalar::<f32>()?;
        let scale = self.scale.as_ref().map(|t| t.try_as_plain_ram()).transpose()?;
        let scale = scale.as_ref().map(|t| t.as_slice::<f32>()).transpose()?;
        let bias = self.bias.as_ref().map(|t| t.try_as_plain_ram()).transpose()?;
        let bias = bias.as_ref().map(|t| t.as_slice::<f32>()).transpose()?;
        let mut data = x.try_as_plain_ram_mut()?;
        layer_norm_rows(data.as_slice_mut::<f32>()?, n, eps, scale, bias).map_err(|e| anyhow!("LayerNorm: {e}"))?;
        Ok(tvec!(x.into_tvalue()))
    }
}
