//! One thread budget for running a plan: tract's kernels (matrix products, convolutions, elementwise
//! ops over large tensors), sliceops' kernels that split their work over the plan's pool
//! (`DirectConv` and its depthwise kernel, `SmallMatMul`, `RowResize`, `DefinedActivation`: [`pool`],
//! each split through `kernel::spread`, the calling thread taking a share) and its copy kernel share
//! it.
//!
//! A plan made with a budget of `n` threads carries both halves of it:
//!
//! - tract's executor: single-threaded for `n = 1`, otherwise an `n`-thread pool (tract-linalg's
//!   `multithread-mm`), one pool per `n` in the process, shared by every plan;
//! - a turn handler that installs [`ThreadBudget`] in the turn's shared resources before every run,
//!   which sliceops' slicing ops read from their evaluation context and hand to the copy kernel
//!   (`kernel::with_threads`), so a copy never uses more threads than the budget, and splits over
//!   the same pool ([`pool_of`]).
//!
//! A plan made without a setting gets a budget of all physical cores when its work is large
//! ([`default_budget`]); otherwise it has none and runs as tract runs by default (its process-wide
//! executor, normally single-threaded) and the copy kernel splits large outputs over all cores.
//! Nested plans (`If`, `Scan` and `Loop` bodies) use tract's default executor and copy with all
//! cores.

mod awake;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tract_linalg::multithread::Executor;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::plan::{EvalContext, SimplePlan, TurnState, TurnStateHandler};

pub(crate) use awake::keep_awake;
#[cfg(test)]
pub(crate) use awake::spinners;

/// The largest thread budget accepted ([`crate::Model::set_threads`], `--threads`): more threads than
/// this is a mistake, not a setting (each budget makes a pool of that many threads).
pub(crate) const MAX_THREADS: usize = 1024;

/// The number of threads a plan's ops may use, as its turns see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThreadBudget(pub usize);

/// The budget installed for the turn being evaluated, if the plan has one.
pub(crate) fn budget(ctx: &EvalContext) -> Option<usize> {
    ctx.shared.and_then(|shared| shared.get::<ThreadBudget>()).map(|b| b.0)
}

/// The plan's thread pool for the turn being evaluated, shared with tract's kernels: `None` without a
/// budget or with a budget of one thread (then our kernels run on the calling thread).
pub(crate) fn pool(ctx: &EvalContext) -> Option<Arc<rayon::ThreadPool>> {
    budget(ctx).and_then(pool_of)
}

/// The pool of a budget of `n` threads, shared with tract's kernels: `None` for one thread.
pub(crate) fn pool_of(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    match executor(n) {
        Executor::MultiThread(pool) => Some(pool),
        _ => None,
    }
}

/// Multiply-adds of one run from which a plan made without a thread budget gets one of all physical
/// cores ([`default_budget`]); below it, tract's default single-threaded executor. See
/// docs/performance.md, "Default threads", for the figures behind it.
pub(crate) const DEFAULT_PARALLEL_MACS: u64 = 1 << 28;

/// The thread budget of a plan made without one, for a run of `macs` multiply-adds: all physical
/// cores for large work, none (tract's default executor, one thread) for small work or one core.
pub(crate) fn default_budget(macs: u64) -> Option<usize> {
    let cores = physical_cores();
    (macs >= DEFAULT_PARALLEL_MACS && cores > 1).then_some(cores)
}

/// The physical cores among those this process may use: the logical ones, less the second thread
/// of each core where the system says its cores run two (Linux's `/sys` topology).
pub(crate) fn physical_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        let logical = available();
        let read = |path: &str| std::fs::read_to_string(path).ok().map(|s| s.trim().to_string());
        let Some(siblings) = read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") else {
            return logical;
        };
        // "0", "0-1" or "0,8": how many logical CPUs share cpu0's core.
        let per_core: usize = siblings
            .split(',')
            .map(|part| match part.split_once('-') {
                Some((a, b)) => b.parse::<usize>().unwrap_or(0).saturating_sub(a.parse().unwrap_or(0)) + 1,
                None => 1,
            })
            .sum();
        (logical / per_core.max(1)).max(1)
    })
}

