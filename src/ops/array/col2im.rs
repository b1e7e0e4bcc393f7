//! ONNX `Col2Im` (opset 18): the inverse of im2col, columns of blocks summed back into images.
//!
//! `input` is `[N, C * prod(block_shape), L]`: for each of the `L` block positions (row-major over
//! the grid of positions the blocks take, per axis
//! `(image + pad_begin + pad_end - dilation * (block - 1) - 1) / stride + 1`, whose product must be
//! `L`) and each element of a block, one value per channel. The output `[N, C, image_shape...]` sums every value falling on each pixel; values
//! falling in the padding are dropped.
//!
//! `image_shape` and `block_shape` are inputs: known to analysis (numbers, or dims from `Shape` for
//! `image_shape`), the output dims are exact; otherwise they are fresh symbols bound when the node
//! runs (the image dims when `image_shape` is not known, `C` when `block_shape` is not).

use super::center_crop_pad::OutDim;
use super::elements::{check_output, strides};
use crate::node::attrs;
use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The Col2Im builder.
pub(crate) fn col2im(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 3 || node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("Col2Im takes three inputs: input, image_shape and block_shape"));
    }
    let dilations = attrs::sizes(&label, node, "dilations", 1)?;
    let pads = attrs::sizes(&label, node, "pads", 0)?;
    let strides = attrs::sizes(&label, node, "strides", 1)?;
    Expanded::new("Col2Im", Spec { label, dilations, pads, strides }, 3, rules, wire).built()
}

/// The node's attributes, their lengths checked once the spatial rank is known.
#[derive(Debug, Clone)]
struct Spec {
    label: Label,
    dilations: Option<Vec<usize>>,
    pads: Option<Vec<usize>>,
    strides: Option<Vec<usize>>,
}

fn rules<'r>(_: &'r Spec, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&inputs[0].rank, 3)?;
    s.equals(&inputs[1].rank, 1)?;
    s.equals(&inputs[2].rank, 1)?;
    s.equals(&outputs[0].shape[0], &inputs[0].shape[0])?;
    s.given(&inputs[1].shape[0], move |s, k| {
        if let Ok(k) = k.to_i64() {
            s.equals(&outputs[0].rank, k + 2)?;
        }
        Ok(())
    })
}

/// A [`Col2Im`] with its attributes filled in for `k` spatial axes and its output dims decided.
fn wire(spec: &Spec, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let label = &spec.label;
    let x = model.outlet_fact(inputs[0])?.clone();
    let image = model.outlet_fact(inputs[1])?.clone();
    let block = model.outlet_fact(inputs[2])?.clone();
    if x.rank() != 3 {
        return Err(label.err(format!("input must have rank 3 (N, C * block size, L), it has {}", x.rank())));
    }
    for (name, f) in [("image_shape", &image), ("block_shape", &block)] {
        if f.rank() != 1 || !(f.datum_type.is_integer() || f.datum_type.is_tdim()) {
            return Err(label.err(format!(
                "{name} must be a 1-D int64 tensor, got {:?} of rank {}",
                f.datum_type,
                f.rank()
            )));
        }
    }
    let Ok(k) = image.shape[0].to_usize() else {
        return Err(label.err(format!("the length of image_shape ({}) must be known", image.shape[0])));
    };
    if k == 0 {
        return Err(label.err("image_shape is empty: there must be at least one spatial axis"));
    }
    if block.shape[0].to_usize().is_ok_and(|b| b != k) {
        return Err(label.err(format!("block_shape has {} values, image_shape {k}", block.shape[0])));
    }
    attrs::check_len(label, "dilations", spec.dilations.as_ref(), k)?;
    attrs::check_len(label, "strides", spec.strides.as_ref(), k)?;
    attrs::check_len(label, "pads", spec.pads.as_ref(), 2 * k)?;
    let op_label = label.clone();
    let mut op = Col2Im {
        label: op_label,
        dilations: spec.dilations.clone().unwrap_or_else(|| vec![1; k]),
        pads: spec.pads.clone().unwrap_or_else(|| vec![0; 2 * k]),
        strides: spec.strides.clone().unwrap_or_else(|| vec![1; k]),
        dims: vec![],
    };
    let image_dims = image.konst.as_ref().map(|t| crate::dims::dims_of(t)).transpose()?;
    let block_sizes = match &block.konst {
        Some(t) => Some(op.sizes(
            "block_shape",
            &crate::dims::dims_of(t)?.iter().map(|d| d.to_i64().ok()).collect::<Vec<_>>(),
            k,
        )?),
        None => None,
    };
    let channels = match &block_sizes {
        Some(b) => {
            let size = op.block_size(b)?;
            if let Ok(ck) = x.shape[1].to_usize() {
                if ck % size != 0 {
                    return Err(label.err(format!("input has {ck} rows: not a multiple of the block size {size}")));
                }
            }
            OutDim::Fixed((x.shape[1].clone() / size as u64).simplify())
        }
        None => OutDim::Fresh(model.symbols.new_with_prefix(&format!("{prefix}_1"))),
    };
    if let Some(dims) = &image_dims {
        if let Ok(image) = op.sizes("image_shape", &dims.iter().map(|d| d.to_i64().ok()).collect::<Vec<_>>(), k) {
            if let (Some(b), Ok(l)) = (&block_sizes, x.shape[2].to_usize()) {
                op.check_blocks(&image, b, l)?;
            }
        } else if let Some(bad) = dims.iter().find(|d| d.to_i64().is_ok_and(|v| v < 1)) {
            return Err(label.err(format!("image_shape holds {bad}: image dims must be at least 1")));
        }
    }
    op.dims.push(OutDim::Same);
    op.dims.push(channels);
    match image_dims {
        Some(dims) => op.dims.extend(dims.into_iter().map(OutDim::Fixed)),
        None => {
            for a in 0..k {
                op.dims.push(OutDim::Fresh(model.symbols.new_with_prefix(&format!("{prefix}_{}", a + 2))));
            }
        }
    }
    model.wire_node(prefix, op, inputs)
}

