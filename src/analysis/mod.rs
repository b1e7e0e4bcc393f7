//! Whole-model analysis: every value's type and shape, exactly, before anything runs.
//!
//! An analysis starts from the graph inputs, bound to what the model declares ([`Binding::Declared`],
//! symbolic dims included) or to the tensors a run is given ([`Binding::Concrete`]), and translates
//! the model into tract's typed form node by node (`translate.rs`). It never gives up on the whole
//! graph: a node no rule can type keeps going with fresh symbols, dims the model requires equal are
//! unified and reported as [`Requirement`]s, and each symbol's origin is recorded ([`SymbolInfo`]).

mod bind;
mod budget;
mod cases;
mod condition;
mod control;
mod equality;
mod loops;
mod opaque;
mod rational;
mod require;
mod splice;
mod symbols;
mod translate;
mod trivial;
mod value_fact;
mod verify;
mod wide_dims;

pub(crate) use bind::datum_type_of as bind_datum_type;
pub(crate) use bind::Binding;
pub use bind::{DeclaredDim, DeclaredInput};
pub(crate) use cases::analyse_cases;
pub use cases::{Case, MAX_CASES};
pub(crate) use control::{install_planner, Planner};
pub(crate) use control::{Branch, IfOp};
pub(crate) use loops::LoopOp;
pub use loops::{MAX_ITERATIONS, MAX_TRANSLATIONS};
pub use require::Requirement;
pub(crate) use symbols::DEFAULT_DIM_MAX;
pub use symbols::{Origin, SymbolInfo};
pub use translate::Fallback;
pub use value_fact::ValueFact;

use crate::symbolic::{excerpt, parse_assumption, Assumption, Comparison};
use anyhow::{bail, Context};
use std::collections::HashMap;
use tract_onnx::pb;
use tract_onnx::prelude::*;

/// What one analysis found.
#[derive(Debug)]
pub struct Analysis {
    /// The typed model (its inputs the graph inputs, its outputs the graph outputs that could be typed).
    pub typed: TypedModel,
    /// Each named value of the graph (graph inputs, node outputs, graph outputs) to its typed outlet.
    pub outlets: HashMap<String, OutletId>,
    /// Named values whose facts could not be known, with the reason.
    pub unknown: HashMap<String, String>,
    /// The symbols met, in order, with their origins and bounds.
    pub symbols: Vec<SymbolInfo>,
    /// Equalities the model requires of its inputs.
    pub requirements: Vec<Requirement>,
    /// Nodes whose own rule could not be used.
    pub fallbacks: Vec<Fallback>,
    /// The type the model declares for values tract holds as dims (`int64` unless listed), by name.
    pub dtypes: HashMap<String, DatumType>,
    /// Names of the ONNX types that tract types stand for in this model (`bfloat16` for float16, ...).
    pub type_names: Vec<(DatumType, &'static str)>,
    /// The `If` conditions met that the analysis cannot decide and whose branches give different
    /// facts (each is a split of [`analyse_cases`]).
    pub(crate) undecided: Vec<condition::Met>,
    /// The symbolic dims of the values typed: never negative wherever the model runs (see
    /// [`Analysis::shown_dim`]).
    pub(crate) dims: crate::dims::DimSet,
    /// Each dim shown is simplified against the assertions about its own symbols.
    pub(crate) scoped: std::sync::Mutex<crate::dims::scoped::ScopedAssertions>,
}

/// The parts of a loaded model an analysis reads.
pub(crate) struct Source<'a> {
    /// The model as tract-onnx parsed it (with our builders).
    pub inference: &'a InferenceModel,
    /// The main graph, with the node names the parsed model uses.
    pub graph: &'a pb::GraphProto,
    /// The declared graph inputs (initializers excluded), in order.
    pub inputs: &'a [DeclaredInput],
    /// The model's operator sets (`opset_import`): which version of each domain its nodes follow.
    pub opsets: &'a [pb::OperatorSetIdProto],
}

/// How much an analysis computes ahead of running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Options {
    /// Nodes over constants are evaluated when their outputs take at most this many bytes (a slicing
    /// view of a constant always is: it is never larger than its input).
    pub fold_bytes: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options { fold_bytes: DEFAULT_FOLD_BYTES }
    }
}

pub(crate) use crate::memory::DEFAULT_FOLD_BYTES;

/// Analyses a model under `binding`, with the user's `assumptions` (such as `N>=2`).
pub(crate) fn analyse(
    source: &Source,
    binding: &Binding,
    assumptions: &[String],
    options: Options,
) -> anyhow::Result<Analysis> {
    analyse_choosing(source, binding, assumptions, options, &[])
}

