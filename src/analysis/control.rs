//! ONNX `If`: branches analysed from the facts of the values they read, taken one at a time.
//!
//! tract types an `If` only when both branches type with the same output facts, and analyses both
//! with every shape the model has, so a branch that is never taken for these inputs (silero-vad's
//! 8 kHz branch squeezes an axis that is 1 only at 8 kHz) stops the whole model. Here:
//! - a condition known before running inlines the branch it selects;
//! - otherwise each branch is translated on its own; a branch that cannot be translated with these
//!   facts is kept as parsed and translated when (if ever) it is taken, with the shapes it is given;
//! - outputs whose facts the branches agree on keep them; a dim they disagree on (ONNX lets branches
//!   return different shapes) is a fresh symbol, bound when the node runs.

use crate::error::{NodeError, NodeErrorKind};
use std::sync::{Arc, Mutex};
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// The element types and shapes a branch is run with.
pub(crate) type Signature = Vec<(DatumType, Vec<usize>)>;

/// The plans a deferred branch made, by signature.
pub(crate) type DeferredPlans = Arc<Mutex<Vec<(Signature, Arc<TypedRunnableModel>)>>>;

/// How a deferred branch is translated for the facts it is run with: its typed model and, when a
/// value in it cannot be computed, why. Given by whoever builds the branch (the translation, see
/// `translate::translate_deferred`), so that running a branch does not import the translation.
pub(crate) type TranslateBranch =
    fn(&InferenceModel, &pb::GraphProto, Vec<TypedFact>) -> TractResult<(TypedModel, Option<String>)>;

/// The most plans a deferred branch keeps.
const MAX_DEFERRED_PLANS: usize = 16;

/// How a branch's typed model becomes a runnable plan. The analysis builds branches; the plan layer
/// plans them: [`crate::Model`] installs its planner ([`install_planner`]) before any analysis, so
/// that this layer never imports the one above it.
#[derive(Clone, Copy)]
pub(crate) struct Planner {
    /// Refuses a model of concrete shapes one of whose values cannot be allocated.
    pub check: fn(&TypedModel) -> anyhow::Result<()>,
    /// Optimizes a model into a runnable plan.
    pub plan: fn(TypedModel) -> TractResult<Arc<TypedRunnableModel>>,
}

static PLANNER: std::sync::OnceLock<Planner> = std::sync::OnceLock::new();

/// Installs the planner of branches (the first one installed stays: there is one plan layer).
pub(crate) fn install_planner(planner: Planner) {
    let _ = PLANNER.set(planner);
}

fn planner() -> TractResult<Planner> {
    PLANNER.get().copied().context("no planner installed for If and Loop branches (internal error)")
}

/// One branch of an [`IfOp`] (or the body of a [`super::LoopOp`]).
#[derive(Debug, Clone)]
pub(crate) enum Branch {
    /// Translated at analysis.
    Typed {
        /// The branch as a typed model (its inputs: the outer values it reads, in order).
        model: Arc<TypedModel>,
        /// Its plan, made on first use.
        plan: Arc<Mutex<Option<Arc<TypedRunnableModel>>>>,
    },
    /// Not translatable with the facts analysis had: translated when taken.
    Deferred {
        /// The branch as parsed.
        model: Arc<InferenceModel>,
        /// Its graph, for the op types of its nodes.
        graph: Arc<pb::GraphProto>,
        /// Why analysis could not translate it.
        reason: String,
        /// Plans made so far, by input shapes.
        plans: DeferredPlans,
        /// Translates it for the shapes it is run with.
        translate: TranslateBranch,
    },
}

impl Branch {
    /// Runs the branch (or loop body) of node `node`, an `op`, on `inputs`.
    pub(crate) fn run(&self, node: &str, op: &str, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        self.run_counting(node, op, inputs, &mut 0)
    }