/// `Col2Im` with its attributes for its spatial rank and its output dims.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Col2Im {
    /// The node, for errors.
    pub label: Label,
    /// The spacing of a block's elements, per axis.
    pub dilations: Vec<usize>,
    /// The image's padding, all begins then all ends.
    pub pads: Vec<usize>,
    /// The step between block positions, per axis.
    pub strides: Vec<usize>,
    /// The output dims (`Same` for `N`, the input's first).
    pub dims: Vec<OutDim>,
}

impl Col2Im {
    /// `values` (of `image_shape` or `block_shape`) as sizes: `k` of them, each known and at least 1.
    fn sizes(&self, name: &str, values: &[Option<i64>], k: usize) -> TractResult<Vec<usize>> {
        if values.len() != k {
            return Err(self.label.err(format!("{name} has {} values for {k} spatial axes", values.len())));
        }
        values
            .iter()
            .map(|v| match v {
                Some(v) if *v >= 1 => Ok(*v as usize),
                Some(v) => Err(self.label.err(format!("{name} holds {v}: sizes must be at least 1"))),
                None => Err(self.label.err(format!("{name} must hold numbers"))),
            })
            .collect()
    }

    /// The number of elements of a block, checked.
    fn block_size(&self, block: &[usize]) -> TractResult<usize> {
        block
            .iter()
            .try_fold(1usize, |a, &b| a.checked_mul(b))
            .filter(|&s| s <= i64::MAX as usize)
            .ok_or_else(|| self.label.err(format!("block_shape {block:?} is too large")))
    }

    /// The block positions per axis for `image` and `block`, checked to number `l` in all.
    fn check_blocks(&self, image: &[usize], block: &[usize], l: usize) -> TractResult<Vec<usize>> {
        let k = image.len();
        let mut grid = vec![];
        for a in 0..k {
            let span = self.dilations[a] as i128 * (block[a] as i128 - 1) + 1;
            let room = image[a] as i128 + self.pads[a] as i128 + self.pads[k + a] as i128 - span;
            if room < 0 {
                return Err(self.label.err(format!(
                    "a block spans {span} positions on axis {a}: more than the {} of the padded image",
                    room + span
                )));
            }
            grid.push((room / self.strides[a] as i128 + 1) as usize);
        }
        let count = grid.iter().try_fold(1usize, |a, &g| a.checked_mul(g));
        if count != Some(l) {
            return Err(self.label.err(format!(
                "input has {l} block positions, image_shape {image:?} and block_shape {block:?} give {}",
                grid.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(" x ")
            )));
        }
        Ok(grid)
    }
}

impl Op for Col2Im {
    fn name(&self) -> StaticName {
        "Col2Im".into()
    }

    fn mints_runtime_symbols(&self) -> bool {
        OutDim::any_fresh(&self.dims)
    }

    op_as_typed_op!();
}

impl TypedOp for Col2Im {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs[0];
        let shape = OutDim::resolve(&self.dims, &x.shape)?;
        Ok(tvec![x.datum_type.fact(&*shape)])
    }
}

