//! The `ai.onnx.preview.training` optimizers (version 1): `Adagrad`, `Adam` and `Momentum`, one
//! update step of a set of tensors. Inputs are the learning rate `R` and the iteration count `T`
//! (scalars), then `n` tensors of each kind in groups (`X_1..X_n`, `G_1..G_n`, then the states);
//! outputs are the updated tensors of each kind but the gradients, group by group.
//!
//! The arithmetic is the specification's, rounded where onnx's reference (numpy, float attributes
//! as Python floats) rounds: element-wise steps in the tensors' own type, the scalar coefficients
//! (`R / (1 + T·decay_factor)`, Adam's bias correction) in `f64`, and an update scaled by such a
//! coefficient in `f64` rounded once.
//!
//! - `Adagrad`: `g = norm·x + g`, `h' = h + g²`, `x' = x - r·g / (√h' + ε)` with
//!   `r = R / (1 + T·decay_factor)`;
//! - `Adam`: `g = norm·x + g`, `v' = α·v + (1-α)·g`, `h' = β·h + (1-β)·g²`,
//!   `x' = (1 - norm_post)·(x - r·v' / (√h' + ε))` with `r = R·√(1-β^T) / (1-α^T)` when `T > 0`, else
//!   `R`;
//! - `Momentum`: `g = norm·x + g`, `v' = α·v + b·g` (`b = β` when `T > 0`, else 1), then
//!   `x' = x - R·v'` (`standard`) or `x' = x - R·(g + α·v')` (`nesterov`).

use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The update rule and its attributes (floats as their `f32` bits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Rule {
    /// `Adagrad`.
    Adagrad {
        /// `norm_coefficient`.
        norm: u32,
        /// `decay_factor`.
        decay: u32,
        /// `epsilon`.
        epsilon: u32,
    },
    /// `Adam`.
    Adam {
        /// `alpha`.
        alpha: u32,
        /// `beta`.
        beta: u32,
        /// `epsilon`.
        epsilon: u32,
        /// `norm_coefficient`.
        norm: u32,
        /// `norm_coefficient_post`.
        norm_post: u32,
    },
    /// `Momentum`.
    Momentum {
        /// `alpha`.
        alpha: u32,
        /// `beta`.
        beta: u32,
        /// `norm_coefficient`.
        norm: u32,
        /// `mode="nesterov"` (else `standard`).
        nesterov: bool,
    },
}

impl Rule {
    /// Tensors a group gives (`X`, `G` and the states).
    fn kinds(&self) -> usize {
        match self {
            Rule::Adam { .. } => 4,
            _ => 3,
        }
    }
}

/// One of the three optimizers over `groups` tensors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Optimizer {
    /// The node, for errors.
    pub label: Label,
    /// The rule.
    pub rule: Rule,
    /// `n`, the number of tensors optimized.
    pub groups: usize,
}

/// The builder of `Adagrad`, `Adam` and `Momentum`.
pub(crate) fn optimizer(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let float = |name: &str, default: Option<f32>| -> TractResult<u32> {
        match attrs::float(&label, node, name)?.or(default) {
            Some(v) => Ok(v.to_bits()),
            None => Err(label.err(format!("attribute {name} is required"))),
        }
    };
    let rule = match node.op_type.as_str() {
        "Adagrad" => Rule::Adagrad {
            norm: float("norm_coefficient", Some(0.0))?,
            decay: float("decay_factor", Some(0.0))?,
            epsilon: float("epsilon", Some(1e-6))?,
        },
        "Adam" => Rule::Adam {
            alpha: float("alpha", Some(0.9))?,
            beta: float("beta", Some(0.999))?,
            epsilon: float("epsilon", Some(1e-6))?,
            norm: float("norm_coefficient", Some(0.0))?,
            norm_post: float("norm_coefficient_post", Some(0.0))?,
        },
        "Momentum" => {
            let nesterov = match attrs::string(&label, node, "mode")?.as_deref() {
                Some("standard") => false,
                Some("nesterov") => true,
                Some(other) => {
                    return Err(label.err(format!("mode is {other:?}: it must be \"standard\" or \"nesterov\"")))
                }
                None => return Err(label.err("attribute mode is required")),
            };
            Rule::Momentum {
                alpha: float("alpha", None)?,
                beta: float("beta", None)?,
                norm: float("norm_coefficient", None)?,
                nesterov,
            }
        }
        other => return Err(label.err(format!("{other} is not an optimizer"))),
    };
    if node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("no input of an optimizer may be omitted"));
    }
    let k = rule.kinds();
    let tensors = node.input.len().saturating_sub(2);
    if tensors == 0 || !tensors.is_multiple_of(k) {
        return Err(
            label.err(format!("{} inputs: expected R, T and {k} tensors for each one optimized", node.input.len()))
        );
    }
    let groups = tensors / k;
    let outputs = groups * (k - 1);
    if node.output.len() != outputs {
        return Err(label.err(format!("{} outputs for {groups} tensors: expected {outputs}", node.output.len())));
    }
    let name: &'static str = match rule {
        Rule::Adagrad { .. } => "Adagrad",
        Rule::Adam { .. } => "Adam",
        Rule::Momentum { .. } => "Momentum",
    };
    let op = Optimizer { label, rule, groups };
    Expanded::new(name, op, 2 + tensors, rules, as_is).with_outputs(outputs).built()
}

