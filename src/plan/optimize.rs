//! The optimizer driver: tract's own declutter and codegen passes, run in tract's order, with a patch
//! application whose cost is the size of the patch rather than the size of the model.
//!
//! tract's `ModelPatch::apply` scans every node of the model for each node a patch adds (a search for
//! an identical node whose result it then discards) and again to keep names unique; the optimizer
//! applies one patch per rewrite, so a model of `n` nodes that needs `O(n)` rewrites costs `O(n²)`
//! (a 1,000-node Relu chain spent 2.6 s fusing, 10,000 nodes minutes). [`optimize`] gives the same
//! model: the same passes, in the same order, until nothing changes, each patch applied with the same
//! effect on nodes, edges, inputs, outputs and labels; names stay unique through an index kept
//! beside the model (tract numbers the new nodes of one patch in hash order, so `.1`/`.2` suffixes
//! may differ). One pass differs on purpose, `fuse` (see [`super::fuse_chain`]): a run of more than
//! 16 elementwise nodes becomes several chains of 16, where tract grows one chain over the whole run
//! one node per patch.

use std::collections::{BTreeMap, HashMap, HashSet};

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::model::TRACT_STAGE;
use tract_onnx::tract_core::optim::{Optimizer, TypedPass};

use super::fuse_chain::Fuse;
use super::names::NameIndex;
use super::passes::{direct_conv, exact_div, hard_swish, layer_norm, scoped, self_product, small_matmul};
use crate::plan::passes::sweep::Sweep;

/// The model decluttered then optimized for running, as tract's `into_optimized` makes it, with our
/// rewrites of the plan (decomposed hard swish, small convolutions, layer norms, small matrix products)
/// between the two, and the float divisions no fusion took back as exact ones (`passes::exact_div`).
///
/// With the environment variable `SLICEOPS_NO_REWRITES` set (to anything but an empty string), the
/// rewrites are left out: the plan is tract's own (as [`optimize_with`] `false` makes it), to compare
/// our kernels with the paths they replace (`benches/conv_sweep.py`).
pub(crate) fn optimize(model: TypedModel) -> TractResult<TypedModel> {
    let rewrites = std::env::var_os("SLICEOPS_NO_REWRITES").is_none_or(|v| v.is_empty());
    optimize_with(model, rewrites)
}

/// The model decluttered then optimized, with our plan rewrites between the two if `rewrites`;
/// without them it is the model tract's `into_optimized` makes, our kernels in place of some of its
/// ops (see [`crate::plan::use_our_kernels`]).
pub(crate) fn optimize_with(mut model: TypedModel, rewrites: bool) -> TractResult<TypedModel> {
    let divisions = exact_div::divisions(&model);
    declutter(&mut model)?;
    if rewrites {
        let patterns = Optimizer {
            passes: vec![
                Box::new(Sweep::new("hard swish", hard_swish::rewrite)),
                Box::new(Sweep::new("direct conv", direct_conv::rewrite)),
                Box::new(Sweep::new("layer norm", layer_norm::rewrite)),
                Box::new(Sweep::new("small matmul", small_matmul::rewrite)),
            ],
            steps: None,
        };
        run_optimizer(&patterns, &mut model)
            .context("rewriting decomposed activations, convolutions, layer norms and small products")?;
    }
    // Correct results, not speed: with or without our rewrites.
    let exact = Optimizer { passes: vec![Box::new(exact_div::Restore::new(divisions))], steps: None };
    run_optimizer(&exact, &mut model).context("putting back exact divisions")?;
    run_optimizer(&codegen(), &mut model).context("optimizing")?;
    crate::plan::use_our_kernels(&mut model).context("putting our kernels in the plan")?;
    model.properties.insert(TRACT_STAGE.to_string(), rctensor0("optimized".to_string()));
    Ok(model)
}

/// The model decluttered (tract's `declutter` passes), in place.
pub(crate) fn declutter(model: &mut TypedModel) -> TractResult<()> {
    run_optimizer(&guarded(Optimizer::declutter()), model).context("decluttering")
}

