//! `fold`: a whole-graph simplifier that writes a shape on every value.
//!
//! The model is analysed, rewritten by the passes below, and analysed again, until nothing changes;
//! then every value gets a `value_info`. Everything the passes do not touch (metadata, doc strings,
//! opset imports, functions, training info, nodes of unknown domains, subgraphs) is written back as it
//! was read.
//!
//! - `constants`: nodes whose outputs analysis computed become initializers, under a size rule
//!   that never inflates the file;
//! - `reshape`: computed `Reshape` targets become constants with `0`/`-1`; consecutive `Reshape`s,
//!   `Unsqueeze`s and `Transpose`s merge;
//! - `rnn`: optional inputs of recurrent ops holding their default zeros become empty;
//! - `noops`: nodes returning their input unchanged, and pairs undoing each other, go;
//! - `cse`: repeated nodes (same op, attributes and inputs) merge;
//! - `fuse` (not with `--exact`): `BatchNormalization` into `Conv`, `MatMul` + `Add` into `Gemm`,
//!   a per-channel `Add` into the `Conv` bias; `fuse_matmul` (not with `--exact`): three or more
//!   `MatMul`s sharing their left input into one and a `Split`;
//! - `dead`: what nothing reads goes;
//! - `branches`: an `If` whose condition is known becomes the branch it takes; then every `If`
//!   branch is folded as a model of its own, with what is known of the outer values it reads;
//! - `body_constants`: the `Constant` nodes of `Loop` and `Scan` bodies become their initializers;
//! - `annotate`: a type and shape on every value.

mod body_constants;
mod branches;
mod constants;
mod cse;
mod dead;
mod fuse;
mod fuse_matmul;
mod graph;
mod noops;
mod reshape;
mod rnn;

pub(crate) use crate::onnx::Facts;
pub(crate) use crate::onnx::SMALL;

use crate::schema::proto;
use crate::Model;
use prost::Message;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// Values up to this many bytes are computed during analysis, to be folded (the size rule of
/// `constants` then decides what is written).
pub(crate) const FOLD_BYTES: u64 = 16 << 20;

/// At most this many rounds of analysis and rewriting.
const MAX_ROUNDS: usize = 8;

/// How to fold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoldOptions {
    /// Keep results bit-exact: no fusion that changes floating-point rounding.
    pub exact: bool,
    /// Input shapes to specialize the model to, `(input, dims)` as `--input-shape` takes them.
    pub input_shapes: Vec<(String, Vec<String>)>,
    /// Assumptions about symbols (`N>=2`).
    pub assumptions: Vec<String>,
}

/// What `fold` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Nodes of the main graph before.
    pub nodes_before: usize,
    /// Nodes of the main graph after.
    pub nodes_after: usize,
    /// Nodes before, those of subgraphs (`If` branches, `Loop` and `Scan` bodies) included.
    pub all_nodes_before: usize,
    /// Nodes after, those of subgraphs included.
    pub all_nodes_after: usize,
    /// How many of each kind of change (in subgraphs too).
    pub changes: BTreeMap<&'static str, usize>,
    /// Values left without a type and shape (`node/branch: value` inside a branch).
    pub unshaped: Vec<String>,
    /// Branches left as they were, and why (`node/branch: reason`).
    pub kept_subgraphs: Vec<String>,
}

impl Report {
    fn count(&mut self, kind: &'static str, n: usize) {
        if n > 0 {
            *self.changes.entry(kind).or_default() += n;
        }
    }

    /// Takes in what folding the branch `label` did.
    fn absorb(&mut self, label: &str, sub: Report) {
        for (kind, n) in sub.changes {
            self.count(kind, n);
        }
        self.unshaped.extend(sub.unshaped.into_iter().map(|v| format!("{label}: {v}")));
        self.kept_subgraphs.extend(sub.kept_subgraphs.into_iter().map(|k| format!("{label}/{k}")));
    }
}

/// How many nodes a graph has, those of its subgraphs included.
pub(crate) fn count_nodes(graph: &proto::GraphProto) -> usize {
    graph.node.len()
        + graph
            .node
            .iter()
            .flat_map(|n| &n.attribute)
            .map(|a| a.g.iter().chain(&a.graphs).map(count_nodes).sum::<usize>())
            .sum::<usize>()
}

/// [`fold`] with the default options, bytes to bytes, as the CLI calls it; `dir` is where the
/// model's external data lives.
pub fn fold_bytes(bytes: &[u8], dir: Option<&Path>) -> anyhow::Result<Vec<u8>> {
    use prost::Message;
    let (model, _) = fold(bytes, dir, &FoldOptions::default())?;
    Ok(model.encode_to_vec())
}

/// Folds a model (its bytes); `dir` is where its external data lives.
pub fn fold(bytes: &[u8], dir: Option<&Path>, options: &FoldOptions) -> anyhow::Result<(proto::ModelProto, Report)> {
    let model = proto::ModelProto::decode(bytes).map_err(|e| anyhow::anyhow!("not a valid ONNX model: {e}"))?;
    fold_model(model, &Scope { dir, options, depth: 0, reserved: &HashSet::new() })
}

/// Where a model being folded sits: the main graph, or an `If` branch made a model of its own.
struct Scope<'a> {
    /// Where the external data lives.
    dir: Option<&'a Path>,
    /// How to fold.
    options: &'a FoldOptions,
    /// How many subgraphs deep.
    depth: usize,
    /// The names of the scopes around it, which its own must not repeat.
    reserved: &'a HashSet<String>,
}

