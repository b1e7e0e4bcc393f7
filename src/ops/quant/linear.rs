//! `QuantizeLinear` and `DequantizeLinear` (10-25) over every integer type of the specification that
//! tract carries (`int8`, `uint8`, `int16`, `uint16`; `int32` as a dequantized input), per tensor,
//! per axis or blocked (`block_size`), with `output_dtype`. tract-onnx read every zero point as 8
//! bits (or 32 for `DequantizeLinear`), so 16-bit ones failed at run time, and refused blocks.
//!
//! A constant per-tensor scale and zero point of 8 bits (or none) keep tract's own ops, which
//! quantized models rely on; everything else is [`Quant`], which computes as onnx's reference:
//! `clamp(round_half_to_even(x / scale) + zero_point)` and `(x - zero_point) * scale`, in `f32`.

use crate::node::attrs;
use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::quant::{quantize_linear_i8, quantize_linear_u8, DequantizeLinearF32};
use tract_onnx::tract_hir::internal::*;

/// The QuantizeLinear builder.
pub(crate) fn quantize_linear(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    build(ctx, node, false)
}

/// The DequantizeLinear builder.
pub(crate) fn dequantize_linear(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    build(ctx, node, true)
}

fn build(
    _ctx: &ParsingContext,
    node: &NodeProto,
    dequantize: bool,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let given: Vec<bool> = node.input.iter().map(|i| !i.is_empty()).collect();
    if !(2..=3).contains(&given.len()) || !given[0] || !given[1] {
        return Err(label.err(format!("{} takes x, a scale and an optional zero point", node.op_type)));
    }
    let zero_point = given.get(2).copied().unwrap_or(false);
    let axis = attrs::int(&label, node, "axis")?.unwrap_or(1);
    let block = attrs::int(&label, node, "block_size")?.unwrap_or(0);
    let block = usize::try_from(block)
        .map_err(|_| label.err(format!("attribute block_size is {block}: it must be 0 or more")))?;
    let output_dtype = match attrs::int(&label, node, "output_dtype")? {
        None | Some(0) => None,
        Some(code) => Some(attrs::elem_type(&label, "output_dtype", code)?),
    };
    if let Some(code) = attrs::int(&label, node, "precision")? {
        if code != 0 && code != 1 {
            return Err(label.err(format!("attribute precision is {code}: only float32 (1) is supported")));
        }
    }
    let op = Quant { label, dequantize, axis, block, output_dtype, zero_point };
    op.check_output_dtype()?;
    Expanded::new(
        if dequantize { "DequantizeLinear" } else { "QuantizeLinear" },
        op,
        2 + zero_point as usize,
        rules,
        wire,
    )
    .built()
}

/// One `QuantizeLinear` or `DequantizeLinear` node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Quant {
    /// The node, for errors.
    pub label: Label,
    /// `DequantizeLinear` (else `QuantizeLinear`).
    pub dequantize: bool,
    /// The attribute `axis` (may be negative).
    pub axis: i64,
    /// The attribute `block_size` (0: per tensor or per axis).
    pub block: usize,
    /// The attribute `output_dtype`, if set.
    pub output_dtype: Option<DatumType>,
    /// Whether a zero point is given (the third input).
    pub zero_point: bool,
}

/// The integer types quantized values may have, with their ranges.
fn range(dt: DatumType) -> Option<(i32, i32)> {
    match dt {
        DatumType::U8 => Some((0, 255)),
        DatumType::I8 => Some((-128, 127)),
        DatumType::U16 => Some((0, 65535)),
        DatumType::I16 => Some((-32768, 32767)),
        _ => None,
    }
}

fn rules<'r>(op: &'r Quant, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].shape, &inputs[0].shape)?;
    if op.dequantize {
        match op.output_dtype {
            Some(dt) => s.equals(&outputs[0].datum_type, dt),
            None => s.equals(&outputs[0].datum_type, &inputs[1].datum_type),
        }
    } else if op.zero_point {
        s.equals(&outputs[0].datum_type, &inputs[2].datum_type)
    } else {
        s.equals(&outputs[0].datum_type, op.output_dtype.unwrap_or(DatumType::U8))
    }
}

