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
//!   (`if x < s { s } else { x }`, one compare and one select, the cost of tract's own);
//! - [`NanSigmoid`] runs tract's float32 sigmoid kernel block by block and puts NaN back where the
//!   input had one (a block without NaN is only read once more, in cache).
//!
//! Max and min fused into a matrix product stay where they are (their kernels keep NaN).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::{OptBinByScalar, OptBinChain, TypedBinOp};
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;

/// Values per block: a block stays in the first-level cache through every step.
const BLOCK: usize = 1024;

/// One step of [`ScalarSteps`]: `x = x op s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
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

    /// Applies the step to every value of `xs`.
    #[inline(always)]
    fn apply(self, xs: &mut [f32], s: f32) {
        match self {
            Step::Add => xs.iter_mut().for_each(|x| *x += s),
            Step::Sub => xs.iter_mut().for_each(|x| *x -= s),
            Step::SubF => xs.iter_mut().for_each(|x| *x = s - *x),
            Step::Mul => xs.iter_mut().for_each(|x| *x *= s),
            Step::Div => xs.iter_mut().for_each(|x| *x /= s),
            // NaN < s and NaN > s are false: a NaN x stays; a NaN s is handled by the caller.
            Step::Max => xs.iter_mut().for_each(|x| *x = if *x < s { s } else { *x }),
            Step::Min => xs.iter_mut().for_each(|x| *x = if *x > s { s } else { *x }),
        }
    }
}

/// Float32 elementwise steps by one-value operands (inputs 1..), applied in turn to input 0, with
/// max and min that keep NaN.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScalarSteps {
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
    pub fn replacing(model: &TypedModel, node: &TypedNode) -> TractResult<Option<ScalarSteps>> {
        let name_of = |op: &dyn Op| -> Option<(Step, bool)> {
            if let Some(by_scalar) = op.downcast_ref::<OptBinByScalar>() {
                return Some((Step::of(by_scalar.binop.name().as_ref())?, false));
            }
            let bin = op.downcast_ref::<TypedBinOp>()?;
            (bin.1.is_none()).then_some(())?;
            Some((Step::of(bin.0.name().as_ref())?, true))
        };
        let one_value = |f: &TypedFact| f.datum_type == f32::datum_type() && f.shape.volume().as_i64() == Some(1);
        let out = model.outlet_fact(OutletId::new(node.id, 0))?;
        let facts: Vec<&TypedFact> = node.inputs.iter().map(|o| model.outlet_fact(*o)).collect::<TractResult<_>>()?;
        let (steps, a_input) = if let Some(chain) = node.op_as::<OptBinChain>() {
            let steps: Option<Vec<Step>> = chain.steps.iter().map(|s| Step::of(s.binop.name().as_ref())).collect();
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
        let mut x = inputs.remove(self.a_input).into_tensor();
        let mut operands = Vec::with_capacity(self.steps.len());
        for b in &inputs {
            ensure!(b.len() == 1, "ScalarSteps: an operand of shape {:?}", b.shape());
            operands.push(b.cast_to_scalar::<f32>()?);
        }
        let mut plain = x.try_as_plain_ram_mut()?;
        let xs = plain.as_slice_mut::<f32>()?;
        // A NaN bound makes every value NaN at its step, and NaN stays through the later ones.
        if self.steps.iter().zip(&operands).any(|(st, s)| matches!(st, Step::Max | Step::Min) && s.is_nan()) {
            xs.iter_mut().for_each(|x| *x = f32::NAN);
        } else {
            run_steps(xs, &self.steps, &operands);
        }
        Ok(tvec!(x.into_tvalue()))
    }
}

impl TypedOp for ScalarSteps {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let a = inputs.get(self.a_input).context("ScalarSteps: no stepped input")?;
        Ok(tvec!(f32::fact(a.shape.clone())))
    }
}

/// Every step over each block of `xs` in turn.
fn run_steps(xs: &mut [f32], steps: &[Step], operands: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // Safety: the CPU has AVX2, checked just above: the one requirement of calling a function
        // compiled with `target_feature(enable = "avx2")`.
        return unsafe { run_steps_avx2(xs, steps, operands) };
    }
    run_steps_blocks(xs, steps, operands)
}

/// [`run_steps_blocks`] compiled for AVX2 (the same operations, so the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_steps_avx2(xs: &mut [f32], steps: &[Step], operands: &[f32]) {
    run_steps_blocks(xs, steps, operands)
}

#[inline(always)]
fn run_steps_blocks(xs: &mut [f32], steps: &[Step], operands: &[f32]) {
    for block in xs.chunks_mut(BLOCK) {
        for (step, &s) in steps.iter().zip(operands) {
            step.apply(block, s);
        }
    }
}

/// tract's float32 sigmoid with NaN kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NanSigmoid;

impl NanSigmoid {
    /// Our op for tract's elementwise `op` over `fact`, if it is a float32 sigmoid.
    pub fn replacing(op: &ElementWiseOp, fact: &TypedFact) -> Option<NanSigmoid> {
        (op.0.name() == "Sigmoid" && op.1.is_none() && fact.datum_type == f32::datum_type()).then_some(NanSigmoid)
    }
}

impl Op for NanSigmoid {
    fn name(&self) -> StaticName {
        "NanSigmoid".into()
    }

    op_as_typed_op!();
}

impl EvalOp for NanSigmoid {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let mut x = args_1!(inputs).into_tensor();
        let kernel = tract_linalg::routines::Func::Sigmoid.ew_f32()?;
        let mut plain = x.try_as_plain_ram_mut()?;
        for block in plain.as_slice_mut::<f32>()?.chunks_mut(BLOCK) {
            let nan = block.iter().fold(false, |seen, v| seen | v.is_nan());
            if !nan {
                kernel.run(block)?;
                continue;
            }
            let mut copy = block.to_vec();
            kernel.run(&mut copy)?;
            for (x, c) in block.iter_mut().zip(copy) {
                if !x.is_nan() {
                    *x = c;
                }
            }
        }
        Ok(tvec!(x.into_tvalue()))
    }
}

impl TypedOp for NanSigmoid {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let a = inputs.first().context("NanSigmoid takes an input")?;
        Ok(tvec!(f32::fact(a.shape.clone())))
    }
}
