//! `sliceops run` and `sliceops bench`.

use super::inputs::{given_names, load_inputs};
use super::table::print_table;
use super::Format;
use crate::cancel::{Cancel, Cancelled};
use crate::io::atomic::{commit_all, AtomicFile};
use crate::npy::{check_writable, escape_name, numpy_name, write_npy_to};
use crate::Model;
use anyhow::Context;
use std::path::Path;
use std::time::Instant;
use tract_onnx::prelude::*;

fn load(model: &Path) -> anyhow::Result<Model> {
    let m = Model::load_path(model)?;
    // Warnings need the inferred facts; running needs its own optimized model, built after.
    if let Ok(warnings) = m.infer().and_then(|facts| m.shape_warnings(&facts)) {
        for w in warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok(m)
}

/// Where `run` writes the outputs: `.npy` files in a folder, one `.npz`, or both.
#[derive(Debug, Clone)]
pub(super) struct Outputs {
    /// `--output-dir` (`.` when neither is given).
    pub dir: Option<std::path::PathBuf>,
    /// `--output-npz`.
    pub npz: Option<std::path::PathBuf>,
}

/// The longest `--timeout` accepted: a year, in seconds.
const MAX_TIMEOUT_S: f64 = 31_536_000.0;

/// `--timeout`: a number of seconds, more than 0 and at most a year.
pub(super) fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    let s: f64 = text.trim().parse().map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !(s > 0.0 && s <= MAX_TIMEOUT_S) {
        return Err(format!("the timeout must be more than 0 and at most {MAX_TIMEOUT_S} seconds, got {text}"));
    }
    Ok(std::time::Duration::from_secs_f64(s))
}

/// `run`'s options besides its files.
#[derive(Debug, Clone, Default)]
pub(super) struct RunOptions {
    /// Compare the outputs with the `.npy` files of this folder.
    pub expect: Option<std::path::PathBuf>,
    /// The thread budget, if set (see `Model::set_threads`).
    pub threads: Option<u32>,
    /// Stop the run after this long.
    pub timeout: Option<std::time::Duration>,
}

/// Runs the model and writes its outputs; with `expect`, compares them with the `.npy` files there.
pub(super) fn run(
    model: &Path,
    inputs: &[String],
    written: &Outputs,
    input_shapes: &[String],
    options: &RunOptions,
) -> anyhow::Result<()> {
    let (expect, threads) = (options.expect.as_deref(), options.threads);
    let mut m = load(model)?;
    // Inputs given for initializers listed as graph inputs replace their default values.
    // A malformed argument is reported by `load_inputs`, after the options it has always come after.
    let names = given_names(inputs);
    if let Some(fed) = m.feeding(&names)? {
        m = fed;
    }
    super::inputs::configure(&mut m, input_shapes, &[])?;
    m.set_threads(threads.map(|n| n as usize))?;
    let inputs = load_inputs(&m, inputs)?;
    let outputs = match options.timeout {
        None => m.run(inputs)?,
        // The message names the timeout given: the run stops at the first check past it.
        Some(t) => m.run_with(inputs, &Cancel::with_timeout(t)).map_err(|e| match Cancelled::find(&e) {
            Some(_) => anyhow::anyhow!("run cancelled after {} s (--timeout)", t.as_secs_f64()),
            None => e,
        })?,
    };
    match (&written.dir, &written.npz) {
        (None, None) => write_outputs(&outputs, Path::new("."))?,
        (dir, npz) => {
            if let Some(npz) = npz {
                crate::npz::write_npz(npz, &outputs)?;
            }
            if let Some(dir) = dir {
                write_outputs(&outputs, dir)?;
            }
        }
    }
    let mut rows = vec![["name".to_string(), "dtype".to_string(), "shape".to_string()]];
    for (name, tensor) in &outputs {
        rows.push([name.clone(), numpy_name(tensor.datum_type()), format!("{:?}", tensor.shape())]);
    }
    print_table(&rows)?;
    if let Some(dir) = expect {
        let mut mismatches = vec![];
        for (name, tensor) in &outputs {
            let path = dir.join(format!("{}.npy", escape_name(name)));
            let want = crate::npy::read_npy(&path).with_context(|| format!("expected output '{name}'"))?;
            if let Err(why) = crate::report::compare(tensor, &want) {
                mismatches.push(format!("{name}: {why}"));
            }
        }
        if !mismatches.is_empty() {
            anyhow::bail!("outputs differ from {}: {}", dir.display(), mismatches.join("; "));
        }
        outln!("every output matches {}", dir.display())?;
    }
    Ok(())
}