/// `optimizer` with its `declutter` passes replaced by [`self_product::Declutter`] (tract's, with
/// integer squares kept off its float-only `Square`), its `codegen` and `PropagateUniformTdim`
/// passes by the same passes with each node proved against the assertions about its own symbols
/// ([`scoped`]).
fn guarded(mut optimizer: Optimizer) -> Optimizer {
    for pass in optimizer.passes.iter_mut() {
        match format!("{pass:?}").as_str() {
            "declutter" => *pass = Box::<self_product::Declutter>::default(),
            "codegen" => *pass = Box::new(scoped::ScopedRule::codegen()),
            "PropagateUniformTdim" => *pass = Box::<scoped::UniformTdim>::default(),
            _ => {}
        }
    }
    optimizer
}

/// tract's codegen passes, its `fuse` pass replaced by [`Fuse`] (the same rewrites, except that a full
/// elementwise chain grows no further: the rest of its run forms new chains).
fn codegen() -> Optimizer {
    let mut optimizer = guarded(Optimizer::codegen());
    for pass in optimizer.passes.iter_mut().filter(|p| format!("{p:?}") == "fuse") {
        *pass = Box::new(Fuse::default());
    }
    optimizer
}

/// Runs every pass of `optimizer` in turn, again and again until a whole round changes nothing.
fn run_optimizer(optimizer: &Optimizer, model: &mut TypedModel) -> TractResult<()> {
    let _proofs = model.symbols.proof_cache_session();
    let mut session = optimizer.session();
    // No pass needs more rewrites than a few per node: past that it is going round in circles.
    let limit = model.nodes.len().saturating_mul(8).saturating_add(256);
    let mut state = Applied { limit, ..Applied::default() };
    model.compact()?;
    loop {
        let before = state.count;
        for pass in &optimizer.passes {
            let mut pass = pass.clone();
            loop {
                let round = state.count;
                run_pass(pass.as_mut(), &mut session, &mut state, model)
                    .with_context(|| format!("running pass {pass:?}"))?;
                model.compact()?;
                if state.count == round {
                    break;
                }
            }
        }
        if state.count == before {
            return Ok(());
        }
        model.compact()?;
    }
}

/// What the driver keeps across passes: the number of patches applied, and the watchdog keys of the
/// patches that must not be applied twice (a pass may propose them again forever otherwise); the
/// patches each pass applied, and how many a pass may apply before it is stopped (tract's
/// `ChangeAxes` can move an axis of a `Scan` back and forth forever; every patch keeps the model
/// correct, so stopping a pass only leaves it less rewritten).
#[derive(Default)]
struct Applied {
    count: usize,
    seen: HashSet<String>,
    by_pass: HashMap<String, usize>,
    limit: usize,
}

/// One sweep of one pass: every patch it proposes, applied as it comes.
fn run_pass(
    pass: &mut dyn TypedPass,
    session: &mut tract_onnx::tract_core::optim::OptimizerSession,
    state: &mut Applied,
    model: &mut TypedModel,
) -> TractResult<()> {
    let key = format!("{pass:?}");
    if state.by_pass.get(&key).is_some_and(|n| *n >= state.limit) {
        return Ok(());
    }
    pass.reset()?;
    let mut names = NameIndex::of(model.nodes.iter().map(|n| n.name.clone()));
    while let Some(mut patch) = pass.next(session, model)? {
        let applied = state.by_pass.entry(key.clone()).or_default();
        if *applied >= state.limit {
            break;
        }
        *applied += 1;
        if let Some(watchdog) = patch.dont_apply_twice.take() {
            if !state.seen.insert(watchdog) {
                continue;
            }
        }
        let context = patch.context.join(" >> ");
        apply(patch, model, &mut names).with_context(|| format!("applying patch {context}"))?;
        state.count += 1;
    }
    pass.run_direct(model)?;
    Ok(())
}

/// Renames node `id` to `name`, keeping the index in step.
fn rename(names: &mut NameIndex, model: &mut TypedModel, id: usize, name: String) {
    names.remove(&model.nodes[id].name);
    names.add(&name);
    model.nodes[id].name = name;
}

