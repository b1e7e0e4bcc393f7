//! One thread budget for running a plan: tract's kernels (matrix products, convolutions, elementwise
//! ops over large tensors) and sliceops' copy kernel share it.
//!
//! A plan made with a budget of `n` threads carries both halves of it:
//!
//! - tract's executor: single-threaded for `n = 1`, otherwise an `n`-thread pool (tract-linalg's
//!   `multithread-mm`), one pool per `n` in the process, shared by every plan;
//! - a turn handler that installs [`ThreadBudget`] in the turn's shared resources before every run,
//!   which sliceops' slicing ops read from their evaluation context and hand to the copy kernel
//!   (`kernel::with_threads`), so a copy never uses more threads than the budget.
//!
//! A plan made without a budget runs as tract runs by default (its process-wide executor, normally
//! single-threaded) and the copy kernel splits large outputs over all cores. Nested plans (`If`, `Scan`
//! and `Loop` bodies) use tract's default executor and copy with all cores.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tract_linalg::multithread::Executor;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::plan::{EvalContext, SimplePlan, TurnState, TurnStateHandler};

/// The largest thread budget accepted ([`crate::Model::set_threads`], `--threads`): more threads than
/// this is a mistake, not a setting (each budget makes a pool of that many threads).
pub const MAX_THREADS: usize = 1024;

/// The number of threads a plan's ops may use, as its turns see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadBudget(pub usize);

/// The budget installed for the turn being evaluated, if the plan has one.
pub fn budget(ctx: &EvalContext) -> Option<usize> {
    ctx.shared.and_then(|shared| shared.get::<ThreadBudget>()).map(|b| b.0)
}

/// The cores this process may use.
pub fn available() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// tract's executor for a budget of `n` threads: single-threaded for 1, else the process's `n`-thread
/// pool (made on first use).
pub fn executor(n: usize) -> Executor {
    static POOLS: OnceLock<Mutex<HashMap<usize, Executor>>> = OnceLock::new();
    if n <= 1 {
        // A one-thread pool is not single-threaded in tract-linalg: large products go to rayon's
        // global pool then.
        return Executor::SingleThread;
    }
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    pools.entry(n).or_insert_with(|| Executor::multithread_with_name(n, "sliceops")).clone()
}

/// Installs the budget in every turn of the plan.
#[derive(Debug)]
struct InstallBudget(usize);

impl TurnStateHandler for InstallBudget {
    fn before_plan_eval(&self, turn: &mut TurnState) -> TractResult<()> {
        turn.shared.insert(ThreadBudget(self.0));
        Ok(())
    }

    fn after_plan_eval(&self, _turn: &mut TurnState) -> TractResult<()> {
        Ok(())
    }
}

/// A runnable plan of `model`: with a budget, run by tract's executor for it and with the budget
/// installed for the copy kernel; without one, as tract's `into_runnable` makes it.
pub fn plan(model: TypedModel, threads: Option<usize>) -> TractResult<Arc<TypedRunnableModel>> {
    plan_ordered(model, threads, &[])
}

/// [`plan`], with ordering dependencies `(node, node it must come after)` beyond the model's edges
/// (a node after the one binding a size its shape mentions: the model's `runtime_dims`).
pub(crate) fn plan_ordered(
    model: TypedModel,
    threads: Option<usize>,
    deps: &[(usize, usize)],
) -> TractResult<Arc<TypedRunnableModel>> {
    let outputs = model.outputs.clone();
    let options = match threads {
        Some(n) => RunOptions { executor: Some(executor(n)), ..RunOptions::default() },
        None => RunOptions::default(),
    };
    #[allow(deprecated)]
    let plan = SimplePlan::build_with_outputs_and_deps(model, &outputs, deps, &options)?;
    Ok(Arc::new(match threads {
        Some(n) => plan.with_turn_handler(InstallBudget(n)),
        None => plan,
    }))
}

/// The executor a plan runs with, as tract's kernels see it while one of its nodes is evaluated: for a
/// budget, the number of threads of its pool (1 when single-threaded).
pub fn executor_threads(executor: &Executor) -> usize {
    match executor {
        Executor::SingleThread => 1,
        Executor::MultiThread(pool) => pool.current_num_threads(),
        Executor::RayonGlobal => available(),
    }
}
