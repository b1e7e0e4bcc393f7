//! `RandomUniform`, `RandomNormal` (shape from the attribute `shape`) and `RandomUniformLike`,
//! `RandomNormalLike` (the shape of the input, and its type unless `dtype` says otherwise).
//!
//! As onnx's reference computes them: each double drawn (`rand` or `randn`) rounded to the output
//! type, multiplied by `high - low` (or `scale`) and `low` (or `mean`) added, both rounded to the
//! output type first and each operation rounded in it (float16 as numpy computes it: through
//! `f32`, rounded once).

use super::{is_float_out, Seed};
use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The distribution drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Dist {
    /// Uniform over `[low, high)`: the bits of `low` and `high`.
    Uniform {
        /// `low`.
        low: u32,
        /// `high`.
        high: u32,
    },
    /// Normal: the bits of `mean` and `scale`.
    Normal {
        /// `mean`.
        mean: u32,
        /// `scale`.
        scale: u32,
    },
}

/// One of the four ops.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RandomSample {
    /// The node, for errors.
    pub label: Label,
    /// The distribution.
    pub dist: Dist,
    /// The output type; `None`: the input's (a `Like` op without `dtype`).
    pub dtype: Option<DatumType>,
    /// The output shape of `RandomUniform`/`RandomNormal`; `None` for the `Like` forms.
    pub shape: Option<TVec<usize>>,
    /// Where the generator starts.
    pub seed: Seed,
}

/// The builder of all four.
pub(crate) fn random_sample(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let like = node.op_type.ends_with("Like");
    let name: &'static str = match node.op_type.as_str() {
        "RandomUniform" => "RandomUniform",
        "RandomUniformLike" => "RandomUniformLike",
        "RandomNormal" => "RandomNormal",
        _ => "RandomNormalLike",
    };
    let f =
        |n: &str, default: f32| -> TractResult<u32> { Ok(attrs::float(&label, node, n)?.unwrap_or(default).to_bits()) };
    let dist = if node.op_type.starts_with("RandomUniform") {
        Dist::Uniform { low: f("low", 0.0)?, high: f("high", 1.0)? }
    } else {
        Dist::Normal { mean: f("mean", 0.0)?, scale: f("scale", 1.0)? }
    };
    let dtype = match attrs::int(&label, node, "dtype")? {
        Some(code) => Some(attrs::elem_type(&label, "dtype", code)?),
        None if like => None,
        None => Some(DatumType::F32),
    };
    if let Some(dt) = dtype.filter(|dt| !is_float_out(*dt)) {
        return Err(label.err(format!("dtype must be float16, float or double, got {dt:?}")));
    }
    let seed = Seed::of_float(&label, attrs::float(&label, node, "seed")?)?;
    let inputs = node.input.iter().filter(|i| !i.is_empty()).count();
    let shape = if like {
        if inputs != 1 || node.input.len() != 1 {
            return Err(label.err(format!("{name} takes one input, whose shape the output takes")));
        }
        if attrs::ints(&label, node, "shape")?.is_some() {
            return Err(label.err(format!("{name} takes its shape from its input, not from an attribute")));
        }
        None
    } else {
        if !node.input.is_empty() {
            return Err(label.err(format!("{name} takes no input")));
        }
        let dims = attrs::sizes(&label, node, "shape", 0)?
            .ok_or_else(|| label.err(format!("{name} needs the attribute shape")))?;
        let shape: TVec<usize> = dims.into();
        crate::ops::array::elements::check_output(&label, &shape, dtype.unwrap_or(DatumType::F64).size_of())?;
        Some(shape)
    };
    let op = RandomSample { label, dist, dtype, shape, seed };
    Expanded::new(name, op, inputs, rules, as_is).impure().built()
}

fn rules<'r>(op: &'r RandomSample, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    match op.dtype {
        Some(dt) => s.equals(&outputs[0].datum_type, dt)?,
        None => s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?,
    }
    match &op.shape {
        Some(shape) => s.equals(&outputs[0].shape, shape.iter().map(|d| d.to_dim()).collect::<TVec<_>>()),
        None => s.equals(&outputs[0].shape, &inputs[0].shape),
    }
}

impl RandomSample {
    fn out_type(&self, input: Option<DatumType>) -> TractResult<DatumType> {
        let dt = self.dtype.or(input).ok_or_else(|| self.label.err("no input to take the type of"))?;
        if is_float_out(dt) {
            Ok(dt)
        } else {
            Err(self.label.err(format!("the output would be {dt:?}: give dtype float16, float or double")))
        }
    }

    /// `n` values of type `dt`, as the reference computes them.
    fn draw(&self, dt: DatumType, shape: &[usize]) -> TractResult<Tensor> {
        let n = crate::ops::array::elements::check_output(&self.label, shape, dt.size_of())?;
        let mut rng = self.seed.rng();
        let (a, b, uniform) = match self.dist {
            Dist::Uniform { low, high } => {
                let (low, high) = (f32::from_bits(low) as f64, f32::from_bits(high) as f64);
                (high - low, low, true)
            }
            Dist::Normal { mean, scale } => (f32::from_bits(scale) as f64, f32::from_bits(mean) as f64, false),
        };
        let mut raw = Vec::with_capacity(n);
        for _ in 0..n {
            raw.push(if uniform { rng.next_double() } else { rng.gauss() });
        }
        fn affine<T: Datum + Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T>>(
            raw: &[f64],
            shape: &[usize],
            round: fn(f64) -> T,
            a: f64,
            b: f64,
        ) -> TractResult<Tensor> {
            let (a, b) = (round(a), round(b));
            let v: Vec<T> = raw.iter().map(|&x| round(x) * a + b).collect();
            Ok(tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor())
        }
        match dt {
            DatumType::F16 => affine::<f16>(&raw, shape, f16::from_f64, a, b),
            DatumType::F32 => affine::<f32>(&raw, shape, |x| x as f32, a, b),
            _ => affine::<f64>(&raw, shape, |x| x, a, b),
        }
    }
}

impl Op for RandomSample {
    fn name(&self) -> StaticName {
        self.label.op.clone().into()
    }

    fn validation(&self) -> Validation {
        Validation::Random
    }

    op_as_typed_op!();
}

impl TypedOp for RandomSample {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let dt = self.out_type(inputs.first().map(|f| f.datum_type))?;
        Ok(match &self.shape {
            Some(shape) => tvec![dt.fact(shape.clone())],
            None => tvec![dt.fact(inputs[0].shape.clone())],
        })
    }
}

impl EvalOp for RandomSample {
    not_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let dt = self.out_type(inputs.first().map(|t| t.datum_type()))?;
        let shape: TVec<usize> = match &self.shape {
            Some(shape) => shape.clone(),
            None => inputs[0].shape().into(),
        };
        Ok(tvec![self.draw(dt, &shape)?.into_tvalue()])
    }
}
