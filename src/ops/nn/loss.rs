//! ONNX `NegativeLogLikelihoodLoss` (opsets 12-22) and `SoftmaxCrossEntropyLoss` (12-22).
//!
//! Both take scores `x` of shape `[N, C, d1, ..]` and class indices `target` of shape `[N, d1, ..]`,
//! with optional per-class `weight` of shape `[C]`. Each element's loss is `-x[n, t, d1, ..] * w`,
//! where `t` is its target and `w = weight[t]` (1 without weights); a target equal to
//! `ignore_index` has loss 0 and weight 0; any other target must be in `[0, C)`. `reduction` is
//! `none` (the losses, shaped as `target`), `sum`, or `mean` (the sum divided by the sum of the
//! weights, which is the count of targets not ignored without `weight`; 0/0 is NaN, as in the
//! reference). SoftmaxCrossEntropyLoss first takes `log(softmax(x))` over axis 1, its optional
//! second output. Sums and the softmax are computed in f64 and rounded once to `x`'s type.

use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// How the losses are reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Reduction {
    /// The losses, shaped as the target.
    None,
    /// Their sum.
    Sum,
    /// Their weighted mean.
    Mean,
}

/// `NegativeLogLikelihoodLoss` or, with `softmax`, `SoftmaxCrossEntropyLoss`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Loss {
    /// Whether the scores go through a log-softmax over axis 1 first (SoftmaxCrossEntropyLoss).
    pub softmax: bool,
    /// `reduction`.
    pub reduction: Reduction,
    /// `ignore_index`, when given.
    pub ignore_index: Option<i64>,
    /// Whether `weight` is given.
    pub weighted: bool,
    /// Whether the log-probabilities are asked for (SoftmaxCrossEntropyLoss's second output).
    pub log_prob: bool,
    /// The node, for errors.
    pub label: Label,
}

/// The builder of both losses.
pub(crate) fn loss(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let softmax = node.op_type == "SoftmaxCrossEntropyLoss";
    let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    if !given(0) || !given(1) || node.input.len() > 3 {
        return Err(label.err("the inputs are scores, target and an optional weight"));
    }
    let reduction = match crate::node::attrs::string(&label, node, "reduction")?.as_deref() {
        None | Some("mean") => Reduction::Mean,
        Some("sum") => Reduction::Sum,
        Some("none") => Reduction::None,
        Some(other) => return Err(label.err(format!("reduction is {other:?}: it must be none, sum or mean"))),
    };
    let ignore_index = crate::node::attrs::int(&label, node, "ignore_index")?;
    let outputs = node.output.iter().rposition(|o| !o.is_empty()).map_or(1, |i| i + 1);
    if outputs > 1 + usize::from(softmax) {
        return Err(label.err(format!("{outputs} outputs asked for")));
    }
    let op = Loss { softmax, reduction, ignore_index, weighted: given(2), log_prob: outputs == 2, label };
    let inputs = 2 + usize::from(op.weighted);
    let name = if softmax { "SoftmaxCrossEntropyLoss" } else { "NegativeLogLikelihoodLoss" };
    Expanded::new(name, op, inputs, rules, as_is).with_outputs(outputs).built()
}

fn rules<'r>(op: &'r Loss, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    match op.reduction {
        Reduction::None => s.equals(&outputs[0].shape, &inputs[1].shape)?,
        _ => s.equals(&outputs[0].rank, 0)?,
    }
    if op.log_prob {
        s.equals(&outputs[1].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[1].shape, &inputs[0].shape)?;
    }
    Ok(())
}

impl Op for Loss {
    fn name(&self) -> StaticName {
        if self.softmax { "SoftmaxCrossEntropyLoss" } else { "NegativeLogLikelihoodLoss" }.into()
    }

    op_as_typed_op!();
}

