//! Integer tensors known in part, as onnx's shape inference propagates them: `Concat(Shape(x)[0:2],
//! size)` with `size` a run-time value is `[N, 3, ?, ?]`. A node sized by such a tensor then keeps
//! the known entries: a `Resize` to `sizes` its known dims, a `Pad` by `pads` the dims whose two
//! pads are known (torchvision pads its images by `[0, 0, 0, 0, ph, pw]`, written as a reshape, a
//! reversing slice and a transpose of a vector of which the channel pads are known).

use std::collections::HashMap;
use tract_onnx::prelude::*;

/// The entries of an integer tensor of concrete shape, in row-major order, each known or not.
pub(super) type Partial = Vec<Option<TDim>>;

/// The most entries followed: shape tensors are small.
const MAX_LEN: usize = 64;

/// The concrete shape of the integer tensor at `o`, when it has at most [`MAX_LEN`] entries.
fn small_shape(model: &TypedModel, o: OutletId) -> Option<Vec<usize>> {
    let f = model.outlet_fact(o).ok()?;
    if !(f.datum_type.is_integer() || f.datum_type.is_tdim()) {
        return None;
    }
    let shape: Vec<usize> = f.shape.as_concrete()?.to_vec();
    (shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))? <= MAX_LEN).then_some(shape)
}

/// What is known of the integer tensor at `o`: its value, what `known` holds of it, or as many
/// unknown entries as it has.
pub(super) fn entries(model: &TypedModel, known: &HashMap<OutletId, Partial>, o: OutletId) -> Option<Partial> {
    let shape = small_shape(model, o)?;
    let f = model.outlet_fact(o).ok()?;
    if let Some(k) = &f.konst {
        return Some(crate::dims::dims_of(k).ok()?.into_iter().map(Some).collect());
    }
    if let Some(p) = known.get(&o) {
        return Some(p.clone());
    }
    Some(vec![None; shape.iter().product()])
}

/// The known 1-D integer constant at `o`.
fn ints(model: &TypedModel, o: OutletId) -> Option<Vec<i64>> {
    let k = model.outlet_fact(o).ok()?.konst.clone()?;
    crate::dims::dims_of(&k).ok()?.iter().map(TDim::as_i64).collect()
}

