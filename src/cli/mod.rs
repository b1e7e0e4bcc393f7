//! The `sliceops` command line: `run`, `infer`, `cost`, `fold`, `lower`, `bench`.

/// Writes a line to stdout, returning the error (a closed pipe included) instead of panicking as
/// `println!` does.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err(anyhow::Error::from)
    }};
}

mod cost;
mod fold;
mod infer;
mod inputs;
mod profile;
mod run;
mod table;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Runs, infers, folds and lowers whole ONNX models, with exact symbolic shapes: every value's type and
/// shape before anything runs, models run on .npy/.npz inputs (on tract, with sliceops' own kernels),
/// constants folded, and non-standard slicing ops rewritten into standard ONNX.
#[derive(Debug, Parser)]
#[command(name = "sliceops", version)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Output format of `infer` and `bench`: `table` (aligned columns for people) or `json` (for programs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned columns for people.
    Table,
    /// JSON for programs.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a model on .npy or .npz inputs; write its outputs as .npy files and/or one .npz.
    Run {
        /// The .onnx model.
        model: PathBuf,
        /// A graph input as NAME=FILE.npy, or an .npz of inputs by name (repeatable).
        #[arg(short = 'i', long = "input", value_name = "NAME=FILE.npy|FILE.npz")]
        inputs: Vec<String>,
        /// Write each output as DIR/<name>.npy (created if missing; default: . unless --output-npz is given).
        #[arg(short = 'd', long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        /// Write every output into one .npz, as numpy's np.savez (arrays named as the outputs).
        #[arg(short = 'z', long, value_name = "FILE.npz")]
        output_npz: Option<PathBuf>,
        /// Check an input's shape, as NAME=D0,D1,... (integers or symbols, a symbol taking the same
        /// value wherever it appears); the tensors given must agree.
        #[arg(short = 's', long = "input-shape", value_name = "NAME=D0,D1,...")]
        input_shapes: Vec<String>,
        /// Compare the outputs with DIR/<name>.npy: exact for integers and booleans, within a
        /// relative 1e-4 and absolute 1e-5 for floats; exit 1 on a mismatch.
        #[arg(short = 'e', long, value_name = "DIR")]
        expect: Option<PathBuf>,
        /// Threads for tract's kernels and ours together (default: all physical cores for a plan of at
        /// least 2^28 multiply-adds a run, else tract single-threaded with copies over all cores).
        #[arg(short = 't', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::threads::MAX_THREADS as i64))]
        threads: Option<u32>,
        /// Stop the run after this many seconds (a fraction allowed), checked before each node and each
        /// Loop iteration: exit 1 with `error: run cancelled after N s (--timeout)`.
        #[arg(short = 'T', long, value_name = "SECONDS", value_parser = run::parse_timeout)]
        timeout: Option<std::time::Duration>,
    },
    /// Infer the type and shape of every value (symbolic dims exact), before running anything.
    Infer {
        /// The .onnx model.
        model: PathBuf,
        /// Set an input's shape, as NAME=D0,D1,... (integers or symbols such as N).
        #[arg(short = 's', long = "input-shape", value_name = "NAME=D0,D1,...")]
        input_shapes: Vec<String>,
        /// An assumption about symbols used to simplify shapes, such as N>=2 (repeatable).
        #[arg(short = 'a', long = "assume", value_name = "EXPR")]
        assumptions: Vec<String>,
        /// Output format: table (aligned columns) or json (for programs).
        #[arg(short = 'f', long, value_enum, default_value_t = Format::Table, hide_possible_values = true)]
        format: Format,
    },
    /// Count each node's multiply-adds, parameters and bytes, totals and the peak memory, as exact
    /// expressions of the input dims.
    Cost {
        /// The .onnx model.
        model: PathBuf,
        /// Set an input's shape, as NAME=D0,D1,... (integers or symbols such as N).
        #[arg(short = 's', long = "input-shape", value_name = "NAME=D0,D1,...")]
        input_shapes: Vec<String>,
        /// An assumption about symbols used to simplify the figures, such as N>=2 (repeatable).
        #[arg(short = 'a', long = "assume", value_name = "EXPR")]
        assumptions: Vec<String>,
        /// Evaluate every figure at these sizes, as NAME=VALUE (several joined by commas; repeatable).
        #[arg(short = 'A', long = "at", value_name = "NAME=VALUE,...")]
        at: Vec<String>,
        /// Output format: table (aligned columns) or json (for programs).
        #[arg(short = 'f', long, value_enum, default_value_t = Format::Table, hide_possible_values = true)]
        format: Format,
    },
    /// Write the model back with constants folded, dead nodes removed and every shape annotated.
    Fold {
        /// The .onnx model.
        model: PathBuf,
        /// Where to write the folded model.
        #[arg(short = 'o', long, value_name = "OUT.onnx")]
        output: PathBuf,
        /// Keep results bit-exact: no fusion that changes floating-point rounding (BatchNormalization
        /// into Conv, MatMul + Add into Gemm, Add of 0).
        #[arg(short = 'x', long)]
        exact: bool,
        /// Specialize an input's shape, as NAME=D0,D1,... (integers or symbols).
        #[arg(short = 's', long = "input-shape", value_name = "NAME=D0,D1,...")]
        input_shapes: Vec<String>,
        /// An assumption about symbols, such as N>=2 (repeatable).
        #[arg(short = 'a', long = "assume", value_name = "EXPR")]
        assumptions: Vec<String>,
    },
    /// Rewrite StridedSlice, AsStrided and Paddle-form Slice into standard ONNX.
    Lower {
        /// The .onnx model.
        model: PathBuf,
        /// Where to write the lowered model.
        #[arg(short = 'o', long, value_name = "OUT.onnx")]
        output: PathBuf,
    },
    /// Time the optimized plan on .npy or .npz inputs (median and minimum after a warm-up).
    Bench {
        /// The .onnx model.
        model: PathBuf,
        /// A graph input as NAME=FILE.npy, or an .npz of inputs by name (repeatable).
        #[arg(short = 'i', long = "input", value_name = "NAME=FILE.npy|FILE.npz")]
        inputs: Vec<String>,
        /// Number of timed runs, 1 to 1000000 (each run's time is kept for the median).
        #[arg(short = 'r', long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=run::MAX_RUNS as i64))]
        runs: u32,
        /// Output format: table (aligned columns) or json (for programs).
        #[arg(short = 'f', long, value_enum, default_value_t = Format::Table, hide_possible_values = true)]
        format: Format,
        /// Threads for tract's kernels and ours together (default: all physical cores for a plan of at
        /// least 2^28 multiply-adds a run, else tract single-threaded with copies over all cores).
        #[arg(short = 't', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::threads::MAX_THREADS as i64))]
        threads: Option<u32>,
        /// Also time every node over the runs: per node and per op type, with shares of the total.
        #[arg(short = 'p', long)]
        profile: bool,
        /// Rows of each profile list shown (0: all).
        #[arg(short = 'n', long, value_name = "N", default_value_t = 20, requires = "profile")]
        top: usize,
        /// Stop the whole bench (loading, warm-up, timed and profiled runs) after this many seconds,
        /// checked before each node, each Loop iteration and each run: exit 1 with
        /// `error: bench cancelled after N s (--timeout)`.
        #[arg(short = 'T', long, value_name = "SECONDS", value_parser = run::parse_timeout)]
        timeout: Option<std::time::Duration>,
    },
}