/// The cores this process may use.
pub(crate) fn available() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Elements from which tract's elementwise kernels split over the pool (tract-linalg's process-wide
/// setting, 32,768 by default), set when the first pool is made. tract hands a split to the pool and
/// puts the calling thread to sleep until it is done, and waking it costs tens of µs on a virtual
/// machine: at 32,768, RegNetY-400MF at batch 1 spent 0.47 ms a run in its 33 scalar products on 2
/// threads against 0.15 on one (`bench --profile`). 2^19 floats (2 MB) is about 0.1 ms of one
/// core's elementwise work, enough to pay for the wake-up.
pub(crate) const TRACT_ELEMENTS_PER_SPLIT: usize = 1 << 19;

/// tract's executor for a budget of `n` threads: single-threaded for 1, else the process's `n`-thread
/// pool (made on first use).
pub(crate) fn executor(n: usize) -> Executor {
    static POOLS: OnceLock<Mutex<HashMap<usize, Executor>>> = OnceLock::new();
    if n <= 1 {
        // A one-thread pool is not single-threaded in tract-linalg: large products go to rayon's
        // global pool then.
        return Executor::SingleThread;
    }
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    pools
        .entry(n)
        .or_insert_with(|| {
            tract_linalg::multithread::set_threading_element_threshold(TRACT_ELEMENTS_PER_SPLIT);
            Executor::multithread_with_name(n, "sliceops")
        })
        .clone()
}

/// Installs the budget in every turn of the plan, and keeps the workers of its pool awake while the
/// plan runs ([`keep_awake`]: waking a sleeping worker for every split node cost more than the split
/// gained).
#[derive(Debug)]
struct InstallBudget(usize);

impl TurnStateHandler for InstallBudget {
    fn before_plan_eval(&self, turn: &mut TurnState) -> TractResult<()> {
        turn.shared.insert(ThreadBudget(self.0));
        if let Some(pool) = pool_of(self.0) {
            keep_awake(&pool);
        }
        Ok(())
    }

    fn after_plan_eval(&self, _turn: &mut TurnState) -> TractResult<()> {
        Ok(())
    }
}

/// A runnable plan of `model`: with a budget, run by tract's executor for it and with the budget
/// installed for the copy kernel; without one, as tract's `into_runnable` makes it. With ordering
/// dependencies `(node, node it must come after)` beyond the model's edges
/// (a node after the one binding a size its shape mentions: the model's `runtime_dims`).
///
/// `low_ram`: tract's order that frees values early; else its plain depth-first order. With ordering
/// dependencies the first can trip an assertion of tract's (`!self.done.contains(next)` in its
/// `eval_order_opt_ram_for_nodes`) on torchvision Faster R-CNN's `If` branches, still so once
/// `runtime_dims::bind` kept only the dependencies of needed nodes (tests/data_dependent.rs, its
/// intermediate values asked alone), so branches with dependencies take the plain order. Whole models
/// keep the low-memory order: none of ours trips it there.
pub(crate) fn plan_ordered(
    model: TypedModel,
    threads: Option<usize>,
    deps: &[(usize, usize)],
    low_ram: bool,
) -> TractResult<Arc<TypedRunnableModel>> {
    let outputs = model.outputs.clone();
    let mut options = match threads {
        Some(n) => RunOptions { executor: Some(executor(n)), ..RunOptions::default() },
        None => RunOptions::default(),
    };
    options.skip_order_opt_ram = !low_ram;
    #[allow(deprecated)]
    let plan = SimplePlan::build_with_outputs_and_deps(model, &outputs, deps, &options)?;
    Ok(Arc::new(match threads {
        Some(n) => plan.with_turn_handler(InstallBudget(n)),
        None => plan,
    }))
}

#[cfg(test)]
mod tests {
    //! The thread budget (`Model::set_threads`, `--threads`): what tract's executor and the copy
    //! kernel see while a plan runs (the rest, through the public API and the command line, is in
    //! tests/threads.rs). No timing here: speed is measured by benches/ort_whole_models.py.

