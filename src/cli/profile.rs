//! `sliceops bench --profile`: the time per node and per op type, as a table or JSON.

use super::table::print_table;
use crate::profile::{OpTypeTime, Profile};
use std::time::Duration;

/// How many rows of each list are shown: `top` of them, or all when `top` is 0.
fn first<T>(items: Vec<T>, top: usize) -> Vec<T> {
    if top == 0 {
        items
    } else {
        items.into_iter().take(top).collect()
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// The mean time per run.
fn mean(p: &Profile, total: Duration) -> Duration {
    total / p.runs.max(1)
}

/// The profile as JSON: per-run node total and wall time, then `nodes` and `op_types` (tract's ops)
/// and `onnx_op_types` (the ONNX op types the nodes come from), each by decreasing time.
pub(super) fn json(p: &Profile, top: usize) -> serde_json::Value {
    use serde_json::json;
    let kinds = |list: Vec<OpTypeTime>| -> Vec<serde_json::Value> {
        first(list, top)
            .into_iter()
            .map(|o| {
                json!({
                    "op_type": o.op_type,
                    "nodes": o.nodes,
                    "total_s": o.total.as_secs_f64(),
                    "mean_s": mean(p, o.total).as_secs_f64(),
                    "share": p.share(o.total),
                })
            })
            .collect()
    };
    let nodes: Vec<serde_json::Value> = first(p.nodes_by_time(), top)
        .into_iter()
        .map(|n| {
            json!({
                "name": n.name,
                "op": n.op,
                "onnx_node": n.onnx_node,
                "onnx_op": n.onnx_op,
                "total_s": n.total.as_secs_f64(),
                "mean_s": mean(p, n.total).as_secs_f64(),
                "min_s": n.fastest.as_secs_f64(),
                "share": p.share(n.total),
            })
        })
        .collect();
    json!({
        "runs": p.runs,
        "node_count": p.nodes.len(),
        "total_s": mean(p, p.node_total()).as_secs_f64(),
        "wall_s": mean(p, p.wall).as_secs_f64(),
        "nodes": nodes,
        "op_types": kinds(p.op_types()),
        "onnx_op_types": kinds(p.onnx_op_types()),
    })
}

/// The profile as tables: the slowest nodes, then the time per op type (tract's, then ONNX's).
pub(super) fn print(p: &Profile, top: usize) -> anyhow::Result<()> {
    outln!()?;
    outln!(
        "profile: {} runs, {} nodes, {} per run in nodes, {} per run end to end",
        p.runs,
        p.nodes.len(),
        ms(mean(p, p.node_total())),
        ms(mean(p, p.wall))
    )?;
    outln!()?;
    let mut rows = vec![[
        "node".to_string(),
        "op".to_string(),
        "onnx op".to_string(),
        "total".to_string(),
        "mean".to_string(),
        "share".to_string(),
    ]];
    for n in first(p.nodes_by_time(), top) {
        rows.push([
            n.name.clone(),
            n.op.clone(),
            n.onnx_op.clone().unwrap_or_else(|| "-".into()),
            ms(n.total),
            ms(mean(p, n.total)),
            percent(p.share(n.total)),
        ]);
    }
    print_table(&rows)?;
    for (title, list) in [("op type", p.op_types()), ("onnx op type", p.onnx_op_types())] {
        outln!()?;
        let mut rows = vec![[
            title.to_string(),
            "nodes".to_string(),
            "total".to_string(),
            "mean".to_string(),
            "share".to_string(),
        ]];
        for o in first(list, top) {
            rows.push([
                o.op_type.clone(),
                o.nodes.to_string(),
                ms(o.total),
                ms(mean(p, o.total)),
                percent(p.share(o.total)),
            ]);
        }
        print_table(&rows)?;
    }
    Ok(())
}
