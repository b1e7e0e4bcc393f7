//! Moving elements of any type: an output built from a map of its flat indices to the input's.

use anyhow::Context;
use tract_onnx::prelude::*;

/// A tensor of `shape` and the type of `input`, element `o` being `input[from(o)]`, or the type's
/// zero (false, empty string) where `from` gives `None`.
pub(crate) fn gather_flat(
    input: &Tensor,
    shape: &[usize],
    from: &dyn Fn(usize) -> Option<usize>,
) -> TractResult<Tensor> {
    fn typed<T: Datum>(input: &Tensor, shape: &[usize], from: &dyn Fn(usize) -> Option<usize>) -> TractResult<Tensor> {
        let plain = input.try_as_plain_ram()?;
        let src = plain.as_slice::<T>()?;
        let len: usize = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).context("output too large")?;
        let mut out = Vec::with_capacity(len);
        for o in 0..len {
            out.push(match from(o) {
                Some(i) => src.get(i).cloned().context("index out of the input")?,
                None => T::default(),
            });
        }
        Ok(tract_ndarray::ArrayD::from_shape_vec(shape, out)?.into_tensor())
    }
    let dt = input.datum_type();
    let mut t = dispatch_datum!(typed(dt)(input, shape, from))?;
    // Quantized types keep their parameters.
    if t.datum_type() != dt {
        // Safety: the elements were copied from a tensor of type `dt`, of the same size.
        unsafe { t.set_datum_type(dt) };
    }
    Ok(t)
}

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}
