//! Parallel `MatMul`s sharing their left input (off with `--exact`): three or more `MatMul(a, W_i)`
//! with constant 2-D float weights `W_i: [K, N_i]` (the query, key and value projections of an
//! attention layer) become one `MatMul(a, concat(W_i))` whose last axis a `Split` cuts back into the
//! original outputs, names kept. Each output element is the same dot product, but the matrix product
//! may be blocked differently at the new width, so this is counted with the fusions that can change
//! rounding.

use super::graph::readers;
use super::Report;
use crate::onnx::node::{int_attr, is_onnx, op_type};
use crate::onnx::Facts;
use crate::schema::proto::{self, GraphProto, NodeProto};
use std::collections::{BTreeMap, HashSet};
use tract_onnx::prelude::*;

/// A group is fused when it has at least this many `MatMul`s (two would stay two nodes).
const MIN_GROUP: usize = 3;

/// One `MatMul` of a group: its index, weights' output width and values, and output name.
struct Member {
    ix: usize,
    n: usize,
    weights: Vec<f32>,
    output: String,
}

/// Fuses groups of parallel `MatMul`s; returns whether anything changed.
pub(crate) fn parallel_matmuls(
    graph: &mut GraphProto,
    facts: &Facts,
    opset: i64,
    report: &mut Report,
) -> anyhow::Result<bool> {
    let readers = readers(graph);
    let inputs: HashSet<&str> = graph.input.iter().filter_map(|i| i.name.as_deref()).collect();
    // By left input and K, in node order.
    let mut groups: BTreeMap<(String, usize), Vec<Member>> = BTreeMap::new();
    for (ix, node) in graph.node.iter().enumerate() {
        if op_type(node) != "MatMul" || !is_onnx(node) || node.input.len() != 2 || node.output.len() != 1 {
            continue;
        }
        let (a, w) = (&node.input[0], &node.input[1]);
        // The left input: float, rank 2 or more (a vector would drop the axis Split cuts).
        let a_ok = facts.get(a).is_some_and(|f| f.shape.len() >= 2 && f.datum_type == f32::datum_type());
        // The weights: an initializer only this node reads (no copy is left behind), not an input.
        if !a_ok || inputs.contains(w.as_str()) || readers.get(w).copied() != Some(1) {
            continue;
        }
        let Some(t) = graph.initializer.iter().find(|t| t.name.as_deref() == Some(w.as_str())) else { continue };
        let (Ok(k), Ok(n)) = (dim(t, 0), dim(t, 1)) else { continue };
        let Some(weights) = crate::onnx::f32s_of(t) else { continue };
        if t.dims.len() != 2 || k == 0 || n == 0 || k.checked_mul(n) != Some(weights.len()) {
            continue;
        }
        let output = node.output[0].clone();
        groups.entry((a.clone(), k)).or_default().push(Member { ix, n, weights, output });
    }
    let mut remove = HashSet::new();
    let mut insert: Vec<(usize, [NodeProto; 2])> = vec![];
    for ((a, k), members) in groups {
        if members.len() < MIN_GROUP {
            continue;
        }
        let Some(rank) = facts.get(&a).map(|f| f.shape.len()) else { continue };
        let total: usize = members.iter().map(|m| m.n).sum();
        // Row r of the fused weights is row r of each W_i, side by side.
        let mut fused = Vec::with_capacity(k * total);
        for r in 0..k {
            for m in &members {
                fused.extend_from_slice(&m.weights[r * m.n..(r + 1) * m.n]);
            }
        }
        let first = &members[0];
        let base = format!("{}_fused", first.output);
        let wname = super::graph::fresh_name(graph, &format!("{base}_weight"));
        let wide = super::graph::fresh_name(graph, &base);
        let t = tract_ndarray::ArrayD::from_shape_vec(vec![k, total], fused)?.into_tensor();
        graph.initializer.push(crate::onnx::tensor_to_proto(&wname, &t)?);
        let widths: Vec<i64> = members.iter().map(|m| m.n as i64).collect();
        let mut split = NodeProto {
            op_type: Some("Split".into()),
            name: Some(super::graph::fresh_name(graph, &format!("{base}_split"))),
            input: vec![wide.clone()],
            output: members.iter().map(|m| m.output.clone()).collect(),
            attribute: vec![int_attr("axis", rank as i64 - 1)],
            ..NodeProto::default()
        };
        if opset >= 13 {
            let sname = super::graph::fresh_name(graph, &format!("{base}_widths"));
            graph.initializer.push(crate::onnx::tensor_to_proto(&sname, &tract_ndarray::arr1(&widths).into_tensor())?);
            split.input.push(sname);
        } else {
            split.attribute.push(proto::AttributeProto {
                name: Some("split".into()),
                r#type: Some(proto::attribute_proto::AttributeType::Ints as i32),
                ints: widths,
                ..proto::AttributeProto::default()
            });
        }
        let matmul = NodeProto {
            op_type: Some("MatMul".into()),
            name: graph.node[first.ix].name.clone(),
            input: vec![a.clone(), wname],
            output: vec![wide],
            ..NodeProto::default()
        };
        insert.push((first.ix, [matmul, split]));
        remove.extend(members.iter().map(|m| m.ix));
        report.count("parallel MatMuls fused into one and a Split (not bit-exact)", members.len());
    }
    if insert.is_empty() {
        return Ok(false);
    }
    // Each fused pair takes the place of its group's first MatMul (every reader comes later).
    let mut nodes = Vec::with_capacity(graph.node.len());
    for (ix, node) in std::mem::take(&mut graph.node).into_iter().enumerate() {
        if let Some((_, pair)) = insert.iter_mut().find(|(at, _)| *at == ix) {
            nodes.extend(std::mem::take(pair));
        }
        if !remove.contains(&ix) {
            nodes.push(node);
        }
    }
    graph.node = nodes;
    Ok(true)
}

/// Dim `i` of an initializer, as a size.
fn dim(t: &proto::TensorProto, i: usize) -> anyhow::Result<usize> {
    let d = *t.dims.get(i).ok_or_else(|| anyhow::anyhow!("no dim {i}"))?;
    Ok(usize::try_from(d)?)
}