/// What is known of the output of a node of `op_type` reading `inputs` and making `output` (its
/// integer attributes by name from `attr`), when some of its entries are known (and not all: a value
/// fully known is a constant already).
pub(super) fn propagate(
    model: &TypedModel,
    known: &HashMap<OutletId, Partial>,
    op_type: &str,
    attr: &dyn Fn(&str) -> Option<Vec<i64>>,
    inputs: &[OutletId],
    output: OutletId,
) -> Option<Partial> {
    let f = model.outlet_fact(output).ok()?;
    let out_shape = small_shape(model, output)?;
    if f.konst.is_some() {
        return None;
    }
    let input = *inputs.first()?;
    let out: Partial = match op_type {
        // A 1-D output of a Concat of 1-D inputs is along axis 0.
        "Concat" if out_shape.len() == 1 => {
            let mut all = vec![];
            for i in inputs {
                all.extend(entries(model, known, *i)?);
            }
            all
        }
        // The same entries in the same order.
        "Cast" | "Identity" | "Reshape" | "Squeeze" | "Unsqueeze" | "Flatten" => entries(model, known, input)?,
        "Transpose" => {
            let shape = small_shape(model, input)?;
            let perm: Vec<usize> = match attr("perm") {
                Some(p) => p.iter().map(|&a| usize::try_from(a).ok()).collect::<Option<_>>()?,
                None => (0..shape.len()).rev().collect(),
            };
            transposed(&entries(model, known, input)?, &shape, &perm)?
        }
        "Slice" => {
            let shape = small_shape(model, input)?;
            let starts = ints(model, *inputs.get(1)?)?;
            let ends = ints(model, *inputs.get(2)?)?;
            let axes = match inputs.get(3) {
                Some(a) => ints(model, *a)?,
                None => (0..starts.len() as i64).collect(),
            };
            let steps = match inputs.get(4) {
                Some(s) => ints(model, *s)?,
                None => vec![1; starts.len()],
            };
            sliced(&entries(model, known, input)?, &shape, &starts, &ends, &axes, &steps)?
        }
        _ => return None,
    };
    let len_agrees = out.len() == out_shape.iter().product::<usize>();
    (len_agrees && out.iter().any(Option::is_some)).then_some(out)
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The entries of `x` (of `shape`) with its axes permuted by `perm`.
fn transposed(x: &Partial, shape: &[usize], perm: &[usize]) -> Option<Partial> {
    if perm.len() != shape.len() || x.len() != shape.iter().product::<usize>() {
        return None;
    }
    let mut seen = vec![false; perm.len()];
    for &p in perm {
        if std::mem::replace(seen.get_mut(p)?, true) {
            return None;
        }
    }
    let in_strides = strides(shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let out_strides = strides(&out_shape);
    Some(
        (0..x.len())
            .map(|flat| {
                let offset: usize = perm
                    .iter()
                    .enumerate()
                    .map(|(axis, &p)| (flat / out_strides[axis] % out_shape[axis]) * in_strides[p])
                    .sum();
                x[offset].clone()
            })
            .collect(),
    )
}

/// The indices ONNX's `Slice` takes along an axis of length `d`.
fn slice_indices(d: usize, start: i64, end: i64, step: i64) -> Option<Vec<usize>> {
    let d = d as i128;
    let (start, end, step) = (start as i128, end as i128, step as i128);
    let from_end = |v: i128| if v < 0 { v + d } else { v };
    let mut out = vec![];
    if step > 0 {
        let (mut i, e) = (from_end(start).clamp(0, d), from_end(end).clamp(0, d));
        while i < e {
            out.push(i as usize);
            i += step;
        }
    } else if step < 0 {
        let (mut i, e) = (from_end(start).clamp(-1, d - 1), from_end(end).clamp(-1, d - 1));
        while i > e {
            out.push(i as usize);
            i += step;
        }
    } else {
        return None;
    }
    Some(out)
}

/// The entries of `x` (of `shape`) that ONNX's `Slice` keeps.
fn sliced(x: &Partial, shape: &[usize], starts: &[i64], ends: &[i64], axes: &[i64], steps: &[i64]) -> Option<Partial> {
    if starts.len() != ends.len() || starts.len() != axes.len() || starts.len() != steps.len() {
        return None;
    }
    let rank = shape.len() as i64;
    let mut kept: Vec<Vec<usize>> = shape.iter().map(|&d| (0..d).collect()).collect();
    for i in 0..starts.len() {
        let axis = if axes[i] < 0 { axes[i] + rank } else { axes[i] };
        let axis = usize::try_from(axis).ok().filter(|&a| a < shape.len())?;
        kept[axis] = slice_indices(shape[axis], starts[i], ends[i], steps[i])?;
    }
    let in_strides = strides(shape);
    let mut out = vec![];
    let total: usize = kept.iter().map(Vec::len).product();
    for flat in 0..total {
        let mut rest = flat;
        let mut offset = 0;
        for axis in (0..shape.len()).rev() {
            let n = kept[axis].len();
            offset += kept[axis][rest % n] * in_strides[axis];
            rest /= n;
        }
        out.push(x.get(offset)?.clone());
    }
    Some(out)
}

/// Replaces the fresh dims of the one-output node making `output` (a [`crate::ops::ParamOp`] whose
/// dims no rule could compute) with those `known` gives; nothing when none does.
fn refine(model: &mut TypedModel, output: OutletId, known: impl Fn(usize) -> Option<TDim>) -> TractResult<()> {
    let node = &model.nodes[output.node];
    let Some(op) = node.op_as::<crate::ops::ParamOp>() else { return Ok(()) };
    if !op.fresh || op.facts.len() != 1 || !node.outputs[0].successors.is_empty() {
        return Ok(());
    }
    let mut fact = op.facts[0].clone();
    let (mut changed, mut still_fresh) = (false, false);
    let mut dims: TVec<TDim> = fact.shape.to_tvec();
    for (axis, d) in dims.iter_mut().enumerate() {
        if let TDim::Sym(_) = d {
            match known(axis) {
                Some(k) => {
                    *d = k;
                    changed = true;
                }
                None => still_fresh = true,
            }
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

/// A `Resize` whose output dims are fresh symbols (its `sizes` known only at run time) with the entries
/// of `sizes` that are known put in their place; `sizes` is the node's input `sizes_input`.
pub(super) fn refine_resize(
    model: &mut TypedModel,
    known: &HashMap<OutletId, Partial>,
    output: OutletId,
    sizes_input: usize,
) -> TractResult<()> {
    let node = &model.nodes[output.node];
    let Some(sizes) = node.inputs.get(sizes_input).and_then(|i| entries(model, known, *i)) else { return Ok(()) };
    if sizes.len() != node.outputs[0].fact.rank() {
        return Ok(());
    }
    refine(model, output, |axis| sizes[axis].clone())
}

/// A `Pad` (of all axes: no `axes` input) whose output dims are fresh symbols (its `pads` known only
/// at run time): an axis whose two pads are known is its input dim plus them.
pub(super) fn refine_pad(
    model: &mut TypedModel,
    known: &HashMap<OutletId, Partial>,
    output: OutletId,
) -> TractResult<()> {
    let node = &model.nodes[output.node];
    let (Some(data), Some(pads)) = (node.inputs.first(), node.inputs.get(1)) else { return Ok(()) };
    let Some(pads) = entries(model, known, *pads) else { return Ok(()) };
    let input = model.outlet_fact(*data)?.shape.to_tvec();
    let rank = input.len();
    if pads.len() != 2 * rank || node.outputs[0].fact.rank() != rank {
        return Ok(());
    }
    refine(model, output, |axis| {
        let dim = input[axis].clone() + pads[axis].clone()? + pads[axis + rank].clone()?;
        let dim = dim.simplify();
        // A negative size would be the run's error to report, not a dim.
        (dim.as_i64().is_none_or(|v| v >= 0)).then_some(dim)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(values: &[Option<i64>]) -> Partial {
        values.iter().map(|v| v.map(TDim::Val)).collect()
    }

    #[test]
    fn slices_follow_onnx() {
        assert_eq!(slice_indices(3, -1, i64::MIN + 1, -1), Some(vec![2, 1, 0]));
        assert_eq!(slice_indices(5, 1, i64::MAX, 2), Some(vec![1, 3]));
        assert_eq!(slice_indices(5, -2, -100, -1), Some(vec![3, 2, 1, 0]));
        assert_eq!(slice_indices(5, 4, 2, 1), Some(vec![]));
        assert_eq!(slice_indices(5, 0, 5, 0), None);
    }

    #[test]
    fn torchvision_pads_keep_their_known_entries() {
        // [0, ?, 0, ?, 0, 0] as [3, 2], rows reversed, transposed: [0, 0, 0, 0, ?, ?].
        let v = known(&[Some(0), None, Some(0), None, Some(0), Some(0)]);
        let rev = sliced(&v, &[3, 2], &[-1], &[i64::MIN + 1], &[0], &[-1]).unwrap();
        assert_eq!(rev, known(&[Some(0), Some(0), Some(0), None, Some(0), None]));
        let t = transposed(&rev, &[3, 2], &[1, 0]).unwrap();
        assert_eq!(t, known(&[Some(0), Some(0), Some(0), Some(0), None, None]));
        assert_eq!(transposed(&v, &[3, 2], &[0, 0]), None);
    }
}
