//! What a model costs, as exact expressions of its input dims: per node the multiply-adds, the
//! parameter elements and bytes it reads, the bytes it writes; totals per op type and for the model;
//! the peak memory of the intermediate values in the order the plan runs the nodes.
//!
//! Every figure is a [`Poly`] over the symbols of the analysis (`batch`, `sequence`, the sizes only a
//! run knows, named after their node), so a figure holds for every input size at once;
//! [`Poly::at`] evaluates it at given sizes. The multiply-add rule of each op is in `rules/`, next
//! to the op's name. A node whose op has no rule, or whose sizes the analysis could not know, is
//! listed as such and left out of the totals, which say how many nodes they leave out.
//!
//! Layer: write-back and reports over the analysis (layer 6 of docs/architecture.md): it reads the
//! model (`Model::analyse`) and nothing above it.

mod order;
mod peak;
mod poly;
mod rules;

pub use peak::Peak;
pub use poly::Poly;
pub use rules::Macs;

use crate::analysis::{Analysis, SymbolInfo};
use crate::node::node_label;
use crate::Model;
use std::collections::{HashMap, HashSet};
use tract_onnx::pb;
use tract_onnx::prelude::*;

/// Why a figure could not be computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CostError {
    /// A coefficient or a value past 128 bits (or, written as a dim, past 64).
    Overflow,
    /// A figure of more terms than one may hold (4096).
    TooManyTerms,
    /// A dim with no integer value at the sizes given (a broadcast of two different sizes).
    Evaluation(String),
}

impl std::fmt::Display for CostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CostError::Overflow => write!(f, "a cost figure overflows"),
            CostError::TooManyTerms => write!(f, "a cost figure has more than {} terms", poly::MAX_TERMS),
            CostError::Evaluation(d) => write!(f, "the dim {d} has no value at the sizes given"),
        }
    }
}

impl std::error::Error for CostError {}

/// A size: known exactly, or unknown with the reason.
#[derive(Debug, Clone, PartialEq)]
pub enum Size {
    /// Exact.
    Known(Poly),
    /// Not known before running, and why.
    Unknown(String),
}

impl Size {
    /// The figure, if known.
    pub fn known(&self) -> Option<&Poly> {
        match self {
            Size::Known(p) => Some(p),
            Size::Unknown(_) => None,
        }
    }
}

/// The cost of one node.
#[derive(Debug, Clone)]
pub struct NodeCost {
    /// The node's name (its first output's when it has none).
    pub name: String,
    /// Its op type.
    pub op: String,
    /// Multiply-adds.
    pub macs: Macs,
    /// Elements of the initializers it reads.
    pub params: Poly,
    /// Bytes of its inputs.
    pub bytes_read: Size,
    /// Bytes of its outputs.
    pub bytes_written: Size,
    /// Each output's name and bytes.
    pub outputs: Vec<(String, Size)>,
    /// Whether every output is computed before running (the node never runs in the plan).
    pub folded: bool,
}

/// The totals of one op type, or of the model.
#[derive(Debug, Clone)]
pub struct Totals {
    /// The op type (`""` for the model).
    pub op: String,
    /// Nodes.
    pub nodes: usize,
    /// Multiply-adds of the nodes counted.
    pub macs: Poly,
    /// Nodes whose multiply-adds are not counted (no rule, or an unknown size).
    pub macs_left_out: usize,
    /// Parameter elements read (for the model: each initializer once).
    pub params: Poly,
    /// Bytes read by the nodes whose input sizes are known.
    pub bytes_read: Poly,
    /// Bytes written by the nodes whose output sizes are known.
    pub bytes_written: Poly,
    /// Nodes whose bytes are not counted (an unknown size).
    pub bytes_left_out: usize,
}

/// The cost of a model.
#[derive(Debug, Clone)]
pub struct Cost {
    /// Per node, in the order the plan runs them.
    pub nodes: Vec<NodeCost>,
    /// Per op type, in the order each op type first runs.
    pub op_types: Vec<Totals>,
    /// The whole model.
    pub total: Totals,
    /// Peak bytes of the intermediate values live at once.
    pub peak: Peak,
    /// Bytes of the graph inputs.
    pub input_bytes: Size,
    /// Bytes of the initializers.
    pub initializer_bytes: Poly,
    /// Bytes of the values computed before running (folded constants), which the plan holds.
    pub constant_bytes: Poly,
    /// The symbols the figures use, with their origins and bounds.
    pub symbols: Vec<SymbolInfo>,
}

/// What the analysis knows of one value.
struct Value {
    shape: Vec<TDim>,
    dtype: DatumType,
    dtype_name: String,
    constant: bool,
}

