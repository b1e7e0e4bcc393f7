//! The reports users and snapshot tests read: inferred facts as JSON and tensors as text, and a
//! model's cost as JSON (`cost.rs`).

mod cases;
mod cost;

pub(crate) use cases::shape_text;
pub use cases::{value_cases, CaseFact};
pub use cost::{cost_json, figure_text, Sizes};

use crate::dims::format_dim;
pub(crate) use crate::error::describe_error;
use crate::npy::numpy_name;
use crate::ValueFact;
use tract_onnx::prelude::*;

/// What `infer` tells besides the facts, one line each: `warning: ...` for a declared shape that
/// inference contradicts, `note: node ...` for a node whose own rule could not be used.
pub fn infer_notes(
    model: &crate::Model,
    analysis: &crate::analysis::Analysis,
    facts: &[ValueFact],
) -> anyhow::Result<Vec<String>> {
    let mut notes: Vec<String> = model.shape_warnings(facts)?.into_iter().map(|w| format!("warning: {w}")).collect();
    for f in &analysis.fallbacks {
        let what = if f.deferred {
            "computed only when the model runs"
        } else if f.typed {
            "its output dims that depend on it are fresh symbols"
        } else {
            "its outputs are unknown"
        };
        notes.push(format!("note: node '{}' ({}): {what}: {}", f.node, f.op, f.reason));
    }
    Ok(notes)
}

/// A dim as JSON: an integer, or an expression string.
pub(crate) fn dim_json(d: &TDim) -> serde_json::Value {
    match d.as_i64() {
        Some(v) => serde_json::json!(v),
        None => serde_json::json!(format_dim(d)),
    }
}

