//! A `FlexAttention` node translated ([`crate::ops::nn::flex_attention`]): tract's ops for the
//! attention itself, with the `score_mod` and `prob_mod` graphs translated from the facts of the
//! scores (and of the outer values they read) and spliced in, so the node becomes one typed graph.

use super::Translator;
use crate::analysis::control;
use crate::ops::nn::flex_attention::{wire, FlexAttention, Modifier};
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

impl Translator<'_> {
    /// A `FlexAttention`: scores, `score_mod`, softmax, `prob_mod`, the product with V.
    pub(super) fn flex_node(&mut self, node: &InferenceNode, op: &FlexAttention) -> TractResult<TVec<OutletId>> {
        let (inputs, facts) = self.typed_inputs(node)?;
        ensure!(
            inputs.len() == op.inputs,
            "the FlexAttention node has {} inputs, {} expected",
            inputs.len(),
            op.inputs
        );
        let plan = wire::check(op, &facts[0], &facts[1], &facts[2])?;
        let prefix = node.name.clone();
        let scores =
            super::super::splice::wire_alone(&mut self.target, &mut self.names, &inputs[..2], false, |m, i| {
                Ok(tvec![wire::scores(&plan, &prefix, m, i[0], i[1])?])
            })?[0];
        let scores = self.modifier(op, &plan, op.score_mod.as_ref(), scores, &inputs, &prefix)?;
        let probs = super::super::splice::wire_alone(&mut self.target, &mut self.names, &[scores], false, |m, i| {
            Ok(tvec![wire::softmax(&plan, &prefix, m, i[0])?])
        })?[0];
        let probs = self.modifier(op, &plan, op.prob_mod.as_ref(), probs, &inputs, &prefix)?;
        super::super::splice::wire_alone(&mut self.target, &mut self.names, &[probs, inputs[2]], false, |m, i| {
            Ok(tvec![wire::output(&plan, &prefix, m, i[0], i[1])?])
        })
    }

    /// `x` through the modifier graph `m` when given: translated with `x`'s fact and those of the
    /// outer values it reads, checked to return one value of `x`'s type and shape, inlined.
    fn modifier(
        &mut self,
        op: &FlexAttention,
        plan: &wire::Plan,
        m: Option<&Modifier>,
        x: OutletId,
        inputs: &[OutletId],
        prefix: &str,
    ) -> TractResult<OutletId> {
        let Some(m) = m else { return Ok(x) };
        let l = &op.label;
        let mut body_inputs: TVec<OutletId> = tvec![x];
        body_inputs.extend(m.outer.iter().map(|&i| inputs[i]));
        let facts: Vec<TypedFact> =
            body_inputs.iter().map(|o| self.target.outlet_fact(*o).cloned()).collect::<TractResult<_>>()?;
        let t = self
            .branch_with(&m.body, &m.graph, facts, true)
            .map_err(|why| crate::error::NodeError::failed(&l.node, &l.op, format!("the {} graph: {why}", m.name)))?;
        let outs: Vec<TypedFact> =
            t.typed.outputs.iter().map(|o| t.typed.outlet_fact(*o).cloned()).collect::<TractResult<_>>()?;
        let [out] = outs.as_slice() else {
            return Err(l.err(format!("the {} graph returns {} values: it must return one", m.name, outs.len())));
        };
        let want = plan.precision.fact(&*plan.scores_shape);
        if out.datum_type != want.datum_type || out.shape != want.shape {
            let dims = |f: &TypedFact| f.shape.iter().map(crate::dims::format_dim).collect::<Vec<_>>().join(", ");
            return Err(l.err(format!(
                "the {} graph returns {:?} [{}]: it must return its input's type and shape, {:?} [{}]",
                m.name,
                out.datum_type,
                dims(out),
                want.datum_type,
                dims(&want)
            )));
        }
        let outlets = control::inline(&mut self.target, &t.typed, &body_inputs, &format!("{prefix}.{}", m.name))?;
        Ok(outlets[0])
    }
}
