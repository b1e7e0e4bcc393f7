//! [`RowScatter`]: ONNX's `ScatterElements` in the plan, over plain slices, row by row.
//!
//! tract's op walks the updates with ndarray's `indexed_iter`, building and indexing a coordinate
//! vector for every element (torchvision's `MultiScaleRoIAlign` scatters 12.5 M floats per Faster
//! R-CNN run: 230 ms there, onnxruntime 93 ms), and panics on an index out of range. Here the updates
//! are read in order, a row (the last axis) at a time, each element's place in the data computed
//! from the row's offset, its index and the axis stride; an index out of range is an error that
//! names it. The elements are applied in the order of the updates, as tract and onnxruntime apply
//! them: with repeated indices and no reduction, the last one wins.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::array::{ScatterElements, ScatterReduction};

/// `ScatterElements` over the plain element types (booleans, integers, floats); other types, and
/// reductions over types other than float32/64 and int32/64, run tract's op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RowScatter {
    /// tract's op: the axis and the reduction, its output facts, and the types run as tract runs them.
    pub stock: ScatterElements,
}

/// An index outside `[-len, len)` on the scatter axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OutOfRange {
    index: i64,
    len: usize,
}

/// How a value already in the data and an update combine, for the reductions of ONNX's
/// `ScatterElements`: integers wrap (onnxruntime's arithmetic), and `min`/`max` keep the data's value
/// unless the update compares below/above it (a NaN update leaves it, as onnxruntime's `std::min`).
trait Combine: Copy + PartialOrd {
    fn add(self, other: Self) -> Self;
    fn mul(self, other: Self) -> Self;
}

macro_rules! combine_float {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn add(self, other: Self) -> Self { self + other }
            fn mul(self, other: Self) -> Self { self * other }
        }
    )*};
}
macro_rules! combine_int {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
            fn mul(self, other: Self) -> Self { self.wrapping_mul(other) }
        }
    )*};
}
combine_float!(f32, f64);
combine_int!(i32, i64);

/// The position `index` names on an axis of `len`, counting from the end when negative.
#[inline]
fn place(index: i64, len: usize) -> Result<usize, OutOfRange> {
    let len_i = len as i64; // a dim of a tensor in memory: below isize::MAX
    let p = if index < 0 { index + len_i } else { index };
    if (0..len_i).contains(&p) {
        Ok(p as usize)
    } else {
        Err(OutOfRange { index, len })
    }
}

/// Applies `updates` (of `shape`, the indices' shape too) to `data` (of `data_shape`, the same rank,
/// every dim but `axis`'s at least the updates') along `axis`: the element of `data` at the update's
/// own coordinates, `indices[i]` in place of its `axis` coordinate, becomes `apply(old, update)`.
fn scatter<T: Copy, I: Copy + Into<i64>>(
    data: &mut [T],
    data_shape: &[usize],
    indices: &[I],
    updates: &[T],
    shape: &[usize],
    axis: usize,
    apply: impl Fn(&mut T, T),
) -> Result<(), OutOfRange> {
    let rank = shape.len();
    let Some(&inner) = shape.last() else { return Ok(()) };
    if updates.is_empty() || inner == 0 {
        return Ok(());
    }
    let mut strides = vec![1usize; rank];
    for k in (0..rank - 1).rev() {
        strides[k] = strides[k + 1] * data_shape[k + 1];
    }
    let (axis_len, axis_stride) = (data_shape[axis], strides[axis]);
    // The coordinates of the row being applied on every axis but the last, and its offset in the
    // data without the scatter axis's part.
    let mut outer = vec![0usize; rank - 1];
    let mut base = 0usize;
    for (row, (idx, upd)) in indices.chunks_exact(inner).zip(updates.chunks_exact(inner)).enumerate() {
        if row > 0 {
            // The next row: an odometer over the outer axes, the offset following it.
            for k in (0..rank - 1).rev() {
                let stride = if k == axis { 0 } else { strides[k] };
                outer[k] += 1;
                base += stride;
                if outer[k] < shape[k] {
                    break;
                }
                base -= outer[k] * stride;
                outer[k] = 0;
            }
        }
        if axis == rank - 1 {
            let target = &mut data[base..base + axis_len];
            for (&i, &v) in idx.iter().zip(upd) {
                apply(&mut target[place(i.into(), axis_len)?], v);
            }
        } else {
            for (j, (&i, &v)) in idx.iter().zip(upd).enumerate() {
                apply(&mut data[base + place(i.into(), axis_len)? * axis_stride + j], v);
            }
        }
    }
    Ok(())
}

