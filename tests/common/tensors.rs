//! Small tensors for test inputs and expected outputs.

#![allow(dead_code)]

use tract_onnx::prelude::*;

/// A float tensor of `shape` holding `data` (row-major).
pub fn f32s(shape: &[usize], data: Vec<f32>) -> Tensor {
    tract_ndarray::ArrayD::from_shape_vec(shape, data).unwrap().into_tensor()
}

/// `np.arange(numel, dtype=float32).reshape(shape)`.
pub fn arange_f32(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    f32s(shape, (0..n).map(|v| v as f32).collect())
}

/// A 1-D int64 tensor.
pub fn i64s(v: &[i64]) -> Tensor {
    tract_ndarray::arr1(v).into_tensor()
}

/// A 1-D int32 tensor.
pub fn i32s(v: &[i32]) -> Tensor {
    tract_ndarray::arr1(v).into_tensor()
}