/// Analyses a model as [`analyse`] does, taking the conditions `when` to hold at every `If` that
/// tests them (one outcome of [`analyse_cases`]).
fn analyse_choosing(
    source: &Source,
    binding: &Binding,
    assumptions: &[String],
    options: Options,
    when: &[condition::Outcome],
) -> anyhow::Result<Analysis> {
    let scope = SymbolScope::default();
    let mut bounded = vec![];
    let mut named = vec![];
    let mut fixed = vec![];
    for a in assumptions {
        for parsed in add_assumption(&scope, a)? {
            bounded.extend(upper_bounded_symbol(&parsed));
            fixed.extend(fixed_symbol(&parsed));
            named.extend(parsed.symbols().iter().map(|s| (a, s.clone())));
        }
    }
    // A case's condition on dims is an assumption of the case (one on values only selects branches).
    for text in when.iter().flat_map(|c| &c.assumes) {
        if let Ok(parsed) = add_assumption(&scope, text) {
            fixed.extend(parsed.iter().filter_map(fixed_symbol));
        }
    }
    let choices = std::sync::Arc::new(cases::Choices::new(when.iter().map(|c| c.text.clone()).collect(), fixed));
    let mut table = symbols::SymbolTable::new(bounded);
    let facts = bind::input_facts(source.inputs, binding, &scope, &mut table)?;
    let nodes: translate::NodeIndex = node_index(source.graph);
    let t = translate::translate(
        source.inference,
        &nodes,
        source.opsets,
        facts,
        translate::Context { scope: scope.clone(), table, fold_bytes: options.fold_bytes, choices: choices.clone() },
    )?;
    let mut outlets = HashMap::new();
    let mut unknown = HashMap::new();
    let mut dtypes = HashMap::new();
    for (outlet, label) in value_names(source.inference) {
        if let Some(dt) = t.dtypes.get(&outlet) {
            dtypes.insert(label.clone(), *dt);
        }
        if let Some(typed) = t.mapping.get(&outlet) {
            outlets.insert(label, *typed);
        } else if let Some(why) = t.unknown.get(&outlet) {
            unknown.insert(label, why.clone());
        }
    }
    let symbols = t.table.finish(&scope);
    // A requirement is a condition on the inputs; equalities involving sizes a node minted (two
    // unknowns unified) say nothing about the inputs.
    let minted: std::collections::HashSet<&str> =
        symbols.iter().filter(|s| matches!(s.origin, Origin::Node { .. })).map(|s| s.name.as_str()).collect();
    let on_inputs = |d: &TDim| d.symbols().iter().all(|s| !minted.contains(s.to_string().as_str()));
    let requirements: Vec<Requirement> =
        t.requirements.iter().filter(|r| on_inputs(&r.kept) && on_inputs(&r.other)).cloned().collect();
    for (a, name) in named {
        if !symbols.iter().any(|s| s.name == name) {
            let known: Vec<&str> = symbols.iter().map(|s| s.name.as_str()).collect();
            bail!(
                "assumption '{}' names {name}, which is not a dim of this model (its symbols: {})",
                excerpt(a),
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            );
        }
    }
    Ok(Analysis {
        typed: t.typed,
        outlets,
        unknown,
        symbols,
        requirements,
        fallbacks: t.fallbacks,
        dtypes,
        type_names: vec![],
        undecided: choices.met(),
        dims: t.dims,
        scoped: Default::default(),
    })
}

/// The ONNX nodes by the names the parsed model gives them (their name, else their first output).
pub(crate) fn node_index(graph: &pb::GraphProto) -> translate::NodeIndex<'_> {
    graph
        .node
        .iter()
        .map(|n| {
            let name = if !n.name.is_empty() { n.name.as_str() } else { n.output.first().map_or("", String::as_str) };
            (name, n)
        })
        .collect()
}

/// The named values of a parsed model: graph inputs by their node's name, node outputs by label.
fn value_names(model: &InferenceModel) -> Vec<(OutletId, String)> {
    let mut names: Vec<(OutletId, String)> =
        model.inputs.iter().map(|o| (*o, model.node(o.node).name.clone())).collect();
    names.extend(model.outlet_labels.iter().map(|(o, l)| (*o, l.clone())));
    // Initializers are constant nodes named after them, without a label.
    let labelled: std::collections::HashSet<String> = names.iter().map(|(_, l)| l.clone()).collect();
    for node in model.nodes() {
        if node.inputs.is_empty() && node.outputs.len() == 1 && !labelled.contains(&node.name) {
            names.push((OutletId::new(node.id, 0), node.name.clone()));
        }
    }
    names
}

/// A symbol the assumption bounds from above by a constant (`N<=64`, `64>=N`): it replaces the
/// default upper bound every symbol gets.
fn upper_bounded_symbol(a: &Assumption) -> Option<String> {
    match (&a.lhs, a.comparison, &a.rhs) {
        (TDim::Sym(s), Comparison::Le | Comparison::Lt, TDim::Val(_)) => Some(s.to_string()),
        (TDim::Val(_), Comparison::Ge | Comparison::Gt, TDim::Sym(s)) => Some(s.to_string()),
        _ => None,
    }
}