/// The cost of `model` under its input shapes and assumptions.
pub fn cost(model: &Model) -> anyhow::Result<Cost> {
    let analysis = model.analyse()?;
    let graph = model.graph();
    let values = values_of(&analysis, graph)?;
    let initializers = initializer_names(graph);
    let order = order::run_order(&analysis, graph)?;
    let mut nodes = Vec::with_capacity(order.len());
    for &i in &order {
        nodes.push(node_cost(&graph.node[i], &values, &analysis, &initializers)?);
    }
    let op_types = op_totals(&nodes)?;
    let mut total = sum(nodes.iter(), "")?;
    total.params = distinct_params(graph, &values)?;
    let peak = peak::peak(graph, &order, &values, &analysis, !model.assumptions().is_empty())?;
    let mut input_bytes = Poly::zero();
    let mut input_unknown = None;
    for input in graph.input.iter().filter(|i| !initializers.contains(i.name.as_str())) {
        match bytes_of(&input.name, &values, &analysis) {
            Size::Known(b) => input_bytes = input_bytes.add(&b)?,
            Size::Unknown(why) => input_unknown = Some(why),
        }
    }
    let mut initializer_bytes = Poly::zero();
    for name in &initializers {
        if let Size::Known(b) = bytes_of(name, &values, &analysis) {
            initializer_bytes = initializer_bytes.add(&b)?;
        }
    }
    let mut constant_bytes = Poly::zero();
    for n in nodes.iter().filter(|n| n.folded) {
        if let Size::Known(b) = &n.bytes_written {
            constant_bytes = constant_bytes.add(b)?;
        }
    }
    Ok(Cost {
        nodes,
        op_types,
        total,
        peak,
        input_bytes: match input_unknown {
            Some(why) => Size::Unknown(why),
            None => Size::Known(input_bytes),
        },
        initializer_bytes,
        constant_bytes,
        symbols: analysis.symbols.clone(),
    })
}

/// The names of the initializers (dense and sparse).
fn initializer_names(graph: &pb::GraphProto) -> HashSet<&str> {
    let mut names: HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    names.extend(graph.sparse_initializer.iter().filter_map(|s| s.values.as_ref()).map(|t| t.name.as_str()));
    names
}

/// Every named value the analysis typed.
fn values_of(analysis: &Analysis, graph: &pb::GraphProto) -> anyhow::Result<HashMap<String, Value>> {
    let mut values = HashMap::new();
    let names = crate::analysis::graph_value_names(graph).into_iter().chain(initializer_names(graph));
    for name in names {
        if values.contains_key(name) {
            continue;
        }
        let Some(outlet) = analysis.outlets.get(name) else { continue };
        let fact = analysis.typed.outlet_fact(*outlet)?;
        let dtype = analysis.dtype(name)?;
        values.insert(
            name.to_string(),
            Value {
                shape: fact.shape.iter().map(|d| d.clone().simplify()).collect(),
                dtype,
                dtype_name: analysis.dtype_name(dtype),
                constant: fact.konst.is_some(),
            },
        );
    }
    Ok(values)
}

/// The bytes of a named value.
fn bytes_of(name: &str, values: &HashMap<String, Value>, analysis: &Analysis) -> Size {
    let Some(v) = values.get(name) else {
        let why = analysis.unknown.get(name).cloned().unwrap_or_else(|| "not computed".into());
        return Size::Unknown(format!("value '{name}' is unknown: {why}"));
    };
    if v.dtype == DatumType::String {
        return Size::Unknown(format!("value '{name}' holds strings, which have no fixed size"));
    }
    let elems = match Poly::volume(&v.shape) {
        Ok(e) => e,
        Err(e) => return Size::Unknown(format!("value '{name}': {e}")),
    };
    // 4-bit elements are packed two to a byte.
    let packed = matches!(v.dtype_name.as_str(), "int4" | "uint4" | "float4e2m1");
    let bytes = if packed {
        match elems.as_constant() {
            Some(n) => Ok(Poly::constant(n / 2 + n % 2)),
            None => {
                let dims: TDim = v.shape.iter().cloned().product();
                Poly::from_dim(&((dims + 1) / 2))
            }
        }
    } else {
        elems.scale(v.dtype.size_of() as i128)
    };
    match bytes {
        Ok(b) => Size::Known(b),
        Err(e) => Size::Unknown(format!("value '{name}': {e}")),
    }
}

