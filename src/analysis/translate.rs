//! Translating the parsed model into tract's typed model, node by node, never all or nothing.
//!
//! tract's own translation analyses the whole graph first and stops at the first node its rules
//! cannot solve. Here each node is translated on its own, in graph order, from the typed facts of its
//! inputs:
//!
//! 1. inputs whose dims the node requires equal but the model writes differently are unified first
//!    ([`super::require`]), and integer constants meeting symbolic dims are made dims exactly;
//! 2. the node's own translation runs (tract's, or ours for the ops we replace);
//! 3. if that fails, the node becomes an [`Opaque`] with the facts its inference rules can still give
//!    (type, rank, some dims) and a fresh symbol for each dim they cannot, and translation goes on;
//! 4. if not even its type and rank can be known, its outputs are unknown, and so is everything that
//!    depends on them; the rest of the graph is still translated.
//!
//! Every symbol met is recorded with its origin ([`super::symbols`]).

use super::opaque::Opaque;
use super::require::{self, AssumeShape, Requirement};
use super::symbols::{Origin, SymbolTable};
use crate::guard::guard;
use crate::ops::control::loop_body::LoopBody;
use std::collections::HashMap;
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::{Factoid, InferenceOp};
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::unimpl::UnimplementedOp;

/// A node whose translation fell back to an `Opaque` one, or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    /// The node's name.
    pub node: String,
    /// Its op type.
    pub op: String,
    /// Why its own rule could not be used.
    pub reason: String,
    /// Whether its outputs are typed (as an opaque node) or unknown.
    pub typed: bool,
    /// Whether the node was deferred for its size (typed exactly, computed only when a plan runs:
    /// `budget.rs`) rather than for a rule that failed.
    pub deferred: bool,
}

/// A deferred `If` branch or `Loop` body translated for the facts it is run with (its shapes
/// concrete): the typed model, and why a value in it cannot be computed, if one cannot. Given to
/// [`super::Branch::Deferred`] as its translator.
pub(crate) fn translate_deferred(
    model: &InferenceModel,
    graph: &pb::GraphProto,
    facts: Vec<TypedFact>,
) -> TractResult<(TypedModel, Option<String>)> {
    let index = super::node_index(graph);
    let t = translate(model, &index, &[], facts, Context::fresh())?;
    let unknown = t.unknown.values().next().cloned();
    Ok((t.typed, unknown))
}

/// The result of a translation.
#[derive(Debug)]
pub(super) struct Translated {
    /// The typed model; its inputs are the graph inputs in order, its outputs the graph outputs
    /// that could be typed.
    pub typed: TypedModel,
    /// Each outlet of the parsed model to its typed outlet.
    pub mapping: HashMap<OutletId, OutletId>,
    /// Outlets of the parsed model whose facts are unknown, with the reason.
    pub unknown: HashMap<OutletId, String>,
    /// Nodes that fell back.
    pub fallbacks: Vec<Fallback>,
    /// Equalities the model requires of its inputs.
    pub requirements: Vec<Requirement>,
    /// The symbols met.
    pub table: SymbolTable,
    /// Integer types the model declares for values tract holds as dims (symbolic shape values cast to
    /// `int32`, and what is computed from them), by outlet of the parsed model.
    pub dtypes: HashMap<OutletId, DatumType>,
    /// The symbolic dims of the values typed (each one never negative wherever the model runs).
    pub dims: crate::dims::DimSet,
}

mod conv_dims;
mod exact_values;
mod fallbacks;
mod flex_node;
mod if_condition;
mod long_concat;
mod loop_node;
mod minted;
mod partial;

/// The ONNX nodes by the name the parsed model gives them.
pub(crate) type NodeIndex<'a> = HashMap<&'a str, &'a pb::NodeProto>;

/// What a translation shares with the one it is part of (a branch or body with its graph's).
pub(super) struct Context {
    /// The symbols.
    pub scope: SymbolScope,
    /// The symbols met so far, with their origins.
    pub table: SymbolTable,
    /// Nodes over constants are evaluated when their outputs take at most this many bytes.
    pub fold_bytes: u64,
    /// The branches taken at conditions analysis cannot decide, and those met.
    pub choices: Arc<super::cases::Choices>,
}

impl Context {
    /// A context of its own (a subgraph translated when it runs, with concrete shapes): a new scope,
    /// no symbols, nothing evaluated ahead, no choices.
    pub(super) fn fresh() -> Context {
        Context { scope: SymbolScope::default(), table: SymbolTable::default(), fold_bytes: 0, choices: Arc::default() }
    }
}

/// Translates `source`, its inputs having `input_facts`, into a typed model in the context's scope.
pub(super) fn translate(
    source: &InferenceModel,
    nodes: &NodeIndex,
    opsets: &[pb::OperatorSetIdProto],
    input_facts: Vec<TypedFact>,
    context: Context,
) -> TractResult<Translated> {
    let Context { scope, table, fold_bytes, choices } = context;
    let _proofs = scope.proof_cache_session();
    let mut t = Translator {
        source,
        nodes,
        opsets,
        choices,
        target: TypedModel { symbols: scope, ..TypedModel::default() },
        mapping: HashMap::new(),
        unknown: HashMap::new(),
        fallbacks: vec![],
        requirements: vec![],
        table,
        fold_bytes,
        dtypes: HashMap::new(),
        rationals: HashMap::new(),
        partial: HashMap::new(),
        dims: crate::dims::DimSet::default(),
        names: super::splice::Names::default(),
        scoped: Default::default(),
        sums: HashMap::new(),
    };
    let inputs = source.input_outlets()?.to_vec();
    ensure!(inputs.len() == input_facts.len(), "{} input facts for {} inputs", input_facts.len(), inputs.len());
    for (outlet, fact) in inputs.iter().zip(input_facts) {
        let id = t.target.add_source(&source.node(outlet.node).name, fact)?;
        t.mapping.insert(*outlet, id);
        t.label(*outlet)?;
    }
    for id in topological_order(source) {
        if inputs.iter().any(|o| o.node == id) {
            continue;
        }
        // Every call into tract below is guarded where it is made; this catches what escapes (a
        // fact tract builds and asserts on, say), as an error of the node rather than a crash.
        let node = source.node(id);
        let (name, op_type) = (node.name.clone(), t.op_type(node));
        guard("analysing a node", || t.node(id)).map_err(|e| attributed(e, &name, &op_type))?;
    }
    let outputs: Vec<OutletId> = source.output_outlets()?.iter().filter_map(|o| t.mapping.get(o).copied()).collect();
    t.target.select_output_outlets(&outputs)?;
    let dims = &t.dims;
    t.requirements.retain(|r| !super::trivial::holds_always(r, dims));
    Ok(Translated {
        typed: t.target,
        mapping: t.mapping,
        unknown: t.unknown,
        fallbacks: t.fallbacks,
        requirements: t.requirements,
        table: t.table,
        dtypes: t.dtypes,
        dims: t.dims,
    })
}

