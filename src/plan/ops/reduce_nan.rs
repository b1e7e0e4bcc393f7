//! [`NanReduce`]: `ReduceMax` and `ReduceMin` of float tensors that keep NaN, in place of tract's
//! `Reduce<Max>` / `Reduce<Min>`.
//!
//! ONNX's definition is numpy's `maximum.reduce`: NaN when the reduced values hold one, as
//! onnxruntime computes it. tract's float32 kernel (`maxps`, which returns its second operand when
//! either is NaN) dropped a NaN in a row's first position, and its fold for other layouts and types
//! kept a NaN only in the last one. Here each output value is the greatest (least) of its values
//! compared with `>` (`<`), NaN if any of them is: every other result is the value tract picks (the
//! sign of a zero among equal zeros aside, which neither definition fixes). An empty reduction
//! (an axis of length 0) stays tract's.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::nn::{Reduce, Reducer};

/// tract's `Reduce<Max>` or `Reduce<Min>` on floats, with NaN kept.
#[derive(Debug, Clone)]
pub(crate) struct NanReduce {
    /// tract's op: its facts, and the empty reductions.
    stock: Reduce,
    /// Max (else min).
    max: bool,
}

impl NanReduce {
    /// Our op for `stock` over `fact`, when it is a max or min of floats.
    pub(crate) fn replacing(stock: &Reduce, fact: &TypedFact) -> Option<NanReduce> {
        let max = match stock.reducer {
            Reducer::Max => true,
            Reducer::Min => false,
            _ => return None,
        };
        let floats = matches!(fact.datum_type, DatumType::F16 | DatumType::F32 | DatumType::F64);
        floats.then(|| NanReduce { stock: stock.clone(), max })
    }
}

impl PartialEq for NanReduce {
    fn eq(&self, other: &NanReduce) -> bool {
        self.max == other.max && self.stock.axes == other.stock.axes
    }
}

impl Eq for NanReduce {}

impl Op for NanReduce {
    fn name(&self) -> StaticName {
        if self.max { "NanReduceMax" } else { "NanReduceMin" }.into()
    }

    op_as_typed_op!();
}

impl TypedOp for NanReduce {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }

    as_op!();
}

impl EvalOp for NanReduce {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let dt = input.datum_type();
        let axes = &self.stock.axes;
        let empty = axes.iter().any(|&a| input.shape().get(a) == Some(&0));
        if empty || axes.iter().any(|&a| a >= input.rank()) || !dt.is_float() {
            return self.stock.eval(ctx, tvec!(input));
        }
        let out = if dt == DatumType::F32 {
            reduce::<f32>(&input, axes, self.max)?
        } else {
            // float16 and float64 through float64: a max or min only picks values, so exactly.
            let wide = input.cast_to::<f64>()?;
            reduce::<f64>(&wide, axes, self.max)?.cast_to_dt(dt)?.into_owned()
        };
        Ok(tvec!(out.into_tvalue()))
    }
}

/// The float operations the reduction needs.
trait Float: Datum + Copy + PartialOrd {
    fn is_nan(self) -> bool;
}

impl Float for f32 {
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl Float for f64 {
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

/// The max (min) of `input` over `axes` (sorted, each of length > 0), axes kept with length 1.
fn reduce<T: Float>(input: &Tensor, axes: &[usize], max: bool) -> TractResult<Tensor> {
    let shape = input.shape();
    let out_shape: Vec<usize> = shape.iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect();
    let consecutive = axes.windows(2).all(|w| w[1] == w[0] + 1);
    let view = input.to_plain_array_view::<T>()?;
    let (values, first) = if consecutive && view.is_standard_layout() {
        (None, axes[0])
    } else {
        // The reduced axes moved last, in a copy: one row per output value.
        let mut order: Vec<usize> = (0..shape.len()).filter(|i| !axes.contains(i)).collect();
        order.extend_from_slice(axes);
        let moved = view.permuted_axes(order).as_standard_layout().into_owned();
        (Some(moved.into_raw_vec_and_offset().0), shape.len() - axes.len())
    };
    let plain;
    let data: &[T] = match &values {
        Some(v) => v,
        None => {
            plain = input.try_as_plain_ram()?;
            plain.as_slice::<T>()?
        }
    };
    let dims: Vec<usize> = match &values {
        Some(_) => {
            let mut d: Vec<usize> = (0..shape.len()).filter(|i| !axes.contains(i)).map(|i| shape[i]).collect();
            d.extend(axes.iter().map(|&a| shape[a]));
            d
        }
        None => shape.to_vec(),
    };
    let last = first + axes.len();
    let outer: usize = dims[..first].iter().product();
    let reduced: usize = dims[first..last].iter().product();
    let inner: usize = dims[last..].iter().product();
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        let block = &data[o * reduced * inner..(o + 1) * reduced * inner];
        if inner == 1 {
            out.push(extremum(block, max));
        } else {
            let mut acc = block[..inner].to_vec();
            let mut nan: Vec<bool> = acc.iter().map(|v| v.is_nan()).collect();
            for row in block.chunks_exact(inner).skip(1) {
                for ((a, n), &v) in acc.iter_mut().zip(nan.iter_mut()).zip(row) {
                    if if max { v > *a } else { v < *a } {
                        *a = v;
                    }
                    *n |= v.is_nan();
                }
            }
            out.extend(acc.iter().zip(&nan).map(|(&a, &n)| if n { nan_of(block) } else { a }));
        }
    }
    Ok(tract_ndarray::ArrayD::from_shape_vec(out_shape, out)?.into_tensor())
}

/// A NaN of `values` (which hold one where this is called).
fn nan_of<T: Float>(values: &[T]) -> T {
    values.iter().copied().find(|v| v.is_nan()).unwrap_or(values[0])
}

/// The greatest (`max`) or least value of `row` (not empty), NaN if it holds one: eight running
/// values side by side (a loop the compiler vectorizes), then the rest.
fn extremum<T: Float>(row: &[T], max: bool) -> T {
    let better = |v: T, acc: T| if max { v > acc } else { v < acc };
    let mut lanes = [row[0]; 8];
    let mut nan = [false; 8];
    let chunks = row.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for i in 0..8 {
            let v = chunk[i];
            if better(v, lanes[i]) {
                lanes[i] = v;
            }
            nan[i] |= v.is_nan();
        }
    }
    let mut acc = row[0];
    let mut any_nan = acc.is_nan() || nan.iter().any(|&n| n);
    for &v in lanes.iter().chain(rest) {
        if better(v, acc) {
            acc = v;
        }
        any_nan |= v.is_nan();
    }
    if any_nan {
        nan_of(row)
    } else {
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: &NanReduce, t: Tensor) -> Tensor {
        let out = op.eval(&EvalContext::out_of_plan(), tvec!(t.into_tvalue())).unwrap();
        out[0].clone().into_tensor()
    }

