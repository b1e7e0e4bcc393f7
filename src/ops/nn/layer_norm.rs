//! ONNX `LayerNormalization` of float32 as one op on our kernel ([`ExactLayerNorm`]).
//!
//! tract wires the definition as a sum, its product by `1/n`, a subtraction, a mean of squares, the
//! epsilon and a reciprocal square root. `1/n` is inexact (`21 * (1/7)` is not 3 in float32), so a
//! constant row does not normalize to 0: rows of 3.0 with `epsilon = 0` gave `-1` for each value
//! where the definition gives `0/0`, NaN, and rows of `1e20` gave `±1` where the normalized row is
//! 0 (the output the bias). [`crate::kernel::layer_norm_rows`] divides the sum by `n` and corrects
//! the mean by the deviations from it, so constant rows of any magnitude give 0 (or NaN with
//! `epsilon = 0`). The normalized axes (`axis` to the last) are contiguous in the input, so every
//! `axis` is rows of the kernel. Float32 inputs with only the `Y` output run as our op (as
//! [`crate::ops::nn::row_layer_norm::RowLayerNorm`] when the axis is the last and the scale and bias are constants of
//! one value per column, which the plan keeps as it is); other types, and nodes asking for the mean
//! or the inverse deviation, keep tract's op.

use crate::ops::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

use crate::ops::nn::row_layer_norm::RowLayerNorm;

/// The LayerNormalization builder: tract's, with float32 typed as [`ExactLayerNorm`].
pub(crate) fn layer_norm(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let axis = crate::node::attrs::int(&label, node, "axis")?.unwrap_or(-1);
    let eps = crate::node::attrs::float(&label, node, "epsilon")?.unwrap_or(1e-5);
    let stats = node.output.iter().skip(1).any(|o| !o.is_empty());
    let stock = crate::ops::stock("LayerNormalization")(ctx, node)?;
    if stats || node.input.len() < 2 {
        return Ok(stock);
    }
    Ok(StockNode::wrap(stock, ExactFix { axis, eps }, node))
}

/// What [`layer_norm`] adds to tract's op: float32 as [`ExactLayerNorm`].
#[derive(Debug, Clone)]
pub(crate) struct ExactFix {
    /// The first normalized axis (negative from the end).
    pub axis: i64,
    /// `epsilon`.
    pub eps: f32,
}

impl Fix for ExactFix {
    fn folds(_this: &StockNode<Self>, inputs: &[TValue]) -> bool {
        // Float32 is folded by our op in the typed model, not by tract's decomposition.
        inputs.first().is_none_or(|x| x.datum_type() != DatumType::F32)
    }

    fn to_typed(
        this: &StockNode<Self>,
        source: &InferenceModel,
        inode: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let inputs: TVec<OutletId> = inode.inputs.iter().filter_map(|o| mapping.get(o).copied()).collect();
        let f32_input = |o: &OutletId| target.outlet_fact(*o).is_ok_and(|f| f.datum_type == DatumType::F32);
        if inputs.len() != inode.inputs.len() || inputs.len() < 2 || !inputs.iter().all(f32_input) {
            return this.stock.to_typed(source, inode, target, mapping);
        }
        let rank = target.outlet_fact(inputs[0])?.rank();
        let r = i64::try_from(rank)?;
        if this.fix.axis < -r || this.fix.axis >= r {
            let msg = format!("axis is {} for an input of rank {rank}: it must be in [-{rank}, {rank})", this.fix.axis);
            return Err(crate::NodeError::invalid(&this.node, "LayerNormalization", msg));
        }
        let axis = usize::try_from(if this.fix.axis < 0 { this.fix.axis + r } else { this.fix.axis })?;
        let name = &inode.name;
        let eps = Arc::new(tensor0(this.fix.eps));
        // Over the last axis with constant scale and bias of one value per column: the plan's op.
        let n = target.outlet_fact(inputs[0])?.shape.last().and_then(|d| d.to_usize().ok());
        let column = |o: OutletId| -> Option<Arc<Tensor>> {
            let k = target.outlet_fact(o).ok()?.konst.clone()?;
            let n = n.filter(|&n| k.len() == n)?;
            k.into_tensor().into_shape(&[n]).ok().map(Arc::new)
        };
        let (scale, bias) = (column(inputs[1]), inputs.get(2).map(|&b| column(b)));
        if let (true, Some(scale), None | Some(Some(_))) = (axis + 1 == rank, scale, &bias) {
            let op = RowLayerNorm { eps, scale: Some(scale), bias: bias.flatten() };
            return target.wire_node(name, op, &inputs[..1]);
        }
        target.wire_node(name, ExactLayerNorm { axis, eps, node: this.node.clone() }, &inputs)
    }
}

/// Layer normalization of float32 `x` over its axes from `axis` on, times `scale`, plus `bias`
/// (inputs 1 and 2, broadcast to the normalized axes), on [`crate::kernel::layer_norm_rows`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ExactLayerNorm {
    /// The first normalized axis.
    pub axis: usize,
    /// `epsilon`, a float32 scalar.
    pub eps: Arc<Tensor>,
    /// The node, for errors.
    pub node: String,
}

impl ExactLayerNorm {
    /// `t` (a scale or a bias) as one value per element of the normalized axes `dims`.
    fn columns(&self, t: &Tensor, dims: &[usize], what: &str) -> TractResult<Vec<f32>> {
        let mut shape = t.shape().to_vec();
        while shape.len() > dims.len() && shape.first() == Some(&1) {
            shape.remove(0);
        }
        let fail = || {
            crate::NodeError::invalid(
                &self.node,
                "LayerNormalization",
                format!(
                    "the {what} has shape {:?}, which does not broadcast to the normalized axes {dims:?}",
                    t.shape()
                ),
            )
        };
        if shape.len() > dims.len() {
            return Err(fail());
        }
        let t = t.cast_to::<f32>()?.into_owned().into_shape(&shape).map_err(|_| fail())?;
        let b = t.broadcast_to_shape(dims).map_err(|_| fail())?;
        Ok(b.try_as_plain_ram()?.as_slice::<f32>()?.to_vec())
    }
}

impl Op for ExactLayerNorm {
    fn name(&self) -> StaticName {
        "ExactLayerNorm".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("axis: {}, eps: {:?}", self.axis, self.eps)])
    }

    op_as_typed_op!();
}

impl EvalOp for ExactLayerNorm {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(inputs.len() == 2 || inputs.len() == 3, "ExactLayerNorm takes 2 or 3 inputs");
        let mut x = inputs[0].clone().into_tensor();
        ensure!(self.axis < x.rank(), "ExactLayerNorm: axis {} of rank {}", self.axis, x.rank());
        let dims = x.shape()[self.axis..].to_vec();
        let n: usize = dims.iter().product();
        let scale = self.columns(&inputs[1], &dims, "scale")?;
        let bias = inputs.get(2).map(|b| self.columns(b, &dims, "bias")).transpose()?;
        let mut plain = x.try_as_plain_ram_mut()?;
        let eps = self.eps.cast_to_scalar::<f32>()?;
        crate::kernel::layer_norm_rows(plain.as_slice_mut::<f32>()?, n, eps, Some(&scale), bias.as_deref())
            .map_err(|e| crate::NodeError::failed(&self.node, "LayerNormalization", e))?;
        Ok(tvec!(x.into_tvalue()))
    }
}

impl TypedOp for ExactLayerNorm {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs.first().context("ExactLayerNorm takes an input")?;
        Ok(tvec!(f32::fact(x.shape.clone())))
    }
}