struct Translator<'a> {
    source: &'a InferenceModel,
    nodes: &'a NodeIndex<'a>,
    opsets: &'a [pb::OperatorSetIdProto],
    choices: Arc<super::cases::Choices>,
    target: TypedModel,
    mapping: HashMap<OutletId, OutletId>,
    unknown: HashMap<OutletId, String>,
    fallbacks: Vec<Fallback>,
    requirements: Vec<Requirement>,
    table: SymbolTable,
    fold_bytes: u64,
    dtypes: HashMap<OutletId, DatumType>,
    /// Float values computed from dims, followed exactly ([`super::rational`]), by typed outlet.
    rationals: HashMap<OutletId, super::rational::Rats>,
    /// Integer vectors known in part ([`partial`]), by typed outlet.
    partial: HashMap<OutletId, partial::Partial>,
    /// The symbolic dims of the tensors typed so far: each is non-negative ([`super::rational::Dims`]).
    dims: crate::dims::DimSet,
    /// The names of the target's nodes.
    names: super::splice::Names,
    /// Each node typed against the assertions about its inputs' symbols only.
    scoped: crate::dims::scoped::ScopedAssertions,
    /// The size of each long concatenation's length, by its terms ([`long_concat`]).
    sums: HashMap<String, Symbol>,
}