/// `{"values": [{"name", "dtype", "shape"}]}`.
pub fn facts_json(facts: &[ValueFact]) -> serde_json::Value {
    let values: Vec<serde_json::Value> = facts
        .iter()
        .map(|f| {
            serde_json::json!({
                "name": f.name,
                "dtype": f.dtype_name,
                "shape": f.shape.iter().map(dim_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({ "values": values })
}

/// The values of a tensor, flattened, as text (`[1.5, -2.0]`), at most `limit` of them.
pub fn values_text(t: &Tensor, limit: usize) -> anyhow::Result<String> {
    fn list<T: Datum + std::fmt::Debug>(t: &Tensor, limit: usize) -> anyhow::Result<String> {
        let plain = t.try_as_plain_ram()?;
        let values = plain.as_slice::<T>()?;
        let shown: Vec<String> = values.iter().take(limit).map(|v| format!("{v:?}")).collect();
        let more = if values.len() > limit { format!(", ... ({} values)", values.len()) } else { String::new() };
        Ok(format!("[{}{more}]", shown.join(", ")))
    }
    match t.datum_type() {
        DatumType::Bool => list::<bool>(t, limit),
        DatumType::I8 => list::<i8>(t, limit),
        DatumType::U8 => list::<u8>(t, limit),
        DatumType::I16 => list::<i16>(t, limit),
        DatumType::U16 => list::<u16>(t, limit),
        DatumType::I32 => list::<i32>(t, limit),
        DatumType::U32 => list::<u32>(t, limit),
        DatumType::I64 => list::<i64>(t, limit),
        DatumType::U64 => list::<u64>(t, limit),
        DatumType::F16 => list::<half::f16>(t, limit),
        DatumType::F32 => list::<f32>(t, limit),
        DatumType::F64 => list::<f64>(t, limit),
        DatumType::String => list::<String>(t, limit),
        DatumType::TDim => list::<TDim>(t, limit),
        dt => anyhow::bail!("cannot show values of {dt:?}"),
    }
}

/// A dim as a parsed structure: an integer, `{"sym": name}`, or `{op: [operands]}` with `op` one of
/// `add`, `mul`, `div` (floor division by an integer), `min`, `max`, `broadcast`, `ge`, `eq`.
/// The dim is written in [`crate::dims::canonical`] form, as [`crate::dims::format_dim`] writes it.
pub(crate) fn dim_tree(d: &TDim) -> serde_json::Value {
    tree(&crate::dims::canonical(d))
}

fn tree(d: &TDim) -> serde_json::Value {
    use serde_json::json;
    let list = |terms: &[TDim]| serde_json::Value::Array(terms.iter().map(tree).collect());
    match d {
        TDim::Val(v) => json!(v),
        TDim::Sym(s) => json!({ "sym": s.to_string() }),
        TDim::Add(terms) => json!({ "add": list(terms) }),
        TDim::Mul(terms) => json!({ "mul": list(terms) }),
        TDim::MulInt(k, x) => json!({ "mul": [k, tree(x)] }),
        TDim::Div(x, k) => json!({ "div": [tree(x), k] }),
        TDim::Min(terms) => json!({ "min": list(terms) }),
        TDim::Max(terms) => json!({ "max": list(terms) }),
        TDim::Broadcast(terms) => json!({ "broadcast": list(terms) }),
        TDim::Ge(a, b) => json!({ "ge": [tree(a), tree(b)] }),
        TDim::Eq(a, b) => json!({ "eq": [tree(a), tree(b)] }),
    }
}

/// A symbol as JSON: name, origin, bounds (`min`, `max`, and `at_most`, the bound its op implies).
pub(crate) fn symbol_json(s: &crate::analysis::SymbolInfo) -> serde_json::Value {
    let at_most = s.at_most.as_ref().map(crate::dims::format_dim);
    serde_json::json!({"name": s.name, "origin": origin_json(&s.origin), "min": s.min, "max": s.max, "at_most": at_most})
}

/// A symbol's origin as JSON.
fn origin_json(o: &crate::analysis::Origin) -> serde_json::Value {
    use crate::analysis::Origin;
    use serde_json::json;
    match o {
        Origin::Declared { input, axis, text } => {
            json!({"kind": "input", "input": input, "axis": axis, "declared": text})
        }
        Origin::Unnamed { input, axis, declared } => {
            json!({"kind": "unnamed input dim", "input": input, "axis": axis, "declared": declared})
        }
        Origin::Given { input, axis } => json!({"kind": "--input-shape", "input": input, "axis": axis}),
        Origin::Node { node, op, output, axis, reason } => {
            json!({"kind": "node", "node": node, "op": op, "output": output, "axis": axis, "reason": reason})
        }
    }
}

/// Where a value comes from: the node making it (name, op type), by value name.
pub(crate) fn producers(graph: &tract_onnx::pb::GraphProto) -> std::collections::HashMap<&str, (&str, &str)> {
    let mut map = std::collections::HashMap::new();
    for n in &graph.node {
        let name = if n.name.is_empty() { n.output.first().map_or("", String::as_str) } else { n.name.as_str() };
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            map.insert(o.as_str(), (name, n.op_type.as_str()));
        }
    }
    map
}

/// The values of a small integer tensor (a shape vector and its arithmetic) as dims, if it is one.
fn shape_value(t: &Tensor) -> Option<Vec<TDim>> {
    if t.rank() > 1 || t.len() > 64 || !(t.datum_type().is_integer() || t.datum_type().is_tdim()) {
        return None;
    }
    crate::dims::dims_of(t).ok()
}

/// The whole analysis as JSON: `values` (graph inputs, every node output, graph outputs: name, dtype,
/// shape, the shape as a structure, the producing node, the value of shape tensors; or why it is
/// unknown), `symbols` (origin, bounds), `requirements`, `assumptions`, and `fallbacks` (nodes whose
/// own rule could not be used).
pub fn analysis_json(
    analysis: &crate::analysis::Analysis,
    cases: &[crate::analysis::Case],
    graph: &tract_onnx::pb::GraphProto,
    assumptions: &[String],
) -> anyhow::Result<serde_json::Value> {
    use serde_json::json;
    let producers = producers(graph);
    let mut values = vec![];
    let mut seen = std::collections::HashSet::new();
    for name in crate::analysis::graph_value_names(graph) {
        if !seen.insert(name) {
            continue;
        }
        let producer = producers.get(name).map(|(node, op)| json!({"node": node, "op": op}));
        let mut v = serde_json::Map::new();
        v.insert("name".into(), json!(name));
        if let (Some(outlet), Some(f)) = (analysis.outlets.get(name), analysis.value_fact(name)?) {
            let fact = analysis.typed.outlet_fact(*outlet)?;
            v.insert("dtype".into(), json!(f.dtype_name));
            v.insert("shape".into(), json!(f.shape.iter().map(dim_json).collect::<Vec<_>>()));
            v.insert("dims".into(), json!(f.shape.iter().map(dim_tree).collect::<Vec<_>>()));
            if let Some(dims) = fact.konst.as_deref().and_then(shape_value) {
                v.insert("value".into(), json!(dims.iter().map(dim_json).collect::<Vec<_>>()));
            }
        } else {
            let why = analysis.unknown.get(name).cloned().unwrap_or_else(|| "not computed".into());
            v.insert("unknown".into(), json!(why));
        }
        if let Some(outcomes) = value_cases(name, analysis, cases) {
            let outcomes: Vec<serde_json::Value> = outcomes.iter().map(case_json).collect();
            v.insert("cases".into(), json!(outcomes));
        }
        v.insert("producer".into(), producer.unwrap_or(serde_json::Value::Null));
        values.push(serde_json::Value::Object(v));
    }
    let symbols: Vec<serde_json::Value> = analysis.symbols.iter().map(symbol_json).collect();
    let requirements: Vec<serde_json::Value> =
        analysis.requirements.iter().map(|r| json!({"requires": r.to_string(), "node": r.node, "op": r.op})).collect();
    let fallbacks: Vec<serde_json::Value> = analysis
        .fallbacks
        .iter()
        .map(|f| json!({"node": f.node, "op": f.op, "reason": f.reason, "typed": f.typed}))
        .collect();
    Ok(json!({
        "values": values,
        "symbols": symbols,
        "requirements": requirements,
        "assumptions": {
            "given": assumptions,
            "default": format!(
                "every symbol S is a dim: 0 <= S <= {} (the upper bound unless an assumption bounds S from above)",
                crate::analysis::DEFAULT_DIM_MAX
            ),
        },
        "fallbacks": fallbacks,
        "cases": cases.iter().map(|c| json!({"when": c.when})).collect::<Vec<_>>(),
    }))
}

/// One outcome of a value: `{"when", "dtype", "shape", "dims"}`, or `{"when", "unknown"}`.
fn case_json(case: &CaseFact) -> serde_json::Value {
    use serde_json::json;
    match &case.fact {
        Ok((dtype, shape)) => json!({
            "when": case.when,
            "dtype": dtype,
            "shape": shape.iter().map(dim_json).collect::<Vec<_>>(),
            "dims": shape.iter().map(dim_tree).collect::<Vec<_>>(),
        }),
        Err(why) => json!({"when": case.when, "unknown": why}),
    }
}

/// Whether `got` matches `want` for `--expect`: non-finite values by identity (NaN only with NaN, an
/// infinity only with the same infinity, where the relative tolerance would be infinite), finite ones
/// within an absolute 1e-5 plus a relative 1e-4 of `want`.
pub(crate) fn close_float(got: f64, want: f64) -> bool {
    if !got.is_finite() || !want.is_finite() {
        return (got.is_nan() && want.is_nan()) || got == want;
    }
    got == want || (got - want).abs() <= 1e-5 + 1e-4 * want.abs()
}

/// Compares an output with the expected tensor: same element type and shape, equal values for
/// integers, booleans and strings, and for floats `|got - want| <= 1e-5 + 1e-4 * |want|` elementwise,
/// non-finite values by identity (`close_float`). The error says where they differ first.
pub fn compare(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.datum_type() != want.datum_type() {
        return Err(format!("got {} but expected {}", numpy_name(got.datum_type()), numpy_name(want.datum_type())));
    }
    if got.shape() != want.shape() {
        return Err(format!("got shape {:?} but expected {:?}", got.shape(), want.shape()));
    }
    if got.datum_type().is_float() {
        let as_f64 = |t: &Tensor| -> Result<Vec<f64>, String> {
            let c = t.cast_to::<f64>().map_err(|e| e.to_string())?;
            let plain = c.try_as_plain_ram().map_err(|e| e.to_string())?;
            Ok(plain.as_slice::<f64>().map_err(|e| e.to_string())?.to_vec())
        };
        let (g, w) = (as_f64(got)?, as_f64(want)?);
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            if !close_float(*a, *b) {
                return Err(format!("element {i} is {a} but expected {b}"));
            }
        }
        return Ok(());
    }
    let same = match (got.try_as_plain_ram(), want.try_as_plain_ram()) {
        (Ok(g), Ok(w)) if got.datum_type() == DatumType::String => {
            g.as_slice::<String>().ok() == w.as_slice::<String>().ok()
        }
        (Ok(g), Ok(w)) => g.as_bytes() == w.as_bytes(),
        _ => false,
    };
    if same {
        Ok(())
    } else {
        Err("values differ".to_string())
    }
}

#[cfg(test)]
mod tests {
    use tract_onnx::prelude::*;
    use tract_onnx::tract_core::ops::identity::Identity;

    /// `tract_node` reads the text tract writes for a node in its error contexts (`Failed analyse for
    /// node {node}`, `Evaluating {node}`): this pins that format.
    #[test]
    fn tract_node_reads_the_node_text_of_tracts_contexts() {
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([2])).unwrap();
        let y = model.wire_node("the node", Identity, &[x]).unwrap();
        let node = model.node(y[0].node);
        for context in [format!("Failed analyse for node {node}"), format!("Evaluating {node}: got 2 inputs")] {
            assert_eq!(
                crate::error::tract_node(&context),
                Some(("the node".to_string(), "Identity".to_string())),
                "{context}"
            );
        }
    }
}
