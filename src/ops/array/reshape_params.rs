//! `Reshape`'s target shape as a parameter ([`crate::ops::params`]): constant or computed from shapes,
//! the exact output dims of [`super::reshape_target::plan_reshape`]; known only at run time, the rank from
//! the target's length and fresh dims (a 1-D output is the input's volume), the values checked (one `-1` at most, no other negative dim,
//! the volume kept) before the reshape runs.

use super::reshape_target::plan_reshape;
use crate::ops::params::{Inlet, OutShape, ParamRule, Refusal};
use tract_onnx::prelude::TDim;

/// The output shape of a Reshape from its target shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReshapeRule {
    /// Whether a 0 in the target is a 0 (else it copies the input's dim).
    pub allowzero: bool,
}

impl ParamRule for ReshapeRule {
    fn is_param(&self, ix: usize) -> bool {
        ix == 1
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let (data, target) = match inputs {
            [data, target] => (data, target),
            _ => return Err(format!("Reshape takes data and shape, got {} inputs", inputs.len()).into()),
        };
        if !target.datum_type.is_integer() && !target.datum_type.is_tdim() {
            return Err(format!("the shape must be integers, got {:?}", target.datum_type).into());
        }
        if target.rank() != 1 {
            return Err(format!("the shape must be 1-D, got rank {}", target.rank()).into());
        }
        match target.dims()? {
            Some(values) => Ok(vec![plan_reshape(data.shape, &values, self.allowzero)?.out]),
            None => match target.len() {
                // One dim holds the whole volume.
                Some(1) => {
                    let volume = data.shape.iter().fold(TDim::Val(1), |acc, d| acc * d.clone()).simplify();
                    Ok(vec![vec![Some(volume)]])
                }
                Some(n) => Ok(vec![vec![None; n]]),
                None => Err(Refusal::Unknown("the shape's length must be known to know the output rank".into())),
            },
        }
    }
}
