//! `If` nodes: a condition analysis computed inlines the branch it selects, and every other branch
//! is folded as a graph of its own.
//!
//! A branch reads values of the scopes around it by name. To fold it, it is made a model whose inputs
//! are those values, typed with what the analysis of the enclosing graph knows of them (small
//! constants become initializers, so that branches fold over them too); the whole `fold` runs on that
//! model, nested `If`s included, and the result goes back in place of the branch with the added
//! inputs and initializers taken out again. A branch that cannot be analysed with these facts (a
//! branch that is not taken for these shapes may not type) is left as it was, and said so.

use super::graph::{fresh_name_in, rename_defined};
use super::{FoldOptions, Report, Scope};
use crate::onnx::node::{is_onnx, node_name, op_type};
use crate::onnx::Facts;
use crate::schema::proto::{self, GraphProto, ModelProto, NodeProto};
use std::collections::{HashMap, HashSet};

/// Subgraphs nest at most this deep before folding stops going in (a hostile model could nest
/// thousands).
pub(crate) const MAX_DEPTH: usize = 16;

/// Replaces every `If` whose condition analysis computed by the nodes of the branch it selects;
/// `whole` are the names defined anywhere in the model, which inlined names must not repeat. Returns
/// whether anything changed.
pub(crate) fn inline_known_ifs(
    graph: &mut GraphProto,
    facts: &Facts,
    whole: &HashSet<String>,
    report: &mut Report,
) -> bool {
    let mut changed = false;
    let mut ix = 0;
    while ix < graph.node.len() {
        let Some(branch) = selected_branch(&graph.node[ix], facts).cloned() else {
            ix += 1;
            continue;
        };
        let node = graph.node.remove(ix);
        let mut taken: HashSet<String> = whole.clone();
        taken.extend(crate::onnx::names_defined_deep(graph));
        let (nodes, initializers, sparse) = inline(&branch, &node.output, &mut taken);
        let n = nodes.len();
        graph.node.splice(ix..ix, nodes);
        graph.initializer.extend(initializers);
        graph.sparse_initializer.extend(sparse);
        ix += n;
        report.count("If with a known condition inlined", 1);
        changed = true;
    }
    changed
}

/// The branch an `If` takes, when its condition is known.
fn selected_branch<'a>(node: &'a NodeProto, facts: &Facts) -> Option<&'a GraphProto> {
    if !is_onnx(node) || op_type(node) != "If" {
        return None;
    }
    let cond = facts.get(node.input.first()?)?.concrete()?;
    if cond.len() != 1 {
        return None;
    }
    let cond = cond.cast_to::<bool>().ok()?;
    let take = *cond.try_as_plain_ram().ok()?.as_slice::<bool>().ok()?.first()?;
    let name = if take { "then_branch" } else { "else_branch" };
    node.attribute.iter().find(|a| a.name.as_deref() == Some(name))?.g.as_ref()
}

/// A branch's nodes and initializers, its names made distinct from `taken` (which gains them), its
/// outputs renamed to `outputs` (an `Identity` where the branch returns a value it does not make).
fn inline(
    branch: &GraphProto,
    outputs: &[String],
    taken: &mut HashSet<String>,
) -> (Vec<NodeProto>, Vec<proto::TensorProto>, Vec<proto::SparseTensorProto>) {
    let mut g = branch.clone();
    let made_once: HashMap<String, usize> = {
        let mut count: HashMap<String, usize> = HashMap::new();
        for o in g.output.iter().filter_map(|o| o.name.clone()) {
            *count.entry(o).or_default() += 1;
        }
        count
    };
    let produced: HashSet<String> = g.node.iter().flat_map(|n| n.output.iter().cloned()).collect();
    // The branch's outputs that a node of it makes (and that it returns once) take the If's names.
    let mut renames: HashMap<String, String> = HashMap::new();
    for (b, o) in g.output.iter().zip(outputs) {
        let Some(b) = b.name.clone() else { continue };
        if !o.is_empty() && produced.contains(&b) && made_once.get(&b) == Some(&1) && !renames.contains_key(&b) {
            renames.insert(b, o.clone());
        }
    }
    taken.extend(outputs.iter().cloned());
    // Every other name the branch defines and the model has elsewhere gets a name neither has (in
    // name order, so that the result does not depend on hashing).
    let mut names: Vec<String> = crate::onnx::names_defined(&g).into_iter().collect();
    names.sort();
    let mut avoid: HashSet<String> = taken.iter().chain(&names).cloned().collect();
    for name in names {
        if renames.contains_key(&name) {
            continue;
        }
        let kept = if taken.contains(&name) {
            let fresh = fresh_name_in(&avoid, &name);
            avoid.insert(fresh.clone());
            renames.insert(name, fresh.clone());
            fresh
        } else {
            name
        };
        taken.insert(kept);
    }
    for (from, to) in &renames {
        rename_defined(&mut g, from, to);
    }
    let mut nodes = std::mem::take(&mut g.node);
    // Outputs the renaming did not give the If's name: copied through an Identity.
    let produced: HashSet<&String> = nodes.iter().flat_map(|n| n.output.iter()).collect();
    let mut copies = vec![];
    for (b, o) in branch.output.iter().zip(outputs) {
        let Some(b) = b.name.as_ref() else { continue };
        let inner = renames.get(b).unwrap_or(b);
        if o.is_empty() || (inner == o && produced.contains(o)) {
            continue;
        }
        copies.push(NodeProto {
            name: Some(o.clone()),
            op_type: Some("Identity".into()),
            input: vec![inner.clone()],
            output: vec![o.clone()],
            ..Default::default()
        });
    }
    nodes.extend(copies);
    (nodes, g.initializer, g.sparse_initializer)
}

