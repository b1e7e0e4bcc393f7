//! ONNX `Reshape` over symbolic shapes.
//!
//! The target shape usually comes from `Shape → Gather → Concat` and holds symbolic dims. tract
//! computes a `-1` by dividing the input's volume by the other dims only when one side is a single
//! term (`Can't divide 32*B+32*B*A by 16+16*A`), and refuses a target whose volume it cannot prove
//! equal to the input's. Here a `-1` is divided term by term ([`super::reshape_target`]), and a
//! volume that holds only under a condition on the inputs (a window partition needing `H` to be a
//! multiple of the window) becomes a requirement: the node is a [`ReshapeAs`], which checks the volume
//! when the model runs. The node is wrapped in a [`crate::ops::params::ParamNode`] with
//! [`super::reshape_params::ReshapeRule`]: a target known only at run time gives fresh dims (the rank
//! is the target's length) and is checked before the reshape runs.

use super::reshape_target::{plan_reshape, VolumeEquality};
use crate::dims::format_dim;
use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_hir::internal::*;

/// The Reshape builder.
pub(crate) fn reshape(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let allowzero = node.attribute.iter().find(|a| a.name == "allowzero").is_some_and(|a| a.i != 0);
    let op = SymbolicReshape { allowzero, node: crate::node::node_label(node).node };
    let built = Expanded::new("Reshape", op, 2, SymbolicReshape::rules, SymbolicReshape::wire).built()?;
    Ok(crate::ops::params::ParamNode::boxed(built, super::reshape_params::ReshapeRule { allowzero }, node))
}

/// `Reshape` with exact symbolic arithmetic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SymbolicReshape {
    /// Whether a 0 in the target is a 0 (else it copies the input's dim).
    pub allowzero: bool,
    /// Node name, for errors.
    pub node: String,
}

impl SymbolicReshape {
    /// The output shape for a known target, and the volume equality it requires, if any.
    fn output_shape(&self, input: &[TDim], target: &[TDim]) -> TractResult<(TVec<TDim>, Option<VolumeEquality>)> {
        let planned = plan_reshape(input, target, self.allowzero)
            .map_err(|m| crate::NodeError::invalid(&self.node, "Reshape", m))?;
        if let Some(why) = planned.inexact {
            return Err(crate::NodeError::not_static(&self.node, "Reshape", why));
        }
        let out = planned.out.into_iter().collect::<Option<TVec<TDim>>>();
        let out = out.ok_or_else(|| crate::NodeError::not_static(&self.node, "Reshape", "the -1 dim is not known"))?;
        Ok((out, planned.requires))
    }
}

impl SymbolicReshape {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.given(&inputs[1].shape, move |s, shape| {
            if let Some(n) = shape.first().and_then(TDim::as_i64) {
                s.equals(&outputs[0].rank, n)?;
            }
            Ok(())
        })?;
        s.given_2(&inputs[0].shape, &inputs[1].value, move |s, shape, target| {
            let target = crate::dims::dims_of(&target)?;
            let (out, _) = self.output_shape(&shape, &target)?;
            s.equals(&outputs[0].shape, ShapeFactoid::from(out))
        })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let Some(target) = model.outlet_fact(inputs[1])?.konst.clone() else {
            return Err(crate::NodeError::not_static(
                &self.node,
                "Reshape",
                "the target shape is known only at run time",
            ));
        };
        if target.rank() != 1 {
            return Err(crate::NodeError::invalid(
                &self.node,
                "Reshape",
                format!("the target shape must be 1-D, got shape {:?}", target.shape()),
            ));
        }
        let input: TVec<TDim> = model.outlet_fact(inputs[0])?.shape.to_tvec();
        let (out, requires) = self.output_shape(&input, &crate::dims::dims_of(&target)?)?;
        match requires {
            None => model.wire_node(prefix, AxisOp::Reshape(0, input, out), &inputs[..1]),
            Some((kept, other)) => model.wire_node(prefix, ReshapeAs { shape: out, kept, other }, &inputs[..1]),
        }
    }
}

/// A reshape whose volume equals its input's only when a requirement on the inputs holds: the output
/// has `shape`, and the volume is checked when the model runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ReshapeAs {
    /// The output shape.
    pub shape: TVec<TDim>,
    /// The output's volume.
    pub kept: TDim,
    /// The input's volume, required equal to it.
    pub other: TDim,
}

impl Op for ReshapeAs {
    fn name(&self) -> StaticName {
        "ReshapeAs".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("requires {} == {}", format_dim(&self.kept), format_dim(&self.other))])
    }

    op_as_typed_op!();
}

impl EvalOp for ReshapeAs {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let shape: Vec<usize> = self
            .shape
            .iter()
            .map(|d| d.eval(ctx.symbols).to_i64().ok().and_then(|v| usize::try_from(v).ok()))
            .collect::<Option<_>>()
            .with_context(|| format!("the shape {:?} is not known", self.shape))?;
        let volume = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        ensure!(
            volume == Some(input.len()),
            "the model requires {} == {}: reshaping {:?} to {shape:?} does not keep the volume",
            format_dim(&self.kept),
            format_dim(&self.other),
            input.shape()
        );
        let mut t = input.into_tensor();
        t.set_shape(&shape)?;
        Ok(tvec![t.into_tvalue()])
    }
}

impl TypedOp for ReshapeAs {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec![inputs[0].datum_type.fact(&*self.shape)])
    }
}
