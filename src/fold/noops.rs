//! Removing nodes that return their input unchanged, and pairs that undo each other.
//!
//! Always (bit-exact): `Identity`; `Dropout` with its mask unused (inference); `Cast` to the type the
//! value has; a `Slice`, `Reshape`, `Expand`, `Pad`, `Tile` or `Concat` that leaves the shape and
//! data as they are; a `Split` with one output, which is then its whole input; a `Transpose` by the identity permutation, and two that cancel; an `Unsqueeze`
//! undone by a `Squeeze` of the same axes; `Mul`/`Div` by 1 and `Sub` of 0 (broadcasting nothing);
//! `And` with true and `Or` with false.
//! Not bit-exact, off with `--exact`: `Add` of 0 (which turns -0.0 into +0.0).

use super::graph::{output_names, producers, readers, rename_reads};
use super::Report;
use crate::onnx::node::{attr_ints, is_onnx, op_type};
use crate::onnx::Facts;
use crate::schema::proto::{GraphProto, NodeProto};
use std::collections::{HashMap, HashSet};

/// Removes no-ops; returns whether anything changed.
pub(crate) fn remove_noops(
    graph: &mut GraphProto,
    facts: &Facts,
    exact: bool,
    report: &mut Report,
) -> anyhow::Result<bool> {
    let outputs = output_names(graph);
    let producers = producers(graph);
    let readers = readers(graph);
    let mut alias: HashMap<String, String> = HashMap::new();
    let mut removed: HashSet<usize> = HashSet::new();
    let mut output_renames: Vec<(usize, String, String)> = vec![];
    for (ix, node) in graph.node.iter().enumerate() {
        let Some((input, kind)) = passthrough(node, facts, exact, &graph.node, &producers, &readers) else { continue };
        let output = node.output[0].clone();
        if outputs.contains(&output) {
            // A graph output keeps its name: the producer of the value passed through is renamed to
            // it instead, when nothing else reads that value and it is not itself a graph output.
            let Some(&p) = producers.get(&input) else { continue };
            if readers.get(&input).copied() != Some(1) || outputs.contains(&input) || alias.contains_key(&input) {
                continue;
            }
            output_renames.push((p, input.clone(), output));
            removed.insert(ix);
            report.count(kind, 1);
            continue;
        }
        let input = resolve(&alias, &input);
        alias.insert(output, input);
        removed.insert(ix);
        report.count(kind, 1);
    }
    if removed.is_empty() {
        return Ok(false);
    }
    for (p, from, to) in &output_renames {
        for o in &mut graph.node[*p].output {
            if o == from {
                *o = to.clone();
            }
        }
    }
    let subgraphs = graph.node.iter().any(crate::onnx::node::has_subgraphs);
    super::graph::remove_nodes(graph, &removed);
    for n in &mut graph.node {
        for i in &mut n.input {
            if let Some(to) = alias.get(i.as_str()) {
                *i = resolve(&alias, to);
            }
        }
    }
    if subgraphs {
        for (from, to) in &alias {
            rename_reads(graph, from, &resolve(&alias, to));
        }
    }
    Ok(true)
}

fn resolve(alias: &HashMap<String, String>, name: &str) -> String {
    let mut current = name.to_string();
    let mut hops = 0;
    while let Some(next) = alias.get(&current) {
        current = next.clone();
        hops += 1;
        if hops > alias.len() {
            break;
        }
    }
    current
}

fn same_shape(facts: &Facts, a: &str, b: &str) -> bool {
    match (facts.get(a), facts.get(b)) {
        (Some(x), Some(y)) => {
            x.shape.len() == y.shape.len()
                && x.shape
                    .iter()
                    .zip(&y.shape)
                    .all(|(p, q)| p == q || (p.clone() - q.clone()).simplify().as_i64() == Some(0))
                && x.datum_type == y.datum_type
                && x.dtype_name == y.dtype_name
        }
        _ => false,
    }
}

/// Whether every element of a constant input is `v` (and it broadcasts nothing onto `other`).
fn constant_all(facts: &Facts, name: &str, v: f64) -> bool {
    let Some(k) = facts.get(name).and_then(|f| f.konst.clone()) else { return false };
    let Ok(c) = k.cast_to::<f64>() else { return false };
    let Ok(plain) = c.try_as_plain_ram() else { return false };
    plain.as_slice::<f64>().is_ok_and(|s| !s.is_empty() && s.iter().all(|&x| x == v))
}