    fn op(axes: &[usize], reducer: Reducer) -> NanReduce {
        let stock = Reduce { axes: axes.into(), reducer };
        NanReduce::replacing(&stock, &f32::fact([1])).unwrap()
    }

    fn values(t: &Tensor) -> Vec<f32> {
        t.cast_to::<f32>().unwrap().try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
    }

    #[test]
    fn nan_anywhere_in_a_row_gives_nan_and_other_rows_their_extremum() {
        let n = f32::NAN;
        let rows = [
            [n, 1.0, 2.0, -1.0],
            [1.0, n, 2.0, -1.0],
            [1.0, 2.0, -1.0, n],
            [1.0, 5.0, -7.0, 2.0],
            [f32::NEG_INFINITY; 4],
        ];
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        let x = tract_ndarray::ArrayD::from_shape_vec(vec![5, 4], flat.clone()).unwrap().into_tensor();
        let xt =
            tract_ndarray::ArrayD::from_shape_vec(vec![4, 5], (0..20).map(|i| flat[(i % 5) * 4 + i / 5]).collect())
                .unwrap()
                .into_tensor();
        for (reducer, want) in
            [(Reducer::Max, [n, n, n, 5.0, f32::NEG_INFINITY]), (Reducer::Min, [n, n, n, -7.0, f32::NEG_INFINITY])]
        {
            // Rows contiguous, and the same values down the columns of the transposed tensor.
            for (t, axis, shape) in [(x.clone(), 1, [5, 1]), (xt.clone(), 0, [1, 5])] {
                let got = run(&op(&[axis], reducer), t.clone());
                assert_eq!(got.shape(), shape);
                let got = values(&got);
                for (g, w) in got.iter().zip(want) {
                    assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{reducer:?} {got:?}");
                }
                // Float64 and float16 the same.
                for dt in [DatumType::F64, DatumType::F16] {
                    let wide = run(&op(&[axis], reducer), t.cast_to_dt(dt).unwrap().into_owned());
                    assert_eq!(wide.datum_type(), dt);
                    let wide = values(&wide);
                    for (g, w) in wide.iter().zip(want) {
                        assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{dt:?} {wide:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn axes_apart_and_all_axes() {
        // [2, 3, 2] over axes 0 and 2: the values of each middle index.
        let v: Vec<f32> = (0..12).map(|i| ((i * 7) % 12) as f32 - 5.0).collect();
        let x = tract_ndarray::ArrayD::from_shape_vec(vec![2, 3, 2], v.clone()).unwrap().into_tensor();
        let got = run(&op(&[0, 2], Reducer::Max), x.clone());
        assert_eq!(got.shape(), [1, 3, 1]);
        let want: Vec<f32> = (0..3)
            .map(|j| [v[j * 2], v[j * 2 + 1], v[6 + j * 2], v[6 + j * 2 + 1]].into_iter().fold(f32::MIN, f32::max))
            .collect();
        assert_eq!(values(&got), want);
        let got = run(&op(&[0, 1, 2], Reducer::Min), x);
        assert_eq!(values(&got), [-5.0]);
    }
}