/// tract's own op for a constant per-tensor `f32` scale and an 8-bit zero point (or none), else ours.
fn wire(op: &Quant, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let x = model.outlet_fact(inputs[0])?.datum_type;
    let scale = model.outlet_fact(inputs[1])?.konst.clone();
    let zero_point = if op.zero_point { model.outlet_fact(inputs[2])?.konst.clone() } else { Some(rctensor0(0u8)) };
    if let (Some(scale), Some(zp), 0) = (scale, zero_point, op.block) {
        if scale.len() == 1 && zp.len() == 1 && scale.datum_type() == DatumType::F32 {
            let s = scale.cast_to_scalar::<f32>()?;
            let z = zp.cast_to_scalar::<i32>()?;
            let tract_op: Option<Box<dyn TypedOp>> = match (op.dequantize, zp.datum_type()) {
                (false, DatumType::U8) if x == DatumType::F32 && op.output_dtype.is_none_or(|d| d == DatumType::U8) => {
                    Some(Box::new(quantize_linear_u8(s.recip(), z as u8)))
                }
                (false, DatumType::I8) if x == DatumType::F32 => Some(Box::new(quantize_linear_i8(s.recip(), z as i8))),
                (true, DatumType::U8 | DatumType::I8 | DatumType::I32)
                    if op.output_dtype.is_none_or(|d| d == DatumType::F32)
                        && (x == zp.datum_type() || (!op.zero_point && x == DatumType::U8)) =>
                {
                    Some(Box::new(DequantizeLinearF32 { scale: s, zero_point: z }))
                }
                _ => None,
            };
            if let Some(tract_op) = tract_op {
                return model.wire_node(prefix, tract_op, &[inputs[0]]);
            }
        }
    }
    model.wire_node(prefix, op.clone(), inputs)
}

impl Quant {
    fn check_output_dtype(&self) -> TractResult<()> {
        match self.output_dtype {
            Some(dt) if self.dequantize && !matches!(dt, DatumType::F32 | DatumType::F16) => {
                Err(self.label.err(format!("output_dtype {dt:?}: only float32 and float16 are supported")))
            }
            Some(dt) if !self.dequantize && range(dt).is_none() => {
                Err(self.label.err(format!("output_dtype {dt:?}: only int8, uint8, int16 and uint16 are supported")))
            }
            _ => Ok(()),
        }
    }

    /// The quantized type, from the zero point's type (or the attribute).
    fn quantized(&self, x: DatumType, zero_point: Option<DatumType>) -> TractResult<DatumType> {
        let dt = if self.dequantize {
            zero_point.unwrap_or(x)
        } else {
            zero_point.or(self.output_dtype).unwrap_or(DatumType::U8)
        };
        if let (Some(zp), Some(out), false) = (zero_point, self.output_dtype, self.dequantize) {
            if zp != out {
                return Err(self.label.err(format!("the zero point is {zp:?} but output_dtype is {out:?}")));
            }
        }
        if self.dequantize {
            if zero_point.is_some_and(|zp| zp != x) {
                return Err(self.label.err(format!("x is {x:?} but the zero point is {dt:?}")));
            }
            if range(dt).is_none() && dt != DatumType::I32 {
                return Err(self.label.err(format!("x is {dt:?}: int8, uint8, int16, uint16 and int32 are supported")));
            }
        } else {
            if !matches!(x, DatumType::F32 | DatumType::F16 | DatumType::I32) {
                return Err(self.label.err(format!("x is {x:?}: float32, float16 and int32 are supported")));
            }
            if range(dt).is_none() {
                return Err(self
                    .label
                    .err(format!("the output is {dt:?}: int8, uint8, int16 and uint16 are supported")));
            }
        }
        Ok(dt)
    }

    /// The output's type.
    fn output(&self, x: DatumType, scale: DatumType, zero_point: Option<DatumType>) -> TractResult<DatumType> {
        let quantized = self.quantized(x, zero_point)?;
        if !matches!(scale, DatumType::F32 | DatumType::F16) {
            return Err(self.label.err(format!("the scale is {scale:?}: float32 and float16 are supported")));
        }
        Ok(if self.dequantize { self.output_dtype.unwrap_or(scale) } else { quantized })
    }

    /// Checks the scale's (or zero point's) shape against x's; `None` for dims not known.
    fn check_param(&self, what: &str, x: &[Option<usize>], p: &[Option<usize>]) -> TractResult<()> {
        let rank = x.len() as i64;
        let per_tensor = p.is_empty() || (p.len() == 1 && p[0] == Some(1) && self.block == 0);
        if per_tensor {
            return Ok(());
        }
        let axis = if self.axis < 0 { self.axis + rank } else { self.axis };
        if !(0..rank).contains(&axis) {
            return Err(self.label.err(format!("axis {} is out of range for x of rank {rank}", self.axis)));
        }
        let axis = axis as usize;
        let bad = |why: String| {
            Err(self.label.err(format!("the {what} of shape {p:?} does not fit x of shape {x:?}: {why}")))
        };
        if self.block == 0 {
            if p.len() != 1 {
                return bad("per-axis parameters are 1-D".into());
            }
            if let (Some(n), Some(d)) = (p[0], x[axis]) {
                if n != d {
                    return bad(format!("{n} values for {d} along axis {axis}"));
                }
            }
            return Ok(());
        }
        if p.len() != x.len() {
            return bad("blocked parameters have x's rank".into());
        }
        for (ix, (pd, xd)) in p.iter().zip(x).enumerate() {
            if let (Some(pd), Some(xd)) = (pd, xd) {
                let want = if ix == axis { xd.div_ceil(self.block) } else { *xd };
                if *pd != want {
                    return bad(format!("dim {ix} should be {want}"));
                }
            }
        }
        Ok(())
    }

