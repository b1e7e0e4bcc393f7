//! `lower`: our ops rewritten into standard ONNX (opset 13, or the model's if newer), so that any
//! runtime gives the same outputs.
//!
//! - StridedSlice → Slice (+ Squeeze for shrunk entries, + Unsqueeze for new axes). Where the input's
//!   dims are known, bounds are written already resolved (exact under any runtime's clamping, and never
//!   the `INT64_MAX` end with a negative step that onnxruntime mishandles). Where they are symbolic,
//!   bounds are translated as they are, except the one case where Python and ONNX clamping can differ
//!   (a negative step starting below `-dim`), which is refused.
//! - Paddle-form Slice (`ai.sliceops`) → ONNX Slice: same clamping rule, parameters as initializers or
//!   the node's own inputs cast to int64.
//! - AsStrided, ATen `as_strided` → `Reshape(x, [-1])` then a Slice when the view is one contiguous run,
//!   else a Gather over a constant index table (what torch.onnx itself writes).
//! - Runtime parameters: a StridedSlice without masks whose strides are constant and positive becomes a
//!   Slice of the same tensors (the two rules agree there); otherwise its bounds are computed in the
//!   graph with standard ops, exact under ONNX clamping (`lower/runtime.rs`).
//!
//! When the model's opset is below 13, the opset import is raised and the standard nodes whose form
//! changed by 13 (Slice 1-9 attributes, Squeeze/Unsqueeze attributes) are rewritten too; a model with
//! other nodes whose meaning may have changed is refused rather than silently altered.

use super::proto::{self, attribute_proto::AttributeType, NodeProto};
use super::tensor_to_proto;
use crate::graph::DOMAIN;
use crate::semantics::{place_spec, resolve_range, AsStrided, Clamp, Placed, StridedSlice};
use crate::view::View;
use crate::Model;
use crate::{NodeError, NodeErrorKind, SliceError};
use anyhow::{bail, Context};
use prost::Message;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

mod runtime;

/// The opset lowered models use at least.
pub const TARGET_OPSET: i64 = 13;
/// The largest index table an AsStrided may lower to.
const MAX_TABLE: usize = 1 << 26;