impl RowScatter {
    /// Scatters into a copy of `data` (none when the plan hands it over) with elements of type `T`,
    /// each update applied to its place by `apply`.
    fn run<T: Datum + Copy>(
        &self,
        data: TValue,
        indices: &Tensor,
        updates: &Tensor,
        apply: impl Fn(&mut T, T) + Copy,
    ) -> TractResult<TValue> {
        let mut data = data.into_tensor();
        let data_shape: TVec<usize> = data.shape().into();
        let axis = self.stock.axis;
        let mut out = data.try_as_plain_ram_mut()?;
        let target = out.as_slice_mut::<T>()?;
        let plain = updates.try_as_plain_ram()?;
        let values = plain.as_slice::<T>()?;
        let (shape, plain_indices) = (updates.shape(), indices.try_as_plain_ram()?);
        let done = match indices.datum_type() {
            DatumType::I64 => {
                scatter(target, &data_shape, plain_indices.as_slice::<i64>()?, values, shape, axis, apply)
            }
            _ => scatter(target, &data_shape, plain_indices.as_slice::<i32>()?, values, shape, axis, apply),
        };
        done.map_err(|e| out_of_range(e, axis))?;
        Ok(data.into_tvalue())
    }

    /// [`RowScatter::run`] writing each update in place.
    fn run_write<T: Datum + Copy>(&self, data: TValue, indices: &Tensor, updates: &Tensor) -> TractResult<TValue> {
        self.run(data, indices, updates, |d: &mut T, v: T| *d = v)
    }

    /// [`RowScatter::run`] combining each update with the value in place by the op's reduction.
    fn run_reduce<T: Datum + Combine>(&self, data: TValue, indices: &Tensor, updates: &Tensor) -> TractResult<TValue> {
        let reduction = self.stock.reduction;
        self.run(data, indices, updates, move |d: &mut T, v: T| match reduction {
            ScatterReduction::None => *d = v,
            ScatterReduction::Add => *d = d.add(v),
            ScatterReduction::Mul => *d = d.mul(v),
            ScatterReduction::Min => {
                if v < *d {
                    *d = v
                }
            }
            ScatterReduction::Max => {
                if v > *d {
                    *d = v
                }
            }
        })
    }
}

fn out_of_range(e: OutOfRange, axis: usize) -> TractError {
    format_err!(
        "index {} is out of range for axis {axis} of size {} (allowed: -{1} to {})",
        e.index,
        e.len,
        e.len as i64 - 1
    )
}

impl Op for RowScatter {
    fn name(&self) -> StaticName {
        "RowScatter".into()
    }

    op_as_typed_op!();
}

