//! ONNX `Loop`: the body analysed from the facts of the values it is given, run as a plan of its own
//! once per iteration.
//!
//! The body is translated as an `If` branch is ([`super::control`]): its inputs are the iteration
//! number (an `int64` scalar), the condition (a `bool` scalar), the loop-carried values, then the
//! outer values it reads. When its carried outputs have the facts of its carried inputs (loop
//! invariant shapes), the body is typed once; when some dims change between iterations, those dims
//! are made symbols and the body is typed again (a dim that then grows by an amount free of the
//! body's own symbols ends at `start + trips*step` when the trip count is known); failing that, it
//! is translated when it runs, for the shapes each iteration gives it (plans cached by signature).
//!
//! Termination, as onnxruntime and onnx's reference run it: the loop runs while the condition holds
//! (`true` when `cond` is not given) and fewer than `M` iterations ran (no bound when `M` is not
//! given); after each iteration the condition is the body's `cond_out`.
//!
//! What bounds a loop: at most [`MAX_ITERATIONS`] iterations, counting those of the loops nested in
//! its body (a model looping forever, `M` and `cond` absent and `cond_out` always true, stops with
//! an error naming the node; nested loops cannot multiply the bound), and the scan
//! outputs together at most the memory a value may take ([`crate::memory::value_limit`]),
//! checked as they grow, before stacking; a body translated when it runs is translated at most
//! [`MAX_TRANSLATIONS`] times a run, each translation's values weighed against that limit before
//! its plan runs (a carried value doubling at every iteration is refused, not allocated).

use super::control::Branch;
use crate::error::NodeError;
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// The most iterations one run of a `Loop` makes, those of the loops inside its body included: a
/// loop not done by then is an error. (A trivial body runs 4M iterations in about 5 s.)
pub const MAX_ITERATIONS: u64 = 1 << 22;

/// The most times one run of a `Loop` translates a body kept as parsed (once for each new set of
/// input shapes): a body whose values change shape at every iteration costs a translation each
/// (about 0.25 ms for a small body: 16,384 take about 4 s).
pub const MAX_TRANSLATIONS: u64 = 1 << 14;

