//! The graph walk: every node lowered, resolved, raised or kept, the opset imports fixed, and the
//! values lowering created typed.

use super::emit::Lowering;
use super::TARGET_OPSET;
use crate::onnx::node::{attr, is_onnx_domain, node_name, op_type};
use crate::onnx::tensor::proto_ints;
use crate::schema::proto::{self, NodeProto};
use crate::slicing::DOMAIN;
use crate::Model;
use crate::{NodeError, NodeErrorKind, SliceError};
use anyhow::Context;
use prost::Message;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// What `lower` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LowerReport {
    /// Nodes of the main graph before.
    pub nodes_before: usize,
    /// Nodes of the main graph after.
    pub nodes_after: usize,
    /// How many nodes of each kind were rewritten.
    pub changes: BTreeMap<&'static str, usize>,
    /// Values lowering created that are left without a type and shape.
    pub unshaped: Vec<String>,
}

/// Lowers a model (its bytes); `dir` is where its external data lives.
pub fn lower(bytes: &[u8], dir: Option<&Path>) -> anyhow::Result<Vec<u8>> {
    lower_model(bytes, dir).map(|(model, _)| model.encode_to_vec())
}

/// Lowers a model (its bytes) and says what it rewrote; every value the rewrite creates gets a
/// `value_info` (element type and shape, symbolic dims named as `infer` names them).
pub fn lower_model(bytes: &[u8], dir: Option<&Path>) -> anyhow::Result<(proto::ModelProto, LowerReport)> {
    let mut model = proto::ModelProto::decode(bytes).map_err(|e| anyhow::anyhow!("not a valid ONNX model: {e}"))?;
    let loaded = Model::load_bytes_in(bytes, dir)?;
    let facts = loaded.value_facts()?;
    let opset = model
        .opset_import
        .iter()
        .find(|o| is_onnx_domain(o.domain.as_deref()))
        .and_then(|o| o.version)
        .unwrap_or(TARGET_OPSET);
    let graph = model.graph.as_mut().context("not a valid ONNX model: it has no graph")?;
    let mut consts: HashMap<String, Vec<i64>> = HashMap::new();
    for t in &graph.initializer {
        if let (Some(name), Some(v)) = (&t.name, proto_ints(t)) {
            consts.insert(name.clone(), v);
        }
    }
    for n in graph.node.iter().filter(|n| op_type(n) == "Constant") {
        if let (Some(out), Some(v)) =
            (n.output.first(), attr(n, "value").and_then(|a| a.t.as_ref()).and_then(proto_ints))
        {
            consts.insert(out.clone(), v);
        }
    }
    let mut lw = Lowering { facts: &facts, consts, inits: vec![], counter: 0 };
    let mut report = LowerReport { nodes_before: graph.node.len(), ..LowerReport::default() };
    let existing: HashSet<String> = graph.node.iter().flat_map(|n| n.output.iter().cloned()).collect();
    let mut nodes = vec![];
    for node in std::mem::take(&mut graph.node) {
        if is_ours(&node) {
            let kind = match op_type(&node) {
                "StridedSlice" => "StridedSlice rewritten",
                "Slice" => "Paddle-form Slice rewritten",
                "AsStrided" => "AsStrided rewritten",
                _ => "ATen as_strided rewritten",
            };
            nodes.extend(lw.lower_node(&node).map_err(|e| at_node(&node, e))?);
            *report.changes.entry(kind).or_default() += 1;
        } else if let Some(resolved) = lw.resolve_standard_slice(&node, opset).map_err(|e| at_node(&node, e))? {
            nodes.extend(resolved);
            *report.changes.entry("standard Slice bounds written resolved").or_default() += 1;
        } else if opset < TARGET_OPSET {
            let raised = lw.raise_opset(node.clone(), opset).map_err(|e| at_node(&node, e))?;
            if raised.len() != 1 || raised[0] != node {
                *report.changes.entry("nodes rewritten in their opset-13 form").or_default() += 1;
            }
            nodes.extend(raised);
        } else {
            nodes.push(node);
        }
    }
    graph.node = nodes;
    graph.initializer.extend(lw.inits);
    // Opset imports: the default domain at 13 at least; ours (and ATen's) only if still used.
    let used_domains: HashSet<String> = graph.node.iter().map(|n| n.domain.clone().unwrap_or_default()).collect();
    model.opset_import.retain(|o| {
        let d = o.domain.clone().unwrap_or_default();
        (d != DOMAIN && d != "org.pytorch.aten") || used_domains.contains(&d)
    });
    match model.opset_import.iter_mut().find(|o| is_onnx_domain(o.domain.as_deref())) {
        Some(o) => o.version = Some(opset.max(TARGET_OPSET)),
        None => model
            .opset_import
            .push(proto::OperatorSetIdProto { domain: Some(String::new()), version: Some(TARGET_OPSET) }),
    }
    let graph = model.graph.as_mut().context("not a valid ONNX model: it has no graph")?;
    report.nodes_after = graph.node.len();
    let created: HashSet<String> = graph
        .node
        .iter()
        .flat_map(|n| n.output.iter())
        .filter(|o| !o.is_empty() && !existing.contains(*o))
        .cloned()
        .collect();
    if !created.is_empty() {
        // The lowered model is analysed like any other: its new values get the types found there. Should
        // that analysis fail, the model is still written, and the report lists the values left bare.
        let facts = Model::load_bytes_in(&model.encode_to_vec(), dir)
            .and_then(|lowered| crate::onnx::Facts::of(&lowered, crate::onnx::SMALL));
        let graph = model.graph.as_mut().context("not a valid ONNX model: it has no graph")?;
        report.unshaped = match facts {
            Ok(facts) => crate::onnx::annotate_values(graph, &facts, &created),
            Err(_) => {
                let mut bare: Vec<String> = created.into_iter().collect();
                bare.sort();
                bare
            }
        };
    }
    Ok((model, report))
}

/// Whether a node is one of ours to lower: StridedSlice, AsStrided, Paddle-form Slice (our domain) or
/// ATen `as_strided`.
fn is_ours(node: &NodeProto) -> bool {
    let op = op_type(node);
    let domain = node.domain.as_deref().unwrap_or("");
    op == "StridedSlice"
        || op == "AsStrided"
        || (op == "Slice" && domain == DOMAIN)
        || (op == "ATen" && aten_operator(node) == Some("as_strided"))
}

/// An error lowering `node`, as a [`NodeError`] naming it: a pure-layer error kept typed, any other
/// with its whole chain.
fn at_node(node: &NodeProto, e: anyhow::Error) -> anyhow::Error {
    if NodeError::find(&e).is_some() {
        return e;
    }
    let (name, op) = (node_name(node), op_type(node).to_string());
    if e.chain().count() == 1 {
        if let Some(slice) = e.downcast_ref::<SliceError>() {
            return NodeError::of_kind(name, op, NodeErrorKind::Invalid, slice.clone());
        }
    }
    NodeError::invalid(name, op, format!("{e:#}"))
}

/// The `operator` attribute of an ATen node, as text.
fn aten_operator(node: &NodeProto) -> Option<&str> {
    attr(node, "operator").and_then(|a| std::str::from_utf8(a.s.as_deref()?).ok())
}