fn node_cost(
    node: &pb::NodeProto,
    values: &HashMap<String, Value>,
    analysis: &Analysis,
    initializers: &HashSet<&str>,
) -> anyhow::Result<NodeCost> {
    let label = node_label(node);
    let shape = |name: &String| if name.is_empty() { None } else { values.get(name).map(|v| v.shape.clone()) };
    let ctx = rules::Ctx {
        node,
        label: label.clone(),
        inputs: node.input.iter().map(shape).collect(),
        outputs: node.output.iter().map(shape).collect(),
    };
    let in_context = |e: anyhow::Error| e.context(format!("{label}"));
    let macs = rules::macs(&ctx).map_err(in_context)?;
    let mut params = Poly::zero();
    let mut read = Some(Poly::zero());
    let mut read_unknown = String::new();
    for name in node.input.iter().filter(|n| !n.is_empty()) {
        match bytes_of(name, values, analysis) {
            Size::Known(b) => read = read.map(|r| r.add(&b)).transpose().map_err(|e| in_context(e.into()))?,
            Size::Unknown(why) => {
                read = None;
                read_unknown = why;
            }
        }
        if initializers.contains(name.as_str()) {
            if let Some(v) = values.get(name) {
                params = params.add(&Poly::volume(&v.shape)?).map_err(|e| in_context(e.into()))?;
            }
        }
    }
    let mut outputs = vec![];
    let mut written = Some(Poly::zero());
    let mut written_unknown = String::new();
    for name in node.output.iter().filter(|n| !n.is_empty()) {
        let b = bytes_of(name, values, analysis);
        match &b {
            Size::Known(b) => written = written.map(|w| w.add(b)).transpose().map_err(|e| in_context(e.into()))?,
            Size::Unknown(why) => {
                written = None;
                written_unknown = why.clone();
            }
        }
        outputs.push((name.clone(), b));
    }
    let folded = node.output.iter().filter(|n| !n.is_empty()).all(|n| values.get(n).is_some_and(|v| v.constant));
    Ok(NodeCost {
        name: label.node.clone(),
        op: node.op_type.clone(),
        macs,
        params,
        bytes_read: read.map_or(Size::Unknown(read_unknown), Size::Known),
        bytes_written: written.map_or(Size::Unknown(written_unknown), Size::Known),
        outputs,
        folded,
    })
}

/// The totals of `nodes`, named `op`.
fn sum<'a>(nodes: impl Iterator<Item = &'a NodeCost>, op: &str) -> anyhow::Result<Totals> {
    let mut t = Totals {
        op: op.to_string(),
        nodes: 0,
        macs: Poly::zero(),
        macs_left_out: 0,
        params: Poly::zero(),
        bytes_read: Poly::zero(),
        bytes_written: Poly::zero(),
        bytes_left_out: 0,
    };
    for n in nodes {
        t.nodes += 1;
        match &n.macs {
            Macs::Counted(m) => t.macs = t.macs.add(m)?,
            _ => t.macs_left_out += 1,
        }
        t.params = t.params.add(&n.params)?;
        match (&n.bytes_read, &n.bytes_written) {
            (Size::Known(r), Size::Known(w)) => {
                t.bytes_read = t.bytes_read.add(r)?;
                t.bytes_written = t.bytes_written.add(w)?;
            }
            _ => t.bytes_left_out += 1,
        }
    }
    Ok(t)
}

/// Totals per op type, in order of first appearance.
fn op_totals(nodes: &[NodeCost]) -> anyhow::Result<Vec<Totals>> {
    let mut ops: Vec<&str> = vec![];
    for n in nodes {
        if !ops.contains(&n.op.as_str()) {
            ops.push(&n.op);
        }
    }
    ops.into_iter().map(|op| sum(nodes.iter().filter(|n| n.op == op), op)).collect()
}

/// The elements of every initializer some node reads, each once.
fn distinct_params(graph: &pb::GraphProto, values: &HashMap<String, Value>) -> anyhow::Result<Poly> {
    let initializers = initializer_names(graph);
    let mut seen = HashSet::new();
    let mut total = Poly::zero();
    for node in &graph.node {
        for name in node.input.iter().filter(|n| initializers.contains(n.as_str())) {
            if seen.insert(name.as_str()) {
                if let Some(v) = values.get(name) {
                    total = total.add(&Poly::volume(&v.shape)?)?;
                }
            }
        }
    }
    Ok(total)
}

impl Cost {
    /// Checks sizes to evaluate the figures at (`--at`): each names a symbol of the figures and lies
    /// within its bounds.
    pub fn check_sizes(&self, sizes: &HashMap<String, i64>) -> anyhow::Result<()> {
        let mut names: Vec<&String> = sizes.keys().collect();
        names.sort();
        for name in names {
            let value = sizes[name];
            let Some(s) = self.symbols.iter().find(|s| &s.name == name) else {
                let known: Vec<&str> = self.symbols.iter().map(|s| s.name.as_str()).collect();
                anyhow::bail!(
                    "{name} is not a symbol of this model's sizes (its symbols: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                );
            };
            if s.min.is_some_and(|m| value < m) || s.max.is_some_and(|m| value > m) || value < 0 {
                let bound = |b: Option<i64>| b.map_or("?".to_string(), |v| v.to_string());
                anyhow::bail!("{name}={value} is outside its bounds [{}, {}]", bound(s.min.or(Some(0))), bound(s.max));
            }
            // A size only a run knows is at most what its op implies (a NonZero count at most its
            // input's element count), checked once the sizes given fix that bound.
            if let Some(at_most) = &s.at_most {
                if let Some(bound) = Poly::from_dim(at_most)?.at(sizes)?.as_constant() {
                    if i128::from(value) > bound {
                        anyhow::bail!(
                            "{name}={value} is more than its op allows ({} = {bound})",
                            poly::Poly::from_dim(at_most)?.text()
                        );
                    }
                }
            }
        }
        Ok(())
    }
}
