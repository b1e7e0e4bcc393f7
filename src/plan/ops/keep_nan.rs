//! NaN kept through `Max`, `Min` and `Sigmoid` in the optimized plan.
//!
//! tract's kernels for a float `max`/`min` by a scalar (ONNX `Relu`, `Clip`, `Max(x, 0)`,
//! `Min(x, 0)`, the saturations of `HardSigmoid`) return the number when one side is NaN, and its
//! approximate sigmoid turns NaN into a small number; onnxruntime and onnx's reference give NaN.
//! In the plan, after code generation:
//!
//! - [`ScalarSteps`] replaces a float32 `OptBinByScalar` (or plain `TypedBinOp`, as tract leaves it
//!   for small tensors) max or min by a one-value operand, and an
//!   `OptBinChain` of such steps holding a max or a min (`Clip`: max then min; `HardSigmoid`: times,
//!   plus, min, max), every operand one value and every step `+ - * / max min`: each step over
//!   blocks of [`BLOCK`] values in turn, as tract's chain does, with max and min that keep NaN
//!   (`if x < s { s } else { x }`, one compare and one select), written to a new output;
//! - [`super::NanActivation`] (in `fitted.rs`) computes tract's sigmoid and tanh with NaN kept.
//!
//! Max and min fused into a matrix product stay where they are (their kernels keep NaN).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::{OptBinByScalar, OptBinChain, TypedBinOp};

/// Values per block: a block stays in the first-level cache through every step.
const BLOCK: usize = 1024;

/// One step of [`ScalarSteps`]: `x = x op s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    /// `x + s`.
    Add,
    /// `x - s`.
    Sub,
    /// `s - x`.
    SubF,
    /// `x * s`.
    Mul,
    /// `x / s`.
    Div,
    /// The greater, NaN if either is.
    Max,
    /// The lesser, NaN if either is.
    Min,
}

impl Step {
    fn of(name: &str) -> Option<Step> {
        Some(match name {
            "Add" => Step::Add,
            "Sub" => Step::Sub,
            "SubF" => Step::SubF,
            "Mul" => Step::Mul,
            "Div" => Step::Div,
            "Max" => Step::Max,
            "Min" => Step::Min,
            _ => return None,
        })
    }

    /// The step of every value of `src`, in a new buffer (no zeroing pass before it).
    #[inline(always)]
    fn collect(self, src: &[f32], s: f32) -> Vec<f32> {
        let values = src.iter();
        match self {
            Step::Add => values.map(|&x| x + s).collect(),
            Step::Sub => values.map(|&x| x - s).collect(),
            Step::SubF => values.map(|&x| s - x).collect(),
            Step::Mul => values.map(|&x| x * s).collect(),
            Step::Div => values.map(|&x| x / s).collect(),
            Step::Max => values.map(|&x| if x < s { s } else { x }).collect(),
            Step::Min => values.map(|&x| if x > s { s } else { x }).collect(),
        }
    }

    /// Writes the step of every value of `src` to `dst` (as long). Out of place: in place, a max
    /// written `if x < s { s } else { x }` compiles to a masked store, three times slower.
    #[inline(always)]
    fn apply(self, src: &[f32], dst: &mut [f32], s: f32) {
        let pairs = dst.iter_mut().zip(src);
        match self {
            Step::Add => pairs.for_each(|(d, &x)| *d = x + s),
            Step::Sub => pairs.for_each(|(d, &x)| *d = x - s),
            Step::SubF => pairs.for_each(|(d, &x)| *d = s - x),
            Step::Mul => pairs.for_each(|(d, &x)| *d = x * s),
            Step::Div => pairs.for_each(|(d, &x)| *d = x / s),
            // NaN < s and NaN > s are false: a NaN x stays; a NaN s is handled by the caller.
            Step::Max => pairs.for_each(|(d, &x)| *d = if x < s { s } else { x }),
            Step::Min => pairs.for_each(|(d, &x)| *d = if x > s { s } else { x }),
        }
    }
}

/// Float32 elementwise steps by one-value operands (inputs 1..), applied in turn to input 0, with
/// max and min that keep NaN.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ScalarSteps {
    /// The steps, in order; step `i` reads the `i`-th input other than the stepped value.
    pub steps: Vec<Step>,
    /// Which input is the stepped value (0, or 1 for `s op x` with one step).
    pub a_input: usize,
}