impl Translator<'_> {
    /// Why a node of an operator neither sliceops nor tract implements stays unknown: the operator
    /// with the version of its domain the model imports, so the user knows what to look for.
    fn unsupported(&self, node: &InferenceNode) -> String {
        let op_type = self.op_type(node);
        let domain = self.nodes.get(node.name.as_str()).map_or("", |n| n.domain.as_str());
        let onnx = domain.is_empty() || domain == "ai.onnx";
        let version =
            self.opsets.iter().find(|o| o.domain == domain || (onnx && (o.domain.is_empty() || o.domain == "ai.onnx")));
        match (onnx, version) {
            (true, Some(o)) => format!("operator {op_type} of opset {} is not supported", o.version),
            (false, Some(o)) => {
                format!("operator {op_type} of domain {domain} (version {}) is not supported", o.version)
            }
            // A branch analysed on its own: the version is the enclosing model's.
            (_, None) => format!("operator {op_type} is not supported"),
        }
    }

    /// The context a subgraph of this graph is translated in.
    fn context(&self, scope: SymbolScope) -> Context {
        Context { scope, table: self.table.clone(), fold_bytes: self.fold_bytes, choices: self.choices.clone() }
    }

    fn op_type(&self, node: &InferenceNode) -> String {
        self.nodes.get(node.name.as_str()).map_or_else(|| node.op.name().to_string(), |n| n.op_type.clone())
    }

    /// Labels the typed outlet of a source outlet with its ONNX name, and notes its symbolic dims.
    fn label(&mut self, outlet: OutletId) -> TractResult<()> {
        let typed = self.mapping[&outlet];
        if let Some(label) = self.source.outlet_label(outlet) {
            self.target.set_outlet_label(typed, label.to_string())?;
        }
        let shape = &self.target.outlet_fact(typed)?.shape;
        self.dims.extend(shape.iter().filter(|d| d.as_i64().is_none()).cloned());
        Ok(())
    }

    fn node(&mut self, id: usize) -> TractResult<()> {
        let node = self.source.node(id);
        let op_type = self.op_type(node);
        if let Some(why) = node.inputs.iter().find_map(|i| self.unknown.get(i)) {
            let why = why.clone();
            for slot in 0..node.outputs.len() {
                self.unknown.insert(OutletId::new(id, slot), why.clone());
            }
            return Ok(());
        }
        let mark = self.target.nodes.len();
        let deferred = match self.wide_dims(node, &op_type)? {
            Some(deferred) => Some(deferred),
            None => self.over_budget(node)?,
        };
        let outcome = match deferred {
            Some(deferred) => Ok(deferred),
            None => {
                if let Some(op) = node.op_as::<tract_onnx::ops::logic::If>() {
                    self.if_node(node, op)
                } else if let Some(op) = node.op_as::<LoopBody>() {
                    self.loop_node(node, op)
                } else if let Some(op) = node.op_as::<crate::ops::ScanInference>() {
                    self.scan_node(node, op)
                } else if let Some(op) = node.op_as::<crate::ops::nn::flex_attention::FlexAttention>() {
                    self.flex_node(node, op)
                } else {
                    self.typed_outputs(node, &op_type)
                }
            }
            .map(|outlets| (outlets, String::new())),
        };
        let mut deferred = false;
        let (outlets, reason) = match outcome {
            Ok((outlets, why)) if !why.is_empty() => {
                deferred = true;
                (outlets, Some(why))
            }
            Ok((outlets, _)) => (outlets, None),
            Err(e) => {
                if is_invalid(&e) {
                    // A panic says little: the node's own rules may say what is wrong with it.
                    if e.chain().any(|c| c.downcast_ref::<crate::error::Panicked>().is_some()) {
                        if let Err(rules) = self.rules_check(node) {
                            return Err(crate::error::NodeError::invalid(&node.name, &op_type, rules));
                        }
                    }
                    return Err(attributed(e, &node.name, &op_type));
                }
                rollback(&mut self.target, mark);
                // The reason without the node's own name, which the fallback carries already.
                let reason = match crate::error::NodeError::find(&e) {
                    _ if node.op_is::<UnimplementedOp>() => self.unsupported(node),
                    Some(n) if n.node == node.name => n.cause.to_string(),
                    _ => crate::error::describe_error(&e),
                };
                match self.opaque(node, &op_type, &reason)? {
                    Some(outlets) => (outlets, Some(reason)),
                    None => {
                        let why = format!("node '{}' ({op_type}): {reason}", node.name);
                        for slot in 0..node.outputs.len() {
                            self.unknown.insert(OutletId::new(id, slot), why.clone());
                        }
                        self.fallbacks.push(Fallback {
                            node: node.name.clone(),
                            op: op_type,
                            reason,
                            typed: false,
                            deferred: false,
                        });
                        return Ok(());
                    }
                }
            }
        };
        if let Some(reason) = &reason {
            self.fallbacks.push(Fallback {
                node: node.name.clone(),
                op: op_type.clone(),
                reason: reason.clone(),
                typed: true,
                deferred,
            });
        }
        let mut outlets = outlets;
        if reason.is_none() {
            self.partial_values(node, &op_type, &outlets)?;
            self.fold(&outlets)?;
            outlets = self.tidy(&node.name, outlets)?;
            self.declared_types(node, &op_type, &outlets)?;
        }
        for (slot, outlet) in outlets.iter().enumerate() {
            self.mapping.insert(OutletId::new(id, slot), *outlet);
            self.label(OutletId::new(id, slot))?;
            let fact = self.target.outlet_fact(*outlet)?.clone();
            for (axis, d) in fact.shape.iter().enumerate() {
                for sym in d.symbols() {
                    if !self.table.contains(&sym.to_string()) {
                        let why = reason
                            .clone()
                            .unwrap_or_else(|| "its size depends on values known only at run time".into());
                        let origin = Origin::Node {
                            node: node.name.clone(),
                            op: op_type.clone(),
                            output: slot,
                            axis,
                            reason: why,
                        };
                        self.table.record(&self.target.symbols, &sym, origin)?;
                        if *d == TDim::Sym(sym.clone()) {
                            if let Some(bound) = self.selection_bound(node, &op_type, slot, axis) {
                                // As for the sizes of `minted.rs`: only a sum or product is asserted.
                                if minted::is_polynomial(&bound) {
                                    let _ = self.target.symbols.add_assertion(format!("{sym}<={bound}"));
                                }
                                self.table.set_at_most(&sym.to_string(), bound);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The bound of a size a selecting node makes when it runs: a `Compress` or `Unique` keeps at most
    /// the length of its axis, or its input's element count without one.
    fn selection_bound(&self, node: &InferenceNode, op_type: &str, slot: usize, axis: usize) -> Option<TDim> {
        let proto = self.nodes.get(node.name.as_str()).copied()?;
        let input = self.fact_of(*node.inputs.first()?)?;
        let rank = input.rank() as i64;
        let along = match proto.attribute.iter().find(|a| a.name == "axis") {
            Some(a) => Some(usize::try_from(if a.i < 0 { a.i + rank } else { a.i }).ok()?),
            None => None,
        };
        let selected_axis = match (op_type, slot) {
            ("Compress", 0) | ("Unique", 0) => along.unwrap_or(0),
            // A Unique's first indices and counts: one per value kept.
            ("Unique", 1 | 3) => 0,
            _ => return None,
        };
        if axis != selected_axis {
            return None;
        }
        Some(match along {
            Some(a) => input.shape.get(a)?.clone(),
            None => input.shape.iter().fold(TDim::Val(1), |n, d| n * d.clone()).simplify(),
        })
    }

    /// Follows integer tensors known in part, and gives a `Resize` or `Pad` sized by one the dims it
    /// knows.
    fn partial_values(&mut self, node: &InferenceNode, op_type: &str, outlets: &[OutletId]) -> TractResult<()> {
        let inputs: Vec<OutletId> = node.inputs.iter().filter_map(|o| self.mapping.get(o).copied()).collect();
        let proto = self.nodes.get(node.name.as_str()).copied();
        if op_type == "Resize" && outlets.len() == 1 {
            // `sizes` is input 3; absent inputs before it are not the node's inputs.
            if let Some(p) = proto.filter(|p| p.input.get(3).is_some_and(|n| !n.is_empty())) {
                let ix = p.input[..3].iter().filter(|n| !n.is_empty()).count();
                partial::refine_resize(&mut self.target, &self.partial, outlets[0], ix)?;
            }
        }
        // A `Pad` of every axis (`pads` an input, no `axes`).
        let every_axis = proto.is_some_and(|p| p.input.get(3).is_none_or(|a| a.is_empty()) && p.input.len() >= 2);
        if op_type == "Pad" && outlets.len() == 1 && every_axis {
            partial::refine_pad(&mut self.target, &self.partial, outlets[0])?;
        }
        if let [output] = outlets {
            let attr = |name: &str| -> Option<Vec<i64>> {
                proto?.attribute.iter().find(|a| a.name == name).map(|a| a.ints.clone())
            };
            if let Some(p) = partial::propagate(&self.target, &self.partial, op_type, &attr, &inputs, *output) {
                self.partial.insert(*output, p);
            }
        }
        Ok(())
    }

    /// Evaluates the nodes making `outlets` when all their inputs are constants and their outputs fit
    /// the folding budget (a slicing view always fits: it is never larger than its input); their
    /// facts then carry the values, which later nodes read (shape arithmetic, parameters).
    fn fold(&mut self, outlets: &[OutletId]) -> TractResult<()> {
        for outlet in outlets {
            let node = &self.target.nodes[outlet.node];
            if node.outputs.iter().all(|o| o.fact.konst.is_some()) || node.inputs.is_empty() {
                continue;
            }
            let inputs: Option<TVec<TValue>> = node
                .inputs
                .iter()
                .map(|i| self.target.outlet_fact(*i).ok().and_then(|f| f.konst.clone()).map(|k| k.into_tvalue()))
                .collect();
            let Some(inputs) = inputs else { continue };
            // A loop may run long (a bounded number of iterations, but many): it runs with the model.
            if node.op.state(&EvalContext::out_of_plan())?.is_some() || node.op_is::<super::LoopOp>() {
                continue;
            }
            let bytes = |f: &TypedFact| -> Option<u64> {
                let n = f.shape.as_concrete()?.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))?;
                n.checked_mul(f.datum_type.size_of() as u64)
            };
            let out_bytes = node.outputs.iter().map(|o| bytes(&o.fact)).try_fold(0u64, |acc, b| acc.checked_add(b?));
            let in_bytes: u64 = inputs.iter().map(|t| (t.len() * t.datum_type().size_of()) as u64).sum();
            let is_view = node.op_is::<crate::slicing::ViewOp>();
            let fits = out_bytes.is_some_and(|b| b <= self.fold_bytes || (is_view && b <= in_bytes));
            if !fits {
                continue;
            }
            let op = node.op.clone();
            let values = match super::equality::symbolic_equality(op.as_ref(), &inputs) {
                Some(Some(value)) => tvec!(value.into_tvalue()),
                Some(None) => continue,
                None => {
                    let Ok(Ok(Some(values))) =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| op.eval_out_of_plan(inputs)))
                    else {
                        continue;
                    };
                    values
                }
            };
            let node = &mut self.target.nodes[outlet.node];
            if values.len() != node.outputs.len() {
                continue;
            }
            for (output, value) in node.outputs.iter_mut().zip(values) {
                if value.datum_type() == output.fact.datum_type
                    && value.shape() == output.fact.shape.as_concrete().unwrap_or(&[])
                {
                    output.fact.konst = Some(value.into_arc_tensor());
                }
            }
        }
        Ok(())
    }

    /// Outputs whose dims or values [`crate::dims::tidy`] writes more simply are given those forms
    /// (through an [`AssumeShape`], which costs nothing when running), before later nodes build on them.
    fn tidy(&mut self, name: &str, outlets: TVec<OutletId>) -> TractResult<TVec<OutletId>> {
        let mut tidied = tvec![];
        for outlet in outlets {
            let fact = self.target.outlet_fact(outlet)?.clone();
            let mut outlet = outlet;
            if let Some(k) = fact.konst.as_ref().filter(|k| k.datum_type().is_tdim() && k.rank() <= 1) {
                let values = crate::dims::dims_of(k)?;
                let mentioned = crate::dims::scoped::symbols_of_facts([&fact]);
                let scope = self.target.symbols.clone();
                let neat: Vec<TDim> =
                    self.scoped.run(&scope, &mentioned, || values.iter().map(crate::dims::tidy_checked).collect());
                if neat != values && self.target.node(outlet.node).op_is::<tract_onnx::tract_core::ops::konst::Const>()
                {
                    let t = tract_ndarray::ArrayD::from_shape_vec(k.shape(), neat)?.into_tensor();
                    outlet = self.add_const(&format!("{name}.tidy"), t)?;
                }
            }
            let mentioned = crate::dims::scoped::symbols_of_facts([&fact]);
            let scope = self.target.symbols.clone();
            let shape: TVec<TDim> =
                self.scoped.run(&scope, &mentioned, || fact.shape.iter().map(crate::dims::tidy_checked).collect());
            if &*shape != fact.shape.dims() {
                let op = AssumeShape { shape, requirement: String::new() };
                let node = self.names.fresh(&self.target, &format!("{name}.tidy"));
                outlet = self.target.wire_node(node, op, &[outlet])?[0];
            }
            tidied.push(outlet);
        }
        Ok(tidied)
    }

    /// Records the integer type the model declares for outputs held as dims: a [`SymbolicCast`]'s
    /// target, inherited by ops that keep their input's type.
    ///
    /// [`SymbolicCast`]: crate::ops::SymbolicCast
    fn declared_types(&mut self, node: &InferenceNode, op_type: &str, outlets: &[OutletId]) -> TractResult<()> {
        const KEEPS_TYPE: &[&str] = &[
            "Slice",
            "Gather",
            "Concat",
            "Squeeze",
            "Unsqueeze",
            "Reshape",
            "Identity",
            "Add",
            "Sub",
            "Mul",
            "Div",
            "Neg",
            "Abs",
            "Max",
            "Min",
            "Expand",
            "Tile",
            "Transpose",
            "Flatten",
            "Split",
            "ReduceProd",
            "ReduceSum",
            "ReduceMax",
            "ReduceMin",
            "Mod",
            "Range",
            "Where",
            "Clip",
            "Sum",
            "Pad",
            "GatherElements",
            "GatherND",
            "Compress",
        ];
        for (slot, outlet) in outlets.iter().enumerate() {
            let dt = self.target.outlet_fact(*outlet)?.datum_type;
            if !(dt.is_tdim() || dt == DatumType::I64) {
                continue;
            }
            let source = OutletId::new(node.id, slot);
            let producer = &self.target.nodes[outlet.node];
            if let Some(cast) = producer.op_as::<crate::ops::SymbolicCast>() {
                self.dtypes.insert(source, cast.to);
            } else if KEEPS_TYPE.contains(&op_type) {
                // The type of the first integer input holding the values, as the model declares it:
                // every input of elementwise ops (they take one type), Where's two value inputs, and
                // the data of the others (a Gather's indices may be int32 over int64 data).
                const ALL_INPUTS: &[&str] =
                    &["Add", "Sub", "Mul", "Div", "Neg", "Abs", "Max", "Min", "Mod", "Sum", "Concat", "Clip", "Range"];
                let values: &[OutletId] = match op_type {
                    "Where" => node.inputs.get(1..).unwrap_or(&[]),
                    _ if ALL_INPUTS.contains(&op_type) => &node.inputs,
                    _ => node.inputs.get(..1).unwrap_or(&[]),
                };
                let inherited = values.iter().find_map(|i| match self.dtypes.get(i) {
                    Some(d) => Some(*d),
                    None => {
                        let t = self.target.outlet_fact(self.mapping[i]).ok()?.datum_type;
                        (t.is_integer() && t != DatumType::I64).then_some(t)
                    }
                });
                if let Some(d) = inherited.filter(|d| *d != DatumType::I64) {
                    self.dtypes.insert(source, d);
                }
            }
        }
        Ok(())
    }

    /// Inputs of an elementwise op mixing dims and other integers, made one type: tract would cast the
    /// integers to dims through `i32` (`INT64_MAX` becomes -1). Constant dims without symbols become
    /// `int64` constants; else constant integers become dims, exactly.
    fn same_integer_type(
        &mut self,
        op_type: &str,
        inputs: &[OutletId],
        facts: &[TypedFact],
    ) -> TractResult<TVec<OutletId>> {
        const ELEMENTWISE: &[&str] = &[
            "Add",
            "Sub",
            "Mul",
            "Div",
            "Mod",
            "Max",
            "Min",
            "Sum",
            "Mean",
            "Equal",
            "Less",
            "Greater",
            "LessOrEqual",
            "GreaterOrEqual",
            "Where",
            "Concat",
        ];
        let mut out: TVec<OutletId> = inputs.iter().copied().collect();
        if !ELEMENTWISE.contains(&op_type) {
            return Ok(out);
        }
        // Where's condition is a boolean; only its two value inputs are unified.
        let first = usize::from(op_type == "Where");
        let values = &facts[first.min(facts.len())..];
        let dims = values.iter().any(|f| f.datum_type.is_tdim());
        let ints = values.iter().any(|f| f.datum_type.is_integer());
        if !dims || !ints {
            return Ok(out);
        }
        let concrete_dims = values.iter().filter(|f| f.datum_type.is_tdim()).all(|f| {
            f.konst
                .as_ref()
                .is_some_and(|k| crate::dims::dims_of(k).is_ok_and(|d| d.iter().all(|d| d.as_i64().is_some())))
        });
        let konst_ints = values.iter().filter(|f| f.datum_type.is_integer()).all(|f| f.konst.is_some());
        for (ix, f) in facts.iter().enumerate().skip(first) {
            let Some(k) = &f.konst else { continue };
            let t = if concrete_dims && f.datum_type.is_tdim() {
                let v: Vec<i64> = crate::dims::dims_of(k)?.iter().map(|d| d.as_i64().unwrap_or_default()).collect();
                tract_ndarray::ArrayD::from_shape_vec(k.shape(), v)?.into_tensor()
            } else if !concrete_dims && konst_ints && f.datum_type.is_integer() {
                tract_ndarray::ArrayD::from_shape_vec(k.shape(), crate::dims::dims_of(k)?)?.into_tensor()
            } else {
                continue;
            };
            out[ix] = self.add_const("typed", t)?;
        }
        Ok(out)
    }

    /// A branch of an `If` translated with the facts of the outer values it reads.
    fn branch(
        &mut self,
        body: &InferenceModel,
        graph: &pb::GraphProto,
        mapping: &[usize],
        inputs: &[OutletId],
    ) -> Result<Translated, String> {
        let facts: Vec<TypedFact> = mapping
            .iter()
            .map(|&i| self.target.outlet_fact(inputs[i]).cloned())
            .collect::<TractResult<_>>()
            .map_err(|e| e.to_string())?;
        self.branch_with(body, graph, facts, true)
    }

    /// A subgraph (`If` branch, `Loop` body) translated with `facts` for its inputs; with `keep`,
    /// what it finds (fallbacks, symbols, requirements) is kept (a `Loop` keeps what it needs of
    /// the translation it uses: `loop_node.rs`).
    fn branch_with(
        &mut self,
        body: &InferenceModel,
        graph: &pb::GraphProto,
        facts: Vec<TypedFact>,
        keep: bool,
    ) -> Result<Translated, String> {
        let index = super::node_index(graph);
        let symbols = self.target.symbols.clone();
        let result = translate(body, &index, self.opsets, facts, self.context(symbols));
        if !keep {
            return match result {
                Ok(t) if t.unknown.is_empty() && t.typed.outputs.len() == body.outputs.len() => Ok(t),
                Ok(t) => {
                    Err(t.unknown.values().next().cloned().unwrap_or_else(|| "an output cannot be computed".into()))
                }
                Err(e) => Err(crate::error::describe_error(&e)),
            };
        }
        if let Ok(t) = &result {
            for f in &t.fallbacks {
                if !self.fallbacks.contains(f) {
                    self.fallbacks.push(f.clone());
                }
            }
        }
        match result {
            Ok(t) if t.unknown.is_empty() && t.typed.outputs.len() == body.outputs.len() => {
                self.table = t.table.clone();
                for r in &t.requirements {
                    if !self.requirements.contains(r) {
                        self.requirements.push(r.clone());
                    }
                }
                Ok(t)
            }
            Ok(t) => Err(t.unknown.values().next().cloned().unwrap_or_else(|| "an output cannot be computed".into())),
            Err(e) => Err(crate::error::describe_error(&e)),
        }
    }

    /// An `If` ([`super::control`]): the branch a known condition selects, inlined; else an
    /// [`super::IfOp`] running the branch taken.
    fn if_node(&mut self, node: &InferenceNode, op: &tract_onnx::ops::logic::If) -> TractResult<TVec<OutletId>> {
        use super::control;
        let proto = self.nodes.get(node.name.as_str()).copied().context("the If node is not in the graph")?;
        let (then_graph, else_graph) = control::branch_graphs(proto).context("the If node has no branches")?;
        let outer = control::outer_values(&op.then_body, &op.else_body);
        let then_inputs = control::input_mapping(&op.then_body, &outer)?;
        let else_inputs = control::input_mapping(&op.else_body, &outer)?;
        let inputs: TVec<OutletId> = node.inputs.iter().map(|o| self.mapping[o]).collect();
        ensure!(
            inputs.len() == outer.len() + 1,
            "the If node has {} inputs, its branches read {}",
            inputs.len(),
            outer.len()
        );
        // A condition known before running, or decided by the assumptions or the case analysed
        // (`cases.rs`), inlines the branch it selects.
        let known = match self.target.outlet_fact(inputs[0])?.konst.clone() {
            Some(cond) => Some(cond.cast_to_scalar::<bool>()?),
            None => None,
        };
        let condition = if known.is_none() { self.if_condition(node) } else { None };
        if let Some(cond) = known.or_else(|| condition.as_ref().and_then(|c| self.choices.decide(c))) {
            let (body, graph, mapping) = if cond {
                (&op.then_body, then_graph, &then_inputs)
            } else {
                (&op.else_body, else_graph, &else_inputs)
            };
            let t = self.branch(body, graph, mapping, &inputs).map_err(|e| anyhow::anyhow!("the branch taken: {e}"))?;
            let branch_inputs: TVec<OutletId> = mapping.iter().map(|&i| inputs[i]).collect();
            return control::inline(&mut self.target, &t.typed, &branch_inputs, &node.name);
        }
        // Either branch may not be taken: one typed on an assumption about dims (a squeezed dim
        // taken as 1) is analysed when it is taken instead, as one that cannot be typed.
        let mark = self.choices.mark();
        let then_t = self.branch(&op.then_body, then_graph, &then_inputs, &inputs).and_then(unassumed);
        let else_t = self.branch(&op.else_body, else_graph, &else_inputs, &inputs).and_then(unassumed);
        // A branch that cannot be translated counts with what its graph declares it returns (checked
        // when it runs): taking the other branch's facts alone would be wrong where the two differ.
        let outline = |t: &Result<Translated, String>, graph: &pb::GraphProto| -> Option<control::Outline> {
            match t {
                Ok(t) => {
                    let facts: Option<Vec<TypedFact>> =
                        t.typed.outputs.iter().map(|o| t.typed.outlet_fact(*o).ok().cloned()).collect();
                    Some(control::outline_of(&facts?))
                }
                Err(_) => control::declared_outline(graph),
            }
        };
        // (One that declares nothing either leaves the other's facts, checked when it runs.)
        let (then_outline, else_outline) = (outline(&then_t, then_graph), outline(&else_t, else_graph));
        // Branches that differ, or are not both known exactly, are worth a case each.
        let exact = |o: &Option<control::Outline>| {
            o.as_ref().is_some_and(|o| o.iter().all(|(_, dims)| dims.iter().all(Option::is_some)))
        };
        let differ = then_outline != else_outline || !exact(&then_outline) || then_t.is_err() || else_t.is_err();
        if let Some(c) = condition.filter(|_| differ) {
            self.choices.meet(mark, &c);
        }
        if let (Err(a), Err(b)) = (&then_t, &else_t) {
            if then_outline.is_none() || else_outline.is_none() {
                bail!("neither branch can be translated (then: {a}; else: {b})");
            }
        }
        let prefix = crate::symbolic::symbol_name(&node.name);
        let symbols = self.target.symbols.clone();
        let mut fresh =
            |slot: usize, axis: usize| TDim::Sym(symbols.new_with_prefix(&format!("{prefix}_{slot}_{axis}")));
        let facts = control::merge_facts(then_outline.as_ref(), else_outline.as_ref(), &mut fresh)?;
        let assumed = then_outline.is_none() || else_outline.is_none();
        let branch = |t: Result<Translated, String>, body: &InferenceModel, graph: &pb::GraphProto| match t {
            Ok(t) => super::Branch::Typed { model: Arc::new(t.typed), plan: Default::default() },
            Err(reason) => super::Branch::Deferred {
                model: Arc::new(body.clone()),
                graph: Arc::new(graph.clone()),
                reason,
                plans: Default::default(),
                translate: translate_deferred,
            },
        };
        let op = super::IfOp {
            node: node.name.clone(),
            then_branch: branch(then_t, &op.then_body, then_graph),
            then_inputs,
            else_branch: branch(else_t, &op.else_body, else_graph),
            else_inputs,
            facts,
            assumed,
        };
        let name = self.target.unique_name(&node.name);
        let id = self.target.add_node(name, op.clone(), op.facts.clone())?;
        for (ix, input) in inputs.iter().enumerate() {
            self.target.add_edge(*input, InletId::new(id, ix))?;
        }
        Ok((0..op.facts.len()).map(|slot| OutletId::new(id, slot)).collect())
    }

    /// A `Scan` ([`crate::ops::ScanInference`]): its body translated with the facts the node's
    /// inputs give it, run by tract's `Scan`.
    fn scan_node(&mut self, node: &InferenceNode, op: &crate::ops::ScanInference) -> TractResult<TVec<OutletId>> {
        let (inputs, facts) = self.typed_inputs(node)?;
        let body_facts = op.body_facts(&facts)?;
        let index = super::node_index(&op.graph);
        let symbols = self.target.symbols.clone();
        let t = translate(&op.body, &index, self.opsets, body_facts, self.context(symbols)).map_err(|e| {
            let kind = crate::error::NodeError::find(&e).map_or(crate::error::NodeErrorKind::Failed, |n| n.kind);
            crate::error::NodeError::of_kind(&op.label.node, "Scan", kind, format!("the body: {e:#}"))
        })?;
        for f in &t.fallbacks {
            if !self.fallbacks.contains(f) {
                self.fallbacks.push(f.clone());
            }
        }
        if let Some(why) = t.unknown.values().next() {
            return Err(crate::error::NodeError::failed(&op.label.node, "Scan", format!("the body: {why}")));
        }
        if t.typed.outputs.len() != op.body.outputs.len() {
            return Err(crate::error::NodeError::failed(&op.label.node, "Scan", "a body output cannot be computed"));
        }
        self.table = t.table.clone();
        for r in &t.requirements {
            if !self.requirements.contains(r) {
                self.requirements.push(r.clone());
            }
        }
        op.wire_typed(&mut self.target, &node.name, &inputs, t.typed)
    }

    /// Adds `value` as a constant named after `name`, without tract's search for an equal one
    /// ([`super::splice::add_const`]).
    fn add_const(&mut self, name: &str, value: Tensor) -> TractResult<OutletId> {
        super::splice::add_const(&mut self.target, &mut self.names, name, value)
    }

    /// A `Concat` whose length sums many sizes known only at run time, wired with that length a size
    /// of its own ([`long_concat`]), recorded with the sum's largest value as its bound.
    fn long_concat(
        &mut self,
        node: &InferenceNode,
        op_type: &str,
        axis: Option<i64>,
        inputs: &[OutletId],
    ) -> TractResult<Option<OutletId>> {
        let Some(axis) = axis.filter(|_| op_type == "Concat") else { return Ok(None) };
        let table = &self.table;
        let run_time = |d: &TDim| d.symbols().iter().any(|s| table.minted(&s.to_string()));
        let wired = guard("translating the model", || {
            long_concat::wire(&mut self.target, &mut self.names, &mut self.sums, &node.name, axis, inputs, &run_time)
        })?;
        let Some(wired) = wired else { return Ok(None) };
        // The sum's largest value: the sum itself, hundreds of terms, would not read back.
        if let Some(max) = super::symbols::largest(&wired.sum) {
            self.table.set_at_most(&wired.symbol.to_string(), TDim::Val(max));
        }
        Ok(Some(wired.outlet))
    }

    /// The node's inputs in the typed model being built, and their facts there.
    fn typed_inputs(&self, node: &InferenceNode) -> TractResult<(TVec<OutletId>, Vec<TypedFact>)> {
        crate::node::typed_inputs::typed_inputs(node, &self.target, &self.mapping)
    }

    /// The node's own translation, after unifying what it requires equal.
    fn typed_outputs(&mut self, node: &InferenceNode, op_type: &str) -> TractResult<TVec<OutletId>> {
        let proto = self.nodes.get(node.name.as_str()).copied();
        let attr = |name: &str| proto.and_then(|n| n.attribute.iter().find(|a| a.name == name)).map(|a| a.i);
        let (inputs, facts) = self.typed_inputs(node)?;
        let refs: Vec<&TypedFact> = facts.iter().collect();
        let (scope, mentioned) = (self.target.symbols.clone(), crate::dims::scoped::symbols_of_facts(&facts));
        let (rewrites, reqs) =
            self.scoped.run(&scope, &mentioned, || require::rewrites(op_type, &attr, &refs, &node.name));
        let mut replaced: Vec<(OutletId, OutletId)> = vec![];
        let mut adjusted = self.same_integer_type(op_type, &inputs, &facts)?;
        for (ix, fact) in facts.iter().enumerate() {
            let mine: Vec<&require::Rewrite> = rewrites.iter().filter(|r| r.input == ix).collect();
            if mine.is_empty() {
                continue;
            }
            let mut shape: TVec<TDim> = fact.shape.to_tvec();
            for r in &mine {
                shape[r.axis] = r.dim.clone();
            }
            let text: Vec<String> = reqs.iter().map(|r| r.to_string()).collect();
            let op = AssumeShape { shape, requirement: text.join(", ") };
            let name = self.names.fresh(&self.target, &format!("{}.assume{ix}", node.name));
            adjusted[ix] = self.target.wire_node(name, op, &[adjusted[ix]])?[0];
        }
        for (ix, o) in node.inputs.iter().enumerate() {
            if adjusted[ix] != inputs[ix] {
                replaced.push((*o, inputs[ix]));
                self.mapping.insert(*o, adjusted[ix]);
            }
        }
        let mark = self.target.nodes.len();
        let rational_int = self.rational_to_int(node, op_type, proto)?;
        let mut undecided = false;
        let folded = match rational_int {
            Some(o) => Some(o),
            None => match self.symbolic_mod(node, op_type, attr("fmod") == Some(1))? {
                Some(o) => Some(o),
                None => match self.symbolic_div(node, op_type)? {
                    Some(o) => Some(o),
                    None => match self.symbolic_reduce(node, op_type, proto)? {
                        Some(o) => Some(o),
                        None => self.symbolic_equal(node, op_type, &mut undecided)?,
                    },
                },
            },
        };
        if let Some(outlet) = folded {
            for (o, original) in replaced {
                self.mapping.insert(o, original);
            }
            return Ok(tvec![outlet]);
        }
        let inputs_now: TVec<OutletId> = node.inputs.iter().map(|o| self.mapping[o]).collect();
        if let Some(outlet) = self.long_concat(node, op_type, attr("axis"), &inputs_now)? {
            for (o, original) in replaced {
                self.mapping.insert(o, original);
            }
            return Ok(tvec![outlet]);
        }
        let result = guard("translating the model", || {
            let (source, names, scoped) = (self.source, &mut self.names, &mut self.scoped);
            let outlets =
                super::splice::wire_alone(&mut self.target, names, &inputs_now, undecided, |scratch, wires| {
                    let mapping: HashMap<OutletId, OutletId> =
                        node.inputs.iter().copied().zip(wires.iter().copied()).collect();
                    let facts =
                        wires.iter().map(|w| scratch.outlet_fact(*w).cloned()).collect::<TractResult<Vec<_>>>()?;
                    let mentioned = crate::dims::scoped::symbols_of_facts(&facts);
                    let symbols = scratch.symbols.clone();
                    scoped.run(&symbols, &mentioned, || node.op.to_typed(source, node, scratch, &mapping))
                })?;
            ensure!(
                outlets.len() == node.outputs.len(),
                "translated into {} outputs, expected {}",
                outlets.len(),
                node.outputs.len()
            );
            for o in &outlets {
                self.target.outlet_fact(*o)?.consistent()?;
            }
            Ok(outlets)
        });
        for (o, original) in replaced {
            self.mapping.insert(o, original);
        }
        let result = result.and_then(|outlets| {
            let scope = self.target.symbols.clone();
            let added = self.target.nodes[mark..].iter().flat_map(|n| &n.outputs);
            let mut mentioned = crate::dims::scoped::symbols_of_facts(added.map(|o| &o.fact));
            mentioned.extend(crate::dims::scoped::symbols_of_facts(&facts));
            let named =
                self.scoped.run(&scope, &mentioned, || minted::name_minted(&mut self.target, mark, &node.name))?;
            for (symbol, bound) in named {
                if let Some(bound) = bound {
                    self.table.set_at_most(&symbol.to_string(), bound);
                }
            }
            self.check_symbolic_values(node, op_type, attr("fmod") == Some(1), &outlets)?;
            self.follow_rationals(node, op_type, proto, &outlets)?;
            Ok(outlets)
        });
        if result.is_ok() {
            // Ops whose own translation found an equality they need (a reshape keeping the volume
            // only when the inputs' dims allow it).
            let mut reqs = reqs;
            for added in &self.target.nodes[mark..] {
                if let Some(r) = added.op_as::<crate::ops::ReshapeAs>() {
                    let op = op_type.to_string();
                    // In the form their printed text reads back to (tract simplifies a product of
                    // sums such as `8*batch*(M+1)` one way when built, another way when parsed).
                    reqs.push(Requirement {
                        kept: read_back(&r.kept),
                        other: read_back(&r.other),
                        node: node.name.clone(),
                        op,
                    });
                }
            }
            for r in reqs {
                if !self.requirements.contains(&r) {
                    self.requirements.push(r);
                }
            }
        }
        result
    }
}

/// The translated branch, or why it holds only on an assumption about its input dims.
fn unassumed(t: Translated) -> Result<Translated, String> {
    for node in &t.typed.nodes {
        if node.op_as::<crate::ops::ParamOp>().is_some_and(|p| p.assumed) {
            return Err(format!(
                "node '{}' ({}) needs dims that are known only when it runs",
                node.name,
                node.op.name()
            ));
        }
    }
    Ok(t)
}

/// The type a `Cast` node casts to.
fn cast_target(proto: Option<&pb::NodeProto>) -> Option<DatumType> {
    let to = proto?.attribute.iter().find(|a| a.name == "to")?.i;
    crate::schema::datum_type_of_elem(i32::try_from(to).ok()?).ok()
}

/// Whether a translation error means the model is wrong (an invalid node, or tract panicking on it),
/// rather than that a rule cannot type the node.
fn is_invalid(e: &anyhow::Error) -> bool {
    use crate::error::{NodeError, NodeErrorKind, Panicked};
    NodeError::find(e).is_some_and(|n| n.kind == NodeErrorKind::Invalid)
        || e.chain().any(|c| c.downcast_ref::<Panicked>().is_some())
}

/// The error, naming the node unless it already names one.
fn attributed(e: anyhow::Error, node: &str, op: &str) -> anyhow::Error {
    if crate::error::NodeError::find(&e).is_some() {
        return e;
    }
    crate::error::NodeError::invalid(node, op, e)
}

/// What a node's inference rules say of its outputs given its inputs' facts: with the input values,
/// then without them, then from the input types and ranks alone. `None` when every attempt fails; a
/// panic with the full facts is an error (the node is invalid), later attempts only have less to go on.
fn local_rules(
    node: &InferenceNode,
    inputs: &[TypedFact],
    observed: &[InferenceFact],
) -> TractResult<Option<TVec<InferenceFact>>> {
    let full = |f: &TypedFact| InferenceFact::from(f);
    let no_value = |f: &TypedFact| InferenceFact::from(f).without_value();
    let rank_only = |f: &TypedFact| {
        InferenceFact::dt(f.datum_type)
            .with_shape(ShapeFactoid::closed((0..f.rank()).map(|_| DimFact::default()).collect()))
    };
    let attempts: [&dyn Fn(&TypedFact) -> InferenceFact; 3] = [&full, &no_value, &rank_only];
    let outputs: TVec<InferenceFact> = node.outputs.iter().map(|o| o.fact.clone()).collect();
    for (ix, make) in attempts.into_iter().enumerate() {
        let ins: TVec<InferenceFact> = inputs.iter().map(make).collect();
        let mut op: Box<dyn InferenceOp> = node.op.clone();
        let result = guard("inferring facts", || {
            op.infer_facts(ins.iter().collect(), outputs.iter().collect(), observed.iter().collect())
        });
        match result {
            Ok((_, outs, _)) => return Ok(Some(outs)),
            Err(e) if ix == 0 && is_invalid(&e) => return Err(e),
            Err(_) => {}
        }
    }
    Ok(None)
}

/// Every node of the model (not only those the outputs need: every value is analysed), inputs before
/// the nodes reading them.
fn topological_order(model: &InferenceModel) -> Vec<usize> {
    let n = model.nodes().len();
    let mut pending: Vec<usize> = model.nodes().iter().map(|node| node.inputs.len()).collect();
    let mut ready: std::collections::VecDeque<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(id) = ready.pop_front() {
        order.push(id);
        for output in &model.node(id).outputs {
            for succ in &output.successors {
                pending[succ.node] -= 1;
                if pending[succ.node] == 0 {
                    ready.push_back(succ.node);
                }
            }
        }
    }
    order
}

/// Removes the nodes added since `mark` (a translation that failed half-way), and every edge and
/// label pointing at them.
fn rollback(model: &mut TypedModel, mark: usize) {
    if model.nodes.len() <= mark {
        return;
    }
    model.nodes.truncate(mark);
    for node in &mut model.nodes {
        for output in &mut node.outputs {
            output.successors.retain(|s| s.node < mark);
        }
    }
    model.outlet_labels.retain(|o, _| o.node < mark);
    model.inputs.retain(|o| o.node < mark);
    model.outputs.retain(|o| o.node < mark);
}

/// `d` as its printed text parses, when that gives the same values (else `d`).
fn read_back(d: &TDim) -> TDim {
    let Some(scope) = d.find_scope() else { return d.clone() };
    match crate::symbolic::parse_dim(&scope, &crate::dims::format_dim(d)) {
        Ok(again) if crate::dims::same_values(d, &again) => again,
        _ => d.clone(),
    }
}