impl Optimizer {
    /// The input that output `o` updates.
    fn source(&self, o: usize) -> usize {
        let (kind, i) = (o / self.groups, o % self.groups);
        // Output kinds are the input kinds but G (the second).
        let input_kind = if kind == 0 { 0 } else { kind + 1 };
        2 + input_kind * self.groups + i
    }

    /// The inputs of group `i`, in kind order.
    fn group(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.rule.kinds()).map(move |kind| 2 + kind * self.groups + i)
    }

    fn check_scalars(&self, r: (DatumType, usize), t: (DatumType, usize)) -> TractResult<()> {
        if !matches!(r.0, DatumType::F32 | DatumType::F64) || r.1 != 1 {
            return Err(self.label.err(format!("R must be one float or double, got {:?} of {} values", r.0, r.1)));
        }
        if t.0 != DatumType::I64 || t.1 != 1 {
            return Err(self.label.err(format!("T must be one int64, got {:?} of {} values", t.0, t.1)));
        }
        Ok(())
    }
}

fn rules<'r>(op: &'r Optimizer, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    for (o, output) in outputs.iter().enumerate() {
        let i = op.source(o);
        s.equals(&output.datum_type, &inputs[i].datum_type)?;
        s.equals(&output.shape, &inputs[i].shape)?;
    }
    Ok(())
}

impl Op for Optimizer {
    fn name(&self) -> StaticName {
        match self.rule {
            Rule::Adagrad { .. } => "Adagrad",
            Rule::Adam { .. } => "Adam",
            Rule::Momentum { .. } => "Momentum",
        }
        .into()
    }

    op_as_typed_op!();
}

impl TypedOp for Optimizer {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let count = |f: &TypedFact| f.shape.volume().to_usize().unwrap_or(1);
        self.check_scalars((inputs[0].datum_type, count(inputs[0])), (inputs[1].datum_type, count(inputs[1])))?;
        for i in 0..self.groups {
            let x = inputs[2 + i];
            if !matches!(x.datum_type, DatumType::F32 | DatumType::F64) {
                return Err(self.label.err(format!("X_{} must be float or double, got {:?}", i + 1, x.datum_type)));
            }
            for j in self.group(i) {
                if inputs[j].datum_type != x.datum_type || inputs[j].shape != x.shape {
                    return Err(self.label.err(format!(
                        "the tensors of group {} differ: {:?} {:?} and {:?} {:?}",
                        i + 1,
                        x.datum_type,
                        x.shape,
                        inputs[j].datum_type,
                        inputs[j].shape
                    )));
                }
            }
        }
        let outputs = self.groups * (self.rule.kinds() - 1);
        Ok((0..outputs).map(|o| inputs[self.source(o)].without_value()).collect())
    }
}

/// The float types the optimizers update.
trait Real: Datum + Copy + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> {
    fn of(v: f64) -> Self;
    fn wide(self) -> f64;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn sqrt(self) -> Self;
}

