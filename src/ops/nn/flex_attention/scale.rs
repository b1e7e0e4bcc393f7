//! [`RootScale`]: the square root of FlexAttention's (or Attention's) default scale `1/sqrt(E)`, from
//! Q's head size `E` when it is known only at run time.
//!
//! For FlexAttention, onnx's reference computes `1/sqrt(E)` in double, rounds it to float32, takes
//! the square root in float32 and rounds that to the inputs' type ([`root_scale`]); for Attention it
//! stays in double until that last rounding ([`attention_root_scale`]). Q and K are each multiplied by
//! it. When `E` is a number the analysis does this once and wires a constant; when it is symbolic,
//! this op does it on every run from Q's concrete shape (it reads Q's dims, not its values).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// The square root of the default scale for head size `e`, as onnx's reference rounds it:
/// `sqrt(float32(1 / sqrt(e)))` in float32 (`e = 0` gives infinity, as numpy does).
pub(crate) fn root_scale(e: usize) -> f32 {
    // A head size is far below 2^53: exact in f64.
    let scale = (1.0 / (e as f64).sqrt()) as f32;
    scale.sqrt()
}

/// The square root of Attention's default scale for head size `e`, as onnx's reference computes it:
/// `sqrt(1 / sqrt(e))` in double (rounded to the inputs' type by the caller).
pub(crate) fn attention_root_scale(e: usize) -> f64 {
    (1.0 / (e as f64).sqrt()).sqrt()
}

/// Whose rounding [`RootScale`] follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ScaleOf {
    /// FlexAttention: [`root_scale`].
    Flex,
    /// Attention: [`attention_root_scale`].
    Attention,
}

/// Reads Q `(B, H, L, E)` and gives the square root of the default scale for `E` in `dt`, of shape
/// `[1, 1, 1, 1]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RootScale {
    /// The type of Q (and of the result).
    pub dt: DatumType,
    /// The rounding: FlexAttention's or Attention's.
    pub of: ScaleOf,
    /// The node, for errors.
    pub node: String,
}

impl RootScale {
    fn op(&self) -> &'static str {
        match self.of {
            ScaleOf::Flex => "FlexAttention",
            ScaleOf::Attention => "Attention",
        }
    }
}

impl Op for RootScale {
    fn name(&self) -> StaticName {
        format!("{}RootScale", self.op()).into()
    }

    op_as_typed_op!();
}

impl EvalOp for RootScale {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let q = args_1!(inputs);
        let [_, _, _, e] = q.shape() else {
            let msg = format!("Q has shape {:?}: it must have rank 4", q.shape());
            return Err(crate::NodeError::invalid(&self.node, self.op(), msg));
        };
        let root = match self.of {
            ScaleOf::Flex => tensor0(root_scale(*e)).cast_to_dt(self.dt)?.into_owned(),
            ScaleOf::Attention => tensor0(attention_root_scale(*e)).cast_to_dt(self.dt)?.into_owned(),
        };
        Ok(tvec!(root.broadcast_into_rank(4)?.into_tvalue()))
    }
}

impl TypedOp for RootScale {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let q = inputs.first().context("RootScale reads Q")?;
        if q.rank() != 4 {
            let msg = format!("Q has rank {}: it must have rank 4", q.rank());
            return Err(crate::NodeError::invalid(&self.node, self.op(), msg));
        }
        Ok(tvec!(self.dt.fact([1usize, 1, 1, 1])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_as_the_reference() {
        // numpy: np.sqrt(np.float32(1.0 / np.sqrt(E)))
        assert_eq!(root_scale(16), 0.5);
        assert_eq!(root_scale(1), 1.0);
        assert_eq!(root_scale(8).to_bits(), ((1.0 / 8f64.sqrt()) as f32).sqrt().to_bits());
        assert!(root_scale(0).is_infinite());
        assert_eq!(attention_root_scale(16), 0.5);
        assert_eq!(attention_root_scale(8), (1.0 / 8f64.sqrt()).sqrt());
    }
}