/// Standard ops whose meaning is the same from opset 1 to 13 for every attribute they carry (13 only
/// added types): a model using only these (and Slice, Squeeze, Unsqueeze) can be raised to opset 13.
const STABLE_TO_13: &[&str] = &[
    "Abs",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "Cast",
    "Ceil",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Div",
    "Equal",
    "Exp",
    "Expand",
    "Flatten",
    "Floor",
    "Gather",
    "Greater",
    "Identity",
    "Less",
    "Log",
    "MatMul",
    "Max",
    "Min",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "Pad",
    "Pow",
    "Range",
    "Reciprocal",
    "Relu",
    "Reshape",
    "Shape",
    "Sigmoid",
    "Sign",
    "Size",
    "Sqrt",
    "Sub",
    "Sum",
    "Tanh",
    "Tile",
    "Transpose",
    "Where",
];

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
        .find(|o| o.domain.as_deref().unwrap_or("").is_empty() || o.domain.as_deref() == Some("ai.onnx"))
        .and_then(|o| o.version)
        .unwrap_or(TARGET_OPSET);
    let graph = model.graph.as_mut().context("not a valid ONNX model: it has no graph")?;
    let mut consts: HashMap<String, Vec<i64>> = HashMap::new();
    for t in &graph.initializer {
        if let (Some(name), Some(v)) = (&t.name, proto_ints(t)) {
            consts.insert(name.clone(), v);
        }
    }
    for n in graph.node.iter().filter(|n| n.op_type.as_deref() == Some("Constant")) {
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
            let kind = match node.op_type.as_deref().unwrap_or("") {
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
    let used_domains: std::collections::HashSet<String> =
        graph.node.iter().map(|n| n.domain.clone().unwrap_or_default()).collect();
    model.opset_import.retain(|o| {
        let d = o.domain.clone().unwrap_or_default();
        (d != DOMAIN && d != "org.pytorch.aten") || used_domains.contains(&d)
    });
    match model
        .opset_import
        .iter_mut()
        .find(|o| o.domain.as_deref().unwrap_or("").is_empty() || o.domain.as_deref() == Some("ai.onnx"))
    {
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
            .and_then(|lowered| crate::fold::Facts::of(&lowered, crate::fold::SMALL));
        let graph = model.graph.as_mut().context("not a valid ONNX model: it has no graph")?;
        report.unshaped = match facts {
            Ok(facts) => crate::fold::annotate_values(graph, &facts, &created),
            Err(_) => {
                let mut bare: Vec<String> = created.into_iter().collect();
                bare.sort();
                bare
            }
        };
    }
    Ok((model, report))
}

fn is_ours(node: &NodeProto) -> bool {
    let op = node.op_type.as_deref().unwrap_or("");
    let domain = node.domain.as_deref().unwrap_or("");
    op == "StridedSlice"
        || op == "AsStrided"
        || (op == "Slice" && domain == DOMAIN)
        || (op == "ATen" && aten_operator(node) == Some("as_strided"))
}

/// A node's name, or its first output's when it has none (as everywhere in sliceops).
fn node_name(node: &NodeProto) -> String {
    node.name.clone().filter(|n| !n.is_empty()).or_else(|| node.output.first().cloned()).unwrap_or_default()
}

/// An error lowering `node`, as a [`NodeError`] naming it: a pure-layer error kept typed, any other
/// with its whole chain.
fn at_node(node: &NodeProto, e: anyhow::Error) -> anyhow::Error {
    if NodeError::find(&e).is_some() {
        return e;
    }
    let (name, op) = (node_name(node), node.op_type.clone().unwrap_or_default());
    if e.chain().count() == 1 {
        if let Some(slice) = e.downcast_ref::<SliceError>() {
            return NodeError::of_kind(name, op, NodeErrorKind::Invalid, slice.clone());
        }
    }
    NodeError::invalid(name, op, format!("{e:#}"))
}

fn aten_operator(node: &NodeProto) -> Option<&str> {
    node.attribute
        .iter()
        .find(|a| a.name.as_deref() == Some("operator"))
        .and_then(|a| std::str::from_utf8(a.s.as_deref()?).ok())
}

fn attr<'a>(node: &'a NodeProto, name: &str) -> Option<&'a proto::AttributeProto> {
    node.attribute.iter().find(|a| a.name.as_deref() == Some(name))
}

fn attr_int(node: &NodeProto, name: &str) -> Option<i64> {
    attr(node, name).and_then(|a| a.i)
}

fn attr_ints(node: &NodeProto, name: &str) -> Option<Vec<i64>> {
    attr(node, name).map(|a| if a.ints.is_empty() { a.i.into_iter().collect() } else { a.ints.clone() })
}

fn int_attr(name: &str, value: i64) -> proto::AttributeProto {
    proto::AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(value),
        ..Default::default()
    }
}

struct Lowering<'a> {
    facts: &'a HashMap<String, InferenceFact>,
    /// Integer initializers and Constant outputs of the model, by name (tract merges identical
    /// constants, so analysis facts do not name them all).
    consts: HashMap<String, Vec<i64>>,
    inits: Vec<proto::TensorProto>,
    counter: usize,
}

/// One axis of a Slice being built: `(axis, start, end, step)`.
type SliceAxis = (i64, i64, i64, i64);