/// Folds the branches of every `If` of `graph` (see the module docs); `shell` is the model around
/// it (opsets, functions), `facts` what analysis knows of the graph's values. Returns whether
/// anything changed.
pub(crate) fn fold_branches(
    shell: &ModelProto,
    graph: &mut GraphProto,
    facts: &Facts,
    scope: &Scope,
    report: &mut Report,
) -> anyhow::Result<bool> {
    let mut changed = false;
    // What a branch may not define: the names of every scope around it.
    let mut around = scope.reserved.clone();
    around.extend(crate::onnx::names_defined(graph));
    // A branch has no inputs of the model's own: the input shapes do not apply to it.
    let branch_options = FoldOptions { input_shapes: vec![], ..scope.options.clone() };
    for node in &mut graph.node {
        if !is_onnx(node) || op_type(node) != "If" {
            continue;
        }
        let name = node_name(node);
        for attr in &mut node.attribute {
            let Some(branch) = attr.g.as_mut() else { continue };
            let label = format!("{name}/{}", attr.name.as_deref().unwrap_or("?"));
            if scope.depth >= MAX_DEPTH {
                report.kept_subgraphs.push(format!("{label}: nested more than {MAX_DEPTH} deep"));
                continue;
            }
            let inner = Scope { options: &branch_options, depth: scope.depth + 1, reserved: &around, ..*scope };
            match fold_one(shell, branch, facts, &inner) {
                Ok((folded, sub)) => {
                    changed |= folded != *branch;
                    *branch = folded;
                    report.absorb(&label, sub);
                }
                Err(e) => report.kept_subgraphs.push(format!("{label}: {e:#}")),
            }
        }
    }
    Ok(changed)
}

/// One branch folded as a model of its own.
fn fold_one(
    shell: &ModelProto,
    branch: &GraphProto,
    facts: &Facts,
    scope: &Scope,
) -> anyhow::Result<(GraphProto, Report)> {
    let mut outer: Vec<String> = crate::onnx::outer_reads(branch).into_iter().collect();
    outer.sort();
    let mut inputs = vec![];
    let mut constants = HashSet::new();
    let mut standalone = branch.clone();
    for name in &outer {
        let fact = facts.get(name).ok_or_else(|| anyhow::anyhow!("the outer value '{name}' it reads has no type"))?;
        let small = fact.bytes().is_some_and(|b| b <= super::SMALL) && super::constants::exact_type(fact);
        if let Some(value) = fact.concrete().filter(|_| small) {
            standalone.initializer.push(crate::onnx::tensor_to_proto(name, &value)?);
            constants.insert(name.clone());
            continue;
        }
        let t = crate::onnx::type_of(fact)
            .ok_or_else(|| anyhow::anyhow!("the outer value '{name}' it reads has no ONNX type"))?;
        inputs.push(proto::ValueInfoProto { name: Some(name.clone()), r#type: Some(t), ..Default::default() });
    }
    standalone.input = inputs;
    let model = ModelProto { graph: Some(standalone), ..shell.clone() };
    let (model, sub) = super::fold_model(model, scope)?;
    let mut folded = model.graph.ok_or_else(|| anyhow::anyhow!("the folded branch has no graph"))?;
    folded.input = branch.input.clone();
    folded.initializer.retain(|t| t.name.as_ref().is_none_or(|n| !constants.contains(n)));
    // Names the passes made that an enclosing scope has (they saw only the values the branch reads).
    let mut taken = scope.reserved.clone();
    taken.extend(crate::onnx::names_defined_deep(&folded));
    let mut names: Vec<String> = crate::onnx::names_defined(&folded).into_iter().collect();
    names.sort();
    for name in names {
        if scope.reserved.contains(&name) {
            let fresh = fresh_name_in(&taken, &name);
            taken.insert(fresh.clone());
            rename_defined(&mut folded, &name, &fresh);
        }
    }
    Ok((folded, sub))
}
