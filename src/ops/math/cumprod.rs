//! ONNX `CumProd` (opset 26): running products along an axis given as an input, `exclusive` (each
//! position gets the product of those before it, the first 1) and `reverse` (from the end).
//!
//! Integer products wrap around in two's complement, as numpy's and onnxruntime's do; floats follow
//! IEEE arithmetic in their own type (float16 rounded after each product).

use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The CumProd builder.
pub(crate) fn cumprod(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let exclusive = attrs::flag(&label, node, "exclusive")?;
    let reverse = attrs::flag(&label, node, "reverse")?;
    if node.input.len() != 2 || node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("CumProd takes two inputs: x and axis"));
    }
    Expanded::new("CumProd", CumProd { label, exclusive, reverse }, 2, rules, as_is).built()
}

/// `CumProd` with its attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CumProd {
    /// The node, for errors.
    pub label: Label,
    /// Products of the elements strictly before each position.
    pub exclusive: bool,
    /// From the last position to the first.
    pub reverse: bool,
}

fn rules<'r>(_: &'r CumProd, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)
}

impl CumProd {
    fn axis(&self, axis: &Tensor, rank: usize) -> TractResult<usize> {
        if axis.len() != 1 || axis.rank() > 1 {
            return Err(self.label.err(format!("axis must be a scalar, got shape {:?}", axis.shape())));
        }
        if !matches!(axis.datum_type(), DatumType::I32 | DatumType::I64) {
            return Err(self.label.err(format!("axis must be int32 or int64, got {:?}", axis.datum_type())));
        }
        let a = axis.cast_to::<i64>()?.try_as_plain_ram()?.as_slice::<i64>()?[0];
        let r = rank as i64;
        if a < -r || a >= r {
            return Err(self.label.err(format!("axis {a} is out of range for rank {rank}")));
        }
        Ok(if a < 0 { (a + r) as usize } else { a as usize })
    }
}

impl Op for CumProd {
    fn name(&self) -> StaticName {
        "CumProd".into()
    }

    op_as_typed_op!();
}

impl TypedOp for CumProd {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let dt = inputs[0].datum_type;
        if !(dt.is_float() || dt.is_integer()) || dt.is_quantized() {
            return Err(self.label.err(format!("x must be a number tensor, got {dt:?}")));
        }
        if let Some(axis) = &inputs[1].konst {
            self.axis(axis, inputs[0].rank())?;
        } else if inputs[1].shape.volume() != 1.to_dim() {
            return Err(self.label.err("axis must be a scalar"));
        }
        Ok(tvec![inputs[0].without_value()])
    }
}

/// A type CumProd multiplies.
trait Factor: Datum + Copy {
    const ONE: Self;
    fn times(self, other: Self) -> Self;
}

macro_rules! wrapping_factor {
    ($($t:ty),*) => {$(
        impl Factor for $t {
            const ONE: Self = 1;
            fn times(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
    )*};
}
wrapping_factor!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_factor {
    ($($t:ty = $one:expr),*) => {$(
        impl Factor for $t {
            const ONE: Self = $one;
            fn times(self, other: Self) -> Self {
                self * other
            }
        }
    )*};
}
float_factor!(f32 = 1.0, f64 = 1.0, f16 = f16::ONE);

fn scan<T: Factor>(x: &Tensor, axis: usize, exclusive: bool, reverse: bool) -> TractResult<Tensor> {
    let shape = x.shape();
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let src = x.try_as_plain_ram()?.as_slice::<T>()?.to_vec();
    let mut out = src.clone();
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = T::ONE;
            for step in 0..len {
                let k = if reverse { len - 1 - step } else { step };
                let at = (o * len + k) * inner + i;
                if exclusive {
                    out[at] = acc;
                    acc = acc.times(src[at]);
                } else {
                    acc = acc.times(src[at]);
                    out[at] = acc;
                }
            }
        }
    }
    Ok(tract_ndarray::ArrayD::from_shape_vec(shape, out)?.into_tensor())
}

impl EvalOp for CumProd {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, axis) = args_2!(inputs);
        let axis = self.axis(&axis, x.rank())?;
        let (e, r) = (self.exclusive, self.reverse);
        let y = match x.datum_type() {
            DatumType::I8 => scan::<i8>(&x, axis, e, r),
            DatumType::I16 => scan::<i16>(&x, axis, e, r),
            DatumType::I32 => scan::<i32>(&x, axis, e, r),
            DatumType::I64 => scan::<i64>(&x, axis, e, r),
            DatumType::U8 => scan::<u8>(&x, axis, e, r),
            DatumType::U16 => scan::<u16>(&x, axis, e, r),
            DatumType::U32 => scan::<u32>(&x, axis, e, r),
            DatumType::U64 => scan::<u64>(&x, axis, e, r),
            DatumType::F16 => scan::<f16>(&x, axis, e, r),
            DatumType::F32 => scan::<f32>(&x, axis, e, r),
            DatumType::F64 => scan::<f64>(&x, axis, e, r),
            dt => Err(self.label.err(format!("x must be a number tensor, got {dt:?}"))),
        }?;
        Ok(tvec![y.into_tvalue()])
    }
}