impl Lowering<'_> {
    fn fresh(&mut self, node: &NodeProto, what: &str) -> String {
        self.counter += 1;
        format!("{}__lower_{what}_{}", node_name(node), self.counter)
    }

    fn init_i64(&mut self, node: &NodeProto, what: &str, values: &[i64]) -> anyhow::Result<String> {
        self.init(node, what, &tract_ndarray::arr1(values).into_tensor())
    }

    /// A new initializer holding `tensor`, named after `node` and `what`.
    fn init(&mut self, node: &NodeProto, what: &str, tensor: &Tensor) -> anyhow::Result<String> {
        let name = self.fresh(node, what);
        self.inits.push(tensor_to_proto(&name, tensor)?);
        Ok(name)
    }

    fn new_node(
        &mut self,
        like: &NodeProto,
        op: &str,
        inputs: Vec<String>,
        output: Option<String>,
        attrs: Vec<proto::AttributeProto>,
    ) -> (NodeProto, String) {
        let out = output.unwrap_or_else(|| self.fresh(like, op));
        let name = self.fresh(like, &format!("{op}_node"));
        let node = NodeProto {
            name: Some(name),
            op_type: Some(op.into()),
            domain: Some(String::new()),
            input: inputs,
            output: vec![out.clone()],
            attribute: attrs,
            doc_string: like.doc_string.clone(),
            ..Default::default()
        };
        (node, out)
    }

    /// A known constant input of the node (initializer, Constant, or a value analysis computed).
    fn const_ints(&self, name: &str) -> Option<Vec<i64>> {
        if let Some(v) = self.consts.get(name) {
            return Some(v.clone());
        }
        let t = self.facts.get(name)?.value.concretize()?;
        let t = t.cast_to::<i64>().ok()?;
        Some(t.try_as_plain_ram().ok()?.as_slice::<i64>().ok()?.to_vec())
    }

    fn shape_of(&self, name: &str) -> Option<Vec<TDim>> {
        self.facts.get(name)?.shape.concretize().map(|s| s.to_vec())
    }

    fn lower_node(&mut self, node: &NodeProto) -> anyhow::Result<Vec<NodeProto>> {
        match node.op_type.as_deref().unwrap_or("") {
            "StridedSlice" => self.strided_slice(node),
            "Slice" => self.paddle_slice(node),
            "AsStrided" => {
                let size = attr_ints(node, "size").context("attribute size is missing")?;
                let stride = attr_ints(node, "stride").context("attribute stride is missing")?;
                let offset = attr_ints(node, "offset").and_then(|v| v.first().copied()).unwrap_or(0);
                self.as_strided(node, AsStrided { size, stride, offset })
            }
            _ => {
                let get = |i: usize| node.input.get(i).filter(|s| !s.is_empty()).and_then(|n| self.const_ints(n));
                let (Some(size), Some(stride)) = (get(1), get(2)) else {
                    bail!("size and stride must be constants to lower as_strided");
                };
                let offset = match node.input.get(3).filter(|s| !s.is_empty()) {
                    None => 0,
                    Some(_) => *get(3).context("storage_offset must be a constant")?.first().unwrap_or(&0),
                };
                self.as_strided(node, AsStrided { size, stride, offset })
            }
        }
    }

    fn strided_slice(&mut self, node: &NodeProto) -> anyhow::Result<Vec<NodeProto>> {
        let input = |i: usize| node.input.get(i).filter(|s| !s.is_empty()).cloned();
        let data = input(0).context("the data input is missing")?;
        let masks = StridedSlice::MASK_NAMES.map(|m| attr_int(node, m).unwrap_or(0));
        let (begin, end) = (input(1).context("begin is missing")?, input(2).context("end is missing")?);
        let strides = input(3);
        let (cb, ce) = (self.const_ints(&begin), self.const_ints(&end));
        let cs = match &strides {
            Some(s) => self.const_ints(s),
            None => cb.as_ref().map(|b| vec![1; b.len()]),
        };
        let (Some(b), Some(e), Some(s)) = (cb, ce, cs.clone()) else {
            return self.runtime_strided_slice(node, &data, [&begin, &end], strides.as_deref(), cs, masks);
        };
        let spec = StridedSlice::with_masks(b, e, Some(s), masks).spec()?;
        let shape = self.shape_of(&data).context("the input's rank must be known to lower")?;
        let (mut axes, mut squeeze, mut unsqueeze) = (vec![], vec![], vec![]);
        for placed in place_spec(&spec, shape.len())? {
            match placed {
                Placed::Whole { .. } => {}
                Placed::NewAxis { out, .. } => unsqueeze.push(out as i64),
                Placed::Index { axis, value, .. } => {
                    axes.push(index_axis(axis, value, &shape[axis])?);
                    squeeze.push(axis as i64);
                }
                Placed::Range { axis, begin, end, step, .. } => {
                    axes.extend(range_axis(axis, begin, end, step, &shape[axis])?);
                }
            }
        }
        let slice = self.slice_inits(node, &axes)?;
        self.emit_slice_chain(node, &data, vec![], slice, squeeze, unsqueeze)
    }

    /// Initializers holding the starts, ends, axes and steps of a Slice over `axes` (none if empty).
    fn slice_inits(&mut self, node: &NodeProto, axes: &[SliceAxis]) -> anyhow::Result<Option<[String; 4]>> {
        if axes.is_empty() {
            return Ok(None);
        }
        let column = |k: fn(&SliceAxis) -> i64| axes.iter().map(k).collect::<Vec<_>>();
        Ok(Some([
            self.init_i64(node, "starts", &column(|a| a.1))?,
            self.init_i64(node, "ends", &column(|a| a.2))?,
            self.init_i64(node, "axes", &column(|a| a.0))?,
            self.init_i64(node, "steps", &column(|a| a.3))?,
        ]))
    }

    /// After `nodes` (which compute its inputs), a Slice of `data` by `slice` (the names of its starts,
    /// ends, axes and steps), then Squeeze, then Unsqueeze; the last node writes the node's output.
    fn emit_slice_chain(
        &mut self,
        node: &NodeProto,
        data: &str,
        mut nodes: Vec<NodeProto>,
        slice: Option<[String; 4]>,
        squeeze: Vec<i64>,
        unsqueeze: Vec<i64>,
    ) -> anyhow::Result<Vec<NodeProto>> {
        let output = node.output.first().cloned().context("the node has no output")?;
        let steps = [slice.is_some(), !squeeze.is_empty(), !unsqueeze.is_empty()];
        let last = steps.iter().rposition(|s| *s);
        let mut wire = data.to_string();
        let out_for = |ix: usize| if Some(ix) == last { Some(output.clone()) } else { None };
        if let Some([starts, ends, axes, steps]) = slice {
            let (n, w) = self.new_node(node, "Slice", vec![wire, starts, ends, axes, steps], out_for(0), vec![]);
            nodes.push(n);
            wire = w;
        }
        for (ix, (op, list)) in [(1, ("Squeeze", squeeze)), (2, ("Unsqueeze", unsqueeze))] {
            if !list.is_empty() {
                let axes = self.init_i64(node, "axes", &list)?;
                let (n, w) = self.new_node(node, op, vec![wire, axes], out_for(ix), vec![]);
                nodes.push(n);
                wire = w;
            }
        }
        if last.is_none() {
            let (n, _) = self.new_node(node, "Identity", vec![wire], Some(output), vec![]);
            nodes.push(n);
        }
        Ok(nodes)
    }

    fn paddle_slice(&mut self, node: &NodeProto) -> anyhow::Result<Vec<NodeProto>> {
        let input = |i: usize| node.input.get(i).filter(|s| !s.is_empty()).cloned();
        let data = input(0).context("the data input is missing")?;
        let axes = attr_ints(node, "axes").context("attribute axes is missing")?;
        // Paddle's slice clamps as ONNX's does: with constant parameters over known dims, the bounds are
        // written resolved, as for a standard Slice.
        let constant = |slot: usize, role: &str| match input(slot) {
            Some(t) => self.const_ints(&t),
            None => attr_ints(node, role),
        };
        let steps = match (input(3), attr_ints(node, "strides")) {
            (None, None) => Some(None),
            _ => constant(3, "strides").map(Some),
        };
        if let (Some(starts), Some(ends), Some(steps)) = (constant(1, "starts"), constant(2, "ends"), steps) {
            let slice = crate::semantics::Slice { starts, ends, axes: Some(axes.clone()), steps };
            if let Some(nodes) = self.resolved_slice(node, &data, slice)? {
                return Ok(nodes);
            }
        }
        let mut nodes = vec![];
        let mut args = vec![data];
        for (slot, role) in [(1, "starts"), (2, "ends")] {
            let name = match (input(slot), attr_ints(node, role)) {
                (Some(t), _) => {
                    let (n, mut w) = self.new_node(node, "Cast", vec![t], None, vec![int_attr("to", 7)]);
                    nodes.push(n);
                    if role == "ends" {
                        w = self.off_sentinels(node, w, &mut nodes)?;
                    }
                    w
                }
                (None, Some(v)) if role == "ends" => {
                    let v: Vec<i64> = v.into_iter().map(off_sentinel).collect();
                    self.init_i64(node, role, &v)?
                }
                (None, Some(v)) => self.init_i64(node, role, &v)?,
                (None, None) => bail!("{role} is missing"),
            };
            args.push(name);
        }
        args.push(self.init_i64(node, "axes", &axes)?);
        let steps = match (input(3), attr_ints(node, "strides")) {
            (Some(t), _) => {
                let (n, w) = self.new_node(node, "Cast", vec![t], None, vec![int_attr("to", 7)]);
                nodes.push(n);
                w
            }
            (None, Some(v)) => self.init_i64(node, "steps", &v)?,
            (None, None) => self.init_i64(node, "steps", &vec![1; axes.len()])?,
        };
        args.push(steps);
        let (n, _) = self.new_node(node, "Slice", args, node.output.first().cloned(), vec![]);
        nodes.push(n);
        Ok(nodes)
    }

    /// Runtime int64 ends, with the two values some runtimes special-case moved off (see
    /// [`off_sentinel`]): `e' = min(e, 2^62)`, then `e' + (e' == INT32_MAX)`.
    fn off_sentinels(&mut self, node: &NodeProto, ends: String, nodes: &mut Vec<NodeProto>) -> anyhow::Result<String> {
        let cap = self.init(node, "cap", &tensor0(1i64 << 62))?;
        let (n, capped) = self.new_node(node, "Min", vec![ends, cap], None, vec![]);
        nodes.push(n);
        let int32_max = self.init(node, "int32_max", &tensor0(i64::from(i32::MAX)))?;
        let (n, is_max) = self.new_node(node, "Equal", vec![capped.clone(), int32_max], None, vec![]);
        nodes.push(n);
        let (n, one_if_max) = self.new_node(node, "Cast", vec![is_max], None, vec![int_attr("to", 7)]);
        nodes.push(n);
        let (n, moved) = self.new_node(node, "Add", vec![capped, one_if_max], None, vec![]);
        nodes.push(n);
        Ok(moved)
    }

    fn as_strided(&mut self, node: &NodeProto, op: AsStrided) -> anyhow::Result<Vec<NodeProto>> {
        op.check()?;
        let data = node.input.first().filter(|s| !s.is_empty()).cloned().context("the data input is missing")?;
        if let Some(shape) = self.shape_of(&data) {
            let dims: Option<Vec<i64>> = shape.iter().map(|d| d.as_i64()).collect();
            if let Some(dims) = dims {
                op.resolve(&dims)?;
            }
        }
        let view = View::<i64> {
            offset: op.offset,
            axes: op.size.iter().zip(&op.stride).map(|(&len, &stride)| crate::view::ViewAxis { len, stride }).collect(),
        }
        .normalized();
        let numel = view.numel().context("output size overflows")?;
        let output = node.output.first().cloned();
        let mut nodes = vec![];
        let flat_shape = self.init_i64(node, "flat", &[-1])?;
        let (n, flat) = self.new_node(node, "Reshape", vec![data, flat_shape], None, vec![]);
        nodes.push(n);
        let size = self.init_i64(node, "size", &op.size)?;
        if view.is_contiguous() {
            let end = view.offset.checked_add(numel as i64).context("view extent overflows")?;
            let (s, e, a) = (
                self.init_i64(node, "starts", &[view.offset])?,
                self.init_i64(node, "ends", &[end])?,
                self.init_i64(node, "axes", &[0])?,
            );
            let (n, run) = self.new_node(node, "Slice", vec![flat, s, e, a], None, vec![]);
            nodes.push(n);
            let (n, _) = self.new_node(node, "Reshape", vec![run, size], output, vec![]);
            nodes.push(n);
            return Ok(nodes);
        }
        // Every index of the table lies within the view's extent, which must fit i64.
        view.index_range()?;
        let shape: Vec<usize> = op.size.iter().map(|&s| s as usize).collect();
        if !crate::kernel::representable(&shape, 8) {
            bail!("an index table of shape {shape:?} cannot be represented");
        }
        if numel as usize > MAX_TABLE {
            bail!("as_strided of {numel} elements needs an index table larger than {MAX_TABLE} entries");
        }
        // The table: offset + Σ j_k * stride_k for every output index, shaped like the output.
        let mut table = Vec::with_capacity(numel as usize);
        let mut index = vec![0i64; op.size.len()];
        for _ in 0..numel {
            let flat_ix =
                index.iter().zip(&op.stride).try_fold(op.offset, |acc, (j, s)| acc.checked_add(j.checked_mul(*s)?));
            table.push(flat_ix.context("an index of the view overflows i64")?);
            for k in (0..index.len()).rev() {
                index[k] += 1;
                if index[k] < op.size[k] {
                    break;
                }
                index[k] = 0;
            }
        }
        let name = self.fresh(node, "indices");
        let t = tract_ndarray::ArrayD::from_shape_vec(shape, table)?.into_tensor();
        self.inits.push(tensor_to_proto(&name, &t)?);
        let (n, _) = self.new_node(node, "Gather", vec![flat, name], output, vec![int_attr("axis", 0)]);
        nodes.push(n);
        Ok(nodes)
    }

    /// A standard Slice with constant parameters over known dims, with its bounds written resolved (the
    /// same elements under every runtime: some special-case INT64_MAX and get reversed ranges wrong).
    fn resolve_standard_slice(&mut self, node: &NodeProto, opset: i64) -> anyhow::Result<Option<Vec<NodeProto>>> {
        let domain = node.domain.as_deref().unwrap_or("");
        if node.op_type.as_deref() != Some("Slice") || !(domain.is_empty() || domain == "ai.onnx") {
            return Ok(None);
        }
        let input = |i: usize| node.input.get(i).filter(|s| !s.is_empty());
        let params = if opset < 10 {
            let starts = attr_ints(node, "starts");
            let ends = attr_ints(node, "ends");
            (starts, ends, attr_ints(node, "axes"), None)
        } else {
            let get = |i: usize| input(i).and_then(|n| self.const_ints(n));
            if (1..5).any(|i| input(i).is_some() && get(i).is_none()) {
                return Ok(None);
            }
            (get(1), get(2), get(3), get(4))
        };
        let (Some(starts), Some(ends), axes, steps) = params else { return Ok(None) };
        let Some(data) = input(0) else { return Ok(None) };
        let data = data.clone();
        let written: Vec<SliceAxis> = starts
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let a = axes.as_ref().and_then(|a| a.get(i).copied()).unwrap_or(i as i64);
                let k = steps.as_ref().and_then(|k| k.get(i).copied()).unwrap_or(1);
                (a, s, ends.get(i).copied().unwrap_or(0), k)
            })
            .collect();
        let slice = crate::semantics::Slice { starts, ends, axes, steps };
        let Some(resolved) = self.resolved_axes(&data, slice)? else { return Ok(None) };
        if resolved == written {
            // Written resolved already (a lowered model lowered again).
            return Ok(None);
        }
        let slice = self.slice_inits(node, &resolved)?;
        self.emit_slice_chain(node, &data, vec![], slice, vec![], vec![]).map(Some)
    }

    /// `slice` (ONNX clamping) of `data` with its bounds written resolved, when `data`'s dims are known.
    fn resolved_slice(
        &mut self,
        node: &NodeProto,
        data: &str,
        slice: crate::semantics::Slice,
    ) -> anyhow::Result<Option<Vec<NodeProto>>> {
        let Some(axes) = self.resolved_axes(data, slice)? else { return Ok(None) };
        let slice = self.slice_inits(node, &axes)?;
        self.emit_slice_chain(node, data, vec![], slice, vec![], vec![]).map(Some)
    }

    /// The resolved Slice axes of `slice` over `data`, when `data`'s dims are known.
    fn resolved_axes(&self, data: &str, slice: crate::semantics::Slice) -> anyhow::Result<Option<Vec<SliceAxis>>> {
        let Some(dims) = self.shape_of(data).and_then(|s| s.iter().map(|d| d.as_i64()).collect::<Option<Vec<i64>>>())
        else {
            return Ok(None);
        };
        let sel = slice.resolve(&dims)?;
        let mut axes = vec![];
        for out in &sel.out {
            if let crate::view::OutAxis::Range { axis, start, step, len } = out {
                axes.extend(resolved_axis(*axis as i64, *start, *len, *step, dims[*axis]));
            }
        }
        Ok(Some(axes))
    }

    /// A standard node of a model below opset 13, in its opset-13 form.
    fn raise_opset(&mut self, mut node: NodeProto, opset: i64) -> anyhow::Result<Vec<NodeProto>> {
        let domain = node.domain.clone().unwrap_or_default();
        if !(domain.is_empty() || domain == "ai.onnx") {
            return Ok(vec![node]);
        }
        let op = node.op_type.clone().unwrap_or_default();
        match op.as_str() {
            "Slice" if opset < 10 => {
                let take = |n: &mut NodeProto, name: &str| {
                    let v = attr_ints(n, name);
                    n.attribute.retain(|a| a.name.as_deref() != Some(name));
                    v
                };
                let starts = take(&mut node, "starts").context("attribute starts is missing")?;
                let ends = take(&mut node, "ends").context("attribute ends is missing")?;
                let axes = take(&mut node, "axes").unwrap_or_else(|| (0..starts.len() as i64).collect());
                let (s, e, a) = (
                    self.init_i64(&node, "starts", &starts)?,
                    self.init_i64(&node, "ends", &ends)?,
                    self.init_i64(&node, "axes", &axes)?,
                );
                node.input.extend([s, e, a]);
                Ok(vec![node])
            }
            "Squeeze" | "Unsqueeze" => {
                if let Some(axes) = attr_ints(&node, "axes") {
                    node.attribute.retain(|a| a.name.as_deref() != Some("axes"));
                    let a = self.init_i64(&node, "axes", &axes)?;
                    node.input.push(a);
                }
                Ok(vec![node])
            }
            "Slice" => Ok(vec![node]),
            other if STABLE_TO_13.contains(&other) => Ok(vec![node]),
            other => bail!(
                "the model's opset {opset} is below 13 and {other} may mean something else at opset 13; \
                 lowering would change it"
            ),
        }
    }
}

