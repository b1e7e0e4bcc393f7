//! `Resize`'s `scales` and `sizes` (opset 10+) as shape parameters ([`crate::ops::params`]).
//!
//! With every output dim decided by its parameters, the output is exact in each regime: `sizes`
//! give the resized dims (dim expressions too, when computed from shapes), `scales` give
//! `floor(d * scale)` (for a symbolic `d`, only whole scales are exact); the axes `Resize` leaves
//! keep their dims. Values known only at run time give fresh dims for the resized axes and are
//! checked before tract's Resize runs: one per resized axis, scales positive and finite, sizes not
//! negative, exactly one of the two given. Nodes with a `keep_aspect_ratio_policy` other than
//! `stretch` stay tract's as they are.

use crate::ops::params::{distinct_axes, Inlet, OutShape, ParamNode, ParamRule, Refusal};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// The Resize builder: tract's, wrapped with [`ResizeRule`].
pub(crate) fn resize(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    resize_named(ctx, node, node)
}

/// [`resize`] of `node`, its errors naming `named` (an `Upsample` built as the Resize it became).
pub(crate) fn resize_named(
    ctx: &ParsingContext,
    node: &NodeProto,
    named: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let stock = crate::ops::stock("Resize")(ctx, node)?;
    let stretch = node.attribute.iter().all(|a| a.name != "keep_aspect_ratio_policy" || a.s == b"stretch");
    if !stretch {
        return Ok(stock);
    }
    // Inlets skip absent optional inputs.
    let present: Vec<bool> = (0..4).map(|i| node.input.get(i).is_some_and(|n| !n.is_empty())).collect();
    let inlet = |i: usize| present[i].then(|| present[..i].iter().filter(|p| **p).count());
    let (scales, sizes) = if ctx.onnx_operator_set_version < 11 { (inlet(1), None) } else { (inlet(2), inlet(3)) };
    let axes = node.attribute.iter().find(|a| a.name == "axes").map(|a| a.ints.clone());
    Ok(ParamNode::boxed(stock, ResizeRule { scales, sizes, axes }, named))
}

/// The output shape of Resize from its scales or sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResizeRule {
    /// The inlet of `scales`, when the node has it.
    pub scales: Option<usize>,
    /// The inlet of `sizes`, when the node has it.
    pub sizes: Option<usize>,
    /// The attribute `axes` (opset 18), when given.
    pub axes: Option<Vec<i64>>,
}

impl ResizeRule {
    /// The inlet `ix` when the node has it and it holds values (an empty tensor stands for none).
    fn given<'a>(inputs: &'a [Inlet<'a>], ix: Option<usize>) -> Option<&'a Inlet<'a>> {
        ix.and_then(|i| inputs.get(i)).filter(|inlet| inlet.len() != Some(0))
    }
}

impl ParamRule for ResizeRule {
    fn is_param(&self, ix: usize) -> bool {
        Some(ix) == self.scales || Some(ix) == self.sizes
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let data = inputs.first().ok_or("the input X is missing")?;
        let rank = data.rank();
        let axes = match &self.axes {
            Some(axes) => distinct_axes(axes, rank)?,
            None => (0..rank).collect(),
        };
        let (scales, sizes) = (Self::given(inputs, self.scales), Self::given(inputs, self.sizes));
        let param = match (scales, sizes) {
            (Some(_), Some(_)) => return Err("scales and sizes are both given: one of them must be empty".into()),
            (None, None) => return Err("neither scales nor sizes is given".into()),
            (Some(p), None) | (None, Some(p)) => p,
        };
        if param.rank() != 1 {
            return Err(format!("scales and sizes must be 1-D, got rank {}", param.rank()).into());
        }
        if let Some(n) = param.len().filter(|n| *n != axes.len()) {
            return Err(format!("{n} values for {} resized axes", axes.len()).into());
        }
        let mut out: OutShape = data.shape.iter().cloned().map(Some).collect();
        let Some(value) = param.value else {
            for &axis in &axes {
                out[axis] = None;
            }
            return Ok(vec![out]);
        };
        if sizes.is_some() {
            let values = param.dims()?.ok_or("sizes must be integers")?;
            for (&axis, v) in axes.iter().zip(values) {
                if let Some(n) = v.as_i64().filter(|n| *n < 0) {
                    return Err(format!("size {n} for axis {axis} is negative").into());
                }
                out[axis] = Some(v);
            }
            return Ok(vec![out]);
        }
        let values = value.cast_to::<f64>().map_err(|e| format!("scales must be floats: {e}"))?;
        let values = values
            .try_as_plain_ram()
            .map_err(|e| e.to_string())?
            .as_slice::<f64>()
            .map_err(|e| e.to_string())?
            .to_vec();
        for (&axis, scale) in axes.iter().zip(values) {
            if !(scale.is_finite() && scale > 0.0) {
                return Err(format!("scale {scale} for axis {axis} must be positive and finite").into());
            }
            let d = &data.shape[axis];
            out[axis] = match d.as_i64() {
                Some(n) => {
                    let v = (n as f64 * scale).floor();
                    if v > i64::MAX as f64 / 2.0 {
                        return Err(format!("axis {axis}: {n} * {scale} is too large").into());
                    }
                    Some(TDim::Val(v as i64))
                }
                None if scale.fract() == 0.0 && scale <= i64::MAX as f64 / 2.0 => {
                    Some((d.clone() * scale as i64).simplify())
                }
                None => None,
            };
        }
        Ok(vec![out])
    }
}
