//! Values computed from sizes only the data decides, bound when the plan runs.
//!
//! A run binds every input dim, so the only symbols left in its plan are sizes a node makes when it
//! runs: a `NonZero` count, a `TopK` whose `k` is a run-time value, a `Unique` count. tract binds each
//! when the node making it produces its output, and evaluates an op's symbolic attributes (an
//! `Expand` to `[count]`) against those bindings. Two things escape that:
//!
//! - a value computed from such a size ahead of running (the `Shape` of a `NonZero`, folded into the
//!   constant `[1, count]`, and what follows it: `min(count, 300)`) is a constant of symbolic dims,
//!   which ops reading it as numbers (TopK's `k`, a graph output) cannot use;
//! - the node that binds the size is left out of the plan when no output needs its value (only its
//!   shape was read, and that was folded).
//!
//! [`bind`] makes each such constant a [`BoundDims`] node reading the outputs whose shapes carry its
//! symbols, which evaluates its dims from their actual shapes when the plan runs, and returns the
//! ordering dependencies that put every node mentioning a size in its shape after the node binding it.

use std::collections::{HashMap, HashSet};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::model::order::eval_order_for_nodes;
use tract_onnx::tract_core::ops::konst::Const;

/// A constant of dims over sizes bound at run time, evaluated from the shapes of the values that
/// carry those sizes (its inputs, one per symbol, in the order of `shapes`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BoundDims {
    /// The dims, as the analysis wrote them.
    pub values: Arc<Tensor>,
    /// The shape of each input as the analysis typed it.
    pub shapes: Vec<TVec<TDim>>,
}

impl Op for BoundDims {
    fn name(&self) -> StaticName {
        "BoundDims".into()
    }

    op_as_typed_op!();
}

impl EvalOp for BoundDims {
    // Its value is known only inside a plan, from the shapes its inputs have there.
    not_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let mut values = ctx.symbols.clone();
        for (input, shape) in inputs.iter().zip(&self.shapes) {
            for (dim, &actual) in shape.iter().zip(input.shape()) {
                if let TDim::Sym(s) = dim {
                    values.set(s, i64::try_from(actual)?);
                }
            }
        }
        let dims = self.values.try_as_plain_ram()?;
        let dims = dims.as_slice::<TDim>()?;
        let mut out = Vec::with_capacity(dims.len());
        for d in dims {
            let v = d.eval(&values);
            match v.as_i64() {
                Some(v) => out.push(TDim::Val(v)),
                None => bail!("the size {} is not known when it is needed", crate::dims::format_dim(d)),
            }
        }
        Ok(tvec![tract_ndarray::ArrayD::from_shape_vec(self.values.shape(), out)?.into_tvalue()])
    }
}

impl TypedOp for BoundDims {
    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec![TDim::datum_type().fact(self.values.shape())])
    }

    as_op!();
}

/// The symbols of a shape or of a dims tensor.
fn symbols_of_tensor(t: &Tensor) -> HashSet<Symbol> {
    let mut out = HashSet::new();
    if t.datum_type().is_tdim() {
        if let Ok(dims) = t.try_as_plain_ram() {
            if let Ok(dims) = dims.as_slice::<TDim>() {
                out.extend(dims.iter().flat_map(|d| d.symbols()));
            }
        }
    }
    out
}

/// The values whose shapes carry each symbol of `model`: the first in evaluation order holding it as a
/// dim of its own while its inputs do not mention it (an `Expand` or a `Range` to `[count]` uses a size
/// bound before it), among the nodes that mint sizes when they run (a `NonZero`) first.
fn binders(model: &TypedModel) -> TractResult<HashMap<Symbol, OutletId>> {
    let inputs: Vec<usize> = model.inputs.iter().map(|o| o.node).collect();
    let all: Vec<usize> = (0..model.nodes.len()).collect();
    let order = eval_order_for_nodes(&model.nodes, &inputs, &all, &[])?;
    let mut binder: HashMap<Symbol, OutletId> = HashMap::new();
    for minting in [true, false] {
        for &id in &order {
            let node = &model.nodes[id];
            if node.op.mints_runtime_symbols() != minting {
                continue;
            }
            // A node whose inputs mention the size (a Range to a count) uses it rather than binds it.
            let mut read: HashSet<Symbol> = HashSet::new();
            for fact in model.node_input_facts(id)? {
                read.extend(fact.shape.iter().flat_map(|d| d.symbols()));
                if let Some(k) = &fact.konst {
                    read.extend(symbols_of_tensor(k));
                }
            }
            for (slot, output) in node.outputs.iter().enumerate() {
                for d in output.fact.shape.iter() {
                    if let TDim::Sym(s) = d {
                        if !read.contains(s) {
                            binder.entry(s.clone()).or_insert(OutletId::new(id, slot));
                        }
                    }
                }
            }
        }
    }
    Ok(binder)
}

