//! ONNX `Cast`, exact on integers and symbolic shape values.
//!
//! tract-onnx reads `Cast(to=INT64)` as a cast to its dim type, so that shape values stay dims, and
//! tract converts an integer tensor to dims through `i32`: `INT64_MAX` becomes -1. Exporters cast
//! shapes back and forth (tf2onnx and paddle2onnx through `int32`), and a symbolic dim cast to `int32`
//! is no number tract can hold, so shape arithmetic through such casts was lost. Here:
//! - to `int64`: dims and `int64` stay as they are (no conversion), other integers and booleans become
//!   exact dims, floats go through tract's own cast;
//! - to another integer type, from dims that hold symbols (only while analysing a symbolic model):
//!   the dims pass through unchanged as a [`SymbolicCast`] (the value is the same integer), which
//!   records the type the model asks for;
//! - everything else is tract's cast.

use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The Cast builder.
pub(crate) fn cast(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let to = node.attribute.iter().find(|a| a.name == "to").map(|a| a.i);
    let Some(to) = to.and_then(|code| crate::schema::datum_type_of_elem(code as i32).ok()) else {
        return crate::ops::stock("Cast")(ctx, node);
    };
    Expanded::new("Cast", ExactCast { to }, 1, ExactCast::rules, ExactCast::wire).built()
}

/// `Cast` to `to` (`I64` meaning ONNX's int64, held as dims when it holds shapes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ExactCast {
    /// The ONNX target type.
    pub to: DatumType,
}

impl ExactCast {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        if self.to == DatumType::I64 {
            // int64 stays int64, everything else becomes dims (what `wire` does).
            s.given(&inputs[0].datum_type, move |s, from| {
                let to = if from == DatumType::I64 { DatumType::I64 } else { DatumType::TDim };
                s.equals(&outputs[0].datum_type, to)
            })?;
        } else {
            s.equals(&outputs[0].datum_type, self.to)?;
        }
        s.equals(&outputs[0].shape, &inputs[0].shape)
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let fact = model.outlet_fact(inputs[0])?.clone();
        let from = fact.datum_type;
        if self.to == DatumType::I64 {
            if from == DatumType::I64 {
                return Ok(tvec![inputs[0]]);
            }
            // Dims stay dims; a node of its own records that the model declares them int64 here (the
            // input may be dims the model declared int32).
            if from.is_tdim() {
                return model.wire_node(prefix, SymbolicCast { to: DatumType::I64 }, inputs);
            }
            if from.is_integer() || from == DatumType::Bool {
                if let Some(k) = &fact.konst {
                    let dims: Vec<TDim> = if from == DatumType::Bool {
                        k.cast_to::<i64>()?.try_as_plain_ram()?.as_slice::<i64>()?.iter().map(|&v| v.into()).collect()
                    } else {
                        crate::dims::dims_of(k)?
                    };
                    let t = tract_ndarray::ArrayD::from_shape_vec(k.shape(), dims)?.into_tensor();
                    return Ok(tvec![model.add_const(format!("{prefix}.dims"), t)?]);
                }
                return model.wire_node(prefix, tract_onnx::tract_core::ops::cast::cast(DatumType::I64), inputs);
            }
            return model.wire_node(prefix, tract_onnx::tract_core::ops::cast::cast(DatumType::TDim), inputs);
        }
        let symbolic = fact.konst.as_ref().is_some_and(|k| {
            k.datum_type().is_tdim()
                && k.try_as_plain_ram()
                    .ok()
                    .and_then(|p| p.as_slice::<TDim>().ok().map(|s| s.iter().any(|d| d.as_i64().is_none())))
                    == Some(true)
        });
        if symbolic && self.to.is_integer() {
            return model.wire_node(prefix, SymbolicCast { to: self.to }, inputs);
        }
        model.wire_node(prefix, tract_onnx::tract_core::ops::cast::cast(self.to), inputs)
    }
}

/// Symbolic dims cast to another integer type: the same values, kept as dims; `to` is the type the
/// model declares for them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SymbolicCast {
    /// The integer type the model casts to.
    pub to: DatumType,
}

impl Op for SymbolicCast {
    fn name(&self) -> StaticName {
        "SymbolicCast".into()
    }

    op_as_typed_op!();
}

impl EvalOp for SymbolicCast {
    // Not evaluated ahead of running: tract would replace the node by a constant and lose the type
    // it records; its output fact carries the input's value already.
    fn eval_out_of_plan(&self, _inputs: TVec<TValue>) -> TractResult<Option<TVec<TValue>>> {
        Ok(None)
    }

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        // Running, the symbols have values; the output stays dims, as its fact says.
        let input = args_1!(inputs);
        let plain = input.try_as_plain_ram()?;
        let values: Vec<TDim> = plain.as_slice::<TDim>()?.iter().map(|d| d.eval(ctx.symbols)).collect();
        Ok(tvec![tract_ndarray::ArrayD::from_shape_vec(input.shape(), values)?.into_tensor().into_tvalue()])
    }
}

impl TypedOp for SymbolicCast {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let mut fact = inputs[0].without_value();
        fact.konst = inputs[0].konst.clone();
        Ok(tvec![fact])
    }
}
