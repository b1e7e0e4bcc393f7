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
//! - `annotate`: a type and shape on every value.

mod annotate;
mod constants;
mod cse;
mod dead;
mod facts;
mod fuse;
mod fuse_matmul;
mod graph;
mod noops;
mod reshape;
mod rnn;

pub(crate) use annotate::annotate_values;
pub use constants::SMALL;
pub use facts::{Fact, Facts};

use crate::onnx::proto;
use crate::Model;
use prost::Message;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// Values up to this many bytes are computed during analysis, to be folded (the size rule of
/// `constants` then decides what is written).
pub const FOLD_BYTES: u64 = 16 << 20;

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
    /// How many of each kind of change.
    pub changes: BTreeMap<&'static str, usize>,
    /// Values left without a type and shape.
    pub unshaped: Vec<String>,
}

impl Report {
    fn count(&mut self, kind: &'static str, n: usize) {
        if n > 0 {
            *self.changes.entry(kind).or_default() += n;
        }
    }
}

/// Folds a model (its bytes); `dir` is where its external data lives.
pub fn fold(bytes: &[u8], dir: Option<&Path>, options: &FoldOptions) -> anyhow::Result<(proto::ModelProto, Report)> {
    let mut model = proto::ModelProto::decode(bytes).map_err(|e| anyhow::anyhow!("not a valid ONNX model: {e}"))?;
    let opset = model
        .opset_import
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("") | Some("ai.onnx")))
        .and_then(|o| o.version)
        .unwrap_or(1);
    let outside = names_used_outside(&model);
    let mut report = Report { nodes_before: model.graph.as_ref().map_or(0, |g| g.node.len()), ..Report::default() };
    for _ in 0..MAX_ROUNDS {
        let facts = facts_of(&model, dir, options)?;
        let graph = model.graph.as_mut().ok_or_else(|| anyhow::anyhow!("not a valid ONNX model: it has no graph"))?;
        let mut changed = constants::fold_constants(graph, &facts, &mut report)?;
        changed |= reshape::constant_targets(graph, &facts, &mut report)?;
        changed |= noops::remove_noops(graph, &facts, options.exact, &mut report)?;
        changed |= reshape::merge_chains(graph, opset, &mut report)?;
        changed |= reshape::merge_concats(graph, &mut report);
        changed |= rnn::default_rnn_inputs(graph, &facts, &mut report);
        changed |= cse::merge_initializers(graph, &outside, &mut report);
        changed |= cse::merge_repeats(graph, &mut report);
        if !options.exact {
            changed |= fuse::batchnorm_into_conv(graph, &mut report)?;
            changed |= fuse::matmul_add_into_gemm(graph, &facts, &mut report)?;
            changed |= fuse::add_into_conv_bias(graph, &facts, &mut report)?;
            changed |= fuse_matmul::parallel_matmuls(graph, &facts, opset, &mut report)?;
        }
        changed |= dead::remove_dead(graph, &outside, &mut report);
        if !changed {
            break;
        }
    }
    let facts = facts_of(&model, dir, options)?;
    let graph = model.graph.as_mut().ok_or_else(|| anyhow::anyhow!("not a valid ONNX model: it has no graph"))?;
    report.unshaped = annotate::annotate(graph, &facts);
    report.nodes_after = graph.node.len();
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
    let unshaped = annotate::annotate(graph, &facts);
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