/// Folds a decoded model.
fn fold_model(mut model: proto::ModelProto, scope: &Scope) -> anyhow::Result<(proto::ModelProto, Report)> {
    let Scope { dir, options, reserved, .. } = *scope;
    let opset = model
        .opset_import
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("") | Some("ai.onnx")))
        .and_then(|o| o.version)
        .unwrap_or(1);
    let outside = names_used_outside(&model);
    // (A model without a graph is refused by the first analysis, which says why: empty file...)
    let mut report = Report {
        nodes_before: model.graph.as_ref().map_or(0, |g| g.node.len()),
        all_nodes_before: model.graph.as_ref().map_or(0, count_nodes),
        ..Report::default()
    };
    let rounds = |model: &mut proto::ModelProto, report: &mut Report| -> anyhow::Result<Facts> {
        for _ in 0..MAX_ROUNDS {
            let facts = facts_of(model, dir, options)?;
            let graph =
                model.graph.as_mut().ok_or_else(|| anyhow::anyhow!("not a valid ONNX model: it has no graph"))?;
            let mut changed = branches::inline_known_ifs(graph, &facts, reserved, report);
            changed |= constants::fold_constants(graph, &facts, report)?;
            changed |= reshape::constant_targets(graph, &facts, report)?;
            changed |= noops::remove_noops(graph, &facts, options.exact, report)?;
            changed |= reshape::merge_chains(graph, opset, report)?;
            changed |= reshape::merge_concats(graph, report);
            changed |= rnn::default_rnn_inputs(graph, &facts, report);
            changed |= cse::merge_initializers(graph, &outside, report);
            changed |= cse::merge_repeats(graph, report);
            if !options.exact {
                changed |= fuse::batchnorm_into_conv(graph, report)?;
                changed |= fuse::matmul_add_into_gemm(graph, &facts, report)?;
                changed |= fuse::add_into_conv_bias(graph, &facts, report)?;
                changed |= fuse_matmul::parallel_matmuls(graph, &facts, opset, report)?;
            }
            changed |= dead::remove_dead(graph, &outside, report);
            if !changed {
                return Ok(facts);
            }
        }
        facts_of(model, dir, options)
    };
    let mut facts = rounds(&mut model, &mut report)?;
    // The branches see the model around them without its graph (opsets, functions).
    let mut graph = model.graph.take().ok_or_else(|| anyhow::anyhow!("not a valid ONNX model: it has no graph"))?;
    let branches_changed = branches::fold_branches(&model, &mut graph, &facts, scope, &mut report);
    model.graph = Some(graph);
    if branches_changed? {
        facts = rounds(&mut model, &mut report)?;
    }
    let ir4 = model.ir_version.is_some_and(|v| v >= 4);
    let graph = model.graph.as_mut().ok_or_else(|| anyhow::anyhow!("not a valid ONNX model: it has no graph"))?;
    if ir4 {
        let depth_left = branches::MAX_DEPTH.saturating_sub(scope.depth);
        body_constants::body_constants(graph, depth_left, &mut report);
    }
    report.unshaped.splice(0..0, crate::onnx::annotate(graph, &facts));
    report.nodes_after = graph.node.len();
    report.all_nodes_after = count_nodes(graph);
    Ok((model, report))
}

/// Annotates a model (its bytes) without changing anything else: every node output and graph output
/// gets the type and shape `fold` would write (`exact`, the only other option, does not apply); returns
/// the model and the values left without a type and shape. `dir` is where its external data lives.
pub fn annotate_only(
    bytes: &[u8],
    dir: Option<&Path>,
    options: &FoldOptions,
) -> anyhow::Result<(proto::ModelProto, Vec<String>)> {
    let mut model = proto::ModelProto::decode(bytes).map_err(|e| anyhow::anyhow!("not a valid ONNX model: {e}"))?;
    let facts = facts_of(&model, dir, options)?;
    let graph = model.graph.as_mut().ok_or_else(|| anyhow::anyhow!("not a valid ONNX model: it has no graph"))?;
    let unshaped = crate::onnx::annotate(graph, &facts);
    Ok((model, unshaped))
}

fn facts_of(model: &proto::ModelProto, dir: Option<&Path>, options: &FoldOptions) -> anyhow::Result<Facts> {
    let mut loaded = Model::load_bytes_in(&model.encode_to_vec(), dir)?;
    for (name, dims) in &options.input_shapes {
        let dims: Vec<&str> = dims.iter().map(String::as_str).collect();
        loaded.set_input_shape(name, &dims)?;
    }
    for a in &options.assumptions {
        loaded.assume(a)?;
    }
    Facts::of(&loaded, FOLD_BYTES)
}

/// Names the main graph's values are known by outside its nodes: training info binds and reads
/// initializers, quantization annotations name values and their parameter tensors.
fn names_used_outside(model: &proto::ModelProto) -> HashSet<String> {
    let mut outside: HashSet<String> = HashSet::new();
    for t in &model.training_info {
        for b in t.initialization_binding.iter().chain(&t.update_binding) {
            outside.extend(b.key.clone());
            outside.extend(b.value.clone());
        }
        for g in t.initialization.iter().chain(&t.algorithm) {
            outside.extend(crate::onnx::names_read(g));
        }
    }
    if let Some(g) = &model.graph {
        for a in &g.quantization_annotation {
            outside.extend(a.tensor_name.clone());
            outside.extend(a.quant_parameter_tensor_names.iter().filter_map(|e| e.value.clone()));
        }
    }
    outside
}
