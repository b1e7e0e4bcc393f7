//! ONNX `BitShift`: each `x` shifted by `y` bits, left or right, with multidirectional broadcasting.
//!
//! A shift by at least the type's width (or, for signed types, by a negative amount, which reads as
//! a very large unsigned one) moves every bit out: a left shift gives 0, a right shift gives 0, or
//! -1 for a negative signed `x` (the sign bit fills the value), as onnx's reference computes.
//! tract shifted by the amount modulo the width there, so `1 << 8` on int8 gave 1. Bits shifted past
//! the top of a left shift are dropped (two's complement wrapping).

use crate::node::expanded::{as_is, Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::broadcast::multi_broadcast;
use tract_onnx::tract_hir::internal::*;

/// The BitShift builder.
pub(crate) fn bit_shift(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let direction = node.attribute.iter().find(|a| a.name == "direction").map(|a| a.s.as_slice());
    let left = match direction {
        Some(b"LEFT") => true,
        Some(b"RIGHT") => false,
        Some(other) => {
            let msg = format!("direction is {:?}: it must be LEFT or RIGHT", String::from_utf8_lossy(other));
            return Err(label.err(msg));
        }
        None => return Err(label.err("the direction attribute (LEFT or RIGHT) is missing")),
    };
    let op = BitShift { left, node: label.node };
    Expanded::new("BitShift", op, 2, BitShift::rules, BitShift::wire).built()
}

/// `x << y` or `x >> y`, element by element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BitShift {
    /// Left (`true`) or right.
    pub left: bool,
    /// Node name, for errors.
    pub node: String,
}

/// One shift of an integer type, whatever the amount (see the module docs).
trait Shift: Datum + Copy {
    fn shift(self, by: Self, left: bool) -> Self;
}

macro_rules! shift_impl {
    ($($t:ty),*) => {$(
        impl Shift for $t {
            fn shift(self, by: $t, left: bool) -> $t {
                // A negative amount reads as a very large unsigned one: past the width.
                #[allow(unused_comparisons)]
                let within = by >= 0 && (by as u64) < <$t>::BITS as u64;
                match (left, within) {
                    (true, true) => self.wrapping_shl(by as u32),
                    (false, true) => self >> by as u32,
                    (true, false) => 0,
                    // Unsigned: 0; signed: every bit becomes the sign bit (arithmetic shift).
                    (false, false) if <$t>::MIN == 0 => 0,
                    (false, false) => self >> (<$t>::BITS - 1),
                }
            }
        }
    )*};
}

shift_impl!(i8, i16, i32, i64, u8, u16, u32, u64);

impl BitShift {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&inputs[0].datum_type, &inputs[1].datum_type)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.given_2(&inputs[0].shape, &inputs[1].shape, move |s, a, b| {
            let out = multi_broadcast(&[a, b])?;
            s.equals(&outputs[0].shape, ShapeFactoid::from(out))
        })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let (x, y) = (model.outlet_fact(inputs[0])?.datum_type, model.outlet_fact(inputs[1])?.datum_type);
        if x != y || !x.is_integer() || x.is_quantized() {
            let msg = format!("x and y must be integers of one type, got {x:?} and {y:?}");
            return Err(crate::NodeError::invalid(&self.node, "BitShift", msg));
        }
        as_is(self, prefix, model, inputs)
    }

    fn eval_t<T: Shift>(&self, x: &Tensor, y: &Tensor, shape: &[usize]) -> TractResult<Tensor> {
        let (x, y) = (x.broadcast_to_shape(shape)?, y.broadcast_to_shape(shape)?);
        let (xs, ys) = (x.try_as_plain_ram()?, y.try_as_plain_ram()?);
        let out: Vec<T> =
            xs.as_slice::<T>()?.iter().zip(ys.as_slice::<T>()?).map(|(&v, &by)| v.shift(by, self.left)).collect();
        Ok(tract_ndarray::ArrayD::from_shape_vec(shape, out)?.into_tensor())
    }
}

impl Op for BitShift {
    fn name(&self) -> StaticName {
        "BitShift".into()
    }

    op_as_typed_op!();
}

impl EvalOp for BitShift {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, y) = args_2!(inputs);
        let shape = multi_broadcast(&[x.shape(), y.shape()])?;
        let numel = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64)).unwrap_or(u64::MAX);
        crate::kernel::check_allocation(numel, x.datum_type().size_of())
            .map_err(|e| crate::NodeError::invalid(&self.node, "BitShift", e))?;
        let out = match x.datum_type() {
            DatumType::I8 => self.eval_t::<i8>(&x, &y, &shape)?,
            DatumType::I16 => self.eval_t::<i16>(&x, &y, &shape)?,
            DatumType::I32 => self.eval_t::<i32>(&x, &y, &shape)?,
            DatumType::I64 => self.eval_t::<i64>(&x, &y, &shape)?,
            DatumType::U8 => self.eval_t::<u8>(&x, &y, &shape)?,
            DatumType::U16 => self.eval_t::<u16>(&x, &y, &shape)?,
            DatumType::U32 => self.eval_t::<u32>(&x, &y, &shape)?,
            DatumType::U64 => self.eval_t::<u64>(&x, &y, &shape)?,
            dt => {
                let msg = format!("x and y must be integers of one type, got {dt:?}");
                return Err(crate::NodeError::invalid(&self.node, "BitShift", msg));
            }
        };
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for BitShift {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let shape = multi_broadcast(&[inputs[0].shape.to_tvec(), inputs[1].shape.to_tvec()])?;
        Ok(tvec!(inputs[0].datum_type.fact(&*shape)))
    }
}