/// If `node` returns one of its inputs unchanged: that input and the kind of change.
fn passthrough(
    node: &NodeProto,
    facts: &Facts,
    exact: bool,
    nodes: &[NodeProto],
    producers: &HashMap<String, usize>,
    readers: &HashMap<String, usize>,
) -> Option<(String, &'static str)> {
    if !is_onnx(node) || node.output.len() != 1 && op_type(node) != "Dropout" {
        return None;
    }
    let out = node.output.first()?;
    let x = node.input.first().filter(|i| !i.is_empty())?.clone();
    let same = || same_shape(facts, &x, out);
    let kind = match op_type(node) {
        "Identity" => "Identity removed",
        "Dropout" => {
            let mask_used =
                node.output.get(1).is_some_and(|m| !m.is_empty() && readers.get(m).copied().unwrap_or(0) > 0);
            let training = node.input.get(2).is_some_and(|t| !t.is_empty() && !constant_all(facts, t, 0.0));
            if mask_used || training {
                return None;
            }
            "Dropout removed (inference)"
        }
        "Cast" if same() => "Cast to the same type removed",
        "Slice" | "Reshape" | "Expand" | "Tile" | "Pad" if same() && slice_is_identity(node, facts) => {
            "shape-preserving Slice/Reshape/Expand/Tile/Pad removed"
        }
        "Concat" if node.input.iter().filter(|i| !i.is_empty()).count() == 1 => "single-input Concat removed",
        // One output (checked above) is the whole input; the shapes are compared all the same, so a
        // `split` input that does not cover the axis (an invalid model) is left to the runtime.
        "Split" if same() => "single-output Split removed",
        "Transpose" => {
            let perm = attr_ints(node, "perm")?;
            if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
                "identity Transpose removed"
            } else {
                // A Transpose undoing the one before it: both go (this one here, the other when dead).
                let prev = nodes.get(*producers.get(&x)?)?;
                if op_type(prev) != "Transpose" || !is_onnx(prev) {
                    return None;
                }
                let p1 = attr_ints(prev, "perm")?;
                if p1.len() != perm.len()
                    || !perm.iter().enumerate().all(|(i, &p)| p1.get(p as usize) == Some(&(i as i64)))
                {
                    return None;
                }
                return Some((prev.input.first()?.clone(), "Transpose pairs that cancel removed"));
            }
        }
        "Squeeze" => {
            let prev = nodes.get(*producers.get(&x)?)?;
            if op_type(prev) != "Unsqueeze" || !is_onnx(prev) || !same_shape(facts, prev.input.first()?, out) {
                return None;
            }
            return Some((prev.input.first()?.clone(), "Unsqueeze undone by Squeeze removed"));
        }
        "Mul" | "Div" | "Sub" | "Add" => {
            let kind = op_type(node);
            let neutral = if matches!(kind, "Mul" | "Div") { 1.0 } else { 0.0 };
            if kind == "Add" && exact {
                return None;
            }
            // The neutral constant on either side of a commutative op, on the right of the others.
            let sides: &[(usize, usize)] = if matches!(kind, "Mul" | "Add") { &[(0, 1), (1, 0)] } else { &[(0, 1)] };
            for &(v, c) in sides {
                let (Some(value), Some(constant)) = (node.input.get(v), node.input.get(c)) else { continue };
                let float = facts.get(value).is_some_and(|f| f.datum_type.is_float());
                if float && same_shape(facts, value, out) && constant_all(facts, constant, neutral) {
                    return Some((value.clone(), "arithmetic with a neutral constant removed"));
                }
            }
            return None;
        }
        "And" | "Or" => {
            // x AND true, x OR false.
            let neutral = if op_type(node) == "And" { 1.0 } else { 0.0 };
            for (v, c) in [(0, 1), (1, 0)] {
                let (Some(value), Some(constant)) = (node.input.get(v), node.input.get(c)) else { continue };
                if same_shape(facts, value, out) && constant_all(facts, constant, neutral) {
                    return Some((value.clone(), "logic with a neutral constant removed"));
                }
            }
            return None;
        }
        _ => return None,
    };
    Some((x, kind))
}

/// For a Slice, that it selects every element in order (same shape is not enough: a reversal keeps
/// it); other ops passed here keep their data when they keep the shape.
fn slice_is_identity(node: &NodeProto, facts: &Facts) -> bool {
    if op_type(node) != "Slice" {
        if op_type(node) == "Pad" {
            // Same shape means zero pads, except negative and positive ones cancelling: require zeros.
            return node
                .input
                .get(1)
                .and_then(|p| facts.get(p))
                .and_then(|f| f.dims())
                .is_some_and(|d| d.iter().all(|v| v.as_i64() == Some(0)));
        }
        return true;
    }
    let Some(steps) = node.input.get(4).filter(|s| !s.is_empty()) else { return true };
    facts.get(steps).and_then(|f| f.dims()).is_some_and(|d| d.iter().all(|v| v.as_i64() == Some(1)))
}