/// A symbol the assumption sets equal to a number (`N==1`).
fn fixed_symbol(a: &Assumption) -> Option<(Symbol, i64)> {
    match (&a.lhs, a.comparison, &a.rhs) {
        (TDim::Sym(s), Comparison::Eq, TDim::Val(v)) | (TDim::Val(v), Comparison::Eq, TDim::Sym(s)) => {
            Some((s.clone(), *v))
        }
        _ => None,
    }
}

/// Parses an assumption (one comparison such as `N>=2`, or several joined with `&&`) and adds it to
/// `scope`. tract's own parser only ever reads our canonical, depth-bounded text.
fn add_assumption(scope: &SymbolScope, text: &str) -> anyhow::Result<Vec<Assumption>> {
    let bad = |e: &dyn std::fmt::Display| anyhow::anyhow!("bad assumption '{}': {e}", excerpt(text));
    let parsed = parse_assumption(scope, text).map_err(|e| bad(&e))?;
    for a in &parsed {
        scope.add_assertion(a.tract_text()).map_err(|_| bad(&"not a comparison tract can use"))?;
    }
    Ok(parsed)
}

/// Checks an assumption before it is kept: one comparison (`==`, `<=`, `>=`, `<`, `>`) between two dim
/// expressions, such as `N>=2`, or several joined with `&&`.
pub(crate) fn check_assumption(text: &str) -> anyhow::Result<()> {
    add_assumption(&SymbolScope::default(), text).map(|_| ())
}

impl Analysis {
    /// A dim as reported and written: simplified (against the assertions about its symbols: see
    /// [`crate::dims::scoped`]), and each `max(0,x)` whose `x` is the dim of another
    /// value (never negative wherever the model runs) written `x`. wav2vec2's positional conv drops its
    /// last frame with a `Slice`, whose length `max(0,samples/20-1)` is the conv's input length
    /// `samples/20-1`.
    pub(crate) fn shown_dim(&self, d: &TDim) -> TDim {
        if d.as_i64().is_some() {
            return d.clone();
        }
        let shown = || trivial::without_nonnegative_max(&d.clone().simplify(), &self.dims);
        let mentioned = d.symbols().into_iter().collect();
        match self.scoped.lock() {
            Ok(mut scoped) => scoped.run(&self.typed.symbols, &mentioned, shown),
            Err(_) => shown(),
        }
    }

    /// The name of an element type as the model declares it.
    pub fn dtype_name(&self, dt: DatumType) -> String {
        match self.type_names.iter().find(|(p, _)| *p == dt) {
            Some((_, name)) => name.to_string(),
            None => crate::npy::numpy_name(dt),
        }
    }

    /// The element type of a named value as the model declares it: tract holds every integer shape
    /// value as a dim, reported as `int64` unless the model casts it to another integer type.
    pub fn dtype(&self, name: &str) -> anyhow::Result<DatumType> {
        let outlet = self.outlets.get(name).with_context(|| format!("no fact for value '{name}'"))?;
        let dt = self.typed.outlet_fact(*outlet)?.datum_type;
        Ok(match self.dtypes.get(name) {
            Some(declared) if dt.is_tdim() || dt == DatumType::I64 => *declared,
            _ if dt.is_tdim() => DatumType::I64,
            _ => dt,
        })
    }

    /// The facts of the named values (graph inputs, node outputs, graph outputs) in graph order, each
    /// once; values whose facts are unknown are left out.
    pub fn value_facts(&self, graph: &pb::GraphProto) -> anyhow::Result<Vec<ValueFact>> {
        let mut facts = vec![];
        let mut seen = std::collections::HashSet::new();
        for name in graph_value_names(graph) {
            if !seen.insert(name) {
                continue;
            }
            facts.extend(self.value_fact(name)?);
        }
        Ok(facts)
    }

    /// The fact of one named value as reports give it (its declared type, its dims as shown), or
    /// `None` when the value is unknown or not in the model.
    pub fn value_fact(&self, name: &str) -> anyhow::Result<Option<ValueFact>> {
        let Some(outlet) = self.outlets.get(name) else { return Ok(None) };
        let fact = self.typed.outlet_fact(*outlet)?;
        let shape = fact.shape.iter().map(|d| self.shown_dim(d)).collect();
        let dtype = self.dtype(name)?;
        let dtype_name = self.dtype_name(dtype);
        Ok(Some(ValueFact { name: name.to_string(), dtype, shape, dtype_name }))
    }
}

/// The named values of a graph in order: inputs that are not initializers, every node output, the
/// graph outputs (names may repeat).
pub(crate) fn graph_value_names(graph: &pb::GraphProto) -> Vec<&str> {
    let initializers: std::collections::HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let mut names: Vec<&str> =
        graph.input.iter().map(|i| i.name.as_str()).filter(|n| !initializers.contains(n)).collect();
    names.extend(graph.node.iter().flat_map(|n| n.output.iter().map(String::as_str)).filter(|n| !n.is_empty()));
    names.extend(graph.output.iter().map(|o| o.name.as_str()));
    names
}
