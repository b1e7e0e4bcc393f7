//! `ConstantOfShape` with its shape an input known only when the model runs.
//!
//! Wraps the ConstantOfShape builder ([`super::constant_of_shape`]) in a [`ParamNode`]: the output
//! rank is the length of the shape, each dim its value once known (checked non-negative), and the
//! element type the `value` attribute's (float32 without one).

use crate::ops::params::{Inlet, OutShape, ParamNode, ParamRule, Refusal};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// The ConstantOfShape builder.
pub(crate) fn constant_of_shape(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let stock = super::constant_of_shape::constant_of_shape(ctx, node)?;
    let datum_type = match node.attribute.iter().find(|a| a.name == "value").and_then(|a| a.t.as_ref()) {
        Some(t) => crate::schema::datum_type_of_elem(t.data_type)?,
        None => DatumType::F32,
    };
    Ok(ParamNode::boxed(stock, FillRule { datum_type }, node))
}

/// The output of ConstantOfShape: the shape its input holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FillRule {
    /// The element type of the fill value.
    pub datum_type: DatumType,
}

impl ParamRule for FillRule {
    fn is_param(&self, ix: usize) -> bool {
        ix == 0
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let shape = inputs.first().ok_or("the shape input is missing")?;
        if shape.rank() != 1 {
            return Err(format!("the shape must be a 1-D tensor, got rank {}", shape.rank()).into());
        }
        match shape.dims()? {
            Some(dims) => {
                if let Some((i, v)) =
                    dims.iter().enumerate().find_map(|(i, d)| d.as_i64().filter(|v| *v < 0).map(|v| (i, v)))
                {
                    return Err(format!("the shape holds {v} at index {i}").into());
                }
                Ok(vec![dims.into_iter().map(Some).collect()])
            }
            None => match shape.len() {
                Some(n) => Ok(vec![vec![None; n]]),
                None => Err(Refusal::Unknown("the length of the shape must be known".into())),
            },
        }
    }

    fn datum_types(&self, _inputs: &[Inlet], outputs: usize) -> Result<Vec<DatumType>, String> {
        Ok(vec![self.datum_type; outputs])
    }
}
