//! Sizes a node makes when it runs (a `NonZero` count, the `k` of a `TopK` whose `k` is a run-time
//! value, the boxes a `NonMaxSuppression` keeps, the length of a `Range` over run-time bounds), named
//! after their node and bounded by what the op implies: `0 <= count <= ` the input's element count,
//! `k <=` the length of the axis, the boxes kept at most batches times classes times boxes (a
//! `Range`'s length has no bound but its bounds').
//!
//! tract's builders name them `x`, `k`, ... whatever the node; each is renamed here as the node is
//! translated (its op rebuilt with the new symbol), before anything reads it.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::{Range, Topk};
use tract_onnx_opl::non_max_suppression::NonMaxSuppression;
use tract_onnx_opl::non_zero::NonZero;

/// Renames the sizes minted by the nodes of `target` from `from` on (the translation of the graph node
/// `node`) after that node; each new symbol with the bound its op implies, for the symbol table.
pub(super) fn name_minted(
    target: &mut TypedModel,
    from: usize,
    node: &str,
) -> TractResult<Vec<(Symbol, Option<TDim>)>> {
    let mut named = vec![];
    let prefix = crate::symbolic::symbol_name(node);
    for id in from..target.nodes.len() {
        // Only a node nothing reads yet can have its facts changed.
        if target.nodes[id].outputs.iter().any(|o| !o.successors.is_empty()) {
            continue;
        }
        let inputs: Vec<TypedFact> = target.node_input_facts(id)?.into_iter().cloned().collect();
        let volume = |f: &TypedFact| f.shape.iter().fold(TDim::Val(1), |acc, d| acc * d.clone()).simplify();
        let op = &target.nodes[id].op;
        let (new_op, symbol, bound): (Box<dyn TypedOp>, Symbol, Option<TDim>) = if let Some(nz) =
            op.downcast_ref::<NonZero>()
        {
            if nz.count.to_string().starts_with(&prefix) {
                continue;
            }
            let s = target.symbols.new_with_prefix(&prefix);
            (Box::new(NonZero { count: s.clone() }), s, Some(volume(&inputs[0])))
        } else if let Some(t) = op.downcast_ref::<Topk>() {
            let runtime_k = inputs.get(1).is_some_and(|k| k.konst.is_none());
            if !runtime_k || t.fallback_k.to_string().starts_with(&prefix) {
                continue;
            }
            let Some(axis_len) = inputs[0].shape.get(t.axis).cloned() else { continue };
            let s = target.symbols.new_with_prefix(&format!("{prefix}_k"));
            (Box::new(Topk { axis: t.axis, largest: t.largest, fallback_k: TDim::Sym(s.clone()) }), s, Some(axis_len))
        } else if let Some(n) = op.downcast_ref::<NonMaxSuppression>() {
            if n.num_selected_indices_symbol.to_string().starts_with(&prefix) {
                continue;
            }
            let s = target.symbols.new_with_prefix(&prefix);
            let op = NonMaxSuppression {
                center_point_box: n.center_point_box,
                num_selected_indices_symbol: s.clone(),
                has_score_threshold: n.has_score_threshold,
            };
            // One box per batch, class and candidate box at most: the scores' element count.
            (Box::new(op), s, Some(volume(&inputs[1])))
        } else if op.downcast_ref::<Range>().is_some() {
            // A length tract could not compute from the bounds is a symbol it mints as `range`; one
            // that is a dim the model already has (`Range(0, T, 1)`) is exact and stays.
            let Some(TDim::Sym(len)) = target.nodes[id].outputs[0].fact.shape.first() else { continue };
            if !len.to_string().starts_with("range") || known_before(target, from, len) {
                continue;
            }
            let s = target.symbols.new_with_prefix(&prefix);
            (Box::new(Range::new(TDim::Sym(s.clone()))), s, None)
        } else {
            continue;
        };
        let refs: Vec<&TypedFact> = inputs.iter().collect();
        let facts = new_op.output_facts(&refs)?;
        let node = &mut target.nodes[id];
        if facts.len() != node.outputs.len() {
            continue;
        }
        node.op = new_op;
        for (output, fact) in node.outputs.iter_mut().zip(facts) {
            output.fact = fact;
        }
        // tract's assertions read its own syntax; a bound it cannot read is only reported. A bound
        // holding a min, max, division or comparison is only reported too (with its largest value:
        // `SymbolTable::finish`): tract proves such terms against every assertion, and doing so for
        // an assertion holding one recurses without end; asserting its largest value instead doubled
        // the plan time of long chains of selections (every proof scans every assertion).
        if let Some(bound) = bound.as_ref().filter(|b| is_polynomial(b)) {
            let _ = target.symbols.add_assertion(format!("{symbol}<={bound}"));
        }
        named.push((symbol, bound));
    }
    Ok(named)
}

/// Whether `dim` is built of integers, symbols, sums and products only (what tract can subtract and
/// simplify without proving anything), walked with an explicit stack.
pub(super) fn is_polynomial(dim: &TDim) -> bool {
    let mut todo = vec![dim];
    while let Some(d) = todo.pop() {
        match d {
            TDim::Val(_) | TDim::Sym(_) => {}
            TDim::Add(terms) | TDim::Mul(terms) => todo.extend(terms),
            TDim::MulInt(_, t) => todo.push(t),
            _ => return false,
        }
    }
    true
}

/// Whether `symbol` appears in the facts of a node before `from` (a dim the model had before the
/// node being translated, not one its translation minted).
fn known_before(target: &TypedModel, from: usize, symbol: &Symbol) -> bool {
    target.nodes[..from.min(target.nodes.len())]
        .iter()
        .flat_map(|n| n.outputs.iter())
        .any(|o| o.fact.shape.iter().any(|d| d.symbols().contains(symbol)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sums_and_products_are_polynomial() {
        let s = SymbolScope::default();
        let p = |t: &str| is_polynomial(&s.parse_tdim(t).unwrap());
        assert!(p("3"));
        assert!(p("N*C+2*H"));
        assert!(!p("min(N,300)"));
        assert!(!p("N/2"));
        assert!(!p("max(N,1)*C"));
    }
}
