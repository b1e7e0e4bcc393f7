//! Optional inputs of the recurrent ops (`RNN`, `GRU`, `LSTM`) that equal their default: an initial
//! state (`initial_h`, `initial_c`) or peephole weights (`P`) made of zeros, often built at run time
//! with `Expand` or `ConstantOfShape` over the batch size read by `Shape`, become the empty input
//! the op reads as zeros, so the nodes computing them go as dead code. Bit-exact: only `+0.0` counts
//! as a zero.

use super::graph::producers;
use super::Report;
use crate::onnx::node::{attr, attr_i, is_onnx, op_type};
use crate::onnx::Facts;
use crate::schema::proto::{GraphProto, NodeProto};
use std::collections::HashMap;
use tract_onnx::prelude::*;

/// How many producers a zero is traced back through at most.
const MAX_DEPTH: usize = 16;

/// Empties the optional inputs of recurrent ops that hold their default zeros; returns whether
/// anything changed.
pub(crate) fn default_rnn_inputs(graph: &mut GraphProto, facts: &Facts, report: &mut Report) -> bool {
    let producers = producers(graph);
    let mut plans: Vec<(usize, Vec<usize>)> = vec![];
    for (ix, node) in graph.node.iter().enumerate() {
        // The inputs that default to zeros: initial_h (and initial_c, P for an LSTM).
        let optional: &[usize] = match op_type(node) {
            "RNN" | "GRU" => &[5],
            "LSTM" => &[5, 6, 7],
            _ => continue,
        };
        if !is_onnx(node) {
            continue;
        }
        let Some(state) = state_shape(node, facts) else { continue };
        let mut empty = vec![];
        for &i in optional {
            let Some(name) = node.input.get(i).filter(|n| !n.is_empty()) else { continue };
            let Some(fact) = facts.get(name) else { continue };
            // P is [num_directions, 3 * hidden]; the states are [num_directions, batch, hidden].
            let shape_ok = if i == 7 {
                let (dirs, hidden) = (&state[if layout(node) == 0 { 0 } else { 1 }], &state[2]);
                fact.shape == [dirs.clone(), (hidden.clone() * 3).simplify()]
            } else {
                fact.shape == state
            };
            if shape_ok && all_zero(graph, &producers, facts, name, 0) {
                empty.push(i);
            }
        }
        if !empty.is_empty() {
            plans.push((ix, empty));
        }
    }
    if plans.is_empty() {
        return false;
    }
    for (ix, empty) in plans {
        let node = &mut graph.node[ix];
        for &i in &empty {
            node.input[i] = String::new();
        }
        while node.input.last().is_some_and(|i| i.is_empty()) {
            node.input.pop();
        }
        report.count("recurrent op inputs of zeros made the default", empty.len());
    }
    true
}

fn layout(node: &NodeProto) -> i64 {
    attr_i(node, "layout").unwrap_or(0)
}

/// The shape the op's initial states have: `[num_directions, batch, hidden]` (`[batch,
/// num_directions, hidden]` with `layout=1`), from `X`'s shape and the attributes.
fn state_shape(node: &NodeProto, facts: &Facts) -> Option<Vec<TDim>> {
    let x = facts.get(node.input.first()?)?;
    if x.shape.len() != 3 {
        return None;
    }
    let hidden = TDim::from(attr_i(node, "hidden_size")?);
    let dirs = match attr(node, "direction").and_then(|a| a.s.as_deref()) {
        None | Some(b"forward") | Some(b"reverse") => 1,
        Some(b"bidirectional") => 2,
        Some(_) => return None,
    };
    let dirs = TDim::from(dirs);
    Some(match layout(node) {
        0 => vec![dirs, x.shape[1].clone(), hidden],
        1 => vec![x.shape[0].clone(), dirs, hidden],
        _ => return None,
    })
}

/// Whether every element of a value is `+0` (or integer 0): a constant of zeros, a `ConstantOfShape`
/// of zero, or an `Expand`, `Tile`, shape-only op or `Cast` over such a value.
fn all_zero(graph: &GraphProto, producers: &HashMap<String, usize>, facts: &Facts, name: &str, depth: usize) -> bool {
    if let Some(k) = facts.get(name).and_then(|f| f.konst.clone()) {
        return zeros(&k);
    }
    if depth >= MAX_DEPTH {
        return false;
    }
    let Some(node) = producers.get(name).map(|&p| &graph.node[p]) else { return false };
    if !is_onnx(node) {
        return false;
    }
    let data = || node.input.first().is_some_and(|i| all_zero(graph, producers, facts, i, depth + 1));
    match op_type(node) {
        "ConstantOfShape" => match attr(node, "value").and_then(|a| a.t.as_ref()) {
            None => true,
            Some(t) => crate::onnx::f32s_of(t)
                .map(|v| v.iter().all(|x| x.to_bits() == 0))
                .or_else(|| crate::onnx::ints_of(t).map(|v| v.iter().all(|&x| x == 0)))
                .unwrap_or(false),
        },
        "Expand" | "Tile" | "Reshape" | "Unsqueeze" | "Squeeze" | "Flatten" | "Transpose" | "Identity" | "Cast" => {
            data()
        }
        _ => false,
    }
}

/// Whether a tensor holds zeros only, `+0.0` for floats.
fn zeros(t: &Tensor) -> bool {
    let Ok(c) = t.cast_to::<f64>() else { return false };
    let Ok(plain) = c.try_as_plain_ram() else { return false };
    plain.as_slice::<f64>().is_ok_and(|s| s.iter().all(|&x| x == 0.0 && x.is_sign_positive()))
}
