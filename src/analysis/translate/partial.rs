//! Integer vectors known in part, as onnx's shape inference propagates them: `Concat(Shape(x)[0:2],
//! size)` with `size` a run-time value is `[N, 3, ?, ?]`. A node sized by such a vector (a `Resize` to
//! `sizes`) then keeps the known entries as its dims, and gets fresh symbols only for the others.

use std::collections::HashMap;
use tract_onnx::prelude::*;

/// The entries of a 1-D integer vector, each known or not.
pub(super) type Partial = Vec<Option<TDim>>;

/// The longest vector followed: shape vectors are short.
const MAX_LEN: i64 = 64;

/// What is known of the 1-D integer value at `o`: its value, what `known` holds of it, or as many
/// unknown entries as its length.
pub(super) fn entries(model: &TypedModel, known: &HashMap<OutletId, Partial>, o: OutletId) -> Option<Partial> {
    let f = model.outlet_fact(o).ok()?;
    if f.rank() != 1 || !(f.datum_type.is_integer() || f.datum_type.is_tdim()) {
        return None;
    }
    if let Some(k) = &f.konst {
        return Some(crate::dims::dims_of(k).ok()?.into_iter().map(Some).collect());
    }
    if let Some(p) = known.get(&o) {
        return Some(p.clone());
    }
    let len = f.shape[0].as_i64().filter(|l| (0..=MAX_LEN).contains(l))?;
    Some(vec![None; len as usize])
}

/// What is known of the output of a node of `op_type` reading `inputs` and making `output`, when it is
/// a 1-D integer vector some of whose entries are known (and not all: a value fully known is a
/// constant already).
pub(super) fn propagate(
    model: &TypedModel,
    known: &HashMap<OutletId, Partial>,
    op_type: &str,
    inputs: &[OutletId],
    output: OutletId,
) -> Option<Partial> {
    let f = model.outlet_fact(output).ok()?;
    if f.konst.is_some() || f.rank() != 1 || !(f.datum_type.is_integer() || f.datum_type.is_tdim()) {
        return None;
    }
    let out: Partial = match op_type {
        // A 1-D output of a Concat of 1-D inputs is along axis 0.
        "Concat" => {
            let mut all = vec![];
            for i in inputs {
                all.extend(entries(model, known, *i)?);
            }
            all
        }
        "Cast" | "Identity" => entries(model, known, *inputs.first()?)?,
        _ => return None,
    };
    let len_agrees = f.shape[0].as_i64() == Some(out.len() as i64);
    (len_agrees && out.iter().any(Option::is_some)).then_some(out)
}

/// A `Resize` whose output dims are fresh symbols (its `sizes` known only at run time) with the entries
/// of `sizes` that are known put in their place; `sizes` is the node's input `sizes_input`.
pub(super) fn refine_resize(
    model: &mut TypedModel,
    known: &HashMap<OutletId, Partial>,
    output: OutletId,
    sizes_input: usize,
) -> TractResult<()> {
    let node = &model.nodes[output.node];
    let Some(op) = node.op_as::<crate::ops::ParamOp>() else { return Ok(()) };
    if !op.fresh || op.facts.len() != 1 || !node.outputs[0].successors.is_empty() {
        return Ok(());
    }
    let Some(sizes) = node.inputs.get(sizes_input).and_then(|i| entries(model, known, *i)) else { return Ok(()) };
    let mut fact = op.facts[0].clone();
    if sizes.len() != fact.rank() {
        return Ok(());
    }
    let (mut changed, mut still_fresh) = (false, false);
    let mut dims: TVec<TDim> = fact.shape.to_tvec();
    for (d, s) in dims.iter_mut().zip(&sizes) {
        match (&*d, s) {
            (TDim::Sym(_), Some(s)) => {
                *d = s.clone();
                changed = true;
            }
            (TDim::Sym(_), None) => still_fresh = true,
            _ => {}
        }
    }
    if !changed {
        return Ok(());
    }
    fact.shape = dims.into();
    let mut op = op.clone();
    op.facts = tvec![fact.clone()];
    op.fresh = still_fresh;
    let node = &mut model.nodes[output.node];
    node.op = Box::new(op);
    node.outputs[0].fact = fact;
    Ok(())
}
