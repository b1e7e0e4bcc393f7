//! ONNX `BitCast` (opset 26): the same bits read as another type of the same width, same shape.
//! Booleans are one byte (0 or 1 as written); reading a byte other than 0 or 1 as a boolean is an
//! error rather than an invalid `bool`.

use crate::node::attrs;
use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The BitCast builder.
pub(crate) fn bitcast(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let Some(code) = attrs::int(&label, node, "to")? else {
        return Err(label.err("the attribute to is required"));
    };
    let to = attrs::elem_type(&label, "to", code)?;
    if !plain(to) {
        return Err(label.err(format!("attribute to is {code} ({to:?}): BitCast reads numbers and booleans only")));
    }
    Expanded::new("BitCast", BitCast { label, to }, 1, rules, wire).built()
}

fn plain(dt: DatumType) -> bool {
    dt == DatumType::Bool || ((dt.is_integer() || dt.is_float()) && !dt.is_quantized())
}

/// `BitCast` to `to`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BitCast {
    /// The node, for errors.
    pub label: Label,
    /// The type the bits are read as.
    pub to: DatumType,
}

fn rules<'r>(op: &'r BitCast, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, op.to)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)
}

/// No node when the type does not change.
fn wire(op: &BitCast, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let from = model.outlet_fact(inputs[0])?.datum_type;
    if from == op.to {
        return Ok(tvec![inputs[0]]);
    }
    model.wire_node(prefix, op.clone(), inputs)
}

impl Op for BitCast {
    fn name(&self) -> StaticName {
        "BitCast".into()
    }

    op_as_typed_op!();
}

impl TypedOp for BitCast {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let from = inputs[0].datum_type;
        if !plain(from) {
            return Err(self.label.err(format!("the input must be numbers or booleans, got {from:?}")));
        }
        if from.size_of() != self.to.size_of() {
            return Err(self.label.err(format!(
                "{from:?} is {} bits wide but {:?} is {}: BitCast needs the same width",
                8 * from.size_of(),
                self.to,
                8 * self.to.size_of()
            )));
        }
        Ok(tvec![self.to.fact(inputs[0].shape.clone())])
    }
}

impl EvalOp for BitCast {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let from = x.datum_type();
        ensure!(
            plain(from) && from.size_of() == self.to.size_of(),
            self.label.err(format!("cannot read {from:?} as {:?}", self.to))
        );
        let bytes = x.try_as_plain_ram()?.as_bytes();
        if self.to == DatumType::Bool {
            if let Some(b) = bytes.iter().find(|&&b| b > 1) {
                return Err(self.label.err(format!("the byte {b} is no boolean (0 or 1)")));
            }
        }
        // Safety: `to` is a plain number or boolean type (checked when the node was read) as wide as
        // the input's type, so the buffer holds exactly `len` elements of it, and booleans were
        // checked to be 0 or 1 above.
        let y = unsafe { Tensor::from_raw_dt(self.to, x.shape(), bytes)? };
        Ok(tvec![y.into_tvalue()])
    }
}
