//! A `Loop` node translated ([`crate::analysis::loops`]): its body typed from the facts of the values
//! it is given, and the output facts that follow.

use super::{Translated, Translator};
use crate::analysis::control::{self, Branch};
use crate::analysis::LoopOp;
use crate::ops::control::loop_body::LoopBody;
use std::collections::HashSet;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// A value's type and shape, for errors.
fn describe(f: &TypedFact) -> String {
    format!("{:?} of shape {:?}", f.datum_type, f.shape.dims())
}

/// How a carried value's shape changes in one iteration, for a body typed with a symbol for each dim
/// that changes (`general`): per axis, `None` where the dim stays, else what one iteration adds to it
/// (an expression of the outer model's symbols only). `None` as a whole when some dim changes in
/// another way (the body then runs as translated per iteration).
fn growth(general: &TypedFact, out: &TypedFact, known: &HashSet<Symbol>) -> Option<Vec<Option<TDim>>> {
    if general.datum_type != out.datum_type || general.rank() != out.rank() {
        return None;
    }
    general
        .shape
        .iter()
        .zip(out.shape.iter())
        .map(|(g, o)| {
            if g == o {
                return Some(None);
            }
            let TDim::Sym(s) = g else { return None };
            if known.contains(s) {
                return None;
            }
            let step = (o.clone() - g.clone()).simplify();
            step.symbols().iter().all(|x| known.contains(x)).then_some(Some(step))
        })
        .collect()
}

/// The facts of a translated body's outputs.
fn output_facts(t: &Translated) -> TractResult<Vec<TypedFact>> {
    t.typed.outputs.iter().map(|o| t.typed.outlet_fact(*o).cloned()).collect()
}