impl TypedOp for Loss {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (x, target) = (inputs[0], inputs[1]);
        if !matches!(x.datum_type, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("the scores must be floats, got {:?}", x.datum_type)));
        }
        if !matches!(target.datum_type, DatumType::I32 | DatumType::I64) {
            return Err(self.label.err(format!("the target must be int32 or int64, got {:?}", target.datum_type)));
        }
        if x.rank() < 2 || target.rank() + 1 != x.rank() {
            let msg = format!(
                "the scores have rank {} and the target rank {}: [N, C, d..] and [N, d..] are needed",
                x.rank(),
                target.rank()
            );
            return Err(self.label.err(msg));
        }
        let mut out = tvec![match self.reduction {
            Reduction::None => x.datum_type.fact(target.shape.clone()),
            _ => x.datum_type.scalar_fact(),
        }];
        if self.log_prob {
            out.push(x.datum_type.fact(x.shape.clone()));
        }
        Ok(out)
    }
}

impl Loss {
    /// The log-softmax of `x` (`[N, C, D]` flattened) over C.
    fn log_softmax(x: &[f64], n: usize, c: usize, d: usize) -> Vec<f64> {
        let mut out = vec![0f64; x.len()];
        for i in 0..n {
            for k in 0..d {
                let at = |j: usize| (i * c + j) * d + k;
                let max = (0..c).map(|j| x[at(j)]).fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = (0..c).map(|j| (x[at(j)] - max).exp()).sum();
                for j in 0..c {
                    out[at(j)] = ((x[at(j)] - max).exp() / sum).ln();
                }
            }
        }
        out
    }
}

impl EvalOp for Loss {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, target) = (&inputs[0], &inputs[1]);
        let dt = x.datum_type();
        let shape = x.shape();
        ensure!(
            shape.len() >= 2 && target.rank() + 1 == shape.len(),
            self.label.err("the scores and target ranks do not match")
        );
        let (n, c) = (shape[0], shape[1]);
        let d: usize = shape[2..].iter().product();
        if target.shape()[0] != n || target.shape()[1..] != shape[2..] {
            let msg = format!("the target has shape {:?}, the scores {:?}", target.shape(), shape);
            return Err(self.label.err(msg));
        }
        let xs = x.cast_to::<f64>()?;
        let mut xs = xs.try_as_plain_ram()?.as_slice::<f64>()?.to_vec();
        let log_prob = self.softmax.then(|| Self::log_softmax(&xs, n, c, d));
        if let Some(lp) = &log_prob {
            xs.clone_from(lp);
        }
        let targets = target.cast_to::<i64>()?;
        let targets = targets.try_as_plain_ram()?.as_slice::<i64>()?;
        let weights: Option<Vec<f64>> = match inputs.get(2) {
            Some(w) => {
                if w.shape() != [c] {
                    return Err(self.label.err(format!("the weight has shape {:?}, [{c}] is needed", w.shape())));
                }
                let w = w.cast_to::<f64>()?;
                Some(w.try_as_plain_ram()?.as_slice::<f64>()?.to_vec())
            }
            None => None,
        };
        let mut losses = Vec::with_capacity(n * d);
        let (mut total, mut weight_sum) = (0f64, 0f64);
        for i in 0..n {
            for k in 0..d {
                let t = targets[i * d + k];
                if Some(t) == self.ignore_index {
                    losses.push(0.0);
                    continue;
                }
                let class = usize::try_from(t)
                    .ok()
                    .filter(|&t| t < c)
                    .ok_or_else(|| self.label.err(format!("target {t} is out of [0, {c}) and not the ignore_index")))?;
                let w = weights.as_ref().map_or(1.0, |w| w[class]);
                let loss = -xs[(i * c + class) * d + k] * w;
                losses.push(loss);
                total += loss;
                weight_sum += w;
            }
        }
        let loss = match self.reduction {
            Reduction::None => tract_ndarray::ArrayD::from_shape_vec(target.shape(), losses)?.into_tensor(),
            Reduction::Sum => tensor0(total),
            Reduction::Mean => tensor0(total / weight_sum),
        };
        let mut out = tvec![loss.cast_to_dt(dt)?.into_owned().into_tvalue()];
        if self.log_prob {
            let lp = log_prob.unwrap_or_default();
            let lp = tract_ndarray::ArrayD::from_shape_vec(shape, lp)?.into_tensor();
            out.push(lp.cast_to_dt(dt)?.into_owned().into_tvalue());
        }
        Ok(out)
    }
}
