//! Shape arithmetic written as constants.
//!
//! A `Reshape` whose target is computed from `Shape → Gather → Concat` (`x.view(B, T, heads, dim)`)
//! gets a constant target instead, with `0` for a dim copied from the input and `-1` for at most one
//! dim left to the volume, so the whole chain computing it goes; two `Reshape`s in a row become one
//! (a `Squeeze`, `Unsqueeze` or `Flatten` before a `Reshape` too), and two `Unsqueeze`s in a row one,
//! two `Transpose`s in a row one, also when the first feeds several of the second kind.

use super::graph::{producers, readers};
use super::Report;
use crate::onnx::node::{attr_i, attr_ints, is_onnx, op_type};
use crate::onnx::Facts;
use crate::schema::proto::{self, GraphProto};
use tract_onnx::prelude::*;

/// Rewrites computed Reshape targets as constants; returns whether anything changed.
pub(crate) fn constant_targets(graph: &mut GraphProto, facts: &Facts, report: &mut Report) -> anyhow::Result<bool> {
    let mut new_inits = vec![];
    let mut changed = false;
    let taken: std::collections::HashSet<String> = graph.initializer.iter().filter_map(|t| t.name.clone()).collect();
    for node in &mut graph.node {
        if op_type(node) != "Reshape" || !is_onnx(node) || node.input.len() < 2 {
            continue;
        }
        let (Some(target), Some(data)) = (facts.get(&node.input[1]), facts.get(&node.input[0])) else { continue };
        let Some(dims) = target.dims() else { continue };
        if dims.iter().all(|d| d.as_i64().is_some()) {
            continue;
        }
        let allowzero = attr_i(node, "allowzero").unwrap_or(0) != 0;
        let mut values = vec![];
        let mut free = 0;
        for (i, d) in dims.iter().enumerate() {
            match d.as_i64() {
                Some(-1) => {
                    free += 1;
                    values.push(-1);
                }
                Some(v) => values.push(v),
                None if !allowzero && data.shape.get(i).is_some_and(|x| x == d) => values.push(0),
                None => {
                    free += 1;
                    values.push(-1);
                }
            }
        }
        if free > 1 {
            continue;
        }
        let mut name = format!("{}_target", node.output[0]);
        while taken.contains(&name)
            || new_inits.iter().any(|t: &proto::TensorProto| t.name.as_deref() == Some(name.as_str()))
        {
            name.push('_');
        }
        let t = tract_ndarray::arr1(&values).into_tensor();
        new_inits.push(crate::onnx::tensor_to_proto(&name, &t)?);
        node.input[1] = name;
        report.count("Reshape targets made constant", 1);
        changed = true;
    }
    graph.initializer.extend(new_inits);
    Ok(changed)
}

