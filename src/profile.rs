//! Where a plan's time goes: each node of an optimized plan timed over repeated runs, summed per node and
//! per op type.
//!
//! The plan is run through tract's own evaluation loop (`SimpleState::run_plan_with_eval`) with an
//! evaluation callback that times each node's `eval` and hands everything else to tract's `eval`, so the
//! nodes run exactly as in a plain `plan.run` (same order, same values freed at the same steps); only
//! the two clock reads per node are added. Nodes of nested plans (`If`, `Scan`, `Loop` bodies) count
//! as the one node holding them.
//!
//! tract names the nodes it wires for one ONNX node after it (`name`, `name.suffix`), so each timed node
//! is mapped back to the ONNX node whose name is its longest such prefix: its time can be read against
//! onnxruntime's profile by ONNX node and by ONNX op type.

use std::collections::HashMap;
use std::time::{Duration, Instant};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::plan::eval;

/// One node of the plan and the time spent in it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeTime {
    /// tract's node name.
    pub name: String,
    /// tract's op (after optimization: `OptMatMul`, `Conv`, `Add`, ...).
    pub op: String,
    /// The ONNX node it comes from, when its name maps back to one.
    pub onnx_node: Option<String>,
    /// That ONNX node's op type.
    pub onnx_op: Option<String>,
    /// Time over all the profiled runs.
    pub total: Duration,
    /// Its time in the run where it was fastest: on a loaded machine, the figure other processes
    /// disturb least.
    pub fastest: Duration,
}

/// Time summed over nodes of one op type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpTypeTime {
    /// The op type (tract's op, or the ONNX op type).
    pub op_type: String,
    /// How many nodes have it.
    pub nodes: usize,
    /// Time over all the profiled runs.
    pub total: Duration,
}

/// The time per node of a plan over some runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Profile {
    /// How many runs were timed.
    pub runs: u32,
    /// Every node evaluated, in evaluation order.
    pub nodes: Vec<NodeTime>,
    /// Wall time of the runs, end to end (node time plus tract's own bookkeeping between nodes).
    pub wall: Duration,
}

impl Profile {
    /// The time in all nodes over all runs.
    pub(crate) fn node_total(&self) -> Duration {
        self.nodes.iter().map(|n| n.total).sum()
    }

    /// Nodes by decreasing time (ties in evaluation order).
    pub(crate) fn nodes_by_time(&self) -> Vec<&NodeTime> {
        let mut nodes: Vec<&NodeTime> = self.nodes.iter().collect();
        nodes.sort_by_key(|n| std::cmp::Reverse(n.total));
        nodes
    }

    /// Time per tract op, by decreasing time.
    pub(crate) fn op_types(&self) -> Vec<OpTypeTime> {
        group(self.nodes.iter().map(|n| (n.op.clone(), n.total)))
    }

    /// Time per ONNX op type of the nodes' origins (`-` for nodes that map to no ONNX node), by
    /// decreasing time.
    pub(crate) fn onnx_op_types(&self) -> Vec<OpTypeTime> {
        group(self.nodes.iter().map(|n| (n.onnx_op.clone().unwrap_or_else(|| "-".into()), n.total)))
    }

    /// `part`'s share of the node total, in `[0, 1]` (0 when nothing took time).
    pub(crate) fn share(&self, part: Duration) -> f64 {
        let total = self.node_total().as_secs_f64();
        if total > 0.0 {
            part.as_secs_f64() / total
        } else {
            0.0
        }
    }
}

fn group(items: impl Iterator<Item = (String, Duration)>) -> Vec<OpTypeTime> {
    let mut order: Vec<OpTypeTime> = vec![];
    let mut index: HashMap<String, usize> = HashMap::new();
    for (op_type, total) in items {
        let ix = *index.entry(op_type.clone()).or_insert_with(|| {
            order.push(OpTypeTime { op_type, nodes: 0, total: Duration::ZERO });
            order.len() - 1
        });
        order[ix].nodes += 1;
        order[ix].total += total;
    }
    order.sort_by_key(|o| std::cmp::Reverse(o.total));
    order
}

/// Maps tract node names back to ONNX nodes: `name` and `name.suffix` come from the ONNX node `name`
/// (the longest such name wins, since ONNX names may hold dots themselves).
#[derive(Debug, Clone, Default)]
pub(crate) struct OnnxNames {
    op_types: HashMap<String, String>,
}

impl OnnxNames {
    /// From the graph as tract parsed it (unique names; an unnamed node is named after its first
    /// output, as tract names it).
    pub(crate) fn from_graph(graph: &tract_onnx::pb::GraphProto) -> OnnxNames {
        let mut op_types = HashMap::new();
        for node in &graph.node {
            let name = if node.name.is_empty() { node.output.first().cloned() } else { Some(node.name.clone()) };
            if let Some(name) = name {
                op_types.insert(name, node.op_type.clone());
            }
        }
        OnnxNames { op_types }
    }