/// Makes the values binding the symbols of `model` (typed, not yet optimized) outputs of it, so that
/// optimizing keeps the nodes making them though nothing else reads them (their shapes were read, and
/// folded); the number of outputs it had, for [`bind`] to restore.
pub(crate) fn keep_binders(model: &mut TypedModel) -> TractResult<usize> {
    let count = model.outputs.len();
    let mut kept: Vec<OutletId> = binders(model)?.into_values().collect();
    kept.sort();
    kept.retain(|o| !model.outputs.contains(o) && !model.inputs.contains(o));
    model.outputs.extend(kept);
    Ok(count)
}

/// Rewrites `model` (optimized, every input dim concrete) so that what its plan computes from sizes
/// bound at run time is evaluated when it runs (see the module docs); the ordering dependencies
/// (consumer node, binding node) to build its plan with.
/// `outputs` is the number of outputs the model had before [`keep_binders`].
pub(crate) fn bind(model: &mut TypedModel, outputs: usize) -> TractResult<Vec<(usize, usize)>> {
    model.outputs.truncate(outputs);
    let binder = binders(model)?;
    if binder.is_empty() {
        return Ok(vec![]);
    }
    let inputs: Vec<usize> = model.inputs.iter().map(|o| o.node).collect();
    let all: Vec<usize> = (0..model.nodes.len()).collect();
    let order = eval_order_for_nodes(&model.nodes, &inputs, &all, &[])?;
    // Constants of dims over such symbols become BoundDims reading their binders.
    let consts: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&id| {
            model.nodes[id]
                .op_as::<Const>()
                .is_some_and(|k| symbols_of_tensor(k.val()).iter().any(|s| binder.contains_key(s)))
        })
        .collect();
    for id in consts {
        let Some(k) = model.nodes[id].op_as::<Const>().map(|k| k.val().clone()) else { continue };
        let mut symbols: Vec<Symbol> = symbols_of_tensor(&k).into_iter().collect();
        symbols.sort();
        let Some(witnesses) = symbols.iter().map(|s| binder.get(s).copied()).collect::<Option<Vec<OutletId>>>() else {
            continue;
        };
        let mut witnesses = witnesses;
        witnesses.dedup();
        let shapes = witnesses
            .iter()
            .map(|w| model.outlet_fact(*w).map(|f| f.shape.to_tvec()))
            .collect::<TractResult<Vec<_>>>()?;
        let op = BoundDims { values: k, shapes };
        let name = model.unique_name(format!("{}.bound", model.nodes[id].name));
        let facts = op.output_facts(&[])?;
        let new = model.add_node(name, op, facts)?;
        for (ix, w) in witnesses.iter().enumerate() {
            model.add_edge(*w, InletId::new(new, ix))?;
        }
        let old = OutletId::new(id, 0);
        let successors = model.nodes[id].outputs[0].successors.clone();
        for inlet in successors {
            model.add_edge(OutletId::new(new, 0), inlet)?;
        }
        for o in model.outputs.iter_mut().filter(|o| **o == old) {
            *o = OutletId::new(new, 0);
        }
        if let Some(label) = model.outlet_labels.remove(&old) {
            model.outlet_labels.insert(OutletId::new(new, 0), label);
        }
    }
    // Every node whose shapes mention a symbol comes after the node binding it.
    let mut deps = vec![];
    let mut seen = HashSet::new();
    for node in &model.nodes {
        let mut mentioned: HashSet<Symbol> = HashSet::new();
        for output in &node.outputs {
            mentioned.extend(output.fact.shape.iter().flat_map(|d| d.symbols()));
        }
        for s in mentioned {
            let Some(b) = binder.get(&s) else { continue };
            if b.node != node.id && seen.insert((node.id, b.node)) {
                deps.push((node.id, b.node));
            }
        }
    }
    // A dependency of a node on its own descendant would be a cycle: those are left out (each binder's
    // ancestors found once).
    let mut ancestors: HashMap<usize, HashSet<usize>> = HashMap::new();
    deps.retain(|&(consumer, binder)| {
        let set = ancestors.entry(binder).or_insert_with(|| ancestors_of(model, binder));
        !set.contains(&consumer)
    });
    // Only nodes the outputs need take part: tract's memory-saving order follows every dependency it
    // is given, and would schedule a node no output needs (its inputs never computed) once the size
    // it waits for is bound (a graph whose outputs are intermediate values of a detector).
    let outputs: Vec<usize> = model.outputs.iter().map(|o| o.node).collect();
    let needed: HashSet<usize> = eval_order_for_nodes(&model.nodes, &inputs, &outputs, &deps)?.into_iter().collect();
    deps.retain(|(consumer, _)| needed.contains(consumer));
    Ok(deps)
}

/// The nodes whose values `node` reads, directly or not.
fn ancestors_of(model: &TypedModel, node: usize) -> HashSet<usize> {
    let mut stack: Vec<usize> = model.nodes[node].inputs.iter().map(|i| i.node).collect();
    let mut seen = HashSet::new();
    while let Some(n) = stack.pop() {
        if seen.insert(n) {
            stack.extend(model.nodes[n].inputs.iter().map(|i| i.node));
        }
    }
    seen
}