    /// For each element of x (of `shape`), the index of its scale and zero point.
    fn param_index(&self, shape: &[usize], param: &[usize]) -> Box<dyn Fn(usize) -> usize> {
        let per_tensor = param.iter().product::<usize>() == 1 && self.block == 0;
        if per_tensor || shape.is_empty() {
            return Box::new(|_| 0);
        }
        let axis = if self.axis < 0 { (self.axis + shape.len() as i64) as usize } else { self.axis as usize };
        let inner: usize = shape[axis + 1..].iter().product();
        let d = shape[axis];
        if self.block == 0 {
            return Box::new(move |i| (i / inner) % d);
        }
        let (block, blocks) = (self.block, param[axis]);
        Box::new(move |i| {
            let (outer, c, within) = (i / (inner * d), (i / inner) % d, i % inner);
            (outer * blocks + c / block) * inner + within
        })
    }
}

impl Op for Quant {
    fn name(&self) -> StaticName {
        if self.dequantize { "DequantizeLinear" } else { "QuantizeLinear" }.into()
    }

    op_as_typed_op!();
}

fn known(shape: &ShapeFact) -> Vec<Option<usize>> {
    shape.iter().map(|d| d.to_usize().ok()).collect()
}

impl TypedOp for Quant {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let dt = self.output(inputs[0].datum_type, inputs[1].datum_type, inputs.get(2).map(|f| f.datum_type))?;
        let x = known(&inputs[0].shape);
        for (what, f) in ["scale", "zero point"].iter().zip(&inputs[1..]) {
            self.check_param(what, &x, &known(&f.shape))?;
        }
        if let Some(zp) = inputs.get(2) {
            if zp.rank() != inputs[1].rank() {
                return Err(self.label.err("the zero point and the scale must have one shape"));
            }
        }
        Ok(tvec![dt.fact(inputs[0].shape.clone())])
    }
}

impl EvalOp for Quant {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, scale, zp) = (&inputs[0], &inputs[1], inputs.get(2));
        let dt = self.output(x.datum_type(), scale.datum_type(), zp.map(|z| z.datum_type()))?;
        let as_known = |t: &TValue| t.shape().iter().map(|&d| Some(d)).collect::<Vec<_>>();
        self.check_param("scale", &as_known(x), &as_known(scale))?;
        if let Some(zp) = zp {
            if zp.shape() != scale.shape() {
                return Err(self.label.err(format!(
                    "the zero point's shape {:?} differs from the scale's {:?}",
                    zp.shape(),
                    scale.shape()
                )));
            }
        }
        let index = self.param_index(x.shape(), scale.shape());
        let scales = scale.cast_to::<f32>()?;
        let scales = scales.try_as_plain_ram()?.as_slice::<f32>()?;
        let zps: Vec<i32> = match zp {
            Some(zp) => zp.cast_to::<i32>()?.try_as_plain_ram()?.as_slice::<i32>()?.to_vec(),
            None => vec![0; scales.len()],
        };
        let y = if self.dequantize {
            let xs = x.cast_to::<i32>()?;
            let xs = xs.try_as_plain_ram()?.as_slice::<i32>()?;
            let ys: Vec<f32> =
                xs.iter().enumerate().map(|(i, &v)| (v as f32 - zps[index(i)] as f32) * scales[index(i)]).collect();
            tract_ndarray::ArrayD::from_shape_vec(x.shape(), ys)?.into_tensor().cast_to_dt(dt)?.into_owned()
        } else {
            let (lo, hi) = range(dt).expect("checked by output");
            let xs = x.cast_to::<f32>()?;
            let xs = xs.try_as_plain_ram()?.as_slice::<f32>()?;
            let ys: Vec<i32> = xs
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    ((v / scales[index(i)]).round_ties_even() as i32).saturating_add(zps[index(i)]).clamp(lo, hi)
                })
                .collect();
            tract_ndarray::ArrayD::from_shape_vec(x.shape(), ys)?.into_tensor().cast_to_dt(dt)?.into_owned()
        };
        Ok(tvec![y.into_tvalue()])
    }
}
