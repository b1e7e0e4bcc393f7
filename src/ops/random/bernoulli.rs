//! `Bernoulli` (15-22): 1 with the probability in each element of the input, else 0, in `dtype`
//! (the input's type by default). A seeded node draws what onnx's reference does,
//! `RandomState(int(seed)).binomial(1, p=x)`; every probability must be in `[0, 1]`.

use super::Seed;
use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// `Bernoulli` with its attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Bernoulli {
    /// The node, for errors.
    pub label: Label,
    /// The output type; `None`: the input's.
    pub dtype: Option<DatumType>,
    /// Where the generator starts.
    pub seed: Seed,
}

/// The Bernoulli builder.
pub(crate) fn bernoulli(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 1 || node.input[0].is_empty() {
        return Err(label.err("Bernoulli takes one input, the probabilities"));
    }
    let dtype = match attrs::int(&label, node, "dtype")? {
        Some(code) => Some(attrs::elem_type(&label, "dtype", code)?),
        None => None,
    };
    if let Some(dt) = dtype.filter(|dt| !out_type_ok(*dt)) {
        return Err(label.err(format!("dtype must be a number or boolean type, got {dt:?}")));
    }
    let seed = Seed::of_float(&label, attrs::float(&label, node, "seed")?)?;
    Expanded::new("Bernoulli", Bernoulli { label, dtype, seed }, 1, rules, as_is).impure().built()
}

fn out_type_ok(dt: DatumType) -> bool {
    dt == DatumType::Bool || (dt.is_number() && !dt.is_quantized())
}

fn rules<'r>(op: &'r Bernoulli, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    match op.dtype {
        Some(dt) => s.equals(&outputs[0].datum_type, dt)?,
        None => s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?,
    }
    s.equals(&outputs[0].shape, &inputs[0].shape)
}

impl Bernoulli {
    fn types(&self, input: DatumType) -> TractResult<DatumType> {
        if !super::is_float_out(input) {
            return Err(self.label.err(format!("input must be float16, float or double, got {input:?}")));
        }
        Ok(self.dtype.unwrap_or(input))
    }
}

impl Op for Bernoulli {
    fn name(&self) -> StaticName {
        "Bernoulli".into()
    }

    fn validation(&self) -> Validation {
        Validation::Random
    }

    op_as_typed_op!();
}

impl TypedOp for Bernoulli {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let dt = self.types(inputs[0].datum_type)?;
        Ok(tvec![dt.fact(inputs[0].shape.clone())])
    }
}

impl EvalOp for Bernoulli {
    not_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let dt = self.types(x.datum_type())?;
        let p = x.cast_to::<f64>()?;
        let p = p.try_as_plain_ram()?;
        let p = p.as_slice::<f64>()?;
        if let Some(bad) = p.iter().find(|v| !(0.0..=1.0).contains(*v)) {
            return Err(self.label.err(format!("probability {bad} is outside [0, 1]")));
        }
        let mut rng = self.seed.rng();
        let ones: Vec<bool> = p.iter().map(|&p| rng.bernoulli(p)).collect();
        let t = tract_ndarray::ArrayD::from_shape_vec(x.shape(), ones)?.into_tensor();
        Ok(tvec![t.cast_to_dt(dt)?.into_owned().into_tvalue()])
    }
}