impl EvalOp for RowScatter {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(inputs.len() == 3, "ScatterElements takes data, indices and updates, got {} inputs", inputs.len());
        let (dt, it) = (inputs[0].datum_type(), inputs[1].datum_type());
        ensure!(
            inputs[2].datum_type() == dt,
            "data and updates must have the same type, got {dt:?} and {:?}",
            inputs[2].datum_type()
        );
        ensure!(matches!(it, DatumType::I64 | DatumType::I32), "indices must be int32 or int64, got {it:?}");
        let (ds, is, us) = (inputs[0].shape(), inputs[1].shape(), inputs[2].shape());
        let axis = self.stock.axis;
        ensure!(
            ds.len() == is.len() && is == us && axis < ds.len(),
            "data {ds:?}, indices {is:?} and updates {us:?} must have the same rank, indices and updates the same \
             shape, with axis {axis} among them"
        );
        if let Some(k) = (0..ds.len()).find(|&k| k != axis && us[k] > ds[k]) {
            bail!("updates {us:?} are larger than data {ds:?} on axis {k}");
        }
        let mut inputs = inputs;
        let updates = inputs.pop().unwrap_or_else(|| unreachable!("three inputs"));
        let indices = inputs.pop().unwrap_or_else(|| unreachable!("three inputs"));
        let data = inputs.pop().unwrap_or_else(|| unreachable!("three inputs"));
        let out = match (self.stock.reduction, dt) {
            (ScatterReduction::None, DatumType::Bool) => self.run_write::<bool>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::U8) => self.run_write::<u8>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::I8) => self.run_write::<i8>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::U16) => self.run_write::<u16>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::I16) => self.run_write::<i16>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::F16) => self.run_write::<f16>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::U32) => self.run_write::<u32>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::I32) => self.run_write::<i32>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::F32) => self.run_write::<f32>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::U64) => self.run_write::<u64>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::I64) => self.run_write::<i64>(data, &indices, &updates)?,
            (ScatterReduction::None, DatumType::F64) => self.run_write::<f64>(data, &indices, &updates)?,
            (_, DatumType::F32) => self.run_reduce::<f32>(data, &indices, &updates)?,
            (_, DatumType::F64) => self.run_reduce::<f64>(data, &indices, &updates)?,
            (_, DatumType::I32) => self.run_reduce::<i32>(data, &indices, &updates)?,
            (_, DatumType::I64) => self.run_reduce::<i64>(data, &indices, &updates)?,
            _ => return self.stock.eval(ctx, tvec![data, indices, updates]),
        };
        Ok(tvec![out])
    }
}

impl TypedOp for RowScatter {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::prelude::tract_ndarray::{ArrayD, Dimension, IxDyn};

    /// The definition, element by element through ndarray's coordinates.
    fn reference(
        data: &ArrayD<f32>,
        indices: &ArrayD<i64>,
        updates: &ArrayD<f32>,
        axis: usize,
        r: ScatterReduction,
    ) -> ArrayD<f32> {
        let mut out = data.clone();
        for (coords, &u) in updates.indexed_iter() {
            let mut at = coords.as_array_view().to_vec();
            let i = indices[&coords];
            at[axis] = if i < 0 { (i + data.shape()[axis] as i64) as usize } else { i as usize };
            let d = &mut out[IxDyn(&at)];
            *d = match r {
                ScatterReduction::None => u,
                ScatterReduction::Add => *d + u,
                ScatterReduction::Mul => *d * u,
                ScatterReduction::Min => {
                    if u < *d {
                        u
                    } else {
                        *d
                    }
                }
                ScatterReduction::Max => {
                    if u > *d {
                        u
                    } else {
                        *d
                    }
                }
            };
        }
        out
    }

    fn eval(axis: usize, reduction: ScatterReduction, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let op = RowScatter { stock: ScatterElements::new(axis, reduction) };
        Ok(op.eval_out_of_plan(inputs)?.expect("evaluated out of a plan").remove(0).into_tensor())
    }

    #[test]
    fn scatters_as_the_definition_on_every_axis_with_negative_and_repeated_indices() -> TractResult<()> {
        let mut seed = 11u64;
        let mut next = move |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let cases: [(&[usize], &[usize]); 5] = [
            (&[7], &[4]),
            (&[5, 6], &[3, 4]),
            (&[4, 3, 5], &[4, 2, 5]),
            (&[3, 4, 2, 5], &[2, 4, 2, 3]),
            (&[6, 1, 7], &[6, 1, 7]),
        ];
        for (data_shape, shape) in cases {
            for axis in 0..shape.len() {
                for r in [
                    ScatterReduction::None,
                    ScatterReduction::Add,
                    ScatterReduction::Mul,
                    ScatterReduction::Min,
                    ScatterReduction::Max,
                ] {
                    let len = data_shape[axis] as u64;
                    let count: usize = shape.iter().product();
                    let data = ArrayD::from_shape_fn(IxDyn(data_shape), |_| next(100) as f32 / 8.0 - 6.0);
                    let updates = ArrayD::from_shape_fn(IxDyn(shape), |_| next(100) as f32 / 8.0 - 6.0);
                    // indices from -len to len-1, repeats likely
                    let indices = ArrayD::from_shape_vec(
                        IxDyn(shape),
                        (0..count).map(|_| next(2 * len) as i64 - len as i64).collect(),
                    )?;
                    let want = reference(&data, &indices, &updates, axis, r);
                    let got = eval(
                        axis,
                        r,
                        tvec![data.clone().into_tvalue(), indices.clone().into_tvalue(), updates.clone().into_tvalue()],
                    )?;
                    assert_eq!(
                        got.to_plain_array_view::<f32>()?,
                        want.view(),
                        "{data_shape:?} {shape:?} axis {axis} {r:?}"
                    );
                    // int32 indices give the same
                    let narrow = indices.mapv(|i| i as i32);
                    let got = eval(axis, r, tvec![data.into_tvalue(), narrow.into_tvalue(), updates.into_tvalue()])?;
                    assert_eq!(got.to_plain_array_view::<f32>()?, want.view());
                }
            }
        }
        Ok(())
    }

