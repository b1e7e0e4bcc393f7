//! The order the plan runs a model's nodes in, as ONNX nodes.
//!
//! tract's plan runs the typed model in an order chosen to keep little memory live
//! (`eval_order_opt_ram`). Each ONNX node is placed where the typed node making its output runs, and
//! a topological sort over the ONNX graph's own edges (inputs, and values read from inside
//! subgraphs) keeps the order valid where two ONNX nodes fold into one constant. Nodes the plan never
//! runs (nothing reads their outputs) come last, in file order.

use crate::analysis::Analysis;
use crate::model::reads;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use tract_onnx::pb;

/// The indices of `graph.node` in run order.
pub(super) fn run_order(analysis: &Analysis, graph: &pb::GraphProto) -> anyhow::Result<Vec<usize>> {
    let typed_order = analysis.typed.eval_order_opt_ram()?;
    let mut position = vec![usize::MAX; analysis.typed.nodes.len()];
    for (p, &n) in typed_order.iter().enumerate() {
        position[n] = p;
    }
    let key: Vec<usize> = graph
        .node
        .iter()
        .map(|n| {
            n.output
                .iter()
                .filter_map(|o| analysis.outlets.get(o))
                .filter_map(|o| position.get(o.node).copied())
                .min()
                .unwrap_or(usize::MAX)
        })
        .collect();
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, n) in graph.node.iter().enumerate() {
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            producer.insert(o.as_str(), i);
        }
    }
    let mut waiting = vec![0usize; graph.node.len()];
    let mut readers: Vec<Vec<usize>> = vec![vec![]; graph.node.len()];
    for (i, n) in graph.node.iter().enumerate() {
        for name in reads(n) {
            if let Some(&p) = producer.get(name) {
                if p != i {
                    waiting[i] += 1;
                    readers[p].push(i);
                }
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<(usize, usize)>> =
        (0..graph.node.len()).filter(|&i| waiting[i] == 0).map(|i| Reverse((key[i], i))).collect();
    let mut order = Vec::with_capacity(graph.node.len());
    while let Some(Reverse((_, i))) = ready.pop() {
        order.push(i);
        for &r in &readers[i] {
            waiting[r] -= 1;
            if waiting[r] == 0 {
                ready.push(Reverse((key[r], r)));
            }
        }
    }
    anyhow::ensure!(order.len() == graph.node.len(), "the graph has a cycle");
    Ok(order)
}
