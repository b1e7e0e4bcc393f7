//! ONNX `Unique` (opset 11): the distinct elements of a tensor, or its distinct slices along `axis`.
//!
//! Outputs, each optional: `Y` (the distinct values or slices), `indices` (where each first occurs),
//! `inverse_indices` (for each element or slice of the input, its position in `Y`) and `counts`.
//! With `sorted` (the default) `Y` is in ascending order (slices compared element by element),
//! otherwise in order of first occurrence. Values compare as numpy's `unique` does: `-0.0` equals
//! `0.0`, NaNs equal each other and sort last.
//!
//! How many distinct values there are is known only when the node runs: that length is a symbol of
//! the node's own (`{node}_{axis}`), bound then; every other dim is exact.

use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use std::cmp::Ordering;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The Unique builder.
pub(crate) fn unique(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 1 || node.input[0].is_empty() {
        return Err(label.err("Unique takes one input"));
    }
    if node.output.len() > 4 {
        return Err(
            label.err(format!("{} outputs: Unique has four (Y, indices, inverse_indices, counts)", node.output.len()))
        );
    }
    let mut present = [false; 4];
    for (p, name) in present.iter_mut().zip(&node.output) {
        *p = !name.is_empty();
    }
    let axis = crate::node::attrs::int(&label, node, "axis")?;
    let sorted = crate::node::attrs::int(&label, node, "sorted")?.unwrap_or(1) != 0;
    let outputs = present.iter().filter(|p| **p).count();
    Expanded::new("Unique", Spec { label, axis, sorted, present }, 1, rules, wire).with_outputs(outputs).built()
}

/// The node's attributes and which outputs it has.
#[derive(Debug, Clone)]
struct Spec {
    label: Label,
    axis: Option<i64>,
    sorted: bool,
    present: [bool; 4],
}

impl Spec {
    /// The ONNX output (0 to 3) of each of the node's outputs.
    fn kinds(&self) -> Vec<usize> {
        (0..4).filter(|&k| self.present[k]).collect()
    }
}

fn rules<'r>(spec: &'r Spec, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    for (o, kind) in spec.kinds().into_iter().enumerate() {
        if kind == 0 {
            s.equals(&outputs[o].datum_type, &inputs[0].datum_type)?;
            if spec.axis.is_some() {
                s.equals(&outputs[o].rank, &inputs[0].rank)?;
            } else {
                s.equals(&outputs[o].rank, 1)?;
            }
        } else {
            s.equals(&outputs[o].datum_type, i64::datum_type())?;
            s.equals(&outputs[o].rank, 1)?;
        }
    }
    Ok(())
}

fn wire(spec: &Spec, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let x = model.outlet_fact(inputs[0])?.clone();
    let axis = match spec.axis {
        None => None,
        Some(a) => {
            let r = x.rank() as i64;
            if a < -r || a >= r {
                return Err(spec.label.err(format!("axis {a} is out of range for rank {r}")));
            }
            Some(if a < 0 { a + r } else { a } as usize)
        }
    };
    let len = model.symbols.new_with_prefix(&format!("{prefix}_{}", axis.unwrap_or(0)));
    let op = Unique { label: spec.label.clone(), axis, sorted: spec.sorted, kinds: spec.kinds(), len };
    model.wire_node(prefix, op, inputs)
}

/// `Unique` over a known axis (or the flattened input), its outputs the ONNX outputs `kinds`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Unique {
    /// The node, for errors.
    pub label: Label,
    /// The axis whose slices are compared, `None` for single elements of the flattened input.
    pub axis: Option<usize>,
    /// Ascending order (else order of first occurrence).
    pub sorted: bool,
    /// The ONNX output (0 `Y`, 1 `indices`, 2 `inverse_indices`, 3 `counts`) of each output.
    pub kinds: Vec<usize>,
    /// The number of distinct values or slices, known when the node runs.
    pub len: Symbol,
}

impl Op for Unique {
    fn name(&self) -> StaticName {
        "Unique".into()
    }

    fn mints_runtime_symbols(&self) -> bool {
        true
    }

    op_as_typed_op!();
}

impl TypedOp for Unique {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs[0];
        let u = TDim::Sym(self.len.clone());
        let n = match self.axis {
            Some(a) => x.shape[a].clone(),
            None => x.shape.volume(),
        };
        self.kinds
            .iter()
            .map(|&kind| {
                Ok(match kind {
                    0 => match self.axis {
                        Some(a) => {
                            let mut shape = x.shape.to_tvec();
                            shape[a] = u.clone();
                            x.datum_type.fact(&*shape)
                        }
                        None => x.datum_type.fact([u.clone()]),
                    },
                    2 => i64::fact([n.clone()]),
                    _ => i64::fact([u.clone()]),
                })
            })
            .collect()
    }
}