    /// [`Branch::run`], adding 1 to `translations` when a deferred branch is translated for these
    /// inputs' shapes.
    pub(crate) fn run_counting(
        &self,
        node: &str,
        op: &str,
        inputs: TVec<TValue>,
        translations: &mut u64,
    ) -> TractResult<TVec<TValue>> {
        let plan = match self {
            Branch::Typed { model, plan } => {
                let mut cached = plan.lock().unwrap_or_else(|e| e.into_inner());
                match cached.as_ref() {
                    Some(p) => p.clone(),
                    None => {
                        let p = (planner()?.plan)((**model).clone())?;
                        *cached = Some(p.clone());
                        p
                    }
                }
            }
            Branch::Deferred { model, graph, plans, reason, translate } => {
                let signature: Vec<(DatumType, Vec<usize>)> =
                    inputs.iter().map(|t| (t.datum_type(), t.shape().to_vec())).collect();
                let mut cached = plans.lock().unwrap_or_else(|e| e.into_inner());
                match cached.iter().find(|(s, _)| *s == signature) {
                    Some((_, p)) => p.clone(),
                    None => {
                        let facts: Vec<TypedFact> = signature.iter().map(|(dt, shape)| dt.fact(shape)).collect();
                        let (typed, unknown) = translate(model, graph, facts).map_err(|e| {
                            // Of the kind the branch's own error is, if it names a node.
                            let kind = NodeError::find(&e).map_or(NodeErrorKind::Failed, |n| n.kind);
                            NodeError::of_kind(node, op, kind, format!("the {} ({reason}): {e:#}", part(op)))
                        })?;
                        if let Some(why) = unknown {
                            return Err(NodeError::failed(node, op, format!("the {} cannot run: {why}", part(op))));
                        }
                        *translations += 1;
                        // Its shapes are concrete: a value it cannot allocate is refused before it runs.
                        (planner()?.check)(&typed)
                            .map_err(|e| NodeError::failed(node, op, format!("the {} ({reason}): {e:#}", part(op))))?;
                        let p = (planner()?.plan)(typed)?;
                        // A loop whose values change shape at every iteration would keep one plan
                        // per iteration: the oldest go.
                        if cached.len() >= MAX_DEFERRED_PLANS {
                            cached.remove(0);
                        }
                        cached.push((signature, p.clone()));
                        p
                    }
                }
            }
        };
        crate::cancel::run_plan(&plan, inputs)
    }
}

/// What a [`Branch`] is to an op, in its errors.
fn part(op: &str) -> &'static str {
    if op == "Loop" {
        "body"
    } else {
        "branch taken"
    }
}

/// An `If` whose branches run as plans of their own.
#[derive(Debug, Clone)]
pub(crate) struct IfOp {
    /// The node's name, for errors.
    pub node: String,
    /// The branch taken when the condition is true.
    pub then_branch: Branch,
    /// For each input of the then branch, the node input feeding it.
    pub then_inputs: Vec<usize>,
    /// The branch taken when the condition is false.
    pub else_branch: Branch,
    /// For each input of the else branch, the node input feeding it.
    pub else_inputs: Vec<usize>,
    /// The output facts.
    pub facts: TVec<TypedFact>,
    /// Whether the output facts are one branch's alone: the other could not be translated and
    /// declares nothing, so they hold only while it is not taken (checked when it runs).
    pub assumed: bool,
}

impl IfOp {
    /// Whether its output facts rest on an assumption: its own (see `assumed`), or one of an `If`
    /// inside a branch.
    pub(crate) fn rests_on_assumption(&self) -> bool {
        let inside = |b: &Branch| match b {
            Branch::Typed { model, .. } => {
                model.nodes().iter().any(|n| n.op_as::<IfOp>().is_some_and(IfOp::rests_on_assumption))
            }
            Branch::Deferred { .. } => false,
        };
        self.assumed || inside(&self.then_branch) || inside(&self.else_branch)
    }
}

impl PartialEq for IfOp {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node && self.facts == other.facts
    }
}

impl Eq for IfOp {}

impl Op for IfOp {
    fn name(&self) -> StaticName {
        "If".into()
    }

    fn mints_runtime_symbols(&self) -> bool {
        true
    }

    op_as_typed_op!();
}

impl EvalOp for IfOp {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let cond = inputs[0]
            .cast_to_scalar::<bool>()
            .map_err(|e| NodeError::failed(&self.node, "If", format!("the condition: {e:#}")))?;
        let (branch, mapping) =
            if cond { (&self.then_branch, &self.then_inputs) } else { (&self.else_branch, &self.else_inputs) };
        let branch_inputs: TVec<TValue> = mapping.iter().map(|&i| inputs[i].clone()).collect();
        let outputs = branch.run(&self.node, "If", branch_inputs)?;
        // The facts may come from what a branch declares: its types, ranks and dims given as values
        // are checked here.
        let same = outputs.iter().zip(&self.facts).all(|(o, f)| {
            o.rank() == f.rank()
                && o.datum_type() == f.datum_type
                && o.shape().iter().zip(f.shape.iter()).all(|(&n, d)| d.as_i64().is_none_or(|v| v == n as i64))
        });
        if outputs.len() != self.facts.len() || !same {
            let message = "the branch taken returns other types or shapes than analysis found";
            return Err(NodeError::failed(&self.node, "If", message));
        }
        Ok(outputs)
    }
}

impl TypedOp for IfOp {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(self.facts.iter().map(|f| f.without_value()).collect())
    }
}