    #[test]
    fn other_types_and_empty_updates() -> TractResult<()> {
        let data = tensor2(&[[1i64, 2, 3], [4, 5, 6]]);
        let got = eval(
            1,
            ScatterReduction::None,
            tvec![data.clone().into(), tensor2(&[[2i64], [-3]]).into(), tensor2(&[[9i64], [8]]).into()],
        )?;
        assert_eq!(got, tensor2(&[[1i64, 2, 9], [8, 5, 6]]));
        let got = eval(
            0,
            ScatterReduction::Add,
            tvec![data.clone().into(), tensor2(&[[1i64, 1, 1]]).into(), tensor2(&[[i64::MAX, 1, 1]]).into()],
        )?;
        // integers wrap, as onnxruntime adds them
        assert_eq!(got, tensor2(&[[1i64, 2, 3], [i64::MIN + 3, 6, 7]]));
        let flags = tensor1(&[false, false, false]);
        let got = eval(
            0,
            ScatterReduction::None,
            tvec![flags.into(), tensor1(&[2i32, 0]).into(), tensor1(&[true, true]).into()],
        )?;
        assert_eq!(got, tensor1(&[true, false, true]));
        let empty = Tensor::zero::<f32>(&[0, 3])?;
        let got = eval(
            0,
            ScatterReduction::None,
            tvec![tensor2(&[[1f32, 2., 3.]]).into(), Tensor::zero::<i64>(&[0, 3])?.into(), empty.into()],
        )?;
        assert_eq!(got, tensor2(&[[1f32, 2., 3.]]));
        Ok(())
    }

    #[test]
    fn an_index_out_of_range_or_shapes_that_do_not_fit_are_errors() {
        let data = || tensor2(&[[1f32, 2., 3.], [4., 5., 6.]]).into_tvalue();
        let err = eval(1, ScatterReduction::None, tvec![data(), tensor2(&[[3i64]]).into(), tensor2(&[[0f32]]).into()])
            .unwrap_err();
        assert_eq!(err.to_string(), "index 3 is out of range for axis 1 of size 3 (allowed: -3 to 2)");
        let err = eval(0, ScatterReduction::None, tvec![data(), tensor2(&[[-3i64]]).into(), tensor2(&[[0f32]]).into()])
            .unwrap_err();
        assert_eq!(err.to_string(), "index -3 is out of range for axis 0 of size 2 (allowed: -2 to 1)");
        let err =
            eval(0, ScatterReduction::None, tvec![data(), tensor2(&[[0i64; 4]]).into(), tensor2(&[[0f32; 4]]).into()])
                .unwrap_err();
        assert_eq!(err.to_string(), "updates [1, 4] are larger than data [2, 3] on axis 1");
        let err =
            eval(0, ScatterReduction::None, tvec![data(), tensor2(&[[0i64; 2]]).into(), tensor2(&[[0f32; 3]]).into()])
                .unwrap_err();
        assert!(err.to_string().contains("indices and updates the same shape"), "{err}");
        let err = eval(0, ScatterReduction::None, tvec![data(), tensor2(&[[0i64]]).into(), tensor2(&[[0f64]]).into()])
            .unwrap_err();
        assert_eq!(err.to_string(), "data and updates must have the same type, got F32 and F64");
    }
}
