//! A model's cost ([`crate::cost::Cost`]) as JSON: each figure as its expression (an integer, or a
//! dim written as `infer` writes dims) and its expression tree, and its value at the sizes given.

use super::{dim_tree, symbol_json};
use crate::cost::{Cost, Macs, NodeCost, Peak, Poly, Size, Totals};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The sizes figures are evaluated at (`--at`), by symbol name.
pub type Sizes = HashMap<String, i64>;

/// A figure as text: its value when it has one, else its expression ([`Poly::text`]).
pub fn figure_text(p: &Poly) -> String {
    p.text()
}

/// A figure as a structure, as `infer --format json` gives dims: an integer, or
/// `{"add": [terms]}` of `{"mul": [coefficient, atoms...]}`, each atom a dim's tree.
fn figure_tree(p: &Poly) -> Value {
    let term = |(coef, atoms): (i128, &[tract_onnx::prelude::TDim])| {
        let mut factors: Vec<Value> = vec![];
        if coef != 1 || atoms.is_empty() {
            factors.push(number(coef));
        }
        factors.extend(atoms.iter().map(dim_tree));
        if factors.len() == 1 {
            factors.pop().unwrap_or(Value::Null)
        } else {
            json!({ "mul": factors })
        }
    };
    let mut terms: Vec<Value> = p.terms().into_iter().map(term).collect();
    match terms.len() {
        0 => json!(0),
        1 => terms.pop().unwrap_or(Value::Null),
        _ => json!({ "add": terms }),
    }
}

/// `{"expr": 12 or "3*N+2", "tree": ..., "at": value at the sizes given}`.
fn figure(p: &Poly, at: Option<&Sizes>) -> anyhow::Result<Value> {
    let mut v = Map::new();
    v.insert(
        "expr".into(),
        match p.as_constant() {
            Some(c) => number(c),
            None => json!(p.text()),
        },
    );
    v.insert("tree".into(), figure_tree(p));
    if let Some(sizes) = at {
        let e = p.at(sizes)?;
        v.insert(
            "at".into(),
            match e.as_constant() {
                Some(c) => number(c),
                None => json!(e.text()),
            },
        );
    }
    Ok(Value::Object(v))
}

/// An integer as a JSON number, or a string past 64 bits.
fn number(c: i128) -> Value {
    match i64::try_from(c) {
        Ok(v) => json!(v),
        Err(_) => json!(c.to_string()),
    }
}

fn size(s: &Size, at: Option<&Sizes>) -> anyhow::Result<Value> {
    Ok(match s {
        Size::Known(p) => figure(p, at)?,
        Size::Unknown(why) => json!({ "unknown": why }),
    })
}

fn node(n: &NodeCost, at: Option<&Sizes>) -> anyhow::Result<Value> {
    let mut v = Map::new();
    v.insert("name".into(), json!(n.name));
    v.insert("op".into(), json!(n.op));
    match &n.macs {
        Macs::Counted(p) => v.insert("macs".into(), figure(p, at)?),
        Macs::NoRule(why) => v.insert("macs".into(), json!({ "no_rule": why })),
        Macs::Unknown(what) => v.insert("macs".into(), json!({ "unknown": what })),
    };
    v.insert("params".into(), figure(&n.params, at)?);
    v.insert("bytes_read".into(), size(&n.bytes_read, at)?);
    v.insert("bytes_written".into(), size(&n.bytes_written, at)?);
    let outputs: anyhow::Result<Vec<Value>> =
        n.outputs.iter().map(|(name, s)| Ok(json!({ "name": name, "bytes": size(s, at)? }))).collect();
    v.insert("outputs".into(), json!(outputs?));
    v.insert("folded".into(), json!(n.folded));
    Ok(Value::Object(v))
}

fn totals(t: &Totals, at: Option<&Sizes>) -> anyhow::Result<Value> {
    Ok(json!({
        "op": t.op,
        "nodes": t.nodes,
        "macs": figure(&t.macs, at)?,
        "macs_left_out": t.macs_left_out,
        "params": figure(&t.params, at)?,
        "bytes_read": figure(&t.bytes_read, at)?,
        "bytes_written": figure(&t.bytes_written, at)?,
        "bytes_left_out": t.bytes_left_out,
    }))
}

fn peak(p: &Peak, at: Option<&Sizes>) -> anyhow::Result<Value> {
    let shown = match at {
        Some(sizes) => p.at(sizes)?,
        None => p.clone(),
    };
    let candidates: anyhow::Result<Vec<Value>> =
        shown.candidates.iter().map(|(b, node)| Ok(json!({ "bytes": figure(b, None)?, "after": node }))).collect();
    Ok(json!({ "candidates": candidates?, "left_out": p.left_out }))
}

/// The whole cost as JSON: `nodes` (in run order), `op_types`, `total`, `peak` (its candidates at
/// the sizes given, when given), `input_bytes`, `initializer_bytes`, `constant_bytes`, `symbols`,
/// and `at` (the sizes given).
pub fn cost_json(cost: &Cost, at: Option<&Sizes>) -> anyhow::Result<Value> {
    let nodes: anyhow::Result<Vec<Value>> = cost.nodes.iter().map(|n| node(n, at)).collect();
    let op_types: anyhow::Result<Vec<Value>> = cost.op_types.iter().map(|t| totals(t, at)).collect();
    let symbols: Vec<Value> = cost.symbols.iter().map(symbol_json).collect();
    let mut sizes: Vec<(&String, &i64)> = at.map(|s| s.iter().collect()).unwrap_or_default();
    sizes.sort();
    Ok(json!({
        "nodes": nodes?,
        "op_types": op_types?,
        "total": totals(&cost.total, at)?,
        "peak": peak(&cost.peak, at)?,
        "input_bytes": size(&cost.input_bytes, at)?,
        "initializer_bytes": figure(&cost.initializer_bytes, at)?,
        "constant_bytes": figure(&cost.constant_bytes, at)?,
        "symbols": symbols,
        "at": sizes.into_iter().map(|(k, v)| (k.clone(), json!(v))).collect::<Map<String, Value>>(),
    }))
}