/// Applies `patch` to `target`: the effect of tract's `ModelPatch::apply` (new nodes wired, outlets
/// shunted, obliterated nodes emptied, input nodes replaced, nodes left without readers turned into
/// dummies, new names made unique), in time proportional to the patch and the nodes it touches.
fn apply(patch: TypedModelPatch, target: &mut TypedModel, names: &mut NameIndex) -> TractResult<()> {
    let TypedModelPatch { model: patch, taps: mut mapping, shunts, obliterate, inputs: replaced_inputs, .. } = patch;
    let mut input_outlets = target.input_outlets()?.to_vec();
    let mut added = Vec::new();
    let mut wiring: BTreeMap<usize, Vec<OutletId>> = BTreeMap::new();
    for node in patch.nodes {
        let is_source = TypedModel::is_source(&node.op);
        if is_source && mapping.contains_key(&OutletId::new(node.id, 0)) {
            continue; // a tap: it stands for a wire of the target
        }
        let Node { id: patch_id, name, inputs, op, outputs } = node;
        let slots = outputs.len();
        let facts = outputs.into_iter().map(|o| o.fact).collect();
        names.add(&name);
        let id = target.add_node(name, op, facts)?;
        added.push(id);
        for slot in 0..slots {
            mapping.insert(OutletId::new(patch_id, slot), OutletId::new(id, slot));
        }
        wiring.insert(id, inputs);
        if is_source {
            // A new source replaces one of the target's inputs.
            let replaced = *replaced_inputs
                .get(&patch_id)
                .with_context(|| format!("patch source {patch_id} replaces no input"))?;
            for outlet in input_outlets.iter_mut().filter(|o| o.node == replaced) {
                outlet.node = id;
            }
        }
    }
    let mapped = |mapping: &HashMap<OutletId, OutletId>, o: &OutletId| {
        mapping.get(o).copied().with_context(|| format!("patch wire {o:?} is not mapped"))
    };
    let mut shunted: Vec<(OutletId, OutletId)> = shunts.into_iter().collect();
    shunted.sort();
    for &(outlet, by) in &shunted {
        let by = mapped(&mapping, &by)?;
        let readers = target.nodes[outlet.node].outputs[outlet.slot].successors.clone();
        for reader in readers {
            target.add_edge(by, reader)?;
        }
        for o in target.outputs.iter_mut().filter(|o| **o == outlet) {
            *o = by;
        }
        if let Some(label) = target.outlet_labels.remove(&outlet) {
            target.set_outlet_label(by, label)?;
        }
    }
    for (node, inputs) in &wiring {
        for (slot, input) in inputs.iter().enumerate() {
            target.add_edge(mapped(&mapping, input)?, InletId::new(*node, slot))?;
        }
    }
    for node in obliterate {
        target.nodes[node].op = target.create_dummy();
    }
    target.set_input_outlets(&input_outlets)?;
    collect_garbage(target, names, shunted.iter().map(|(outlet, _)| outlet.node).collect());
    for id in added {
        let name = &target.nodes[id].name;
        let fresh = if let Some((prefix, _)) = name.split_once('#') {
            let prefix = prefix.to_string();
            Some(names.fresh(&prefix))
        } else if names.count(name) > 1 {
            let name = name.clone();
            Some(names.fresh(&name))
        } else {
            None
        };
        if let Some(fresh) = fresh {
            rename(names, target, id, fresh);
        }
    }
    Ok(())
}

/// Turns into dummies the nodes (among `maybe` and, in turn, their producers) that are neither a
/// model input or output nor read by any node, dropping their facts and edges.
fn collect_garbage(target: &mut TypedModel, names: &mut NameIndex, mut maybe: HashSet<usize>) {
    while let Some(&id) = maybe.iter().next() {
        maybe.remove(&id);
        let unused = !target.outputs.iter().any(|o| o.node == id)
            && !target.inputs.iter().any(|i| i.node == id)
            && target.nodes[id].outputs.iter().all(|o| o.successors.is_empty());
        if !unused {
            continue;
        }
        target.nodes[id].op = target.create_dummy();
        rename(names, target, id, format!("Dummy-node-{id}"));
        target.nodes[id].outputs.clear();
        let inputs = std::mem::take(&mut target.nodes[id].inputs);
        for input in inputs {
            target.nodes[input.node].outputs[input.slot].successors.retain(|s| s.node != id);
            maybe.insert(input.node);
        }
    }
}
