//! [`PlaneMaxPool`]: 2-D max pooling over float32 channel planes, in place of tract's `OptMaxPool`.
//!
//! tract's generic walk over the pooling windows spent 60 µs on a 2x2, stride-2 pool of a
//! `[1, 200, 2, 96]` map (an OCR classifier's), where one pass over the 38,400 inputs takes a few:
//! here each output row starts at minus infinity and takes, for each window row and column in bounds,
//! the maximum with the input row read at the stride. Windows, strides, padding and the output shape
//! are tract's own (its concrete pooling geometry); padding never wins, as the specification says.
//! Values are tract's exactly, except that an input of minus infinity is kept (tract starts from the
//! lowest finite float) and a NaN is skipped as tract skips it (`max` of a number and NaN is the
//! number). Anything else (other types, channels last, dilations, the indices output) is tract's op.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::OptMaxPool;
use tract_onnx::tract_core::ops::nn::DataFormat;

use crate::kernel::check_allocation;

/// tract's `OptMaxPool`, run by our loop where it applies (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PlaneMaxPool {
    /// tract's op: its geometry, and its evaluation where our loop does not apply.
    pub stock: OptMaxPool,
}

impl PlaneMaxPool {
    /// Our op in place of `stock`, when its form is one our loop runs.
    pub(crate) fn replacing(stock: &OptMaxPool) -> Option<PlaneMaxPool> {
        let spec = &stock.pool_spec;
        let nchw = matches!(spec.data_format, DataFormat::NCHW | DataFormat::CHW);
        let plain = spec.rank() == 2 && spec.dilations().iter().all(|d| *d == 1) && stock.with_index_outputs.is_none();
        (nchw && plain).then(|| PlaneMaxPool { stock: stock.clone() })
    }
}

impl Op for PlaneMaxPool {
    fn name(&self) -> StaticName {
        "PlaneMaxPool".into()
    }

    op_as_typed_op!();
}

impl TypedOp for PlaneMaxPool {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }

    as_op!();
}

impl EvalOp for PlaneMaxPool {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = &inputs[0];
        if input.datum_type() != f32::datum_type() {
            return self.stock.eval(ctx, inputs);
        }
        let geo = self.stock.geometry.to_concrete(input.shape())?;
        let (ish, patch) = (&geo.input_shape, &geo.patch);
        let (h, w) = (ish.hw_dims()[0], ish.hw_dims()[1]);
        let contiguous = *ish.w_stride() == 1 && *ish.h_stride() == w && *ish.c_stride() == h * w;
        if !contiguous || patch.rank() != 2 {
            return self.stock.eval(ctx, inputs);
        }
        let planes = ish.n().copied().unwrap_or(1).checked_mul(*ish.c()).context("MaxPool: too many planes")?;
        let (oh, ow) = (patch.output_shape[0], patch.output_shape[1]);
        let spec = &patch.spec;
        let (kh, kw) = (spec.kernel_shape[0], spec.kernel_shape[1]);
        let (sh, sw) = (spec.strides[0], spec.strides[1]);
        let (pt, pl) = (patch.pad_before[0], patch.pad_before[1]);
        let out_len = [planes, oh, ow].iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
        check_allocation(out_len.unwrap_or(u64::MAX), 4).map_err(|e| anyhow!("MaxPool: {e}"))?;
        let data = input.try_as_plain_ram()?;
        let data = data.as_slice::<f32>()?;
        let mut out = vec![f32::NEG_INFINITY; planes * oh * ow];
        // For each window column: the output columns whose tap lands inside the row, and where.
        let columns: Vec<(usize, usize, usize)> = (0..kw)
            .filter_map(|kx| {
                // Output column ox reads input column ox * sw + kx - pl.
                let first = pl.saturating_sub(kx).div_ceil(sw);
                let last = (w + pl).checked_sub(kx + 1).map(|v| v / sw)?;
                let end = (last + 1).min(ow);
                (first < end).then(|| (first, end, first * sw + kx - pl))
            })
            .collect();
        for (plane, out_plane) in data.chunks_exact(h * w).zip(out.chunks_exact_mut(oh * ow)) {
            for (oy, out_row) in out_plane.chunks_exact_mut(ow).enumerate() {
                for ky in 0..kh {
                    let Some(iy) = (oy * sh + ky).checked_sub(pt).filter(|&iy| iy < h) else { continue };
                    let row = &plane[iy * w..][..w];
                    for &(first, end, start) in &columns {
                        take_max(&mut out_row[first..end], &row[start..], sw);
                    }
                }
            }
        }
        let shape = geo.output_shape.shape.clone();
        Ok(tvec!(tract_ndarray::ArrayD::from_shape_vec(&*shape, out)?.into_tensor().into_tvalue()))
    }
}

/// `out[i] = max(out[i], src[i * stride])`, NaN skipped; written so the loop vectorizes (strides 1
/// and 2 as loops of their own, bounds checked once).
fn take_max(out: &mut [f32], src: &[f32], stride: usize) {
    let n = out.len();
    if n == 0 {
        return;
    }
    // A select, stored every time (a conditional store would not vectorize): `maxps`.
    let take = |o: &mut f32, v: f32| *o = if v > *o { v } else { *o };
    match stride {
        1 => out.iter_mut().zip(&src[..n]).for_each(|(o, &v)| take(o, v)),
        2 => out.iter_mut().zip(src[..2 * n - 1].chunks(2)).for_each(|(o, pair)| take(o, pair[0])),
        _ => out.iter_mut().zip(src.iter().step_by(stride)).for_each(|(o, &v)| take(o, v)),
    }
}