thread_local! {
    /// How deep in loops this thread runs, and the iterations made since the outermost began.
    static RUNNING: std::cell::Cell<(usize, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// A loop running on this thread: the outermost starts the count of iterations, which the loops
/// inside its body add to (a body's plan runs on the thread of the loop running it).
struct Running;

impl Running {
    fn enter() -> Running {
        RUNNING.with(|r| {
            let (depth, count) = r.get();
            r.set((depth + 1, if depth == 0 { 0 } else { count }));
        });
        Running
    }

    /// Counts one more iteration; false when that is more than [`MAX_ITERATIONS`].
    fn tick(&self) -> bool {
        RUNNING.with(|r| {
            let (depth, count) = r.get();
            r.set((depth, count + 1));
            count < MAX_ITERATIONS
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|r| {
            let (depth, count) = r.get();
            r.set((depth.saturating_sub(1), count));
        });
    }
}

/// A `Loop` whose body runs as a plan of its own.
#[derive(Debug, Clone)]
pub(crate) struct LoopOp {
    /// The node's name, for errors.
    pub node: String,
    /// The body: typed at analysis, or translated per signature when run.
    pub body: Branch,
    /// The body as parsed, to find the shapes of scan outputs when no iteration runs.
    pub source: Arc<InferenceModel>,
    /// Its graph.
    pub graph: Arc<pb::GraphProto>,
    /// Whether the first input is `M`.
    pub has_m: bool,
    /// Whether `cond` is given (after `M`, if given).
    pub has_cond: bool,
    /// The number of loop-carried values.
    pub carried: usize,
    /// The number of scan outputs.
    pub scans: usize,
    /// The output facts: the carried values', then the scan outputs'.
    pub facts: TVec<TypedFact>,
}

impl PartialEq for LoopOp {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node && self.facts == other.facts
    }
}

impl Eq for LoopOp {}

impl Op for LoopOp {
    fn name(&self) -> StaticName {
        "Loop".into()
    }

    fn mints_runtime_symbols(&self) -> bool {
        true
    }

    op_as_typed_op!();
}

impl LoopOp {
    fn fail(&self, message: impl std::fmt::Display) -> TractError {
        NodeError::failed(&self.node, "Loop", message.to_string())
    }

    /// A scalar of type `dt` (one element, any rank) from input or body output `what`.
    fn scalar<T: Datum + Copy>(&self, t: &Tensor, what: &str) -> TractResult<T> {
        let integer = T::datum_type().is_integer() && (t.datum_type().is_integer() || t.datum_type().is_tdim());
        if (t.datum_type() != T::datum_type() && !integer) || t.len() != 1 {
            return Err(self.fail(format!(
                "{what} must be one {:?} value, got a {:?} tensor of shape {:?}",
                T::datum_type(),
                t.datum_type(),
                t.shape()
            )));
        }
        t.cast_to_scalar::<T>().map_err(|e| self.fail(format!("{what}: {e:#}")))
    }

    /// The element types and per-iteration shapes of the scan outputs, for a loop that runs no
    /// iteration: from the facts when they are concrete, else from the body translated for the
    /// values the first iteration would have had.
    fn scan_shapes(&self, first: &[TValue]) -> TractResult<Vec<(DatumType, Vec<usize>)>> {
        let facts = &self.facts[self.carried..];
        let known: Option<Vec<(DatumType, Vec<usize>)>> = facts
            .iter()
            .map(|f| Some((f.datum_type, f.shape.iter().skip(1).map(|d| d.to_usize().ok()).collect::<Option<_>>()?)))
            .collect();
        if let Some(known) = known {
            return Ok(known);
        }
        let inputs: Vec<TypedFact> = first.iter().map(|t| t.datum_type().fact(t.shape())).collect();
        let index = super::node_index(&self.graph);
        let t = super::translate::translate(&self.source, &index, &[], inputs, super::translate::Context::fresh())
            .map_err(|e| self.fail(format!("no iteration ran and the scan outputs' shapes cannot be known: {e:#}")))?;
        let outputs = &t.typed.outputs;
        if outputs.len() != 1 + self.carried + self.scans {
            return Err(self.fail("no iteration ran and the scan outputs' shapes cannot be known"));
        }
        outputs[1 + self.carried..]
            .iter()
            .map(|o| {
                let f = t.typed.outlet_fact(*o)?;
                let dims = f.shape.as_concrete().map(<[usize]>::to_vec).ok_or_else(|| {
                    self.fail(format!("no iteration ran and a scan output's shape depends on values ({:?})", f.shape))
                })?;
                Ok((f.datum_type, dims))
            })
            .collect()
    }
}

impl EvalOp for LoopOp {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let mut next = 0;
        let max: Option<i64> = if self.has_m {
            next += 1;
            Some(self.scalar::<i64>(&inputs[0], "M (the trip count)")?)
        } else {
            None
        };
        let mut cond = if self.has_cond {
            next += 1;
            self.scalar::<bool>(&inputs[next - 1], "cond")?
        } else {
            true
        };
        let mut carried: Vec<TValue> = inputs[next..next + self.carried].to_vec();
        let outer = &inputs[next + self.carried..];
        let types: Vec<DatumType> = carried.iter().map(|t| t.datum_type()).collect();
        let mut scans: Vec<Vec<TValue>> = vec![vec![]; self.scans];
        let limit = crate::memory::value_limit();
        let mut scan_bytes: u64 = 0;
        let mut iteration: i64 = 0;
        let running = Running::enter();
        let mut translations = 0u64;
        while cond && max.is_none_or(|m| iteration < m) {
            // A run with a deadline or a cancel handle stops between iterations.
            crate::cancel::check()?;
            if !running.tick() {
                return Err(self.fail(format!(
                    "still running after {MAX_ITERATIONS} iterations (its own and those of the loops inside its \
                     body), the most a Loop makes (M {}, the condition still true)",
                    max.map_or("not given".to_string(), |m| m.to_string())
                )));
            }
            let mut body_inputs: TVec<TValue> = tvec![tensor0(iteration).into(), tensor0(cond).into()];
            body_inputs.extend(carried.iter().cloned());
            body_inputs.extend(outer.iter().cloned());
            let mut outputs = self.body.run_counting(&self.node, "Loop", body_inputs, &mut translations)?;
            if translations > MAX_TRANSLATIONS {
                return Err(self.fail(format!(
                    "its body, translated for the shapes of each iteration, was translated {MAX_TRANSLATIONS} \
                     times after {} iterations: the most a Loop does",
                    iteration + 1
                )));
            }
            if outputs.len() != 1 + self.carried + self.scans {
                return Err(self.fail(format!("the body returned {} values", outputs.len())));
            }
            cond = self.scalar::<bool>(&outputs[0], "the body's cond_out")?;
            let scanned: Vec<TValue> = outputs.drain(1 + self.carried..).collect();
            for (slot, (value, dt)) in outputs.drain(1..).zip(&types).enumerate() {
                if value.datum_type() != *dt {
                    let message =
                        format!("loop-carried value {slot} is {dt:?} in, {:?} out of the body", value.datum_type());
                    return Err(self.fail(message));
                }
                carried[slot] = value;
            }
            for (slot, value) in scanned.into_iter().enumerate() {
                if let Some(first) = scans[slot].first() {
                    if first.datum_type() != value.datum_type() || first.shape() != value.shape() {
                        return Err(self.fail(format!(
                            "scan output {slot} is a {:?} tensor of shape {:?} at iteration 0, of {:?} {:?} at \
                             iteration {iteration}",
                            first.datum_type(),
                            first.shape(),
                            value.datum_type(),
                            value.shape()
                        )));
                    }
                }
                let bytes = (value.len() as u64).saturating_mul(value.datum_type().size_of() as u64);
                scan_bytes = scan_bytes.saturating_add(bytes);
                if scan_bytes > limit {
                    return Err(self.fail(format!(
                        "its scan outputs take more than this process can allocate ({limit} bytes) after {} \
                         iterations",
                        iteration + 1
                    )));
                }
                scans[slot].push(value);
            }
            iteration += 1;
        }
        let mut results: TVec<TValue> = carried.into_iter().collect();
        if iteration == 0 && self.scans > 0 {
            let mut first: Vec<TValue> = vec![tensor0(0i64).into(), tensor0(cond).into()];
            first.extend(results.iter().cloned());
            first.extend(outer.iter().cloned());
            for (dt, dims) in self.scan_shapes(&first)? {
                let shape: Vec<usize> = std::iter::once(0).chain(dims).collect();
                results.push(Tensor::zero_dt(dt, &shape)?.into());
            }
        } else {
            for values in scans {
                // Each iteration's value gains the new axis 0, along which they are joined.
                let values: Vec<Tensor> = values
                    .into_iter()
                    .map(|v| {
                        let mut t = v.into_tensor();
                        t.insert_axis(0)?;
                        Ok(t)
                    })
                    .collect::<TractResult<_>>()?;
                results.push(Tensor::stack_tensors(0, &values)?.into());
            }
        }
        let same = results.iter().zip(&self.facts).all(|(o, f)| {
            o.rank() == f.rank()
                && o.datum_type() == f.datum_type
                && o.shape().iter().zip(f.shape.iter()).all(|(&n, d)| d.as_i64().is_none_or(|v| v == n as i64))
        });
        if results.len() != self.facts.len() || !same {
            return Err(self.fail("the loop returns other types or shapes than analysis found"));
        }
        Ok(results)
    }
}

impl TypedOp for LoopOp {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(self.facts.iter().map(|f| f.without_value()).collect())
    }
}