/// numpy's order for `unique`: NaN (the value not equal to itself) after every number, NaNs equal.
fn compare<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    a.partial_cmp(b).unwrap_or_else(|| {
        let (a_nan, b_nan) = (a.partial_cmp(a).is_none(), b.partial_cmp(b).is_none());
        a_nan.cmp(&b_nan)
    })
}

/// The distinct slices of `data` (`n` slices of `len` values each, slice `i` gathered by `at(i, j)`),
/// as `(first occurrence, count)` per distinct slice in output order, and each slice's position.
fn distinct<T: PartialOrd + Copy>(
    n: usize,
    len: usize,
    at: impl Fn(usize, usize) -> T,
    sorted: bool,
) -> (Vec<(usize, usize)>, Vec<usize>) {
    let cmp = |a: &usize, b: &usize| (0..len).map(|j| compare(&at(*a, j), &at(*b, j))).find(|o| o.is_ne());
    let mut order: Vec<usize> = (0..n).collect();
    // Stable: within a run of equal slices, the first occurrence comes first.
    order.sort_by(|a, b| cmp(a, b).unwrap_or(Ordering::Equal));
    let mut groups: Vec<(usize, usize)> = vec![];
    let mut group_of = vec![0usize; n];
    for (k, &i) in order.iter().enumerate() {
        let new = k == 0 || cmp(&order[k - 1], &i).is_some();
        if new {
            groups.push((i, 0));
        }
        let g = groups.len() - 1;
        groups[g].1 += 1;
        group_of[i] = g;
    }
    if !sorted {
        let mut by_first: Vec<usize> = (0..groups.len()).collect();
        by_first.sort_by_key(|&g| groups[g].0);
        let mut rank = vec![0usize; groups.len()];
        for (r, &g) in by_first.iter().enumerate() {
            rank[g] = r;
        }
        groups = by_first.iter().map(|&g| groups[g]).collect();
        for g in &mut group_of {
            *g = rank[*g];
        }
    }
    (groups, group_of)
}

impl Unique {
    fn eval_t<T: Datum + PartialOrd + Copy>(&self, x: &Tensor) -> TractResult<TVec<TValue>> {
        let values = x.try_as_plain_ram()?.as_slice::<T>()?;
        let shape = x.shape();
        // Slice i, element j: with an axis, the j-th element (row-major over the other axes) of the
        // sub-tensor at index i of the axis.
        let (n, len, outer, inner) = match self.axis {
            Some(a) => {
                let outer: usize = shape[..a].iter().product();
                let inner: usize = shape[a + 1..].iter().product();
                (shape[a], outer * inner, outer, inner)
            }
            None => (values.len(), 1, 1, 1),
        };
        let at = |i: usize, j: usize| match self.axis {
            Some(_) => values[(j / inner) * n * inner + i * inner + j % inner],
            None => values[i],
        };
        let (groups, group_of) = distinct(n, len, at, self.sorted);
        let u = groups.len();
        let as_i64 = |v: usize| i64::try_from(v).map_err(|_| self.label.err("an index does not fit in int64"));
        let ints = |v: Vec<i64>| -> TractResult<TValue> { Ok(tensor1(&v).into_tvalue()) };
        let mut out = tvec![];
        for &kind in &self.kinds {
            out.push(match kind {
                0 => {
                    let mut y_shape: TVec<usize> = shape.into();
                    let data: Vec<T> = match self.axis {
                        Some(a) => {
                            y_shape[a] = u;
                            let mut data = Vec::with_capacity(outer * u * inner);
                            for o in 0..outer {
                                for &(first, _) in &groups {
                                    let start = o * n * inner + first * inner;
                                    data.extend_from_slice(&values[start..start + inner]);
                                }
                            }
                            data
                        }
                        None => {
                            y_shape = tvec![u];
                            groups.iter().map(|&(first, _)| values[first]).collect()
                        }
                    };
                    tract_ndarray::ArrayD::from_shape_vec(&*y_shape, data)?.into_tvalue()
                }
                1 => ints(groups.iter().map(|&(first, _)| as_i64(first)).collect::<TractResult<_>>()?)?,
                2 => ints(group_of.iter().map(|&g| as_i64(g)).collect::<TractResult<_>>()?)?,
                _ => ints(groups.iter().map(|&(_, count)| as_i64(count)).collect::<TractResult<_>>()?)?,
            });
        }
        Ok(out)
    }
}

impl EvalOp for Unique {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = &inputs[0];
        let dt = x.datum_type();
        if dt.is_quantized() || !(dt.is_number() || dt == bool::datum_type()) {
            return Err(self.label.err(format!("{dt:?} elements are not supported")));
        }
        dispatch_copy!(Self::eval_t(dt)(self, x))
    }
}