macro_rules! real {
    ($($t:ty),*) => {$(
        impl Real for $t {
            fn of(v: f64) -> Self {
                v as $t
            }
            fn wide(self) -> f64 {
                self as f64
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
        }
    )*};
}
real!(f32, f64);

/// The scalars of one step, and the attributes as the reference reads them (`f32` widened).
struct Step {
    r: f64,
    r_is_f64: bool,
    t: i64,
}

fn attr(bits: u32) -> f64 {
    f32::from_bits(bits) as f64
}

impl Optimizer {
    /// Updates one group: `ins` are its tensors in kind order, the result its outputs.
    fn update<T: Real>(&self, step: &Step, ins: &[&[T]]) -> Vec<Vec<T>> {
        let (x, g) = (ins[0], ins[1]);
        let len = x.len();
        let t = |v: f64| T::of(v);
        match self.rule {
            Rule::Adagrad { norm, decay, epsilon } => {
                let h = ins[2];
                let r = step.r / (1.0 + step.t as f64 * attr(decay));
                let (mut xs, mut hs) = (Vec::with_capacity(len), Vec::with_capacity(len));
                for k in 0..len {
                    let gr = t(attr(norm)).mul(x[k]) + g[k];
                    let hn = h[k] + gr.mul(gr);
                    let root = hn.sqrt() + t(attr(epsilon));
                    xs.push(t(x[k].wide() - r * gr.wide() / root.wide()));
                    hs.push(hn);
                }
                vec![xs, hs]
            }
            Rule::Adam { alpha, beta, epsilon, norm, norm_post } => {
                let (v, h) = (ins[2], ins[3]);
                let (a, b) = (attr(alpha), attr(beta));
                // With bias correction, or R in f64: the update in f64, rounded once.
                let corrected = step.t > 0;
                let r = if corrected {
                    let t64 = step.t as f64;
                    step.r * (1.0 - b.powf(t64)).sqrt() / (1.0 - a.powf(t64))
                } else {
                    step.r
                };
                let wide = corrected || step.r_is_f64;
                let (mut xs, mut vs, mut hs) =
                    (Vec::with_capacity(len), Vec::with_capacity(len), Vec::with_capacity(len));
                for k in 0..len {
                    let gr = t(attr(norm)).mul(x[k]) + g[k];
                    let vn = t(a).mul(v[k]) + t(1.0 - a).mul(gr);
                    let hn = t(b).mul(h[k]) + t(1.0 - b).mul(gr.mul(gr));
                    let root = hn.sqrt() + t(attr(epsilon));
                    let ratio = vn.div(root);
                    let xn = if wide {
                        t((1.0 - attr(norm_post)) * (x[k].wide() - r * ratio.wide()))
                    } else {
                        t(1.0 - attr(norm_post)).mul(x[k] - t(r).mul(ratio))
                    };
                    xs.push(xn);
                    vs.push(vn);
                    hs.push(hn);
                }
                vec![xs, vs, hs]
            }
            Rule::Momentum { alpha, beta, norm, nesterov } => {
                let v = ins[2];
                let b = if step.t > 0 { t(attr(beta)) } else { t(1.0) };
                let (a, r) = (t(attr(alpha)), t(step.r));
                let (mut xs, mut vs) = (Vec::with_capacity(len), Vec::with_capacity(len));
                for k in 0..len {
                    let gr = t(attr(norm)).mul(x[k]) + g[k];
                    let vn = a.mul(v[k]) + b.mul(gr);
                    let xn = if nesterov { x[k] - r.mul(gr + a.mul(vn)) } else { x[k] - r.mul(vn) };
                    xs.push(xn);
                    vs.push(vn);
                }
                vec![xs, vs]
            }
        }
    }

    fn run_group<T: Real>(&self, step: &Step, inputs: &[TValue], i: usize) -> TractResult<Vec<Tensor>> {
        let members: Vec<usize> = self.group(i).collect();
        let shape = inputs[members[0]].shape();
        let mut slices = Vec::with_capacity(members.len());
        for &j in &members {
            if inputs[j].shape() != shape || inputs[j].datum_type() != T::datum_type() {
                return Err(self.label.err(format!(
                    "the tensors of group {} differ: {:?} {:?} and {:?} {:?}",
                    i + 1,
                    T::datum_type(),
                    shape,
                    inputs[j].datum_type(),
                    inputs[j].shape()
                )));
            }
            slices.push(inputs[j].try_as_plain_ram()?.as_slice::<T>()?);
        }
        self.update(step, &slices)
            .into_iter()
            .map(|data| Ok(tract_ndarray::ArrayD::from_shape_vec(shape, data)?.into_tensor()))
            .collect()
    }
}

impl EvalOp for Optimizer {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (r, t) = (&inputs[0], &inputs[1]);
        self.check_scalars((r.datum_type(), r.len()), (t.datum_type(), t.len()))?;
        let step = Step {
            r: r.cast_to_scalar::<f64>()?,
            r_is_f64: r.datum_type() == DatumType::F64,
            t: t.cast_to_scalar::<i64>()?,
        };
        let kinds_out = self.rule.kinds() - 1;
        let mut by_kind: Vec<Vec<Tensor>> = vec![Vec::with_capacity(self.groups); kinds_out];
        for i in 0..self.groups {
            let outs = match inputs[2 + i].datum_type() {
                DatumType::F32 => self.run_group::<f32>(&step, &inputs, i)?,
                DatumType::F64 => self.run_group::<f64>(&step, &inputs, i)?,
                dt => return Err(self.label.err(format!("X_{} must be float or double, got {dt:?}", i + 1))),
            };
            for (kind, o) in outs.into_iter().enumerate() {
                by_kind[kind].push(o);
            }
        }
        Ok(by_kind.into_iter().flatten().map(Tensor::into_tvalue).collect())
    }
}