/// Element types `Col2Im` sums: floats as they add, integers wrapping.
trait Summed: Datum + Copy {
    fn plus(self, other: Self) -> Self;
}

macro_rules! summed {
    (wrapping $($t:ty),*) => { $(impl Summed for $t { fn plus(self, o: Self) -> Self { self.wrapping_add(o) } })* };
    (float $($t:ty),*) => { $(impl Summed for $t { fn plus(self, o: Self) -> Self { self + o } })* };
}
summed!(wrapping u8, u16, u32, u64, i8, i16, i32, i64);
summed!(float f16, f32, f64);

/// Each image's pixels summed from `cols` (`[N, C, K, L]` flat), `at[kk * L + l]` the pixel of
/// block element `kk` at position `l` (or none, in the padding).
fn sum_into<T: Summed>(
    x: &Tensor,
    at: &[Option<usize>],
    out_shape: &[usize],
    nc: usize,
    pixels: usize,
) -> TractResult<Tensor> {
    let src = x.try_as_plain_ram()?;
    let src = src.as_slice::<T>()?;
    let mut out = vec![T::default(); nc * pixels];
    let per = at.len();
    for (plane, image) in out.chunks_exact_mut(pixels.max(1)).enumerate().take(nc) {
        for (v, p) in src[plane * per..][..per].iter().zip(at) {
            if let Some(p) = p {
                image[*p] = image[*p].plus(*v);
            }
        }
    }
    Ok(tract_ndarray::ArrayD::from_shape_vec(out_shape, out)?.into_tensor())
}

impl EvalOp for Col2Im {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = &inputs[0];
        let k = self.strides.len();
        let read = |i: usize, name: &str| -> TractResult<Vec<usize>> {
            let v = crate::slicing::read_ints_with(&self.label, name, &inputs[i], ctx.symbols)?;
            self.sizes(name, &v.into_iter().map(Some).collect::<Vec<_>>(), k)
        };
        let (image, block) = (read(1, "image_shape")?, read(2, "block_shape")?);
        let &[n, ck, l] = x.shape() else { return Err(self.label.err("input must have rank 3")) };
        let size = self.block_size(&block)?;
        if ck % size != 0 {
            return Err(self.label.err(format!("input has {ck} rows: not a multiple of the block size {size}")));
        }
        let c = ck / size;
        let grid = self.check_blocks(&image, &block, l)?;
        let mut out_shape = vec![n, c];
        out_shape.extend(&image);
        let dt = x.datum_type();
        check_output(&self.label, &out_shape, dt.size_of())?;
        let pixels: usize = image.iter().product();
        // Where each (block element, block position) lands: K * L entries, no more than the input has.
        let (bst, gst, ist) = (strides(&block), strides(&grid), strides(&image));
        let mut at = Vec::with_capacity(size * l);
        for kk in 0..size {
            for pos in 0..l {
                let mut flat = 0usize;
                let mut inside = true;
                for a in 0..k {
                    let e = (kk / bst[a]) % block[a];
                    let g = (pos / gst[a]) % grid[a];
                    let p = (g * self.strides[a] + e * self.dilations[a]) as i128 - self.pads[a] as i128;
                    if p < 0 || p >= image[a] as i128 {
                        inside = false;
                        break;
                    }
                    flat += p as usize * ist[a];
                }
                at.push(inside.then_some(flat));
            }
        }
        let y = match dt {
            DatumType::U8 => sum_into::<u8>(x, &at, &out_shape, n * c, pixels),
            DatumType::U16 => sum_into::<u16>(x, &at, &out_shape, n * c, pixels),
            DatumType::U32 => sum_into::<u32>(x, &at, &out_shape, n * c, pixels),
            DatumType::U64 => sum_into::<u64>(x, &at, &out_shape, n * c, pixels),
            DatumType::I8 => sum_into::<i8>(x, &at, &out_shape, n * c, pixels),
            DatumType::I16 => sum_into::<i16>(x, &at, &out_shape, n * c, pixels),
            DatumType::I32 => sum_into::<i32>(x, &at, &out_shape, n * c, pixels),
            DatumType::I64 => sum_into::<i64>(x, &at, &out_shape, n * c, pixels),
            DatumType::F16 => sum_into::<f16>(x, &at, &out_shape, n * c, pixels),
            DatumType::F32 => sum_into::<f32>(x, &at, &out_shape, n * c, pixels),
            DatumType::F64 => sum_into::<f64>(x, &at, &out_shape, n * c, pixels),
            other => Err(self.label.err(format!("Col2Im sums numbers, got {other:?}"))),
        }?;
        Ok(tvec![y.into_tvalue()])
    }
}