/// Writes every output as `DIR/<name>.npy`, all or nothing: each is checked to be writable as `.npy`
/// before any file is created, each is written to a temporary file, and only when all are complete are
/// they renamed over their targets.
fn write_outputs(outputs: &[(String, Tensor)], output_dir: &Path) -> anyhow::Result<()> {
    for (name, tensor) in outputs {
        check_writable(tensor).with_context(|| format!("output '{name}'"))?;
        crate::io::atomic::check_target(&output_dir.join(format!("{}.npy", escape_name(name))))?;
    }
    std::fs::create_dir_all(output_dir).with_context(|| format!("cannot create {}", output_dir.display()))?;
    let mut staged = Vec::with_capacity(outputs.len());
    for (name, tensor) in outputs {
        let path = output_dir.join(format!("{}.npy", escape_name(name)));
        let mut file = AtomicFile::create(&path)?;
        write_npy_to(&mut file, tensor).with_context(|| format!("cannot write {}", path.display()))?;
        staged.push(file.finish()?);
    }
    commit_all(staged)
}

/// The most timed runs `bench` accepts: their times are kept (8 bytes each) to find the median, so an
/// unbounded count would be an allocation of any size before the first run.
pub(super) const MAX_RUNS: u32 = 1_000_000;

/// What `bench` measures and prints.
#[derive(Debug, Clone)]
pub(super) struct BenchOptions {
    /// Timed runs.
    pub runs: u32,
    /// Output format.
    pub format: Format,
    /// The thread budget, if set (see `Model::set_threads`).
    pub threads: Option<u32>,
    /// Profile too, showing this many rows of each list (0: all).
    pub profile: Option<usize>,
    /// Stop the whole bench after this long.
    pub timeout: Option<std::time::Duration>,
}

/// Times the plan `run` makes for these inputs (their shapes bound): one warm-up run, then `runs` timed
/// runs; inputs are prepared beforehand. Also reported: the time to load the model, to make the plan
/// (the analysis with these shapes bound, optimization, planning) and the warm-up run. With a profile,
/// the same number of runs again with every node timed (the plain runs are timed without it). With a
/// timeout, the whole bench stops at the first check past it (before each node, each `Loop` iteration
/// and each run; the checks are made in the timed runs too).
pub(super) fn bench(model: &Path, inputs: &[String], options: &BenchOptions) -> anyhow::Result<()> {
    if options.runs == 0 || options.runs > MAX_RUNS {
        anyhow::bail!("--runs must be between 1 and {MAX_RUNS}, not {}", options.runs);
    }
    let Some(t) = options.timeout else { return timed_bench(model, inputs, options) };
    let _scope = crate::cancel::Scope::enter(&Cancel::with_timeout(t));
    timed_bench(model, inputs, options).map_err(|e| match Cancelled::find(&e) {
        Some(_) => anyhow::anyhow!("bench cancelled after {} s (--timeout)", t.as_secs_f64()),
        None => e,
    })
}

/// [`bench`] within the cancel scope in force, if any.
fn timed_bench(model: &Path, inputs: &[String], options: &BenchOptions) -> anyhow::Result<()> {
    use crate::cancel::{check, run_plan};
    let start = Instant::now();
    let mut m = load(model)?;
    let load_s = start.elapsed().as_secs_f64();
    m.set_threads(options.threads.map(|n| n as usize))?;
    let tensors = load_inputs(&m, inputs)?;
    // The plan for these shapes: the analysis with them bound, optimization and planning.
    let start = Instant::now();
    let plan = m.plan_for(&tensors)?;
    let plan_s = start.elapsed().as_secs_f64();
    let inputs: TVec<TValue> = tensors.into_iter().map(TValue::from).collect();
    check()?;
    let start = Instant::now();
    run_plan(&plan, inputs.clone())?;
    let first_run_s = start.elapsed().as_secs_f64();
    let runs = options.runs;
    let mut times = Vec::with_capacity(runs as usize);
    for _ in 0..runs {
        check()?;
        let batch = inputs.clone();
        let start = Instant::now();
        let out = run_plan(&plan, batch)?;
        times.push(start.elapsed().as_secs_f64());
        drop(out);
    }
    times.sort_by(f64::total_cmp);
    let median = if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    };
    let min = times[0];
    let profile = match options.profile {
        Some(_) => {
            let names = crate::profile::OnnxNames::from_graph(m.graph());
            Some(crate::profile::profile(&plan, &inputs, runs, &names)?)
        }
        None => None,
    };
    let top = options.profile.unwrap_or(0);
    match options.format {
        Format::Json => {
            let mut report = serde_json::json!({"runs": runs, "median_s": median, "min_s": min, "load_s": load_s,
                "plan_s": plan_s, "first_run_s": first_run_s});
            if let Some(p) = &profile {
                report["profile"] = super::profile::json(p, top);
            }
            outln!("{report}")?;
        }
        Format::Table => {
            let ms = |s: f64| format!("{:.3} ms", s * 1e3);
            print_table(&[
                ["runs", "median", "min", "load", "plan", "first run"].map(String::from),
                [runs.to_string(), ms(median), ms(min), ms(load_s), ms(plan_s), ms(first_run_s)],
            ])?;
            if let Some(p) = &profile {
                super::profile::print(p, top)?;
            }
        }
    }
    Ok(())
}
