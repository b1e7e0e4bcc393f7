//! [`Peak`]: the most bytes of intermediate values live at once.
//!
//! Nodes run in the plan's order; a node's outputs are allocated when it runs (its inputs still
//! live), and a value is freed after its last reader ran (a graph output lives to the end). The peak
//! is the largest of the live totals after each node. Graph inputs, initializers and values computed
//! before running are not intermediate values: the cost reports them apart.
//!
//! With symbolic sizes the live totals are figures, and the largest of them may depend on the sizes:
//! the peak keeps every total no other total is shown to exceed (see [`Poly::dominates`], and tract's
//! prover under the user's assumptions), with the node after which each occurs.

use super::{bytes_of, CostError, Poly, Size, Value};
use crate::analysis::Analysis;
use crate::model::reads;
use std::collections::{HashMap, HashSet};
use tract_onnx::pb;

/// The peak of live intermediate bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// The candidate peaks, none shown smaller than another, each with the node after which it
    /// occurs: the peak is their largest.
    pub candidates: Vec<(Poly, String)>,
    /// Intermediate values whose sizes are unknown, left out of the totals.
    pub left_out: Vec<String>,
}

impl Peak {
    /// The peak with the symbols of `values` set, candidates shown smaller dropped.
    pub fn at(&self, values: &HashMap<String, i64>) -> Result<Peak, CostError> {
        let mut out = Peak { candidates: vec![], left_out: self.left_out.clone() };
        for (p, node) in &self.candidates {
            push(&mut out.candidates, p.at(values)?, node);
        }
        Ok(out)
    }

    /// The single peak, when one candidate is left.
    pub fn single(&self) -> Option<&(Poly, String)> {
        match self.candidates.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }
}

/// Adds a candidate unless one already there is at least as large; drops those it exceeds.
fn push(candidates: &mut Vec<(Poly, String)>, p: Poly, node: &str) {
    if candidates.iter().any(|(c, _)| c.dominates(&p)) {
        return;
    }
    candidates.retain(|(c, _)| !p.dominates(c));
    candidates.push((p, node.to_string()));
}

pub(super) fn peak(
    graph: &pb::GraphProto,
    order: &[usize],
    values: &HashMap<String, Value>,
    analysis: &Analysis,
    assumed: bool,
) -> anyhow::Result<Peak> {
    let outputs: HashSet<&str> = graph.output.iter().map(|o| o.name.as_str()).collect();
    let mut last_read: HashMap<&str, usize> = HashMap::new();
    for (step, &i) in order.iter().enumerate() {
        for name in reads(&graph.node[i]) {
            last_read.insert(name, step);
        }
    }
    let mut frees: Vec<Vec<(&str, Poly)>> = vec![vec![]; order.len()];
    let mut live = Poly::zero();
    let mut candidates = vec![];
    let mut left_out = vec![];
    for (step, &i) in order.iter().enumerate() {
        let node = &graph.node[i];
        for name in node.output.iter().filter(|n| !n.is_empty()) {
            if values.get(name).is_some_and(|v| v.constant) {
                continue;
            }
            match bytes_of(name, values, analysis) {
                Size::Known(b) => {
                    live = live.add(&b)?;
                    if !outputs.contains(name.as_str()) {
                        let last = last_read.get(name.as_str()).copied().unwrap_or(step).max(step);
                        frees[last].push((name, b));
                    }
                }
                Size::Unknown(_) => left_out.push(name.clone()),
            }
        }
        push(&mut candidates, live.clone(), &crate::node::node_label(node).node);
        for (_, b) in std::mem::take(&mut frees[step]) {
            live = live.sub(&b)?;
        }
    }
    if assumed && candidates.len() <= MAX_PROVED {
        prune_with_assumptions(&mut candidates);
    }
    Ok(Peak { candidates, left_out })
}

/// The most candidates compared pairwise by tract's prover: each proof can take long on models whose
/// sizes carry bounds (detectors), and the pairs grow as the square.
const MAX_PROVED: usize = 8;

/// Drops the candidates tract's prover shows smaller than another under the model's assumptions
/// (`--assume`), which the coefficient rule alone cannot.
fn prune_with_assumptions(candidates: &mut Vec<(Poly, String)>) {
    let mut i = 0;
    while i < candidates.len() && candidates.len() > 1 {
        let smaller = candidates.iter().enumerate().any(|(j, (other, _))| {
            j != i
                && match (other.to_dim(), candidates[i].0.to_dim()) {
                    (Ok(a), Ok(b)) => (a - b).simplify().prove_positive_or_zero(),
                    _ => false,
                }
        });
        if smaller {
            candidates.remove(i);
        } else {
            i += 1;
        }
    }
}