/// Copies the nodes of `body` into `target` after `inputs` (the values its inputs read), names
/// prefixed with `prefix`; returns the outlets of its outputs.
pub(crate) fn inline(
    target: &mut TypedModel,
    body: &TypedModel,
    inputs: &[OutletId],
    prefix: &str,
) -> TractResult<TVec<OutletId>> {
    let mut map: std::collections::HashMap<OutletId, OutletId> = Default::default();
    for (ix, i) in body.inputs.iter().enumerate() {
        map.insert(*i, inputs[ix]);
    }
    for id in body.eval_order()? {
        let node = body.node(id);
        if body.inputs.iter().any(|i| i.node == id) {
            continue;
        }
        let ins: TVec<OutletId> = node.inputs.iter().map(|o| map[o]).collect();
        let name = target.unique_name(format!("{prefix}.{}", node.name));
        let outs = target.wire_node(name, node.op.clone(), &ins)?;
        for (slot, o) in outs.into_iter().enumerate() {
            map.insert(OutletId::new(id, slot), o);
        }
    }
    body.outputs.iter().map(|o| map.get(o).copied().context("a branch output is not computed")).collect()
}

/// Where each input of a branch comes from: tract-onnx feeds an `If` its condition, then every outer
/// value either branch reads, sorted by name; a branch's inputs are its sources, named after those
/// values.
pub(crate) fn input_mapping(body: &InferenceModel, outer: &[String]) -> TractResult<Vec<usize>> {
    body.inputs
        .iter()
        .map(|o| {
            let name = &body.node(o.node).name;
            outer
                .iter()
                .position(|n| n == name)
                .map(|p| p + 1)
                .with_context(|| format!("the branch reads '{name}', which the If is not given"))
        })
        .collect()
}

/// The outer values an `If` reads through its branches, in tract-onnx's order (sorted, each once).
pub(crate) fn outer_values(then_body: &InferenceModel, else_body: &InferenceModel) -> Vec<String> {
    let mut names: Vec<String> = then_body
        .inputs
        .iter()
        .map(|o| then_body.node(o.node).name.clone())
        .chain(else_body.inputs.iter().map(|o| else_body.node(o.node).name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The branch graphs of an `If` node.
pub(crate) fn branch_graphs(node: &pb::NodeProto) -> Option<(&pb::GraphProto, &pb::GraphProto)> {
    let get = |name: &str| node.attribute.iter().find(|a| a.name == name).and_then(|a| a.g.as_ref());
    Some((get("then_branch")?, get("else_branch")?))
}

/// What one branch is known to return, output by output: the element type and each dim, `None` for
/// a dim only running the branch can tell.
pub(crate) type Outline = Vec<(DatumType, Vec<Option<TDim>>)>;

/// The outline of a translated branch.
pub(crate) fn outline_of(facts: &[TypedFact]) -> Outline {
    facts.iter().map(|f| (f.datum_type, f.shape.iter().map(|d| Some(d.clone())).collect())).collect()
}

/// The outline a branch's graph declares, for a branch analysis could not translate: each output's
/// element type and rank, and its dims where declared as values. `None` when some output declares no
/// element type or no rank.
pub(crate) fn declared_outline(graph: &pb::GraphProto) -> Option<Outline> {
    graph
        .output
        .iter()
        .map(|o| {
            let declared = super::bind::DeclaredInput::of_value(o);
            let dt = crate::schema::datum_type_of_elem(declared.elem_type).ok()?;
            let dims = declared.dims?;
            let dims = dims
                .iter()
                .map(|d| match d {
                    super::DeclaredDim::Value(v) => Some(TDim::Val(*v)),
                    _ => None,
                })
                .collect();
            Some((dt, dims))
        })
        .collect()
}

/// Output facts both branches allow: the same type and rank are required; a dim they disagree on, or
/// one of them cannot tell, is made by `fresh`.
pub(crate) fn merge_facts(
    then_outline: Option<&Outline>,
    else_outline: Option<&Outline>,
    fresh: &mut dyn FnMut(usize, usize) -> TDim,
) -> TractResult<TVec<TypedFact>> {
    let (a, b) = match (then_outline, else_outline) {
        (Some(a), Some(b)) => (a, b),
        (Some(a), None) | (None, Some(a)) => (a, a),
        (None, None) => bail!("neither branch's outputs are known"),
    };
    ensure!(a.len() == b.len(), "the branches return {} and {} outputs", a.len(), b.len());
    let mut facts = tvec![];
    for (slot, ((xt, x), (yt, y))) in a.iter().zip(b).enumerate() {
        ensure!(xt == yt, "output {slot} is {xt:?} in one branch, {yt:?} in the other");
        ensure!(x.len() == y.len(), "output {slot} has rank {} in one branch, {} in the other", x.len(), y.len());
        let dims: TVec<TDim> = x
            .iter()
            .zip(y)
            .enumerate()
            .map(|(axis, (d, e))| match (d, e) {
                (Some(d), Some(e)) if d == e => d.clone(),
                _ => fresh(slot, axis),
            })
            .collect();
        facts.push(xt.fact(&*dims));
    }
    Ok(facts)
}