    use super::*;
    use crate::Model;
    use std::path::{Path, PathBuf};
    use tract_linalg::multithread::current_tract_executor;
    use tract_onnx::tract_core::plan::eval;

    /// The executor a plan runs with, as tract's kernels see it while one of its nodes is evaluated: for a
    /// budget, the number of threads of its pool (1 when single-threaded).
    fn executor_threads(executor: &Executor) -> usize {
        match executor {
            Executor::SingleThread => 1,
            Executor::MultiThread(pool) => pool.current_num_threads(),
            Executor::RayonGlobal => available(),
        }
    }

    fn model_dir(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(name)
    }

    fn x(name: &str) -> Tensor {
        crate::npy::read_npy(&model_dir(name).join("inputs/x.npy")).unwrap()
    }

    /// For every node the plan evaluates: the budget the slicing ops read from their context, and the
    /// number of threads of tract's executor at that point.
    fn seen_while_running(m: &Model, inputs: Vec<Tensor>) -> Vec<(Option<usize>, usize)> {
        let plan = m.plan_for(&inputs).unwrap();
        let mut state = plan.spawn().unwrap();
        let mut seen = vec![];
        let inputs: TVec<TValue> = inputs.into_iter().map(TValue::from).collect();
        state
            .run_plan_with_eval(inputs, |ctx, op_state, node, node_inputs| {
                seen.push((budget(ctx), executor_threads(&current_tract_executor())));
                eval(ctx, op_state, node, node_inputs)
            })
            .unwrap();
        seen
    }

    #[test]
    fn every_node_sees_the_budget_set_on_the_model() {
        let name = "chain_slice_strided_slice_as_strided";
        let mut m = Model::load_path(model_dir(name).join("model.onnx")).unwrap();
        assert_eq!(m.threads(), None);
        // Default: tract's default executor (single-threaded), no budget (copies over all cores).
        assert_eq!(seen_while_running(&m, vec![x(name)]), vec![(None, 1), (None, 1)]);
        m.set_threads(Some(3)).unwrap();
        assert_eq!(m.threads(), Some(3));
        assert_eq!(seen_while_running(&m, vec![x(name)]), vec![(Some(3), 3), (Some(3), 3)]);
        m.set_threads(Some(1)).unwrap();
        assert_eq!(seen_while_running(&m, vec![x(name)]), vec![(Some(1), 1), (Some(1), 1)]);
        // Each setting made its own plan; the same setting again keeps the plan.
        assert_eq!(m.plans_made(), 3);
        m.set_threads(Some(1)).unwrap();
        m.run(vec![x(name)]).unwrap();
        assert_eq!(m.plans_made(), 3);
        // A clone keeps the setting.
        assert_eq!(m.clone().threads(), Some(1));
    }

    #[test]
    fn a_budget_of_no_threads_or_too_many_is_an_error_that_keeps_the_setting() {
        let name = "chain_slice_strided_slice_as_strided";
        let mut m = Model::load_path(model_dir(name).join("model.onnx")).unwrap();
        m.set_threads(Some(2)).unwrap();
        let e = m.set_threads(Some(0)).unwrap_err().to_string();
        assert_eq!(e, "a thread budget is at least 1 thread, got 0");
        let max = MAX_THREADS;
        for n in [max + 1, usize::MAX] {
            let e = m.set_threads(Some(n)).unwrap_err().to_string();
            assert_eq!(e, format!("a thread budget is at most {max} threads, got {n}"));
        }
        assert_eq!(m.threads(), Some(2));
        m.set_threads(None).unwrap();
        assert_eq!(m.threads(), None);
    }

    #[test]
    fn the_copy_kernel_takes_the_budget_in_force() {
        let all = available();
        assert_eq!(crate::kernel::max_threads(), all);
        let inside = crate::kernel::with_threads(Some(2), crate::kernel::max_threads);
        assert_eq!(inside, 2);
        assert_eq!(crate::kernel::max_threads(), all);
    }
}