/// The values of an int32 or int64 tensor.
fn proto_ints(t: &proto::TensorProto) -> Option<Vec<i64>> {
    use proto::tensor_proto::DataType;
    let raw = t.raw_data.as_deref().unwrap_or(&[]);
    match DataType::try_from(t.data_type?).ok()? {
        DataType::Int64 if !raw.is_empty() => {
            Some(raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
        }
        DataType::Int64 => Some(t.int64_data.clone()),
        DataType::Int32 if !raw.is_empty() => {
            Some(raw.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")) as i64).collect())
        }
        DataType::Int32 => Some(t.int32_data.iter().map(|&v| v as i64).collect()),
        _ => None,
    }
}

/// The Slice axis for an integer index: `[i, i+1)`, exact for any dim.
fn index_axis(axis: usize, i: i64, dim: &TDim) -> anyhow::Result<SliceAxis> {
    let a = axis as i64;
    Ok(match dim.as_i64() {
        Some(d) => {
            if i < -d || i >= d {
                bail!("shrink index {i} is out of range for axis {axis} of size {d}");
            }
            let i = if i < 0 { i + d } else { i };
            (a, i, i + 1, 1)
        }
        None if i == -1 => (a, -1, i64::MAX, 1),
        None => (a, i, i + 1, 1),
    })
}

/// Slice bounds taking exactly `len` elements from `start` by `k` on an axis of `d` (None if that is
/// the whole axis in order), written so that no clamping rule or special value can move them.
fn resolved_axis(a: i64, start: i64, len: i64, k: i64, d: i64) -> Option<SliceAxis> {
    if len == d && k == 1 {
        return None;
    }
    if len == 0 {
        return Some((a, 0, 0, 1));
    }
    // The end just past the last element taken.
    let last = i128::from(start) + i128::from(len - 1) * i128::from(k);
    let end = if k > 0 {
        (last + 1).min(i128::from(d)) as i64
    } else if last == 0 {
        -(d + 1)
    } else {
        (last - 1) as i64
    };
    Some((a, start, end, k))
}

/// The Slice axis for `b:e:k` (None if it is the whole axis in order), exact under ONNX clamping.
fn range_axis(axis: usize, b: Option<i64>, e: Option<i64>, k: i64, dim: &TDim) -> anyhow::Result<Option<SliceAxis>> {
    let a = axis as i64;
    if let Some(d) = dim.as_i64() {
        let r = resolve_range(&d, b, e, k, Clamp::Python)?;
        return Ok(resolved_axis(a, r.start, r.len, k, d));
    }
    // Symbolic dim: the bounds as they are. They mean the same under both rules except for a negative
    // step starting below -dim, which Python makes empty and ONNX starts at 0.
    if k < 0 && b.is_some_and(|b| b < -1) {
        bail!(
            "cannot lower {b:?}:{e:?}:{k} on symbolic axis {axis} exactly: a negative step from below -dim is \
             empty in numpy but not in ONNX"
        );
    }
    let start = b.unwrap_or(if k > 0 { 0 } else { i64::MAX });
    let end = e.unwrap_or(if k > 0 { i64::MAX } else { i64::MIN });
    if start == 0 && end == i64::MAX && k == 1 {
        return Ok(None);
    }
    Ok(Some((a, start, if k < 0 { off_sentinel(end) } else { end }, k)))
}

/// An end moved off the two values onnxruntime special-cases: with a negative step it reads an end of
/// exactly `INT32_MAX` or `INT64_MAX` as "through the first element", where ONNX (and numpy) clamp it to
/// `dim - 1`, which makes the axis empty. `INT64_MAX` becomes `2^62` and `INT32_MAX` becomes `2^31`: the
/// same end under clamping for every dim below `2^31` (dims are at most 10^9 unless assumed otherwise).
fn off_sentinel(end: i64) -> i64 {
    match end {
        i64::MAX => 1 << 62,
        e if e == i64::from(i32::MAX) => e + 1,
        e => e,
    }
}
