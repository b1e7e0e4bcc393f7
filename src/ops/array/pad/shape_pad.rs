//! Pad over a shape vector, which stock tract cannot analyse.
//!
//! MXNet's export of `reverse` pads the output of a `Shape` to rank 8 (`Shape → Shape → Sub → Concat →
//! Pad`). tract types a shape as `TDim`, so its Pad fails twice: the rule that data and constant value
//! share a type ("Impossible to unify TDim with I64"), and evaluation ("TDim is not a number"). The
//! replaced builder sends a Pad whose data is a `Shape` output to [`ShapePad`], which pads 1-D integer
//! or `TDim` vectors in constant mode; every other Pad goes to tract's own builder.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The Pad builder: [`ShapePad`] over a `Shape` output, [`crate::ops::array::pad::wrap`] in wrap mode, else
/// tract's Pad, wrapped to take symbolic pads
/// (see [`crate::ops::array::pad::symbolic`]) and, from opset 11, pads and axes as parameters (see
/// [`crate::ops::array::pad::params`]).
pub(crate) fn pad(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let graph = ctx.parent_graphs.last().copied().or(ctx.model.graph.as_ref());
    let over_shape = graph.is_some_and(|g| {
        g.node.iter().any(|n| n.op_type == "Shape" && node.input.first().is_some_and(|i| n.output.contains(i)))
    });
    let constant_mode = node.attribute.iter().all(|a| a.name != "mode" || a.s == b"constant");
    if over_shape && constant_mode && ctx.onnx_operator_set_version >= 11 {
        let name = crate::node::node_label(node).node;
        let has_constant = node.input.get(2).is_some_and(|s| !s.is_empty());
        if node.input.len() > 3 {
            return Err(crate::NodeError::invalid(name, "Pad", "the axes input is not supported on a shape vector"));
        }
        return Ok((Box::new(ShapePad { node: name, has_constant }), vec![]));
    }
    let mode = node
        .attribute
        .iter()
        .find(|a| a.name == "mode")
        .map_or_else(|| "constant".to_string(), |a| String::from_utf8_lossy(&a.s).into_owned());
    let present = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    let axes = present(3).then_some(2 + usize::from(present(2)));
    let rule = crate::ops::array::pad::params::PadRule { mode: mode.clone(), axes };
    if mode == "wrap" && ctx.onnx_operator_set_version >= 11 {
        // tract has no wrap mode: ours, pads known or not (it takes symbolic pads itself).
        let inputs = (0..node.input.len()).filter(|&i| present(i)).count();
        let op = crate::ops::array::pad::wrap::wrap_pad(crate::node::node_label(node), inputs, axes);
        return Ok(crate::ops::params::ParamNode::boxed((op, vec![]), rule, node));
    }
    let (stock, closures) = crate::ops::stock("Pad")(ctx, node)?;
    if ctx.onnx_operator_set_version < 11 {
        return Ok((stock, closures));
    }
    let symbolic = crate::ops::array::pad::symbolic::PadNode::wrap(
        (stock, closures),
        crate::ops::array::pad::symbolic::SymbolicPads { mode },
        node,
    );
    Ok(crate::ops::params::ParamNode::boxed(symbolic, rule, node))
}

/// Constant-mode Pad of a 1-D integer vector (a shape).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ShapePad {
    /// Node name, for errors.
    pub node: String,
    /// Whether the constant value is an input (else 0).
    pub has_constant: bool,
}

impl ShapePad {
    fn pad(&self, data: &Tensor, pads: &Tensor, constant: Option<&Tensor>) -> TractResult<Tensor> {
        let err = |m: String| crate::error::NodeError::invalid(&self.node, "Pad", m);
        if data.rank() != 1 {
            return Err(err(format!("expects a 1-D shape vector, got rank {}", data.rank())));
        }
        let pads: Vec<i64> = pads.cast_to::<i64>()?.try_as_plain_ram()?.as_slice::<i64>()?.to_vec();
        let [before, after] = pads[..] else { return Err(err(format!("pads must hold 2 values, got {}", pads.len()))) };
        let value = match constant {
            Some(c) if c.len() == 1 => crate::dims::dims_of(c)?.remove(0),
            Some(c) => return Err(err(format!("the constant value must hold one value, got {}", c.len()))),
            None => TDim::Val(0),
        };
        let dims: Vec<TDim> = crate::dims::dims_of(data)?;
        let len = dims.len() as i64;
        let (lo, hi) = (before.min(0).unsigned_abs() as usize, after.min(0).unsigned_abs() as usize);
        // Negative pads crop; together they may remove at most the whole vector, and growth is bounded
        // (a shape vector has at most a handful of dims).
        if lo.checked_add(hi).is_none_or(|crop| crop > dims.len()) || before.max(after) > 1 << 20 {
            return Err(err(format!("pads [{before}, {after}] do not fit a vector of {len}")));
        }
        let mut out = vec![value.clone(); before.max(0) as usize];
        out.extend(dims[lo..dims.len() - hi].iter().cloned());
        out.extend(std::iter::repeat_n(value, after.max(0) as usize));
        let t = tract_ndarray::arr1(&out).into_tensor();
        Ok(t.cast_to_dt(data.datum_type())?.into_owned())
    }
}

impl Op for ShapePad {
    fn name(&self) -> StaticName {
        "ShapePad".into()
    }

    op_as_typed_op!();
}

impl EvalOp for ShapePad {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let out = self.pad(&inputs[0], &inputs[1], inputs.get(2).map(|t| &**t))?;
        Ok(tvec!(out.into_tvalue()))
    }
}

impl InferenceRulesOp for ShapePad {
    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 2 + self.has_constant as usize)?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].rank, 1)?;
        s.given_all(inputs.iter().map(|i| &i.value), move |s, values| {
            let out = self.pad(&values[0], &values[1], values.get(2).map(|t| &**t))?;
            s.equals(&outputs[0].value, out.into_arc_tensor())
        })
    }

    as_op!();
    to_typed!();
}

impl TypedOp for ShapePad {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        if let (Some(data), Some(pads)) = (&inputs[0].konst, &inputs[1].konst) {
            let constant = inputs.get(2).map(|f| f.konst.clone()).unwrap_or(None);
            if inputs.len() < 3 || constant.is_some() {
                return Ok(tvec!(TypedFact::try_from(self.pad(data, pads, constant.as_deref())?.into_arc_tensor())?));
            }
        }
        Err(crate::error::NodeError::not_static(
            &self.node,
            "Pad",
            "the shape vector and pads must be known before running",
        ))
    }
}