/// A node to rewrite: its index, new inputs, new axes (Unsqueeze) or permutation (Transpose), and
/// the kind of change.
type Rewrite = (usize, Vec<String>, Option<Vec<i64>>, &'static str);

/// Merges a Reshape into the Reshape after it (and a `Squeeze`, `Unsqueeze` or `Flatten` into a
/// Reshape after it, which sets the shape alone), an Unsqueeze into the Unsqueeze after it and a
/// Transpose into the Transpose after it (one permutation, the two composed), when
/// every reader of the first one's output is a node of the second's kind: each reader then reads the
/// first one's input, and the first one goes as dead code; returns whether anything changed.
pub(crate) fn merge_chains(graph: &mut GraphProto, opset: i64, report: &mut Report) -> anyhow::Result<bool> {
    let producers = producers(graph);
    let readers = readers(graph);
    // How many nodes of each kind read a value as their data input.
    let mut data_reads: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for n in graph.node.iter().filter(|n| is_onnx(n)) {
        if let Some(i) = n.input.first() {
            *data_reads.entry((i.as_str(), op_type(n))).or_default() += 1;
        }
    }
    let mut rewrites: Vec<Rewrite> = vec![];
    for (ix, node) in graph.node.iter().enumerate() {
        let kind = op_type(node);
        if !is_onnx(node) || !matches!(kind, "Reshape" | "Unsqueeze" | "Transpose") {
            continue;
        }
        let Some(&p) = node.input.first().and_then(|i| producers.get(i)) else { continue };
        let prev = &graph.node[p];
        let absorbed =
            op_type(prev) == kind || kind == "Reshape" && matches!(op_type(prev), "Squeeze" | "Unsqueeze" | "Flatten");
        let only_these = data_reads.get(&(node.input[0].as_str(), kind)) == readers.get(&node.input[0]);
        if !absorbed || !is_onnx(prev) || prev.output.len() != 1 || !only_these {
            continue;
        }
        match kind {
            // The second target must not copy dims (0) from the intermediate value.
            "Reshape" => {
                let zero_free = constant_ints(graph, node.input.get(1)).is_some_and(|t| !t.contains(&0))
                    || attr_i(node, "allowzero").unwrap_or(0) != 0;
                if zero_free {
                    let mut inputs = node.input.clone();
                    inputs[0] = prev.input[0].clone();
                    let label = if op_type(prev) == "Reshape" {
                        "consecutive Reshapes merged"
                    } else {
                        "Squeeze/Unsqueeze/Flatten merged into the Reshape after it"
                    };
                    rewrites.push((ix, inputs, None, label));
                }
            }
            "Transpose" => {
                // Output axis i of the second is its input's axis p2[i], which is x's axis p1[p2[i]].
                let (Some(p1), Some(p2)) = (attr_ints(prev, "perm"), attr_ints(node, "perm")) else { continue };
                let Some(perm) = compose(&p1, &p2) else { continue };
                rewrites.push((ix, vec![prev.input[0].clone()], Some(perm), "consecutive Transposes merged"));
            }
            _ => {
                let axes = |n: &proto::NodeProto| -> Option<Vec<i64>> {
                    if opset >= 13 {
                        constant_ints(graph, n.input.get(1))
                    } else {
                        attr_ints(n, "axes")
                    }
                };
                let (Some(a1), Some(a2)) = (axes(prev), axes(node)) else { continue };
                if a1.iter().chain(&a2).any(|&a| a < 0) {
                    continue;
                }
                // a2's positions are final; a1's intermediate position p is the p-th final slot a2
                // does not take.
                let free_slots = (0i64..).filter(|s| !a2.contains(s));
                let max_a1 = a1.iter().copied().max().unwrap_or(0) as usize;
                let slots: Vec<i64> = free_slots.take(max_a1 + 1).collect();
                let mut combined: Vec<i64> = a2.iter().copied().chain(a1.iter().map(|&p| slots[p as usize])).collect();
                combined.sort_unstable();
                combined.dedup();
                if combined.len() != a1.len() + a2.len() {
                    continue;
                }
                rewrites.push((ix, vec![prev.input[0].clone()], Some(combined), "consecutive Unsqueezes merged"));
            }
        }
    }
    if rewrites.is_empty() {
        return Ok(false);
    }
    let mut new_inits = vec![];
    for (ix, inputs, axes, label) in rewrites {
        graph.node[ix].input = inputs;
        let Some(axes) = axes else {
            report.count(label, 1);
            continue;
        };
        if op_type(&graph.node[ix]) == "Transpose" {
            if let Some(a) = graph.node[ix].attribute.iter_mut().find(|a| a.name.as_deref() == Some("perm")) {
                a.ints = axes;
            }
        } else if opset >= 13 {
            let base = format!("{}_axes", graph.node[ix].output[0]);
            let mut name = super::graph::fresh_name(graph, &base);
            while new_inits.iter().any(|t: &proto::TensorProto| t.name.as_deref() == Some(name.as_str())) {
                name.push('_');
            }
            new_inits.push(crate::onnx::tensor_to_proto(&name, &tract_ndarray::arr1(&axes).into_tensor())?);
            graph.node[ix].input.push(name);
        } else if let Some(a) = graph.node[ix].attribute.iter_mut().find(|a| a.name.as_deref() == Some("axes")) {
            a.ints = axes;
        }
        report.count(label, 1);
    }
    graph.initializer.extend(new_inits);
    Ok(true)
}

/// The permutation of `Transpose(Transpose(x, p1), p2)`, if both are permutations of one rank.
fn compose(p1: &[i64], p2: &[i64]) -> Option<Vec<i64>> {
    let valid = |p: &[i64]| {
        let mut seen = vec![false; p.len()];
        p.iter().all(|&a| {
            usize::try_from(a).ok().and_then(|a| seen.get_mut(a)).is_some_and(|s| !std::mem::replace(s, true))
        })
    };
    if p1.len() != p2.len() || !valid(p1) || !valid(p2) {
        return None;
    }
    Some(p2.iter().map(|&a| p1[a as usize]).collect())
}

/// The values of an int64/int32 initializer.
fn constant_ints(graph: &GraphProto, name: Option<&String>) -> Option<Vec<i64>> {
    let name = name.filter(|n| !n.is_empty())?;
    let t = graph.initializer.iter().find(|t| t.name.as_ref() == Some(name))?;
    crate::onnx::ints_of(t)
}

/// `Concat(a, Concat(b, c))` along one axis is `Concat(a, b, c)` when the inner one has no other
/// reader; returns whether anything changed.
pub(crate) fn merge_concats(graph: &mut GraphProto, report: &mut Report) -> bool {
    let producers = producers(graph);
    let readers = readers(graph);
    let mut changed = false;
    for ix in 0..graph.node.len() {
        let node = &graph.node[ix];
        if op_type(node) != "Concat" || !is_onnx(node) {
            continue;
        }
        let axis = attr_i(node, "axis");
        let mut inputs = vec![];
        let mut merged = false;
        for i in &node.input {
            match producers.get(i).map(|&p| &graph.node[p]) {
                Some(inner)
                    if op_type(inner) == "Concat"
                        && is_onnx(inner)
                        && attr_i(inner, "axis") == axis
                        && readers.get(i).copied() == Some(1)
                        && !inner.input.iter().any(|x| x.is_empty()) =>
                {
                    inputs.extend(inner.input.iter().cloned());
                    merged = true;
                }
                _ => inputs.push(i.clone()),
            }
        }
        if merged {
            graph.node[ix].input = inputs;
            report.count("consecutive Concats merged", 1);
            changed = true;
        }
    }
    changed
}