impl Translator<'_> {
    /// A `Loop`: a [`LoopOp`] running its body, typed here when the facts allow.
    pub(super) fn loop_node(&mut self, node: &InferenceNode, op: &LoopBody) -> TractResult<TVec<OutletId>> {
        let (inputs, facts) = self.typed_inputs(node)?;
        let (first, n, k) = (op.first_carried(), op.carried, op.scans);
        let outer = op.body.inputs.len().checked_sub(2 + n).context("the body has too few inputs")?;
        ensure!(inputs.len() == first + n + outer, "the Loop node has {} inputs, its body reads {outer}", inputs.len());
        let one = |f: &TypedFact| f.shape.volume().as_i64() == Some(1);
        if op.has_m && (!(facts[0].datum_type.is_integer() || facts[0].datum_type.is_tdim()) || !one(&facts[0])) {
            return Err(op.label.err(format!("M must be one integer, got {}", describe(&facts[0]))));
        }
        if op.has_cond && (facts[first - 1].datum_type != DatumType::Bool || !one(&facts[first - 1])) {
            return Err(op.label.err(format!("cond must be one bool, got {}", describe(&facts[first - 1]))));
        }
        let carried_in: Vec<TypedFact> =
            facts[first..first + n].iter().map(|f| f.datum_type.fact(f.shape.clone())).collect();
        let outer_facts = &facts[first + n..];
        // Symbols the outer model knows; others a body output mentions are the body's own.
        let known: HashSet<Symbol> = facts.iter().flat_map(|f| f.shape.iter().flat_map(|d| d.symbols())).collect();
        let body_facts = |carried: &[TypedFact]| -> Vec<TypedFact> {
            let mut all = vec![i64::scalar_fact(), bool::scalar_fact()];
            all.extend(carried.iter().cloned());
            all.extend(outer_facts.iter().cloned());
            all
        };
        let prefix = crate::symbolic::symbol_name(&node.name);
        let symbols = self.target.symbols.clone();
        let fresh = |what: String| TDim::Sym(symbols.new_with_prefix(&format!("{prefix}_{what}")));
        // Per carried value and axis, what one iteration adds to a dim that changes (when typed).
        let mut growing: Vec<Vec<Option<TDim>>> = vec![];
        let first_try = self.branch_with(&op.body, &op.graph, body_facts(&carried_in), false);
        let (body, outline) = match first_try {
            Ok(t) => {
                let outs = output_facts(&t)?;
                self.check_body(op, &outs, &carried_in)?;
                if (0..n).all(|i| outs[1 + i].shape == carried_in[i].shape) {
                    self.keep_findings(&t, &known);
                    (Branch::Typed { model: Arc::new(t.typed), plan: Default::default() }, outs)
                } else {
                    // The dims that change between iterations made symbols: typed once more.
                    let general: Vec<TypedFact> = (0..n)
                        .map(|i| {
                            let dims: TVec<TDim> = (carried_in[i].shape.iter().zip(outs[1 + i].shape.iter()))
                                .enumerate()
                                .map(|(axis, (a, b))| if a == b { a.clone() } else { fresh(format!("it{i}_{axis}")) })
                                .collect();
                            carried_in[i].datum_type.fact(&*dims)
                        })
                        .collect();
                    let second = self.branch_with(&op.body, &op.graph, body_facts(&general), false);
                    let typed = second.ok().and_then(|t| {
                        let outs = output_facts(&t).ok()?;
                        if outs.len() != 1 + n + k {
                            return None;
                        }
                        let steps =
                            (0..n).map(|i| growth(&general[i], &outs[1 + i], &known)).collect::<Option<Vec<_>>>()?;
                        Some((t, outs, steps))
                    });
                    match typed {
                        Some((t, outs, steps)) => {
                            self.keep_findings(&t, &known);
                            growing = steps;
                            (Branch::Typed { model: Arc::new(t.typed), plan: Default::default() }, outs)
                        }
                        None => (self.deferred(op, "the loop-carried shapes change between iterations".into()), outs),
                    }
                }
            }
            Err(reason) => {
                let declared = control::declared_outline(&op.graph).ok_or_else(|| {
                    anyhow::anyhow!("the body cannot be translated ({reason}) and does not declare its outputs")
                })?;
                let outs: Vec<TypedFact> = declared
                    .iter()
                    .map(|(dt, dims)| {
                        let dims: TVec<TDim> =
                            dims.iter().enumerate().map(|(axis, _)| fresh(format!("d{axis}"))).collect();
                        dt.fact(&*dims)
                    })
                    .collect();
                self.check_body(op, &outs, &carried_in)?;
                (self.deferred(op, reason), outs)
            }
        };
        // A carried dim is known when the typed body keeps it, a scan dim when the typed body gives
        // it in the outer model's symbols; a body translated only when it runs may change any of
        // them (one iteration's shapes say nothing of the next's).
        let typed = matches!(body, Branch::Typed { .. });
        let outer_only = |d: &TDim| -> bool { typed && d.symbols().iter().all(|s| known.contains(s)) };
        let trips = self.trip_count(op, &facts, &body);
        // Without an exact count, a loop still runs at most `M` times (when `M` is a dim) and at
        // most MAX_ITERATIONS: the bound of the symbols standing for its count.
        let most_trips = match (&trips, self.trip_limit(op, &facts)) {
            (None, Some(m)) => Some(m),
            (None, None) => Some(TDim::Val(crate::analysis::MAX_ITERATIONS as i64)),
            (Some(_), _) => None,
        };
        let mut out_facts: TVec<TypedFact> = tvec![];
        for (i, f) in outline[1..1 + n].iter().enumerate() {
            let dims: TVec<TDim> = (f.shape.iter().zip(carried_in[i].shape.iter()))
                .enumerate()
                .map(|(axis, (d, initial))| {
                    let step = growing.get(i).and_then(|g| g[axis].as_ref());
                    match (step, &trips) {
                        _ if typed && d == initial => d.clone(),
                        // A dim growing by the same amount at every iteration of a counted loop.
                        (Some(step), Some(trips)) if typed => {
                            (initial.clone() + trips.clone() * step.clone()).simplify()
                        }
                        // Growing in a loop whose count a run decides: at most what the most
                        // iterations it can make add.
                        (Some(step), None) if typed && step.prove_positive_or_zero() => {
                            let dim = fresh(format!("{i}_{axis}"));
                            if let Some(most) = &most_trips {
                                let bound = (initial.clone() + most.clone() * step.clone()).simplify();
                                self.table.set_at_most(&dim.to_string(), bound);
                            }
                            dim
                        }
                        _ => fresh(format!("{i}_{axis}")),
                    }
                })
                .collect();
            out_facts.push(f.datum_type.fact(&*dims));
        }
        for (j, f) in outline[1 + n..].iter().enumerate() {
            let slot = n + j;
            let count = trips.clone().unwrap_or_else(|| {
                let count = fresh(format!("{slot}_0"));
                if let Some(bound) = &most_trips {
                    self.table.set_at_most(&count.to_string(), bound.clone());
                }
                count
            });
            let mut dims: TVec<TDim> = tvec![count];
            for (axis, d) in f.shape.iter().enumerate() {
                dims.push(if outer_only(d) { d.clone() } else { fresh(format!("{slot}_{}", axis + 1)) });
            }
            out_facts.push(f.datum_type.fact(&*dims));
        }
        let op = LoopOp {
            node: node.name.clone(),
            body,
            source: op.body.clone(),
            graph: op.graph.clone(),
            has_m: op.has_m,
            has_cond: op.has_cond,
            carried: n,
            scans: k,
            facts: out_facts,
        };
        let name = self.target.unique_name(&node.name);
        let id = self.target.add_node(name, op.clone(), op.facts.clone())?;
        for (ix, input) in inputs.iter().enumerate() {
            self.target.add_edge(*input, InletId::new(id, ix))?;
        }
        Ok((0..node.outputs.len()).map(|slot| OutletId::new(id, slot)).collect())
    }

    /// What the body's translation found that holds of the outer model: the nodes that fell back
    /// (notes), and the requirements on the outer model's symbols. (Symbols minted inside the body,
    /// and those standing for dims that change between iterations, are the body's own.)
    fn keep_findings(&mut self, t: &Translated, known: &HashSet<Symbol>) {
        for f in &t.fallbacks {
            if !self.fallbacks.contains(f) {
                self.fallbacks.push(f.clone());
            }
        }
        let outer = |d: &TDim| d.symbols().iter().all(|s| known.contains(s));
        for r in &t.requirements {
            if outer(&r.kept) && outer(&r.other) && !self.requirements.contains(r) {
                self.requirements.push(r.clone());
            }
        }
    }

    /// The body's outputs checked against the Loop: their number, the condition a bool, the carried
    /// values of the types and ranks they came in with.
    fn check_body(&self, op: &LoopBody, outs: &[TypedFact], carried_in: &[TypedFact]) -> TractResult<()> {
        let n = op.carried;
        if outs.len() != 1 + n + op.scans {
            return Err(op.label.err(format!("the body returns {} values, expected {}", outs.len(), 1 + n + op.scans)));
        }
        if outs[0].datum_type != DatumType::Bool {
            return Err(op.label.err(format!("the body's condition output is {:?}, not bool", outs[0].datum_type)));
        }
        for (i, (out, input)) in outs[1..1 + n].iter().zip(carried_in).enumerate() {
            if out.datum_type != input.datum_type || out.rank() != input.rank() {
                return Err(op.label.err(format!(
                    "loop-carried value {i} goes in as {:?} of rank {} and comes out of the body as {:?} of rank {}",
                    input.datum_type,
                    input.rank(),
                    out.datum_type,
                    out.rank()
                )));
            }
        }
        Ok(())
    }

    /// The body kept as parsed, translated when it runs for the shapes it is given.
    fn deferred(&self, op: &LoopBody, reason: String) -> Branch {
        Branch::Deferred {
            model: op.body.clone(),
            graph: op.graph.clone(),
            reason,
            plans: Default::default(),
            translate: super::translate_deferred,
        }
    }

    /// `M` when it is known before running: a constant (at least 0), or a dim (`Shape(x)[0]`) proved
    /// non-negative. The loop runs at most that many times.
    fn trip_limit(&self, op: &LoopBody, facts: &[TypedFact]) -> Option<TDim> {
        if !op.has_m {
            return None;
        }
        match crate::dims::dims_of(facts[0].konst.as_ref()?).ok()?.as_slice() {
            [d] => match d.as_i64() {
                Some(v) => Some(TDim::Val(v.max(0))),
                None if d.prove_positive_or_zero() => Some(d.clone()),
                None => None,
            },
            _ => None,
        }
    }

    /// The number of iterations, when known before running: `M` (at least 0) when it is a constant
    /// or a dim,
    /// `cond` is absent or a constant true and the typed body's condition output is a constant true.
    fn trip_count(&self, op: &LoopBody, facts: &[TypedFact], body: &Branch) -> Option<TDim> {
        let m = self.trip_limit(op, facts)?;
        if op.has_cond {
            let cond = facts[1].konst.as_ref()?.cast_to_scalar::<bool>().ok()?;
            if !cond {
                return Some(TDim::Val(0));
            }
        }
        let Branch::Typed { model, .. } = body else { return None };
        let cond_out = model.outlet_fact(model.outputs[0]).ok()?.konst.as_ref()?.cast_to_scalar::<bool>().ok()?;
        cond_out.then_some(m)
    }
}
