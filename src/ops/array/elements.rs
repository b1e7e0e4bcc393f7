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
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}

/// Checks, before allocating, that a tensor of `shape` with `elem_size`-byte elements fits in
/// memory and that tract can represent its shape (even an empty one); the error names the node.
pub(crate) fn check_output(label: &crate::node::Label, shape: &[usize], elem_size: usize) -> TractResult<usize> {
    let numel = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64)).unwrap_or(u64::MAX);
    crate::kernel::check_allocation(numel, elem_size).map_err(|e| label.err(e))?;
    if !crate::kernel::representable(shape, elem_size) {
        return Err(label.err(format!("an output of shape {shape:?} cannot be represented")));
    }
    Ok(numel as usize)
}
