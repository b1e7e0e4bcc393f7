//! `Dropout` from opset 12, when the node has a `training_mode` input (without one, and before
//! opset 12, it is an identity: tract's op, which removes itself).
//!
//! With `training_mode` true and a ratio `r` (input `ratio`, 0.5 by default) above 0, as onnx's
//! reference: a double `u` is drawn per element (`RandomState(seed).uniform(0, 1, shape)`), the
//! element kept when `u >= r`, and `output = mask * data * scale` with `scale = 1 / (1 - r)`
//! computed in the ratio's type; the product is computed in the wider of the data's and the ratio's
//! types (numpy's promotion), rounded to the data's type. Otherwise (`training_mode` false, or
//! `r` = 0) the output is the data and the mask all true. `training_mode` is read when the node
//! runs; `r` must be in `[0, 1)`.

use super::Seed;
use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// `Dropout` in the form that may train.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Dropout {
    /// The node, for errors.
    pub label: Label,
    /// Whether the node gives `ratio` (its input 1).
    pub ratio: bool,
    /// Whether it asks for the mask.
    pub mask: bool,
    /// Where the generator starts.
    pub seed: Seed,
}

/// The Dropout builder: ours when the node has a `training_mode` input, tract's otherwise.
pub(crate) fn dropout(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let training = node.input.get(2).is_some_and(|i| !i.is_empty());
    if ctx.onnx_operator_set_version < 12 || !training {
        return crate::ops::stock("Dropout")(ctx, node);
    }
    if node.input.len() != 3 || node.input[0].is_empty() {
        return Err(label.err("Dropout takes data, an optional ratio and training_mode"));
    }
    let outputs = node.output.iter().filter(|o| !o.is_empty()).count();
    if node.output.is_empty() || node.output[0].is_empty() || node.output.len() > 2 {
        return Err(label.err("Dropout gives output and an optional mask"));
    }
    let ratio = !node.input[1].is_empty();
    let seed = Seed::of_int(&label, attrs::int(&label, node, "seed")?)?;
    let op = Dropout { label, ratio, mask: outputs == 2, seed };
    let inputs = 2 + ratio as usize;
    let outputs = 1 + op.mask as usize;
    Expanded::new("Dropout", op, inputs, rules, wire).with_outputs(outputs).impure().built()
}

fn rules<'r>(op: &'r Dropout, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)?;
    if op.mask {
        s.equals(&outputs[1].datum_type, DatumType::Bool)?;
        s.equals(&outputs[1].shape, &inputs[0].shape)?;
    }
    Ok(())
}

/// The node's inputs as given (`ratio` may be absent, an empty name, between the two others).
fn wire(op: &Dropout, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    as_is(op, prefix, model, inputs)
}

impl Dropout {
    fn check_types(&self, data: DatumType, ratio: Option<DatumType>, training: DatumType) -> TractResult<()> {
        if !super::is_float_out(data) {
            return Err(self.label.err(format!("data must be float16, float or double, got {data:?}")));
        }
        if let Some(r) = ratio.filter(|r| !super::is_float_out(*r)) {
            return Err(self.label.err(format!("ratio must be float16, float or double, got {r:?}")));
        }
        if training != DatumType::Bool {
            return Err(self.label.err(format!("training_mode must be bool, got {training:?}")));
        }
        Ok(())
    }

    fn scalar(&self, t: &Tensor, name: &str) -> TractResult<()> {
        if t.len() != 1 || t.rank() > 1 {
            return Err(self.label.err(format!("{name} must be a scalar, got shape {:?}", t.shape())));
        }
        Ok(())
    }

    /// The ratio as `f64`, the scale `1/(1-r)` computed in the ratio's type, and whether that type
    /// is double.
    fn ratio(&self, ratio: Option<&Tensor>) -> TractResult<(f64, f64, bool)> {
        let Some(t) = ratio else { return Ok((0.5, 2.0, false)) };
        self.scalar(t, "ratio")?;
        let r = t.cast_to_scalar::<f64>()?;
        if !(0.0..1.0).contains(&r) {
            return Err(self.label.err(format!("ratio {r} is outside [0, 1)")));
        }
        let scale = match t.datum_type() {
            DatumType::F16 => {
                let one = f16::ONE;
                (one / (one - f16::from_f64(r))).to_f64()
            }
            DatumType::F32 => (1.0 / (1.0 - r as f32)) as f64,
            _ => 1.0 / (1.0 - r),
        };
        Ok((r, scale, t.datum_type() == DatumType::F64))
    }
}

impl Op for Dropout {
    fn name(&self) -> StaticName {
        "Dropout".into()
    }

    fn validation(&self) -> Validation {
        Validation::Random
    }

    op_as_typed_op!();
}

impl TypedOp for Dropout {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let training = inputs.last().map(|f| f.datum_type).unwrap_or(DatumType::Bool);
        self.check_types(inputs[0].datum_type, self.ratio.then(|| inputs[1].datum_type), training)?;
        let mut facts = tvec![inputs[0].without_value()];
        if self.mask {
            facts.push(DatumType::Bool.fact(inputs[0].shape.clone()));
        }
        Ok(facts)
    }
}

impl EvalOp for Dropout {
    not_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let data = &inputs[0];
        let ratio = self.ratio.then(|| &*inputs[1]);
        let training = &inputs[inputs.len() - 1];
        self.check_types(data.datum_type(), ratio.map(|r| r.datum_type()), training.datum_type())?;
        self.scalar(training, "training_mode")?;
        let (r, scale, wide_ratio) = self.ratio(ratio)?;
        let shape = data.shape();
        if !training.cast_to_scalar::<bool>()? || r == 0.0 {
            let mut out = tvec![data.clone()];
            if self.mask {
                out.push(tract_ndarray::ArrayD::from_elem(shape, true).into_tvalue());
            }
            return Ok(out);
        }
        let mut rng = self.seed.rng();
        let keep: Vec<bool> = (0..data.len()).map(|_| rng.next_double() >= r).collect();
        let x = data.cast_to::<f64>()?;
        let x = x.try_as_plain_ram()?;
        // In f64 the product of two floats of at most 24 bits is exact: rounding it to f32 is the
        // f32 product numpy computes when neither type is double.
        let wide = wide_ratio || data.datum_type() == DatumType::F64;
        let y: Vec<f64> = x
            .as_slice::<f64>()?
            .iter()
            .zip(&keep)
            .map(|(&v, &k)| {
                let p = if k { v } else { 0.0 * v } * scale;
                if wide {
                    p
                } else {
                    p as f32 as f64
                }
            })
            .collect();
        let y = super::float_tensor(data.datum_type(), shape, y)?;
        let mut out = tvec![y.into_tvalue()];
        if self.mask {
            out.push(tract_ndarray::ArrayD::from_shape_vec(shape, keep)?.into_tvalue());
        }
        Ok(out)
    }
}
