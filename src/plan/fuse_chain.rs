//! tract's `fuse` pass, with long elementwise runs fused in linear time.
//!
//! tract folds a run of elementwise binary nodes (`OptBinUnicast`, `OptBinByScalar`) into one
//! `OptBinChain` of at most 16 steps, it says; but a full chain still absorbs the next node of the
//! run on each later visit, one per patch, each patch re-tapping every input of the chain. A run of
//! `k` nodes then costs `O(k²)` to fuse, and leaves one node with `k` inputs, on which tract's
//! evaluation order (computed again by every pass) is quadratic too: a 10,000-node Relu chain took
//! minutes. [`Fuse`] visits the nodes as tract's pass does and asks each op to fuse, except a full
//! chain: the plain nodes after it become a new chain, 16 at a time.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::{OptBinByScalar, OptBinChain, OptBinChainStep, OptBinUnicast};
use tract_onnx::tract_core::ops::dummy::Dummy;
use tract_onnx::tract_core::optim::{OptimizerSession, TypedPass};

/// A step made for a plain node: its op, the types of its two inputs, the step.
type Made = (Box<dyn TypedOp>, DatumType, DatumType, OptBinChainStep);

/// How many made steps [`Fuse`] remembers.
const MADE_KEPT: usize = 8;

/// The steps of a full chain: where tract means to stop growing one.
const CHAIN_STEPS: usize = 16;

/// tract's `fuse` pass (each node's `TypedOp::fuse`, in node order), full chains left to grow no more.
#[derive(Clone, Default)]
pub(crate) struct Fuse {
    /// The node the sweep resumes at.
    next: usize,
    /// The steps already made, by op and operand types (a long run mostly repeats one op).
    steps: Vec<Made>,
}

impl std::fmt::Debug for Fuse {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "fuse")
    }
}

impl TypedPass for Fuse {
    fn reset(&mut self) -> TractResult<()> {
        self.next = 0;
        Ok(())
    }

    fn next(&mut self, _session: &mut OptimizerSession, model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        for node in model.nodes.iter().skip(self.next) {
            if node.op_is::<Dummy>() {
                continue;
            }
            let patch = match node.op_as::<OptBinChain>() {
                Some(chain) if chain.steps.len() >= CHAIN_STEPS => chain_the_rest(model, node, &mut self.steps)?,
                _ => node.op.fuse(model, node).with_context(|| format!("fuse node {node}"))?,
            };
            if let Some(mut patch) = patch {
                patch.push_context(format!("fuse {node}"));
                self.next = node.id + usize::from(patch.dont_apply_twice.is_some());
                return Ok(Some(patch));
            }
        }
        Ok(None)
    }
}

/// After a full chain `node`, the plain elementwise nodes tract would have absorbed into it (each the
/// single reader of the value before it, reading it as its accumulator (input 0), not a model output,
/// keeping the accumulator's element type), up to [`CHAIN_STEPS`] of them, replaced by a new chain.
/// That chain is full in turn when the run goes on, and takes the next nodes when the sweep reaches it.
fn chain_the_rest(model: &TypedModel, node: &TypedNode, made: &mut Vec<Made>) -> TractResult<Option<TypedModelPatch>> {
    let a_dt = model.outlet_fact(node.inputs[0])?.datum_type;
    let outputs = model.output_outlets()?;
    let mut run: Vec<(usize, OptBinChainStep)> = vec![];
    let mut last = node.id;
    loop {
        let current = model.node(last);
        let outlet = OutletId::new(last, 0);
        if current.outputs.len() != 1 || current.outputs[0].successors.len() != 1 || outputs.contains(&outlet) {
            break;
        }
        let reader = current.outputs[0].successors[0];
        if reader.slot != 0 {
            break;
        }
        let succ = model.node(reader.node);
        let Some(step) = plain_step(model, succ, made)? else { break };
        let operand_type = model.outlet_fact(succ.inputs[1])?.datum_type;
        if operand_type != a_dt || step.binop.result_datum_type(a_dt, a_dt).ok() != Some(a_dt) {
            break;
        }
        run.push((succ.id, step));
        last = succ.id;
        if run.len() == CHAIN_STEPS {
            break;
        }
    }
    if run.is_empty() {
        return Ok(None);
    }
    let mut patch = TypedModelPatch::new("fusing elementwise chain");
    let mut inputs = tvec![patch.tap_model(model, OutletId::new(node.id, 0))?];
    for (id, _) in &run {
        inputs.push(patch.tap_model(model, model.node(*id).inputs[1])?);
    }
    let steps = run.into_iter().map(|(_, step)| step).collect();
    let wire = patch.wire_node(&model.node(last).name, OptBinChain { steps }, &inputs)?[0];
    patch.shunt_outside(model, last.into(), wire)?;
    Ok(Some(patch))
}

/// The chain step tract makes of a plain elementwise node (a unicast or by-scalar binary node), if it
/// chains it: asked of tract itself, on a two-node scratch model, since a step's kernel is not ours
/// to build.
fn plain_step(model: &TypedModel, node: &TypedNode, made: &mut Vec<Made>) -> TractResult<Option<OptBinChainStep>> {
    if !(node.op_is::<OptBinUnicast>() || node.op_is::<OptBinByScalar>()) || node.inputs.len() != 2 {
        return Ok(None);
    }
    let a = model.outlet_fact(node.inputs[0])?.without_value();
    let b = model.outlet_fact(node.inputs[1])?.clone();
    let known =
        made.iter().find(|(op, a_dt, b_dt, _)| *a_dt == a.datum_type && *b_dt == b.datum_type && *op == node.op);
    if let Some((.., step)) = known {
        return Ok(Some(step.clone()));
    }
    let types = (a.datum_type, b.datum_type);
    let step = scratch_step(node, a, b)?;
    if let Some(step) = &step {
        if made.len() == MADE_KEPT {
            made.remove(0);
        }
        made.push((node.op.clone(), types.0, types.1, step.clone()));
    }
    Ok(step)
}

/// The step tract makes of `node` (inputs of facts `a` and `b`) when it heads a run of two.
fn scratch_step(node: &TypedNode, a: TypedFact, b: TypedFact) -> TractResult<Option<OptBinChainStep>> {
    let mut scratch = TypedModel::default();
    let a = scratch.add_source("a", a)?;
    let b = scratch.add_source("b", b)?;
    let first = scratch.wire_node("first", node.op.clone(), &[a, b])?[0];
    let second = scratch.wire_node("second", node.op.clone(), &[first, b])?[0];
    scratch.select_output_outlets(&[second])?;
    let head = scratch.node(first.node);
    let Some(patch) = head.op.fuse(&scratch, head)? else { return Ok(None) };
    Ok(patch.model.nodes.iter().find_map(|n| n.op_as::<OptBinChain>()).and_then(|c| c.steps.first().cloned()))
}