/// Runs the command line; returns the process exit status.
pub(crate) fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout with status 0, usage errors to stderr with 2.
            let _ = e.print();
            return e.exit_code();
        }
    };
    // A write past the file size limit (`ulimit -f`) is an error to report, with the temporary file
    // removed and the target untouched, not a signal that kills the process mid-write.
    // Safety: SIG_IGN installs no handler; this runs once, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Outputs are allocated run after run: keep large buffers for reuse (see tune_allocator).
    crate::kernel::tune_allocator();
    // The library turns a panic inside tract into an error, reported as one `error:` line below; the
    // default hook would also print it as a crash.
    std::panic::set_hook(Box::new(|_| {}));
    // A panic the library's guards did not catch is still one `error:` line and exit 1, not a
    // silent exit (the hook above prints nothing).
    let command = cli.command;
    let result = caught(move || match command {
        Command::Run { model, inputs, output_dir, output_npz, input_shapes, expect, threads, timeout } => {
            let outputs = run::Outputs { dir: output_dir, npz: output_npz };
            let options = run::RunOptions { expect, threads, timeout };
            run::run(&model, &inputs, &outputs, &input_shapes, &options)
        }
        Command::Infer { model, input_shapes, assumptions, format } => {
            infer::infer(&model, &input_shapes, &assumptions, format)
        }
        Command::Cost { model, input_shapes, assumptions, at, format } => {
            cost::cost(&model, &input_shapes, &assumptions, &at, format)
        }
        Command::Fold { model, output, exact, input_shapes, assumptions } => {
            fold::fold(&model, &output, exact, &input_shapes, &assumptions)
        }
        Command::Lower { model, output } => fold::lower(&model, &output),
        Command::Bench { model, inputs, runs, format, threads, profile, top, timeout } => {
            let profile = profile.then_some(top);
            run::bench(&model, &inputs, &run::BenchOptions { runs, format, threads, profile, timeout })
        }
    });
    match result {
        Ok(()) => 0,
        // A reader that stopped reading (`sliceops infer MODEL | head -1`): what it read was written,
        // the rest is not wanted; end quietly, as other command-line tools do.
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            if std::env::var_os("SLICEOPS_DEBUG_ERRORS").is_some() {
                eprintln!("{e:?}");
            }
            eprintln!("error: {}", crate::report::describe_error(&e));
            1
        }
    }
}

/// Whether the error is a write to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// `f`'s result, or a panic that escaped it as an error carrying the panic's message.
fn caught(f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "no message".into());
        Err(anyhow::anyhow!("internal error (a panic no guard caught): {message}"))
    })
}

/// A model rewrite: the model's bytes and the folder of its external data in, the new model's bytes out.
pub(crate) type Transform<'a> = &'a dyn Fn(&[u8], Option<&std::path::Path>) -> anyhow::Result<Vec<u8>>;

/// Reads `model`, rewrites it with `transform` and writes the result to `output` atomically.
pub(crate) fn write_back(
    model: &std::path::Path,
    output: &std::path::Path,
    transform: Transform,
) -> anyhow::Result<()> {
    use crate::onnx::Placement;
    // A FIFO or a device as the output is refused before any work.
    crate::io::atomic::check_target(output)?;
    let bytes = crate::load::read_model_file(model)?;
    let out = transform(&bytes, model.parent())?;
    drop(bytes);
    // Atomic: with `-o` equal to the input, the input stays whole until the new model is complete.
    // External data is read from the input's folder, never copied as a reference relative to it.
    match crate::onnx::write_model_file(out, model.parent(), output)? {
        Placement::Unchanged => {}
        Placement::Inlined { tensors } => eprintln!("note: external data inlined ({tensors} {})", plural(tensors)),
        Placement::External { file, tensors } => {
            eprintln!("note: wrote external data to {} ({tensors} {})", file.display(), plural(tensors))
        }
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        "tensor"
    } else {
        "tensors"
    }
}
