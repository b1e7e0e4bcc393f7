//! Translating one node in time independent of the model's size.
//!
//! tract's `wire_node` compares a new node's name with every node of the model it wires into, and
//! its `add_const` compares the constant with every node too: translating a graph node by node into
//! one model costs time in proportion to the square of its size (a chain of 10,000 nodes took
//! seconds, 200,000 would take hours). Here a node's own translation runs in a scratch model holding
//! only sources for its inputs, then the nodes it wired are moved into the model, with names made
//! unique against a set kept alongside it.

use anyhow::Context;
use std::collections::{HashMap, HashSet};
use tract_onnx::prelude::*;

/// The names of a model's nodes, kept up to date with the nodes appended since the last call.
#[derive(Debug, Default)]
pub(super) struct Names {
    seen: HashSet<String>,
    synced: usize,
}

impl Names {
    /// `name`, or `name.1`, `name.2`... the first not used in `model` nor given before.
    pub(super) fn fresh(&mut self, model: &TypedModel, name: &str) -> String {
        self.sync(model);
        if self.seen.insert(name.to_string()) {
            return name.to_string();
        }
        (1..).map(|i| format!("{name}.{i}")).find(|candidate| self.seen.insert(candidate.clone())).unwrap_or_default()
    }

    /// Takes in the nodes appended to `model` since the last call (nodes removed keep their names
    /// reserved, which only makes later names longer).
    fn sync(&mut self, model: &TypedModel) {
        self.synced = self.synced.min(model.nodes.len());
        for node in &model.nodes[self.synced..] {
            self.seen.insert(node.name.clone());
        }
        self.synced = model.nodes.len();
    }
}

/// Runs `wire` on a scratch model holding one source per outlet of `inputs` (with its fact, value
/// included unless `hide_values`: tract evaluates a node over small constant inputs as it wires it,
/// which a comparison it cannot decide must not be), then moves the nodes it wired into `target`,
/// reading `inputs`; returns the outlets in `target` of what `wire` returned.
pub(crate) fn wire_alone(
    target: &mut TypedModel,
    names: &mut Names,
    inputs: &[OutletId],
    hide_values: bool,
    wire: impl FnOnce(&mut TypedModel, &[OutletId]) -> TractResult<TVec<OutletId>>,
) -> TractResult<TVec<OutletId>> {
    let mut scratch = TypedModel { symbols: target.symbols.clone(), ..TypedModel::default() };
    let mut moved: HashMap<OutletId, OutletId> = HashMap::new();
    let mut sources = vec![];
    for (ix, input) in inputs.iter().enumerate() {
        let fact = target.outlet_fact(*input)?;
        let fact = if hide_values { fact.without_value() } else { fact.clone() };
        let source = scratch.add_source(format!("input.{ix}"), fact)?;
        moved.insert(source, *input);
        sources.push(source);
    }
    let outputs = wire(&mut scratch, &sources)?;
    let source_nodes: HashSet<usize> = sources.iter().map(|s| s.node).collect();
    for node in scratch.nodes {
        if source_nodes.contains(&node.id) {
            continue;
        }
        let name = names.fresh(target, &node.name);
        let facts = node.outputs.iter().map(|o| o.fact.clone()).collect();
        let id = target.add_node(name, node.op, facts)?;
        for (slot, input) in node.inputs.iter().enumerate() {
            let from = *moved.get(input).with_context(|| format!("node {} reads an unknown outlet", node.name))?;
            target.add_edge(from, InletId::new(id, slot))?;
        }
        for slot in 0..node.outputs.len() {
            moved.insert(OutletId::new(node.id, slot), OutletId::new(id, slot));
        }
    }
    outputs.iter().map(|o| moved.get(o).copied().context("the translation returned an unknown outlet")).collect()
}

/// Adds the constant `value` to `target` as a node of its own, named `name` made unique by `names`.
///
/// tract's `add_const` first looks for an equal constant among every node of the model, and two
/// tensors of dims are compared by simplifying each difference under every assertion of the scope:
/// a model with thousands of constants and hundreds of run-time sizes (SSDlite's 90 classes) spent
/// minutes there. The analysis never needs the sharing (the optimizer merges equal constants).
pub(crate) fn add_const(
    target: &mut TypedModel,
    names: &mut Names,
    name: &str,
    value: Tensor,
) -> TractResult<OutletId> {
    let value = value.into_arc_tensor();
    let fact = TypedFact::try_from(value.clone())?;
    let op = tract_onnx::tract_core::ops::konst::Const::new(value)?;
    let name = names.fresh(target, name);
    target.add_node(name, op, tvec!(fact)).map(OutletId::from)
}
