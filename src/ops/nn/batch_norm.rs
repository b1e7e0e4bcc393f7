//! ONNX `BatchNormalization` with `training_mode=1` (opset 14 on): normalized with the batch's own
//! statistics. tract-onnx refused it ("Params are not const": its op folds constant statistics into
//! a scale and a shift); every other form stays tract's.
//!
//! Per channel `c` (axis 1), over every other axis: the batch mean `μ` and the biased variance `σ²`
//! (divided by the element count, as onnx's reference and numpy's `var` compute), then
//!
//! `Y = scale·(X - μ)/√(σ² + ε) + B`, `running_mean = mean·m + μ·(1-m)`,
//! `running_var = var·m + σ²·(1-m)` (`m` the attribute `momentum`, 0.9 by default).
//!
//! The sums and the formulas run in `f64`, each output rounded once to its type.

use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The BatchNormalization builder: ours in training mode, tract's otherwise.
pub(crate) fn batch_norm(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if !crate::node::attrs::flag(&label, node, "training_mode")? {
        return crate::ops::stock("BatchNormalization")(ctx, node);
    }
    let epsilon = crate::node::attrs::float(&label, node, "epsilon")?.unwrap_or(1e-5);
    let momentum = crate::node::attrs::float(&label, node, "momentum")?.unwrap_or(0.9);
    if node.input.len() != 5 || node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("BatchNormalization takes five inputs: X, scale, B, input_mean, input_var"));
    }
    let outputs = node.output.len();
    if !(1..=3).contains(&outputs) {
        return Err(label.err(format!("{outputs} outputs: at most Y, running_mean and running_var")));
    }
    let op = BatchNormTraining { label, epsilon: epsilon.to_bits(), momentum: momentum.to_bits(), outputs };
    Expanded::new("BatchNormalization", op, 5, rules, as_is).with_outputs(outputs).built()
}

/// `BatchNormalization` in training mode.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BatchNormTraining {
    /// The node, for errors.
    pub label: Label,
    /// The bits of `epsilon`.
    pub epsilon: u32,
    /// The bits of `momentum`.
    pub momentum: u32,
    /// How many of `Y`, `running_mean` and `running_var` the node names.
    pub outputs: usize,
}

fn rules<'r>(op: &'r BatchNormTraining, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)?;
    for o in 1..op.outputs {
        s.equals(&outputs[o].datum_type, &inputs[2 + o].datum_type)?;
        s.equals(&outputs[o].shape, &inputs[2 + o].shape)?;
    }
    Ok(())
}

const NAMES: [&str; 5] = ["X", "scale", "B", "input_mean", "input_var"];

impl BatchNormTraining {
    fn check_types(&self, types: &[DatumType]) -> TractResult<()> {
        for (name, dt) in NAMES.iter().zip(types) {
            if !matches!(dt, DatumType::F16 | DatumType::F32 | DatumType::F64) {
                return Err(self.label.err(format!("{name} must be a float tensor, got {dt:?}")));
            }
        }
        Ok(())
    }

    /// The channel count, checking that X has a channel axis and the other inputs one value each.
    fn channels(&self, x: &[usize], params: &[&[usize]]) -> TractResult<usize> {
        if x.len() < 2 {
            return Err(self.label.err(format!("X must have rank 2 or more (N, C, ...), got {x:?}")));
        }
        for (name, shape) in NAMES[1..].iter().zip(params) {
            if *shape != [x[1]] {
                return Err(self.label.err(format!("{name} is {shape:?}, expected [{}] (X's channels)", x[1])));
            }
        }
        Ok(x[1])
    }
}

impl Op for BatchNormTraining {
    fn name(&self) -> StaticName {
        "BatchNormalization".into()
    }

    op_as_typed_op!();
}

impl TypedOp for BatchNormTraining {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.check_types(&inputs.iter().map(|f| f.datum_type).collect::<Vec<_>>())?;
        let x = inputs[0];
        if x.rank() < 2 {
            return Err(self.label.err(format!("X must have rank 2 or more (N, C, ...), got rank {}", x.rank())));
        }
        for (name, f) in NAMES[1..].iter().zip(&inputs[1..]) {
            if f.rank() != 1 {
                return Err(self.label.err(format!("{name} must have rank 1 (X's channels), got rank {}", f.rank())));
            }
        }
        let mut facts = tvec![x.without_value()];
        facts.extend(inputs[3..].iter().take(self.outputs - 1).map(|f| f.without_value()));
        Ok(facts)
    }
}

fn wide(t: &Tensor) -> TractResult<Vec<f64>> {
    Ok(t.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?.to_vec())
}

fn narrow(values: Vec<f64>, shape: &[usize], dt: DatumType) -> TractResult<TValue> {
    let t = tract_ndarray::ArrayD::from_shape_vec(shape, values)?.into_tensor();
    Ok(t.cast_to_dt(dt)?.into_owned().into_tvalue())
}

impl EvalOp for BatchNormTraining {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        self.check_types(&inputs.iter().map(|t| t.datum_type()).collect::<Vec<_>>())?;
        let shape = inputs[0].shape();
        let params: Vec<&[usize]> = inputs[1..].iter().map(|t| t.shape()).collect();
        let c = self.channels(shape, &params)?;
        let (n, inner) = (shape[0], shape[2..].iter().product::<usize>());
        let x = wide(&inputs[0])?;
        let [scale, bias, mean_in, var_in] = [1, 2, 3, 4].map(|i| wide(&inputs[i]));
        let (scale, bias, mean_in, var_in) = (scale?, bias?, mean_in?, var_in?);
        let (eps, m) = (f32::from_bits(self.epsilon) as f64, f32::from_bits(self.momentum) as f64);
        let count = (n * inner) as f64;
        let mut y = vec![0f64; x.len()];
        let (mut running_mean, mut running_var) = (vec![0f64; c], vec![0f64; c]);
        for ch in 0..c {
            let rows = (0..n).map(|b| &x[(b * c + ch) * inner..][..inner]);
            let mu = rows.clone().flatten().sum::<f64>() / count;
            let var = rows.flatten().map(|v| (v - mu) * (v - mu)).sum::<f64>() / count;
            let root = (var + eps).sqrt();
            for b in 0..n {
                let at = (b * c + ch) * inner;
                for (yv, xv) in y[at..at + inner].iter_mut().zip(&x[at..at + inner]) {
                    *yv = scale[ch] * (xv - mu) / root + bias[ch];
                }
            }
            running_mean[ch] = mean_in[ch] * m + mu * (1.0 - m);
            running_var[ch] = var_in[ch] * m + var * (1.0 - m);
        }
        let mut out = tvec![narrow(y, shape, inputs[0].datum_type())?];
        for (i, stats) in [running_mean, running_var].into_iter().enumerate().take(self.outputs - 1) {
            out.push(narrow(stats, &[c], inputs[3 + i].datum_type())?);
        }
        Ok(out)
    }
}
