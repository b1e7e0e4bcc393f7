//! [`SliceInference`]: the op our builders put in the `InferenceModel`.
//!
//! Its rules give the output type and rank as soon as they are known and, once the input shape and the
//! parameter values are, the exact output shape (symbolic dims as `TDim` expressions). It evaluates
//! directly (no ad-hoc model), so analysis can propagate values through Shape → Slice chains. Typing
//! turns it into a [`ViewOp`] when the parameters are constants, else a [`DynSliceOp`] with fresh
//! symbols minted in the target model's own scope.

use super::dyn_op::{runtime_dims, DynSliceOp, OutDim};
use super::spec::{NodeKind, NodeSpec};
use super::step::{chain_output_shape, run_chain};
use super::view_op::ViewOp;
use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::optim::CONST_FOLD_MEM_BUDGET;
use tract_onnx::tract_hir::internal::*;

/// A slicing node in the inference model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SliceInference {
    /// The node.
    pub spec: NodeSpec,
}

impl Op for SliceInference {
    fn name(&self) -> StaticName {
        self.spec.label.op.clone().into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("{:?}", self.spec.kind)])
    }

    not_a_typed_op!();
}

impl EvalOp for SliceInference {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let params: Vec<Option<&Tensor>> = inputs.iter().map(|t| Some(&**t)).collect();
        let step = self.spec.step(&params)?;
        Ok(tvec!(run_chain(&vec![(self.spec.label.clone(), step)], inputs[0].clone())?))
    }
}

impl InferenceRulesOp for SliceInference {
    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        let label = &self.spec.label;
        if inputs.len() != self.spec.inlets() {
            return Err(label.err(format!("expected {} inputs, got {}", self.spec.inlets(), inputs.len())));
        }
        if outputs.len() != 1 {
            return Err(label.err(format!("expected 1 output, got {}", outputs.len())));
        }
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        match &self.spec.kind {
            NodeKind::OnnxSlice | NodeKind::OnnxSliceAttrs(_) | NodeKind::Paddle { .. } => {
                s.equals(&outputs[0].rank, &inputs[0].rank)?;
            }
            NodeKind::AsStrided(a) => s.equals(&outputs[0].rank, a.size.len() as i64)?,
            _ => {}
        }
        let spec = &self.spec;
        // A view of a constant is a constant, whatever its size (tract's own eager evaluation stops at
        // 4 MB inputs); only a view larger than its input (overlapping AsStrided windows) keeps tract's
        // budget, as declutter does.
        s.given_all(inputs.iter().map(|i| &i.value), move |s, values| {
            let mut params: Vec<Option<&Tensor>> = vec![None];
            params.extend(values[1..].iter().map(|v| Some(&**v)));
            let step = spec.step(&params)?;
            let chain = vec![(spec.label.clone(), step)];
            let out_shape =
                chain_output_shape(&chain, &values[0].shape().iter().map(|&d| d.into()).collect::<Vec<TDim>>())?;
            let size = values[0].datum_type().size_of() as u64;
            let out_bytes = out_shape.iter().try_fold(size, |acc, d| acc.checked_mul(u64::try_from(d.as_i64()?).ok()?));
            let in_bytes = values[0].len() as u64 * size;
            let within = out_bytes.is_some_and(|n| n <= in_bytes.max(CONST_FOLD_MEM_BUDGET));
            if within {
                let out = run_chain(&chain, values[0].clone().into_tvalue())?;
                s.equals(&outputs[0].value, out.into_arc_tensor())?;
            }
            Ok(())
        })?;
        s.given(&inputs[0].shape, move |s, shape| {
            if inputs.len() == 1 {
                let step = spec.step(&[None])?;
                let chain = vec![(spec.label.clone(), step)];
                let out = chain_output_shape(&chain, &shape)?;
                super::view_op::check_representable(&chain, &out, DatumType::U8)?;
                return s.equals(&outputs[0].shape, ShapeFactoid::from(out));
            }
            s.given_all(inputs[1..].iter().map(|i| &i.value), move |s, values| {
                let mut params: Vec<Option<&Tensor>> = vec![None];
                params.extend(values.iter().map(|v| Some(&**v)));
                let step = spec.step(&params)?;
                let chain = vec![(spec.label.clone(), step)];
                let out = chain_output_shape(&chain, &shape)?;
                super::view_op::check_representable(&chain, &out, DatumType::U8)?;
                s.equals(&outputs[0].shape, ShapeFactoid::from(out))
            })
        })
    }

    fn to_typed(
        &self,
        _source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let (inputs, facts) = crate::node::typed_inputs::typed_inputs(node, target, mapping)?;
        if facts[1..].iter().all(|f| f.konst.is_some()) {
            let params: Vec<Option<&Tensor>> = facts.iter().map(|f| f.konst.as_deref()).collect();
            match self.spec.step(&params) {
                Ok(step) => {
                    let op = ViewOp { chain: vec![(self.spec.label.clone(), step)] };
                    return wire(target, &node.name, op, &inputs[..1]);
                }
                Err(e) if !crate::NodeError::is_not_static(&e) => return Err(e),
                // Symbolic parameters (from a Shape): the exact output shape when it can be written.
                Err(_) => {
                    if let Some(shape) = self.spec.dim_shape(facts[0].shape.dims(), &params)? {
                        let dims = shape.into_iter().map(OutDim::Fixed).collect();
                        return wire(target, &node.name, DynSliceOp { spec: self.spec.clone(), dims }, &inputs);
                    }
                }
            }
        }
        let konst: Vec<Option<Arc<Tensor>>> = facts.iter().map(|f| f.konst.clone()).collect();
        let lens: Vec<Option<usize>> =
            facts.iter().map(|f| if f.rank() == 1 { f.shape[0].as_i64().map(|d| d as usize) } else { None }).collect();
        let prefix = symbol_prefix(&node.name);
        let symbols = target.symbols.clone();
        let mut mint = |axis: usize| symbols.new_with_prefix(&format!("{prefix}_{axis}"));
        let shapes: Vec<Option<Vec<TDim>>> = facts.iter().map(|f| Some(f.shape.to_tvec().to_vec())).collect();
        let dims = runtime_dims(&self.spec, facts[0].rank(), &konst, &lens, &shapes, &mut mint)?;
        wire(target, &node.name, DynSliceOp { spec: self.spec.clone(), dims }, &inputs)
    }

    as_op!();
}