    /// The ONNX node (name, op type) a tract node name comes from.
    pub(crate) fn lookup(&self, tract_name: &str) -> Option<(String, String)> {
        let mut candidate = tract_name;
        loop {
            if let Some(op) = self.op_types.get(candidate) {
                return Some((candidate.to_string(), op.clone()));
            }
            candidate = &candidate[..candidate.rfind('.')?];
        }
    }
}

/// Runs `plan` once untimed (warm-up), then `runs` times with each node timed.
pub(crate) fn profile(
    plan: &Arc<TypedRunnableModel>,
    inputs: &TVec<TValue>,
    runs: u32,
    names: &OnnxNames,
) -> TractResult<Profile> {
    let model = plan.model();
    let mut times = vec![Duration::ZERO; model.nodes().len()];
    // This run's time of each node, and its least over the runs.
    let mut this_run = vec![Duration::ZERO; model.nodes().len()];
    let mut fastest = vec![Duration::MAX; model.nodes().len()];
    let mut seen = vec![false; model.nodes().len()];
    let mut order: Vec<usize> = vec![];
    let mut state = plan.spawn()?;
    crate::cancel::check()?;
    state.run(inputs.clone())?;
    let mut wall = Duration::ZERO;
    for _ in 0..runs {
        let batch = inputs.clone();
        this_run.iter_mut().for_each(|t| *t = Duration::ZERO);
        let start = Instant::now();
        let outputs = state.run_plan_with_eval(batch, |ctx, op_state, node, node_inputs| {
            // The cancel handle in force, if any (`bench --timeout`), outside the node's time.
            crate::cancel::check()?;
            let t0 = Instant::now();
            let result = eval(ctx, op_state, node, node_inputs);
            let took = t0.elapsed();
            times[node.id] += took;
            this_run[node.id] += took;
            if !seen[node.id] {
                seen[node.id] = true;
                order.push(node.id);
            }
            result
        })?;
        wall += start.elapsed();
        drop(outputs);
        for &id in &order {
            fastest[id] = fastest[id].min(this_run[id]);
        }
    }
    let nodes = order
        .into_iter()
        .map(|id| {
            let node = model.node(id);
            let origin = names.lookup(&node.name);
            NodeTime {
                name: node.name.clone(),
                op: node.op.name().to_string(),
                onnx_node: origin.as_ref().map(|o| o.0.clone()),
                onnx_op: origin.map(|o| o.1),
                total: times[id],
                fastest: fastest[id].min(times[id]),
            }
        })
        .collect();
    Ok(Profile { runs, nodes, wall })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[(&str, &str)]) -> OnnxNames {
        OnnxNames { op_types: pairs.iter().map(|(n, o)| (n.to_string(), o.to_string())).collect() }
    }

    #[test]
    fn tract_names_map_to_the_longest_onnx_prefix() {
        let n = names(&[("/model.0/conv/Conv", "Conv"), ("/model.0", "Identity"), ("mm", "MatMul")]);
        assert_eq!(n.lookup("/model.0/conv/Conv"), Some(("/model.0/conv/Conv".into(), "Conv".into())));
        assert_eq!(n.lookup("/model.0/conv/Conv.bias.add"), Some(("/model.0/conv/Conv".into(), "Conv".into())));
        assert_eq!(n.lookup("/model.0.x"), Some(("/model.0".into(), "Identity".into())));
        assert_eq!(n.lookup("mm.pack_b"), Some(("mm".into(), "MatMul".into())));
        assert_eq!(n.lookup("other"), None);
        assert_eq!(n.lookup("other.mm"), None);
    }

    #[test]
    fn op_types_are_grouped_and_ordered_by_time() {
        let node = |name: &str, op: &str, onnx: Option<&str>, us: u64| NodeTime {
            name: name.into(),
            op: op.into(),
            onnx_node: onnx.map(|_| name.to_string()),
            onnx_op: onnx.map(str::to_string),
            total: Duration::from_micros(us),
            fastest: Duration::from_micros(us / 2),
        };
        let p = Profile {
            runs: 2,
            nodes: vec![
                node("a", "Add", Some("Add"), 10),
                node("b", "OptMatMul", Some("MatMul"), 30),
                node("c", "Add", Some("Add"), 25),
                node("d", "Const", None, 5),
            ],
            wall: Duration::from_micros(80),
        };
        assert_eq!(p.node_total(), Duration::from_micros(70));
        let ops: Vec<(String, usize, u128)> =
            p.op_types().into_iter().map(|o| (o.op_type, o.nodes, o.total.as_micros())).collect();
        assert_eq!(ops, vec![("Add".into(), 2, 35), ("OptMatMul".into(), 1, 30), ("Const".into(), 1, 5)]);
        let onnx: Vec<(String, u128)> =
            p.onnx_op_types().into_iter().map(|o| (o.op_type, o.total.as_micros())).collect();
        assert_eq!(onnx, vec![("Add".into(), 35), ("MatMul".into(), 30), ("-".into(), 5)]);
        let by_time: Vec<&str> = p.nodes_by_time().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(by_time, vec!["b", "c", "a", "d"]);
        assert_eq!(p.share(Duration::from_micros(35)), 0.5);
    }
}