impl ScalarSteps {
    /// Our op for `node` of `model`, when it is a float32 max or min by one value (tract's
    /// `OptBinByScalar`, or its `TypedBinOp` left as it is for small tensors, the value on either
    /// side), or an `OptBinChain` of steps by one value each that holds a max or a min; its output
    /// has the shape of the value it steps (no broadcasting by the one-value operands).
    pub(crate) fn replacing(model: &TypedModel, node: &TypedNode) -> TractResult<Option<ScalarSteps>> {
        let name_of = |op: &dyn Op| -> Option<(Step, bool)> {
            if let Some(by_scalar) = op.downcast_ref::<OptBinByScalar>() {
                return Some((Step::of(by_scalar.binop.name())?, false));
            }
            let bin = op.downcast_ref::<TypedBinOp>()?;
            (bin.1.is_none()).then_some(())?;
            Some((Step::of(bin.0.name())?, true))
        };
        let one_value = |f: &TypedFact| f.datum_type == f32::datum_type() && f.shape.volume().as_i64() == Some(1);
        let out = model.outlet_fact(OutletId::new(node.id, 0))?;
        let facts: Vec<&TypedFact> = node.inputs.iter().map(|o| model.outlet_fact(*o)).collect::<TractResult<_>>()?;
        let (steps, a_input) = if let Some(chain) = node.op_as::<OptBinChain>() {
            let steps: Option<Vec<Step>> = chain.steps.iter().map(|s| Step::of(s.binop.name())).collect();
            let Some(steps) = steps else { return Ok(None) };
            (steps, 0)
        } else if let Some((step, either_side)) = name_of(node.op.as_op()) {
            match facts[..] {
                [_, b] if one_value(b) => (vec![step], 0),
                // The one value first: `s op x`, which is `x op s` for all but a subtraction
                // (`s - x`, SubF) and a division (left to tract).
                [b, _] if either_side && one_value(b) => match step {
                    Step::Div | Step::SubF => return Ok(None),
                    Step::Sub => (vec![Step::SubF], 1),
                    other => (vec![other], 1),
                },
                _ => return Ok(None),
            }
        } else {
            return Ok(None);
        };
        let Some(a) = facts.get(a_input) else { return Ok(None) };
        let operands: Vec<&TypedFact> =
            facts.iter().enumerate().filter(|(i, _)| *i != a_input).map(|(_, f)| *f).collect();
        let clamps = steps.iter().any(|s| matches!(s, Step::Max | Step::Min));
        let fits = clamps
            && a.datum_type == f32::datum_type()
            && out.datum_type == f32::datum_type()
            && out.shape == a.shape
            && operands.len() == steps.len()
            && operands.iter().all(|f| one_value(f));
        Ok(fits.then_some(ScalarSteps { steps, a_input }))
    }
}

impl Op for ScalarSteps {
    fn name(&self) -> StaticName {
        "ScalarSteps".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("{:?}", self.steps)])
    }

    op_as_typed_op!();
}

impl EvalOp for ScalarSteps {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(
            inputs.len() == self.steps.len() + 1,
            "ScalarSteps: {} inputs for {} steps",
            inputs.len(),
            self.steps.len()
        );
        let mut inputs = inputs;
        ensure!(self.a_input < inputs.len(), "ScalarSteps: no input {}", self.a_input);
        let x = inputs.remove(self.a_input);
        let mut operands = Vec::with_capacity(self.steps.len());
        for b in &inputs {
            ensure!(b.len() == 1, "ScalarSteps: an operand of shape {:?}", b.shape());
            operands.push(b.cast_to_scalar::<f32>()?);
        }
        let plain = x.try_as_plain_ram()?;
        let src = plain.as_slice::<f32>()?;
        // A NaN bound makes every value NaN at its step, and NaN stays through the later ones.
        let out = if self.steps.iter().zip(&operands).any(|(st, s)| matches!(st, Step::Max | Step::Min) && s.is_nan()) {
            vec![f32::NAN; src.len()]
        } else {
            run_steps(src, &self.steps, &operands)
        };
        Ok(tvec!(tract_ndarray::ArrayD::from_shape_vec(x.shape(), out)?.into_tvalue()))
    }
}

impl TypedOp for ScalarSteps {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let a = inputs.get(self.a_input).context("ScalarSteps: no stepped input")?;
        Ok(tvec!(f32::fact(a.shape.clone())))
    }
}

/// Every step over `src`, into a new buffer: the first in one pass, the others over each block of
/// it in turn.
fn run_steps(src: &[f32], steps: &[Step], operands: &[f32]) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // Safety: the CPU has AVX2, checked just above: the one requirement of calling a function
        // compiled with `target_feature(enable = "avx2")`.
        return unsafe { run_steps_avx2(src, steps, operands) };
    }
    run_steps_blocks(src, steps, operands)
}

/// [`run_steps_blocks`] compiled for AVX2 (the same operations, so the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_steps_avx2(src: &[f32], steps: &[Step], operands: &[f32]) -> Vec<f32> {
    run_steps_blocks(src, steps, operands)
}

/// The body of [`run_steps`], inlined into each build of it.
#[inline(always)]
fn run_steps_blocks(src: &[f32], steps: &[Step], operands: &[f32]) -> Vec<f32> {
    let mut pairs = steps.iter().zip(operands);
    let Some((first, &s)) = pairs.next() else { return src.to_vec() };
    let mut out = first.collect(src, s);
    let rest: Vec<(Step, f32)> = pairs.map(|(st, &s)| (*st, s)).collect();
    if !rest.is_empty() {
        let mut tmp = [0f32; BLOCK];
        for block in out.chunks_mut(BLOCK) {
            let tmp = &mut tmp[..block.len()];
            for &(step, s) in &rest {
                step.apply(block, tmp, s);
                block.copy_from_slice(tmp);
            }
        }
    }
    out
}