/// Adds `op` to `target` as tract's `wire_node` does, minus its scan of every node for a duplicate name,
/// which makes translating a graph quadratic (half the time of `sliceops infer` on 10,000 slices). Source
/// node names are unique: [`crate::Model`] renames duplicates before tract sees them. (A clash with a name
/// tract makes up for a helper node of another op, `x.low` for a Clip named `x`, is not looked for; tract
/// uses names for diagnostics and lookups by name only.) Constant inputs go through `wire_node`, which
/// evaluates small constants.
fn wire(target: &mut TypedModel, name: &str, op: impl TypedOp, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let facts: TVec<TypedFact> = inputs.iter().map(|o| target.outlet_fact(*o).cloned()).collect::<TractResult<_>>()?;
    if facts.iter().any(|f| f.konst.is_some()) {
        return target.wire_node(name, op, inputs);
    }
    let output_facts = op
        .output_facts(&facts.iter().collect::<TVec<_>>())
        .with_context(|| format!("in output_facts invocation for {name}: {}", op.name()))?;
    let outputs = output_facts.len();
    let id = target.add_node(name, op, output_facts)?;
    for (ix, input) in inputs.iter().enumerate() {
        target.add_edge(*input, InletId::new(id, ix))?;
    }
    Ok((0..outputs).map(|slot| OutletId::new(id, slot)).collect())
}

/// A symbol name made from a node name: letters, digits and `_` only, starting with a letter.
fn symbol_prefix(node: &str) -> String {
    let mut s: String = node.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        s.insert(0, 'n');
    }
    s
}
