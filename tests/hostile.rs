//! Hostile inputs (the error rules and the CLI contract): whatever the files hold, the library returns
//! `Err` (never panics, aborts or hangs) and `sliceops` exits with status 1 and exactly one line
//! `error: ...` on stderr (after any `warning:` lines), which names the node, the op and the offending
//! value for node-level errors. Valid extremes (`INT64_MIN` / `INT64_MAX` bounds and steps, AsStrided
//! strides and offsets near the i64 limits) give the exact answer, through the API and the CLI.
//!
//! Isolation: every test runs in a child process (this test binary, that one test) under an address
//! space limit, with a deadline, so that an abort, an out-of-memory kill or a hang fails that test alone
//! with its output. Every CLI call and every library call also has its own deadline.

mod common;

use common::cli::{run_command_within, scratch, Limits, Run};
use common::fixtures::{models_dir, same};
use common::onnx_build::{Builder, A, D};
use common::reference;
use common::tensors::{arange_f32, f32s, i32s, i64s};
use sliceops::Model;
use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

const MIN: i64 = i64::MIN;
const MAX: i64 = i64::MAX;

/// Deadline of one `sliceops` invocation.
const CLI_DEADLINE: Duration = Duration::from_secs(60);
/// Deadline of one library call sequence (load, type, infer, run).
const API_DEADLINE: Duration = Duration::from_secs(60);
/// Deadline of one whole test (its child process).
const CASE_DEADLINE: Duration = Duration::from_secs(600);
/// Address space limit of the child processes (KiB): 8 GiB. Far more than any case needs, and it keeps
/// a runaway allocation from taking the shared machine down.
const MEM_LIMIT_KIB: u64 = 8 << 20;
const CHILD_ENV: &str = "SLICEOPS_HOSTILE_CHILD";

// ------------------------------------------------------------------------------------------------
// Harness: isolation, deadlines, CLI contract.
// ------------------------------------------------------------------------------------------------

/// A command running `exe` under the address space limit.
fn limited(exe: &Path) -> (Command, Limits) {
    (Command::new(exe), Limits { address_space: Some(MEM_LIMIT_KIB << 10), ..Limits::default() })
}

/// Runs `body` in a child process of this test binary (only this test), under the memory limit and
/// the case deadline; in the child, runs it directly.
fn isolated(name: &str, body: impl FnOnce()) {
    if std::env::var(CHILD_ENV).as_deref() == Ok(name) {
        // One line per panic (checks are collected, many panics are caught): no backtraces.
        std::panic::set_hook(Box::new(|info| eprintln!("{info}")));
        body();
        return;
    }
    let exe = std::env::current_exe().expect("current_exe");
    let (mut cmd, limits) = limited(&exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"]).env(CHILD_ENV, name);
    let out = run_command_within(cmd, limits, CASE_DEADLINE);
    if out.code != Some(0) || !out.stdout.contains("1 passed") {
        panic!("{}", out.describe(&format!("test {name} failed in its child process")));
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "<non-string panic>".into())
}

/// Runs a library call on a thread with a deadline; a panic or a hang fails the test.
fn api<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    match api_outcome(f) {
        Ok(v) => v,
        Err(e) => panic!("{what}: {e}"),
    }
}

/// Like [`api`], but a panic or hang is returned as `Err(description)`.
fn api_outcome<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = catch_unwind(AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(API_DEADLINE) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(p)) => Err(format!("the library PANICKED: {}", panic_message(&*p))),
        Err(_) => Err(format!("the library did not return within {API_DEADLINE:?} (HANG)")),
    }
}

/// Loads, types, infers and (given inputs) runs a model through the library: the first error, with
/// its chain of contexts. Fails the test if every step succeeds, or on a panic or a hang.
fn api_error(what: &str, bytes: &[u8], inputs: Option<Vec<Tensor>>) -> String {
    let bytes = bytes.to_vec();
    let result = api(what, move || -> Result<(), String> {
        let go = || -> anyhow::Result<()> {
            let m = Model::load_bytes(&bytes)?;
            m.typed()?;
            m.infer()?;
            if let Some(inputs) = inputs {
                m.run(inputs)?;
            }
            Ok(())
        };
        go().map_err(|e| format!("{e:#}"))
    });
    match result {
        Ok(()) => panic!("{what}: the library accepted the model (load, typed, infer and run all returned Ok)"),
        Err(e) => e,
    }
}

/// Runs a model through the library and returns its outputs.
fn api_run(what: &str, bytes: &[u8], inputs: Vec<Tensor>) -> Vec<(String, Tensor)> {
    let bytes = bytes.to_vec();
    api(what, move || Model::load_bytes(&bytes).and_then(|m| m.run(inputs)).map_err(|e| format!("{e:#}")))
        .unwrap_or_else(|e| panic!("{what}: the library returned an error: {e}"))
}

fn os(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_os_string()).collect()
}

/// Runs `sliceops` with a deadline; a panic message anywhere fails the test.
fn cli(args: &[OsString]) -> Run {
    let (mut cmd, limits) = limited(Path::new(env!("CARGO_BIN_EXE_sliceops")));
    cmd.args(args);
    let what = format!("sliceops {}", args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" "));
    let out = run_command_within(cmd, limits, CLI_DEADLINE);
    if out.stdout.contains("panicked") || out.stderr.contains("panicked") || out.signal.is_some() {
        panic!("{}", out.describe_lines(&format!("CRASH: {what}"), 30));
    }
    out
}

/// Runs `sliceops`, checks the error contract (status 1, one `error: ` line, last, only `warning:`
/// lines before it) and returns the error line.
fn cli_error(args: &[OsString]) -> String {
    let what = format!("sliceops {}", args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" "));
    let out = cli(args);
    let ctx = || out.describe(&what);
    assert_eq!(out.code, Some(1), "expected exit status 1\n{}", ctx());
    let lines: Vec<&str> = out.stderr.lines().collect();
    let errors: Vec<&&str> = lines.iter().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "expected exactly one 'error: ' line on stderr\n{}", ctx());
    let last = lines.last().copied().unwrap_or_default();
    assert!(last.starts_with("error: "), "the error line must be the last line of stderr\n{}", ctx());
    for l in &lines[..lines.len() - 1] {
        assert!(l.starts_with("warning:"), "stray line before the error: {l:?}\n{}", ctx());
    }
    assert!(last.len() > "error: ".len() + 5, "empty error message\n{}", ctx());
    last.to_string()
}

/// Runs `sliceops`, checks it succeeded (status 0, only warnings on stderr).
fn cli_ok(args: &[OsString]) -> Run {
    let what = format!("sliceops {}", args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" "));
    let out = cli(args);
    assert_eq!(out.code, Some(0), "expected success\n{}", out.describe(&what));
    for l in out.stderr.lines() {
        assert!(l.starts_with("warning:"), "unexpected stderr line {l:?}\n{}", out.describe(&what));
    }
    out
}

/// Checks an error message names the node and op as the contract says, and holds every needle.
fn assert_node_error(line: &str, node: &str, op: &str, needles: &[&str]) {
    let prefix = format!("error: node '{node}' ({op}): ");
    assert!(line.starts_with(&prefix), "the error line must start with {prefix:?}, got:\n{line}");
    for n in needles {
        assert!(line.contains(n), "the error line must contain {n:?}, got:\n{line}");
    }
}

fn assert_any_of(what: &str, msg: &str, alternatives: &[String]) {
    assert!(
        alternatives.is_empty() || alternatives.iter().any(|a| msg.contains(a.as_str())),
        "{what}: the message must contain one of {alternatives:?}, got:\n{msg}"
    );
}

fn assert_contains_all(what: &str, msg: &str, needles: &[&str]) {
    for n in needles {
        assert!(msg.contains(n), "{what}: the message must contain {n:?}, got:\n{msg}");
    }
}

// ------------------------------------------------------------------------------------------------
// Files: a scratch folder per test, .npy written by hand (independent of the crate's writer).
// ------------------------------------------------------------------------------------------------

struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch { dir: scratch("hostile", name) }
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn npy(&self, name: &str, t: &Tensor) -> PathBuf {
        self.file(&format!("{name}.npy"), &npy_of(t))
    }

    fn out_dir(&self, name: &str) -> PathBuf {
        let d = self.dir.join(name);
        let _ = std::fs::remove_dir_all(&d);
        d
    }
}

/// A `.npy` file (version 1.0) with the given header fields and raw data.
fn npy_raw(descr: &str, fortran: bool, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let shape_s = match shape {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        _ => format!("({})", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    let fo = if fortran { "True" } else { "False" };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': {fo}, 'shape': {shape_s}, }}");
    let pad = (64 - (10 + header.len() + 1) % 64) % 64;
    header.push_str(&" ".repeat(pad));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

fn descr_of(dt: DatumType) -> &'static str {
    match dt {
        DatumType::F32 => "<f4",
        DatumType::F64 => "<f8",
        DatumType::I64 => "<i8",
        DatumType::I32 => "<i4",
        DatumType::U8 => "|u1",
        DatumType::Bool => "|b1",
        dt => panic!("no descr for {dt:?} in the test helper"),
    }
}

fn npy_of(t: &Tensor) -> Vec<u8> {
    let shape: Vec<u64> = t.shape().iter().map(|&d| d as u64).collect();
    npy_raw(descr_of(t.datum_type()), false, &shape, t.try_as_plain_ram().unwrap().as_bytes())
}

fn dims(shape: &[usize]) -> Vec<D> {
    shape.iter().map(|&d| D::N(d as i64)).collect()
}

// ------------------------------------------------------------------------------------------------
// Models.
// ------------------------------------------------------------------------------------------------

fn masks(m: [i64; 5]) -> Vec<(&'static str, A)> {
    ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"]
        .into_iter()
        .zip(m)
        .map(|(n, v)| (n, A::I(v)))
        .collect()
}

/// `y = StridedSlice(x, b, e, s)` (node `ss`) over a float input of `shape`, constant parameters.
fn ss_model(shape: &[D], begin: &[i64], end: &[i64], strides: &[i64], m: [i64; 5]) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, shape)
        .init_i64("b", begin)
        .init_i64("e", end)
        .init_i64("s", strides)
        .node("StridedSlice", "ai.sliceops", "ss", &["x", "b", "e", "s"], &["y"], masks(m))
        .output("y")
        .bytes()
}

/// `y = Slice(x, starts, ends, axes?, steps?)` (node `slice`), opset 13, constant parameters.
fn slice_model(shape: &[D], starts: &[i64], ends: &[i64], axes: Option<&[i64]>, steps: Option<&[i64]>) -> Vec<u8> {
    let mut b = Builder::new(13).input("x", DataType::Float, shape).init_i64("st", starts).init_i64("en", ends);
    let mut inputs = vec!["x", "st", "en"];
    if let Some(a) = axes {
        b = b.init_i64("ax", a);
        inputs.push("ax");
    }
    if let Some(s) = steps {
        if axes.is_none() {
            inputs.push("");
        }
        b = b.init_i64("sp", s);
        inputs.push("sp");
    }
    b.node("Slice", "", "slice", &inputs, &["y"], vec![]).output("y").bytes()
}

/// `y = AsStrided(x)` (node `as`).
fn as_model(shape: &[D], size: &[i64], stride: &[i64], offset: i64) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, shape)
        .node(
            "AsStrided",
            "ai.sliceops",
            "as",
            &["x"],
            &["y"],
            vec![("size", A::Is(size.to_vec())), ("stride", A::Is(stride.to_vec())), ("offset", A::I(offset))],
        )
        .output("y")
        .bytes()
}

// ------------------------------------------------------------------------------------------------
// Model-level error cases: one description, checked through the API and the CLI.
// ------------------------------------------------------------------------------------------------

/// When the error shows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum When {
    /// Before running: load, typing or inference (so `infer` and `run` both fail).
    Build,
    /// Only when running (`infer` succeeds; `run` and `bench` fail).
    Run,
}

struct Case {
    name: String,
    model: Vec<u8>,
    /// Graph inputs to run with, in graph order.
    inputs: Vec<(&'static str, Tensor)>,
    /// `(node, op)` for node-level errors.
    node: Option<(&'static str, &'static str)>,
    /// What the message must contain (the offending value, ...).
    needles: Vec<String>,
    /// The message must contain at least one of these (when not empty).
    any_of: Vec<String>,
    when: When,
}

impl Case {
    fn new(name: &str, model: Vec<u8>, inputs: Vec<(&'static str, Tensor)>, when: When) -> Case {
        Case { name: name.into(), model, inputs, node: None, needles: vec![], any_of: vec![], when }
    }
    fn node(mut self, node: &'static str, op: &'static str) -> Case {
        self.node = Some((node, op));
        self
    }
    fn any_of<S: AsRef<str>>(mut self, alternatives: &[S]) -> Case {
        self.any_of.extend(alternatives.iter().map(|s| s.as_ref().to_string()));
        self
    }
    fn needles<S: AsRef<str>>(mut self, needles: &[S]) -> Case {
        self.needles.extend(needles.iter().map(|s| s.as_ref().to_string()));
        self
    }
}

/// A case of [`ss_model`] (node `ss`) over a float input of `shape`, refused before running.
fn ss_case(name: &str, shape: &[usize], begin: &[i64], end: &[i64], strides: &[i64], m: [i64; 5]) -> Case {
    let model = ss_model(&dims(shape), begin, end, strides, m);
    Case::new(name, model, x_input(shape), When::Build).node("ss", "StridedSlice")
}

/// A case of [`slice_model`] (node `slice`) over a float input of `shape`, refused before running.
fn slice_case(
    name: &str,
    shape: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Case {
    let model = slice_model(&dims(shape), starts, ends, axes, steps);
    Case::new(name, model, x_input(shape), When::Build).node("slice", "Slice")
}

/// A case of [`as_model`] (node `as`) over a float input of `shape`.
fn as_case(name: &str, shape: &[usize], size: &[i64], stride: &[i64], offset: i64, when: When) -> Case {
    Case::new(name, as_model(&dims(shape), size, stride, offset), x_input(shape), when).node("as", "AsStrided")
}

/// Checks one case: the library returns `Err` with the node and values; the CLI (`infer` for
/// build-time errors, `run` always, `bench` for run-time errors) exits 1 with one error line naming
/// them.
fn check_case(scratch: &Scratch, case: &Case) -> Vec<String> {
    let mut checks = Checks::default();
    let needles: Vec<&str> = case.needles.iter().map(String::as_str).collect();
    let tensors: Vec<Tensor> = case.inputs.iter().map(|(_, t)| t.clone()).collect();
    checks.check(format!("{} / library", case.name), || {
        let err = api_error(&case.name, &case.model, Some(tensors));
        if let Some((node, op)) = case.node {
            // The library's error is a chain of contexts: it must name the node and the op somewhere.
            assert_contains_all(&case.name, &err, &[node, op]);
        }
        assert_contains_all(&format!("{} (library)", case.name), &err, &needles);
        assert_any_of(&format!("{} (library)", case.name), &err, &case.any_of);
    });

    let model = scratch.file(&format!("{}.onnx", case.name), &case.model);
    let mut input_args: Vec<OsString> = vec![];
    for (name, t) in &case.inputs {
        let p = scratch.npy(&format!("{}-{name}", case.name), t);
        input_args.push("--input".into());
        input_args.push(format!("{name}={}", p.display()).into());
    }
    let check_line = |line: &str| {
        match case.node {
            Some((node, op)) => assert_node_error(line, node, op, &needles),
            None => assert_contains_all(&format!("{} (CLI)", case.name), line, &needles),
        }
        assert_any_of(&format!("{} (CLI)", case.name), line, &case.any_of);
    };
    let mut run = os(&[&"run", &model]);
    run.extend(input_args.iter().cloned());
    run.extend(os(&[&"--output-dir", &scratch.out_dir(&format!("{}-out", case.name))]));
    checks.check(format!("{} / CLI run", case.name), || check_line(&cli_error(&run)));
    match case.when {
        When::Build => {
            checks.check(format!("{} / CLI infer", case.name), || check_line(&cli_error(&os(&[&"infer", &model]))))
        }
        When::Run => {
            checks.check(format!("{} / CLI infer (must succeed)", case.name), || {
                cli_ok(&os(&[&"infer", &model]));
            });
            let mut bench = os(&[&"bench", &model, &"--runs", &"1"]);
            bench.extend(input_args.iter().cloned());
            checks.check(format!("{} / CLI bench", case.name), || check_line(&cli_error(&bench)));
        }
    }
    checks.failures
}

/// Failed checks, collected so that one test reports every case.
#[derive(Default)]
struct Checks {
    failures: Vec<String>,
}

impl Checks {
    fn check(&mut self, what: impl std::fmt::Display, f: impl FnOnce()) {
        // Caught panics are reported once, by `finish`.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let result = catch_unwind(AssertUnwindSafe(f));
        std::panic::set_hook(hook);
        if let Err(p) = result {
            self.failures.push(format!("[{what}] {}", panic_message(&*p)));
        }
    }

    fn extend(&mut self, failures: Vec<String>) {
        self.failures.extend(failures);
    }

    fn finish(self) {
        assert!(self.failures.is_empty(), "{} failed checks:\n\n{}", self.failures.len(), self.failures.join("\n\n"));
    }
}

fn check_cases(test: &str, cases: &[Case]) {
    let scratch = Scratch::new(test);
    let mut checks = Checks::default();
    for case in cases {
        checks.extend(check_case(&scratch, case));
    }
    checks.finish();
}

fn x_input(shape: &[usize]) -> Vec<(&'static str, Tensor)> {
    vec![("x", arange_f32(shape))]
}

// ------------------------------------------------------------------------------------------------
// Files that are not models.
// ------------------------------------------------------------------------------------------------

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(models_dir().join(name).join("model.onnx")).unwrap()
}

/// Top-level protobuf fields of `bytes` as `(first byte, end)`; stops at anything unexpected.
fn top_level_fields(bytes: &[u8]) -> Vec<(usize, usize)> {
    fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*i)?;
            *i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(v);
            }
        }
        None
    }
    let mut fields = vec![];
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let Some(tag) = varint(bytes, &mut i) else { break };
        match tag & 7 {
            0 => {
                if varint(bytes, &mut i).is_none() {
                    break;
                }
            }
            2 => {
                let Some(len) = varint(bytes, &mut i) else { break };
                i += len as usize;
            }
            _ => break,
        }
        fields.push((start, i.min(bytes.len())));
    }
    fields
}

/// Checks that the library and every CLI command refuse a model file with a clear message.
fn check_bad_model_file(scratch: &Scratch, name: &str, bytes: &[u8], needles: &[&str]) {
    let err = api_error(name, bytes, None);
    assert_contains_all(&format!("{name} (library)"), &err, needles);
    let path = scratch.file(&format!("{name}.onnx"), bytes);
    check_bad_model_path(scratch, name, &path, needles);
}

fn check_bad_model_path(scratch: &Scratch, name: &str, path: &Path, needles: &[&str]) {
    let out = scratch.dir.join(format!("{name}-written.onnx"));
    for args in [
        os(&[&"infer", &path]),
        os(&[&"infer", &path, &"--format", &"json"]),
        os(&[&"run", &path, &"--output-dir", &scratch.out_dir(&format!("{name}-out"))]),
        os(&[&"bench", &path, &"--runs", &"1"]),
        os(&[&"fold", &path, &"-o", &out]),
        os(&[&"lower", &path, &"-o", &out]),
    ] {
        let line = cli_error(&args);
        assert_contains_all(&format!("{name}: sliceops {:?}", args[0]), &line, needles);
        assert!(!out.exists(), "{name}: {:?} wrote {} for a bad model", args[0], out.display());
    }
}

/// A valid fixture cut inside each of its top-level fields (so that no cut lands on a field
/// boundary, which could leave a shorter but valid model).
#[test]
fn truncated_protobuf_of_a_valid_fixture() {
    isolated("truncated_protobuf_of_a_valid_fixture", || {
        let scratch = Scratch::new("truncated_protobuf_of_a_valid_fixture");
        let bytes = fixture_bytes("ms_doc_5x6x7");
        let fields = top_level_fields(&bytes);
        assert!(fields.len() >= 3 && fields.last().unwrap().1 == bytes.len(), "fixture layout: {fields:?}");
        let mut cuts: Vec<usize> = fields
            .iter()
            .flat_map(|&(s, e)| [s + 1, (s + e) / 2, e - 1])
            .filter(|&c| c > 0 && c < bytes.len() && !fields.iter().any(|&(s, e)| c == s || c == e))
            .collect();
        cuts.sort();
        cuts.dedup();
        assert!(cuts.len() >= 6, "{cuts:?}");
        for cut in cuts {
            check_bad_model_file(&scratch, &format!("cut_at_{cut}"), &bytes[..cut], &["ONNX model"]);
        }
    });
}

/// xorshift64*: fixed-seed random bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn random_bytes_are_refused() {
    isolated("random_bytes_are_refused", || {
        let scratch = Scratch::new("random_bytes_are_refused");
        for seed in 1..=8u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let len = [1, 7, 64, 300, 1000, 4096, 17, 100_000][seed as usize - 1];
            let bytes = rng.bytes(len);
            check_bad_model_file(&scratch, &format!("random_seed_{seed}_len_{len}"), &bytes, &[]);
        }
    });
}

#[test]
fn empty_file_is_refused() {
    isolated("empty_file_is_refused", || {
        let scratch = Scratch::new("empty_file_is_refused");
        check_bad_model_file(&scratch, "empty", &[], &["empty"]);
    });
}

#[test]
fn missing_file_is_refused() {
    isolated("missing_file_is_refused", || {
        let scratch = Scratch::new("missing_file_is_refused");
        let path = scratch.dir.join("no-such-model.onnx");
        let p = path.clone();
        let err =
            api("load_path of a missing file", move || Model::load_path(&p).map(|_| ()).map_err(|e| format!("{e:#}")))
                .expect_err("a missing file must not load");
        assert_contains_all("missing file (library)", &err, &["no-such-model.onnx"]);
        check_bad_model_path(&scratch, "missing", &path, &["no-such-model.onnx"]);
    });
}

#[test]
fn directory_instead_of_a_file_is_refused() {
    isolated("directory_instead_of_a_file_is_refused", || {
        let scratch = Scratch::new("directory_instead_of_a_file_is_refused");
        let path = scratch.dir.join("a-directory.onnx");
        std::fs::create_dir_all(&path).unwrap();
        let p = path.clone();
        let err =
            api("load_path of a directory", move || Model::load_path(&p).map(|_| ()).map_err(|e| format!("{e:#}")))
                .expect_err("a directory must not load");
        assert_contains_all("directory (library)", &err, &["a-directory.onnx"]);
        check_bad_model_path(&scratch, "directory", &path, &["a-directory.onnx"]);
    });
}

/// Valid fixtures with 1 to 3 bytes overwritten (fixed seeds): the model may still be valid, so
/// either outcome is fine, but never a panic, abort or hang, and an error follows the contract.
#[test]
fn mutated_fixtures_never_crash() {
    isolated("mutated_fixtures_never_crash", || {
        let scratch = Scratch::new("mutated_fixtures_never_crash");
        let fixtures =
            ["ms_doc_5x6x7", "onnx_slice_opset13_runtime", "as_strided_sliding_windows", "ss_runtime_bounds"];
        let all = common::fixtures::fixtures();
        let mut failures = vec![];
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        for name in fixtures {
            let fx = all.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("fixture {name}"));
            let original = std::fs::read(fx.model()).unwrap();
            for k in 0..25 {
                let mut bytes = original.clone();
                let mut edits = vec![];
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(bytes.len());
                    let v = rng.next() as u8;
                    edits.push((at, bytes[at], v));
                    bytes[at] = v;
                }
                let label = format!("{name} #{k} edits (offset, old, new) {edits:?}");
                // Library: load, type, infer, run on the fixture's inputs.
                let (b, inputs) = (bytes.clone(), fx.input_tensors());
                let outcome = api_outcome(move || -> Result<(), String> {
                    let m = Model::load_bytes(&b).map_err(|e| format!("{e:#}"))?;
                    let _ = m.infer();
                    m.run(inputs).map(|_| ()).map_err(|e| format!("{e:#}"))
                });
                if let Err(crash) = outcome {
                    failures.push(format!("library: {label}: {crash}"));
                }
                // CLI: run and infer.
                let path = scratch.file(&format!("{name}-{k}.onnx"), &bytes);
                let mut run = os(&[&"run", &path, &"--output-dir", &scratch.out_dir(&format!("{name}-{k}-out"))]);
                run.extend(fx.input_args().into_iter().map(OsString::from));
                for args in [run, os(&[&"infer", &path])] {
                    let r = catch_unwind(AssertUnwindSafe(|| {
                        let out = cli(&args);
                        if out.code != Some(0) {
                            cli_error(&args);
                        }
                    }));
                    if let Err(p) = r {
                        failures.push(format!("CLI {:?}: {label}: {}", args[0], panic_message(&*p)));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
    });
}

// ------------------------------------------------------------------------------------------------
// StridedSlice.
// ------------------------------------------------------------------------------------------------

#[test]
fn strided_slice_two_ellipsis_bits() {
    isolated("strided_slice_two_ellipsis_bits", || {
        check_cases(
            "strided_slice_two_ellipsis_bits",
            &[
                ss_case("ellipsis_0b101", &[3, 4], &[0; 3], &[1; 3], &[1; 3], [0, 0, 0b101, 0, 0])
                    .needles(&["ellipsis_mask 5"]),
                // Ellipsis bits on entries 0 and 62 of a 63-entry spec.
                ss_case("ellipsis_bits_0_and_62", &[3, 4], &[0; 63], &[1; 63], &[1; 63], [0, 0, 1 | 1 << 62, 0, 0])
                    .needles(&[&format!("ellipsis_mask {}", 1i64 | 1 << 62)]),
            ],
        );
    });
}

#[test]
fn strided_slice_zero_strides() {
    isolated("strided_slice_zero_strides", || {
        check_cases(
            "strided_slice_zero_strides",
            &[
                ss_case("zero_stride_entry_1", &[3, 4], &[0, 0], &[1, 1], &[1, 0], [0; 5])
                    .needles(&["spec entry 1 is 0"]),
                ss_case("zero_stride_shrink", &[3, 4], &[1], &[2], &[0], [0, 0, 0, 0, 1])
                    .needles(&["spec entry 0 is 0"]),
                ss_case("all_zero_strides", &[3, 4], &[0, 0], &[3, 4], &[0, 0], [0b11, 0b11, 0, 0, 0])
                    .needles(&["spec entry 0 is 0"]),
            ],
        );
    });
}

#[test]
fn strided_slice_shrink_index_int64_min_and_out_of_range() {
    isolated("strided_slice_shrink_index_int64_min_and_out_of_range", || {
        check_cases(
            "strided_slice_shrink_index_int64_min_and_out_of_range",
            &[
                ss_case("shrink_int64_min", &[3, 4], &[MIN], &[0], &[1], [0, 0, 0, 0, 1]).needles(&[
                    "shrink index -9223372036854775808 at spec entry 0 is out of range for axis 0 of size 3",
                ]),
                ss_case("shrink_int64_max", &[3, 4], &[0, MAX], &[1, 0], &[1, 1], [0, 0, 0, 0, 0b10]).needles(&[
                    "shrink index 9223372036854775807 at spec entry 1 is out of range for axis 1 of size 4",
                ]),
                ss_case("shrink_4_of_4", &[3, 4], &[0, 4], &[1, 5], &[1, 1], [0, 0, 0, 0, 0b10])
                    .needles(&["shrink index 4 at spec entry 1 is out of range for axis 1 of size 4"]),
                ss_case("shrink_minus_4_of_3", &[3, 4], &[-4], &[0], &[1], [0, 0, 0, 0, 1])
                    .needles(&["shrink index -4 at spec entry 0 is out of range for axis 0 of size 3"]),
                // After an ellipsis, the shrunk entry is the last axis.
                ss_case("shrink_after_ellipsis", &[3, 4], &[0, 4], &[0, 5], &[1, 1], [0, 0, 1, 0, 0b10])
                    .needles(&["shrink index 4 at spec entry 1 is out of range for axis 1 of size 4"]),
                // On an empty axis every index is out of range.
                ss_case("shrink_on_empty_axis", &[0, 4], &[0], &[1], &[1], [0, 0, 0, 0, 1])
                    .needles(&["shrink index 0 at spec entry 0 is out of range for axis 0 of size 0"]),
            ],
        );
    });
}

#[test]
fn strided_slice_negative_stride_on_a_shrunk_entry() {
    isolated("strided_slice_negative_stride_on_a_shrunk_entry", || {
        check_cases(
            "strided_slice_negative_stride_on_a_shrunk_entry",
            &[ss_case("shrink_stride_min", &[3, 4], &[1], &[0], &[MIN], [0, 0, 0, 0, 1])
                .needles(&["spec entry 0 shrinks an axis but has stride -9223372036854775808"])],
        );
    });
}

#[test]
fn strided_slice_spec_lengths_unequal() {
    isolated("strided_slice_spec_lengths_unequal", || {
        check_cases(
            "strided_slice_spec_lengths_unequal",
            &[
                ss_case("end_short", &[3, 4], &[0, 0], &[1], &[1, 1], [0; 5])
                    .needles(&["begin, end and strides have different lengths: 2, 1, 2"]),
                ss_case("strides_long", &[3, 4], &[0], &[1], &[1, 1, 1], [0; 5])
                    .needles(&["begin, end and strides have different lengths: 1, 1, 3"]),
                ss_case("strides_empty", &[3, 4], &[0], &[1], &[], [0; 5])
                    .needles(&["begin, end and strides have different lengths: 1, 1, 0"]),
            ],
        );
    });
}

#[test]
fn strided_slice_70_entry_spec() {
    isolated("strided_slice_70_entry_spec", || {
        check_cases(
            "strided_slice_70_entry_spec",
            &[
                ss_case("70_ranges_on_rank_2", &[3, 4], &[0; 70], &[1; 70], &[1; 70], [0; 5])
                    .needles(&["the spec indexes 70 dims but the input has rank 2"]),
                // Entries 0..62 are new axes; 63..69 (past the masks' 63 usable bits) are 7 ranges.
                ss_case(
                    "63_new_axes_then_7_ranges_on_rank_2",
                    &[3, 4],
                    &[0; 70],
                    &[1; 70],
                    &[1; 70],
                    [0, 0, 0, MAX, 0],
                )
                .needles(&["the spec indexes 7 dims but the input has rank 2"]),
            ],
        );
    });
}

#[test]
fn strided_slice_negative_masks() {
    isolated("strided_slice_negative_masks", || {
        let names = ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"];
        let mut cases = vec![];
        for (i, name) in names.iter().enumerate() {
            for value in [-1, MIN] {
                let mut m = [0; 5];
                m[i] = value;
                cases.push(
                    ss_case(&format!("{name}_{value}"), &[3, 4], &[0], &[1], &[1], m)
                        .needles(&[&format!("{name} is {value}: masks must be >= 0")]),
                );
            }
        }
        check_cases("strided_slice_negative_masks", &cases);
    });
}

#[test]
fn strided_slice_of_a_scalar() {
    isolated("strided_slice_of_a_scalar", || {
        let scalar = vec![("x", tensor0(7f32))];
        check_cases(
            "strided_slice_of_a_scalar",
            &[
                Case::new("range_on_scalar", ss_model(&[], &[0], &[1], &[1], [0; 5]), scalar.clone(), When::Build)
                    .node("ss", "StridedSlice")
                    .needles(&["the spec indexes 1 dims but the input has rank 0"]),
                Case::new(
                    "shrink_on_scalar",
                    ss_model(&[], &[0], &[1], &[1], [0, 0, 0, 0, 1]),
                    scalar.clone(),
                    When::Build,
                )
                .node("ss", "StridedSlice")
                .needles(&["the spec indexes 1 dims but the input has rank 0"]),
            ],
        );
    });
}

// ------------------------------------------------------------------------------------------------
// Slice (ONNX opset 13).
// ------------------------------------------------------------------------------------------------

#[test]
fn slice_repeated_axes() {
    isolated("slice_repeated_axes", || {
        check_cases(
            "slice_repeated_axes",
            &[
                slice_case("axes_1_1", &[3, 4], &[0, 0], &[1, 1], Some(&[1, 1]), None)
                    .needles(&["axis 1 appears more than once in axes"]),
                slice_case("axes_0_minus_2", &[3, 4], &[0, 0], &[1, 1], Some(&[0, -2]), None)
                    .needles(&["axis 0 appears more than once in axes"]),
            ],
        );
    });
}

#[test]
fn slice_axes_out_of_range() {
    isolated("slice_axes_out_of_range", || {
        let mut cases = vec![];
        for axis in [2, -3, MIN, MAX] {
            cases.push(
                slice_case(&format!("axis_{axis}"), &[3, 4], &[0], &[1], Some(&[axis]), None)
                    .needles(&[&format!("axis {axis} is out of range for rank 2")]),
            );
        }
        check_cases("slice_axes_out_of_range", &cases);
    });
}

/// `y = Slice(x, starts, ends, axes)` with runtime starts/ends (graph inputs) and constant axes.
fn slice_runtime_bounds_const_axes(axes: &[i64]) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &dims(&[3, 4]))
        .input("st", DataType::Int64, &[D::N(axes.len() as i64)])
        .input("en", DataType::Int64, &[D::N(axes.len() as i64)])
        .init_i64("ax", axes)
        .node("Slice", "", "slice", &["x", "st", "en", "ax"], &["y"], vec![])
        .output("y")
        .bytes()
}

/// Constant axes out of range while the bounds are runtime tensors: the output dims are worked
/// out before the bounds are known.
#[test]
fn slice_axes_out_of_range_with_runtime_bounds() {
    isolated("slice_axes_out_of_range_with_runtime_bounds", || {
        let mut cases = vec![];
        for axis in [2, -3, MIN, MAX] {
            cases.push(
                Case::new(
                    &format!("runtime_bounds_axis_{axis}"),
                    slice_runtime_bounds_const_axes(&[axis]),
                    vec![("x", arange_f32(&[3, 4])), ("st", i64s(&[0])), ("en", i64s(&[1]))],
                    When::Build,
                )
                .node("slice", "Slice")
                .needles(&[&format!("axis {axis} is out of range for rank 2")]),
            );
        }
        check_cases("slice_axes_out_of_range_with_runtime_bounds", &cases);
    });
}

#[test]
fn slice_repeated_axes_with_runtime_bounds() {
    isolated("slice_repeated_axes_with_runtime_bounds", || {
        check_cases(
            "slice_repeated_axes_with_runtime_bounds",
            &[Case::new(
                "runtime_bounds_axes_1_minus_1",
                slice_runtime_bounds_const_axes(&[1, -1]),
                vec![("x", arange_f32(&[3, 4])), ("st", i64s(&[0, 0])), ("en", i64s(&[1, 1]))],
                When::Build,
            )
            .node("slice", "Slice")
            .needles(&["axis 1 appears more than once in axes"])],
        );
    });
}

#[test]
fn slice_step_zero() {
    isolated("slice_step_zero", || {
        check_cases(
            "slice_step_zero",
            &[
                slice_case("step_0_axis_1", &[3, 4], &[0], &[1], Some(&[1]), Some(&[0]))
                    .needles(&["axis 1 is 0: a step must be non-zero"]),
                slice_case("step_0_default_axes", &[3, 4], &[0, 0], &[1, 1], None, Some(&[1, 0]))
                    .needles(&["axis 1 is 0: a step must be non-zero"]),
            ],
        );
    });
}

#[test]
fn slice_of_a_scalar() {
    isolated("slice_of_a_scalar", || {
        check_cases(
            "slice_of_a_scalar",
            &[
                Case::new("rank_0", slice_model(&[], &[0], &[1], None, None), vec![("x", tensor0(7f32))], When::Build)
                    .node("slice", "Slice")
                    .needles(&["input is a scalar (rank 0)"]),
                Case::new(
                    "rank_0_axes_0",
                    slice_model(&[], &[0], &[1], Some(&[0]), Some(&[1])),
                    vec![("x", tensor0(7f32))],
                    When::Build,
                )
                .node("slice", "Slice")
                .needles(&["input is a scalar (rank 0)"]),
            ],
        );
    });
}

#[test]
fn slice_unequal_lengths() {
    isolated("slice_unequal_lengths", || {
        check_cases(
            "slice_unequal_lengths",
            &[slice_case("ends_short", &[3, 4], &[0, 0], &[1], None, None)
                .needles(&["starts, ends, axes and steps have different lengths: 2, 1, 2, 2"])],
        );
    });
}

// ------------------------------------------------------------------------------------------------
// AsStrided.
// ------------------------------------------------------------------------------------------------

#[test]
fn as_strided_extent_overflowing_i64() {
    isolated("as_strided_extent_overflowing_i64", || {
        check_cases(
            "as_strided_extent_overflowing_i64",
            &[
                as_case("size_3_stride_max", &[4], &[3], &[MAX], 0, When::Build).needles(&["overflows"]),
                as_case("max_plus_1", &[4], &[2, 2], &[MAX, 1], 0, When::Build).needles(&["overflows"]),
                as_case("offset_plus_stride", &[4], &[2], &[MAX], 1, When::Build).needles(&["overflows"]),
            ],
        );
    });
}

/// Same with a symbolic input dim: bounds can only be checked when the model runs; `lower` must
/// refuse it too (it cannot build an index table that overflows).
#[test]
fn as_strided_extent_overflowing_i64_over_a_symbolic_input() {
    isolated("as_strided_extent_overflowing_i64_over_a_symbolic_input", || {
        let scratch = Scratch::new("as_strided_extent_overflowing_i64_over_a_symbolic_input");
        let mut checks = Checks::default();
        for (name, size, stride, offset) in [
            ("size_3_stride_max", vec![3], vec![MAX], 0),
            ("max_plus_1", vec![2, 2], vec![MAX, 1], 0),
            ("offset_plus_stride", vec![2], vec![MAX], 1),
        ] {
            let model = as_model(&[D::S("N")], &size, &stride, offset);
            checks.extend(check_case(
                &scratch,
                &Case::new(name, model.clone(), x_input(&[4]), When::Run)
                    .node("as", "AsStrided")
                    .needles(&["overflows"]),
            ));
            let path = scratch.file(&format!("{name}-lower.onnx"), &model);
            checks.check(format!("{name} / CLI lower"), || {
                let line = cli_error(&os(&[&"lower", &path, &"-o", &scratch.dir.join(format!("{name}-lowered.onnx"))]));
                assert_node_error(&line, "as", "AsStrided", &["overflows"]);
            });
        }
        checks.finish();
    });
}

/// size [2^20, 2^20], stride [0, 0] over one element: every index is in bounds, but the output is
/// 4 TiB. A clean error, never an abort or an out-of-memory kill.
#[test]
fn as_strided_terabyte_output() {
    isolated("as_strided_terabyte_output", || {
        let huge = [1i64 << 20, 1 << 20];
        let needles = ["1099511627776", "cannot be allocated"];
        check_cases(
            "as_strided_terabyte_output",
            &[
                as_case("over_an_input", &[1], &huge, &[0, 0], 0, When::Run).needles(&needles),
                Case::new("over_a_symbolic_input", as_model(&[D::S("N")], &huge, &[0, 0], 0), x_input(&[1]), When::Run)
                    .node("as", "AsStrided")
                    .needles(&needles),
            ],
        );
        // Over an initializer: folding the constant is where it would be allocated.
        let model = Builder::new(13)
            .init_f32("x", &[1], &[1.0])
            .node(
                "AsStrided",
                "ai.sliceops",
                "as",
                &["x"],
                &["y"],
                vec![("size", A::Is(huge.to_vec())), ("stride", A::Is(vec![0, 0])), ("offset", A::I(0))],
            )
            .output("y")
            .bytes();
        let scratch = Scratch::new("as_strided_terabyte_output_const");
        let err = api_error("terabyte over a constant", &model, Some(vec![]));
        assert_contains_all(
            "terabyte over a constant (library)",
            &err,
            &["node 'as' (AsStrided): ", needles[0], needles[1]],
        );
        let path = scratch.file("const.onnx", &model);
        for args in
            [os(&[&"run", &path, &"--output-dir", &scratch.out_dir("out")]), os(&[&"bench", &path, &"--runs", &"1"])]
        {
            assert_node_error(&cli_error(&args), "as", "AsStrided", &needles);
        }
    });
}

#[test]
fn as_strided_offset_int64_max() {
    isolated("as_strided_offset_int64_max", || {
        check_cases(
            "as_strided_offset_int64_max",
            &[
                as_case("size_1", &[3, 3], &[1], &[1], MAX, When::Build)
                    .needles(&["view reads element 9223372036854775807 but the input has 9 elements"]),
                as_case("rank_0_view", &[3, 3], &[], &[], MAX, When::Build)
                    .needles(&["view reads element 9223372036854775807 but the input has 9 elements"]),
                as_case("size_2", &[3, 3], &[2], &[1], MAX, When::Build).needles(&["overflows"]),
                Case::new("symbolic_input", as_model(&[D::S("N")], &[1], &[1], MAX), x_input(&[9]), When::Run)
                    .node("as", "AsStrided")
                    .needles(&["view reads element 9223372036854775807 but the input has 9 elements"]),
            ],
        );
    });
}

#[test]
fn as_strided_negative_parameters() {
    isolated("as_strided_negative_parameters", || {
        check_cases(
            "as_strided_negative_parameters",
            &[
                as_case("negative_stride", &[3, 3], &[2, 2], &[-1, 1], 0, When::Build)
                    .needles(&["stride -1 is negative at index 0"]),
                as_case("stride_min", &[3, 3], &[2, 2], &[1, MIN], 8, When::Build)
                    .needles(&["stride -9223372036854775808 is negative at index 1"]),
                as_case("negative_size", &[3, 3], &[2, -1], &[1, 1], 0, When::Build)
                    .needles(&["size -1 is negative at index 1"]),
                as_case("negative_offset", &[3, 3], &[2], &[1], MIN, When::Build)
                    .needles(&["offset -9223372036854775808 is negative"]),
            ],
        );
    });
}

#[test]
fn as_strided_out_of_bounds() {
    isolated("as_strided_out_of_bounds", || {
        check_cases(
            "as_strided_out_of_bounds",
            &[
                as_case("one_past_the_end", &[3, 3], &[2, 2], &[2, 3], 4, When::Build)
                    .needles(&["view reads element 9 but the input has 9 elements"]),
                as_case("stride_max_len_2", &[3, 3], &[2], &[MAX], 0, When::Build)
                    .needles(&["view reads element 9223372036854775807 but the input has 9 elements"]),
                as_case("empty_input", &[0], &[1], &[1], 0, When::Build)
                    .needles(&["view reads element 0 but the input has 0 elements"]),
                Case::new("symbolic_input", as_model(&[D::S("N")], &[3, 3], &[3, 2], 0), x_input(&[9]), When::Run)
                    .node("as", "AsStrided")
                    .needles(&["view reads element 10 but the input has 9 elements"]),
            ],
        );
    });
}

#[test]
fn as_strided_size_stride_length_mismatch() {
    isolated("as_strided_size_stride_length_mismatch", || {
        check_cases(
            "as_strided_size_stride_length_mismatch",
            &[
                as_case("2_vs_1", &[3, 3], &[2, 2], &[1], 0, When::Build)
                    .needles(&["size and stride have different lengths: 2, 1"]),
                as_case("0_vs_70", &[3, 3], &[], &[1; 70], 0, When::Build)
                    .needles(&["size and stride have different lengths: 0, 70"]),
            ],
        );
    });
}

// ------------------------------------------------------------------------------------------------
// Graph structure.
// ------------------------------------------------------------------------------------------------

/// A node reads a value nothing defines (not an input, an initializer or a node output).
#[test]
fn graph_undefined_input() {
    isolated("graph_undefined_input", || {
        let ours = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .init_i64("en", &[1])
            .node("Slice", "", "slice", &["x", "ghost_starts", "en"], &["y"], vec![])
            .output("y")
            .bytes();
        let standard = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .node("Add", "", "add", &["x", "ghost"], &["y"], vec![])
            .output("y")
            .bytes();
        check_cases(
            "graph_undefined_input",
            &[
                Case::new("slice_reads_ghost", ours, x_input(&[3, 4]), When::Build)
                    .node("slice", "Slice")
                    .needles(&["ghost_starts"]),
                Case::new("add_reads_ghost", standard, x_input(&[3, 4]), When::Build)
                    .node("add", "Add")
                    .needles(&["ghost"]),
            ],
        );
    });
}

/// Two nodes feeding each other.
#[test]
fn graph_cycle() {
    isolated("graph_cycle", || {
        let ours = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .init_i64("st", &[0])
            .init_i64("en", &[2])
            .node("Slice", "", "a", &["b_out", "st", "en"], &["a_out"], vec![])
            .node("Slice", "", "b", &["a_out", "st", "en"], &["b_out"], vec![])
            .output("b_out")
            .bytes();
        let standard = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .node("Add", "", "a", &["x", "b_out"], &["a_out"], vec![])
            .node("Neg", "", "b", &["a_out"], &["b_out"], vec![])
            .output("b_out")
            .bytes();
        let mixed = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .init_i64("st", &[0])
            .init_i64("en", &[2])
            .node("Slice", "", "a", &["x", "b_out", "en"], &["a_out"], vec![])
            .node("Shape", "", "b", &["a_out"], &["b_out"], vec![])
            .output("a_out")
            .bytes();
        let scratch = Scratch::new("graph_cycle");
        let mut checks = Checks::default();
        // The message says it is a cycle (or loop) and names a node on it.
        let clear = |what: &str, msg: &str| {
            let lower = msg.to_lowercase();
            assert!(
                lower.contains("cycle") || lower.contains("loop"),
                "{what}: the message must say there is a cycle: {msg}"
            );
            assert!(
                msg.contains("'a'") || msg.contains("'b'") || msg.contains("\"a\"") || msg.contains("\"b\""),
                "{what}: the message must name a node of the cycle: {msg}"
            );
        };
        for (name, model) in [("slice_cycle", ours), ("add_neg_cycle", standard), ("slice_shape_cycle", mixed)] {
            checks.check(format!("{name} / library"), || {
                let err = api_error(name, &model, Some(x_input(&[3, 4]).into_iter().map(|(_, t)| t).collect()));
                clear(name, &err);
            });
            let path = scratch.file(&format!("{name}.onnx"), &model);
            let x = scratch.npy(&format!("{name}-x"), &arange_f32(&[3, 4]));
            for args in [
                os(&[&"infer", &path]),
                os(&[
                    &"run",
                    &path,
                    &"--input",
                    &format!("x={}", x.display()),
                    &"--output-dir",
                    &scratch.out_dir("out"),
                ]),
                os(&[&"fold", &path, &"-o", &scratch.dir.join(format!("{name}-folded.onnx"))]),
                os(&[&"lower", &path, &"-o", &scratch.dir.join(format!("{name}-lowered.onnx"))]),
            ] {
                checks.check(format!("{name} / CLI {:?}", args[0]), || clear(name, &cli_error(&args)));
            }
        }
        checks.finish();
    });
}

#[test]
fn graph_node_with_no_inputs() {
    isolated("graph_node_with_no_inputs", || {
        let mut cases = vec![];
        for (op, domain, node) in
            [("StridedSlice", "ai.sliceops", "n_ss"), ("Slice", "", "n_slice"), ("AsStrided", "ai.sliceops", "n_as")]
        {
            let attrs =
                if op == "AsStrided" { vec![("size", A::Is(vec![1])), ("stride", A::Is(vec![1]))] } else { vec![] };
            let model = Builder::new(13)
                .input("x", DataType::Float, &dims(&[3, 4]))
                .node(op, domain, node, &[], &["y"], attrs)
                .output("y")
                .bytes();
            cases.push(
                Case::new(&format!("{op}_no_inputs"), model, x_input(&[3, 4]), When::Build)
                    .node(node, if op == "AsStrided" { "AsStrided" } else { op })
                    .needles(&["the data input is missing"]),
            );
        }
        // A standard op with no inputs.
        let model = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .node("Neg", "", "n_neg", &[], &["y"], vec![])
            .output("y")
            .bytes();
        cases.push(
            Case::new("Neg_no_inputs", model, x_input(&[3, 4]), When::Build).node("n_neg", "Neg").needles(&["input"]),
        );
        check_cases("graph_node_with_no_inputs", &cases);
    });
}

// ------------------------------------------------------------------------------------------------
// Inputs.
// ------------------------------------------------------------------------------------------------

/// The input model of these cases: `y = x[1:3, ::2]` over float [3, 4] (ONNX Slice).
fn input_model() -> Vec<u8> {
    slice_model(&dims(&[3, 4]), &[1, 0], &[3, MAX], None, Some(&[1, 2]))
}

/// Runs the input model with `--input x=FILE` and returns the error line.
fn run_with_x_file(scratch: &Scratch, file: &Path) -> String {
    let model = scratch.file("model.onnx", &input_model());
    cli_error(&os(&[
        &"run",
        &model,
        &"--input",
        &format!("x={}", file.display()),
        &"--output-dir",
        &scratch.out_dir("out"),
    ]))
}

#[test]
fn input_npy_of_the_wrong_dtype() {
    isolated("input_npy_of_the_wrong_dtype", || {
        let scratch = Scratch::new("input_npy_of_the_wrong_dtype");
        let mut checks = Checks::default();
        let i64s_3x4 = tract_ndarray::ArrayD::from_shape_vec(vec![3, 4], (0..12i64).collect()).unwrap().into_tensor();
        // Same element size (4 bytes) as float32: must not be reinterpreted.
        let i32s_3x4 = tract_ndarray::ArrayD::from_shape_vec(vec![3, 4], (0..12i32).collect()).unwrap().into_tensor();
        let f64s_3x4 = arange_f32(&[3, 4]).cast_to::<f64>().unwrap().into_owned();
        for (numpy, tract_name, t) in
            [("int64", "I64", i64s_3x4), ("int32", "I32", i32s_3x4), ("float64", "F64", f64s_3x4)]
        {
            let t2 = t.clone();
            checks.check(format!("{numpy} / library"), || {
                let err = api_error(&format!("{numpy} for a float32 input"), &input_model(), Some(vec![t2]));
                assert_input_error(&err, &[numpy, tract_name]);
            });
            checks.check(format!("{numpy} / CLI run"), || {
                let line = run_with_x_file(&scratch, &scratch.npy(&format!("x_{numpy}"), &t));
                assert_contains_all("wrong dtype (CLI)", &line, &["'x'", numpy, "float32"]);
            });
        }
        checks.finish();
    });
}

/// A library error about a graph input: says it is about an input and shows the offending value.
fn assert_input_error(msg: &str, any_of: &[&str]) {
    assert!(msg.to_lowercase().contains("input"), "the error must say which input is wrong, got:\n{msg}");
    assert!(
        any_of.iter().any(|a| msg.contains(a)),
        "the error must show the offending value ({any_of:?}), got:\n{msg}"
    );
}

#[test]
fn input_npy_of_the_wrong_shape() {
    isolated("input_npy_of_the_wrong_shape", || {
        let scratch = Scratch::new("input_npy_of_the_wrong_shape");
        let mut checks = Checks::default();
        for shape in [vec![4usize, 3], vec![12], vec![3, 4, 1], vec![]] {
            let t = if shape.is_empty() { tensor0(1f32) } else { arange_f32(&shape) };
            let t2 = t.clone();
            let rendered: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            checks.check(format!("{shape:?} / library"), || {
                let err = api_error(&format!("shape {shape:?}"), &input_model(), Some(vec![t2]));
                assert_input_error(&err, &[&format!("{shape:?}"), &rendered.join(",")]);
            });
            checks.check(format!("{shape:?} / CLI run"), || {
                let line = run_with_x_file(&scratch, &scratch.npy(&format!("x_{shape:?}"), &t));
                assert_contains_all(
                    &format!("wrong shape {shape:?} (CLI)"),
                    &line,
                    &["'x'", &format!("{shape:?}"), "[3,4]"],
                );
            });
        }
        checks.finish();
    });
}

#[test]
fn input_npy_truncated() {
    isolated("input_npy_truncated", || {
        let scratch = Scratch::new("input_npy_truncated");
        let full = npy_of(&arange_f32(&[3, 4]));
        // Cut in the data, at the end of the header, inside the header, inside the magic.
        for cut in [full.len() - 1, full.len() - 4, 64, 40, 11, 9, 3, 0] {
            let bytes = &full[..cut];
            let b = bytes.to_vec();
            let err = api(&format!("read_npy_bytes cut at {cut}"), move || {
                sliceops::npy::read_npy_bytes(&b).map(|_| ()).map_err(|e| format!("{e:#}"))
            })
            .expect_err("a truncated .npy must not read");
            assert!(!err.is_empty());
            let line = run_with_x_file(&scratch, &scratch.file(&format!("x_cut_{cut}.npy"), bytes));
            assert_contains_all(&format!("npy cut at {cut} (CLI)"), &line, &["'x'", &format!("x_cut_{cut}.npy")]);
        }
    });
}

/// Headers that claim far more data than the file holds: refused before any allocation.
#[test]
fn input_npy_header_claims_a_huge_shape() {
    isolated("input_npy_header_claims_a_huge_shape", || {
        let scratch = Scratch::new("input_npy_header_claims_a_huge_shape");
        let data = [0u8; 16];
        for (name, shape) in [
            ("2p40", vec![1u64 << 40]),
            ("2p62", vec![1u64 << 62]),
            ("u64_max", vec![u64::MAX]),
            ("overflowing_product", vec![1 << 40, 1 << 40, 1 << 40]),
            ("3x4x2p40", vec![3, 4, 1 << 40]),
        ] {
            let bytes = npy_raw("<f4", false, &shape, &data);
            let b = bytes.clone();
            let err = api(&format!("read_npy_bytes {name}"), move || {
                sliceops::npy::read_npy_bytes(&b).map(|_| ()).map_err(|e| format!("{e:#}"))
            })
            .expect_err("a huge header must not read");
            assert!(!err.is_empty());
            let line = run_with_x_file(&scratch, &scratch.file(&format!("x_{name}.npy"), &bytes));
            assert_contains_all(&format!("huge header {name} (CLI)"), &line, &["'x'", &format!("x_{name}.npy")]);
        }
        // A header bigger than the file, and an absurd version-2 header length.
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend(u32::MAX.to_le_bytes());
        v2.extend(b"{'descr'");
        let line = run_with_x_file(&scratch, &scratch.file("x_v2_huge_header_len.npy", &v2));
        assert_contains_all("huge v2 header length (CLI)", &line, &["'x'"]);
    });
}

#[test]
fn input_not_an_npy_file() {
    isolated("input_not_an_npy_file", || {
        let scratch = Scratch::new("input_not_an_npy_file");
        let onnx = input_model();
        for (name, bytes) in [
            ("text", b"hello, world\n".to_vec()),
            ("onnx_model", onnx),
            ("bad_header_dict", npy_raw_header("{'descr': '<f4', 'shape': (3, 4), 'fortran_order': False")),
            ("header_is_a_list", npy_raw_header("[1, 2, 3]")),
            ("negative_dim", npy_raw_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }")),
            ("object_dtype", npy_raw_header("{'descr': '|O', 'fortran_order': False, 'shape': (3, 4), }")),
            (
                "structured_dtype",
                npy_raw_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3, 4), }"),
            ),
            ("non_utf8_header", {
                let mut b = b"\x93NUMPY\x01\x00\x04\x00".to_vec();
                b.extend([0xff, 0xfe, 0xfd, 0x0a]);
                b
            }),
        ] {
            let b = bytes.clone();
            api(&format!("read_npy_bytes {name}"), move || {
                sliceops::npy::read_npy_bytes(&b).map(|_| ()).map_err(|e| format!("{e:#}"))
            })
            .expect_err("not a valid .npy");
            let line = run_with_x_file(&scratch, &scratch.file(&format!("x_{name}.npy"), &bytes));
            assert_contains_all(&format!("{name} (CLI)"), &line, &["'x'"]);
        }
        // A directory and a missing file as inputs.
        let dir = scratch.dir.join("x_dir.npy");
        std::fs::create_dir_all(&dir).unwrap();
        assert_contains_all("directory input", &run_with_x_file(&scratch, &dir), &["x_dir.npy"]);
        assert_contains_all(
            "missing input",
            &run_with_x_file(&scratch, &scratch.dir.join("x_missing.npy")),
            &["x_missing.npy"],
        );
    });
}

/// A `.npy` file with a given header text (and 48 bytes of data).
fn npy_raw_header(text: &str) -> Vec<u8> {
    let mut header = text.to_string();
    let pad = (64 - (10 + header.len() + 1) % 64) % 64;
    header.push_str(&" ".repeat(pad));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend([0u8; 48]);
    out
}

#[test]
fn input_for_a_name_the_model_lacks() {
    isolated("input_for_a_name_the_model_lacks", || {
        let scratch = Scratch::new("input_for_a_name_the_model_lacks");
        let model = scratch.file("model.onnx", &input_model());
        let x = scratch.npy("x", &arange_f32(&[3, 4]));
        let line = cli_error(&os(&[
            &"run",
            &model,
            &"--input",
            &format!("x={}", x.display()),
            &"--input",
            &format!("nope={}", x.display()),
            &"--output-dir",
            &scratch.out_dir("out"),
        ]));
        assert_contains_all("unknown input name", &line, &["'nope'", "x"]);
        // Initializers are not inputs to feed.
        let line = cli_error(&os(&[
            &"run",
            &model,
            &"--input",
            &format!("x={}", x.display()),
            &"--input",
            &format!("st={}", x.display()),
            &"--output-dir",
            &scratch.out_dir("out"),
        ]));
        assert_contains_all("initializer as input", &line, &["'st'"]);
        let line = cli_error(&os(&[&"bench", &model, &"--input", &format!("nope={}", x.display())]));
        assert_contains_all("unknown input name (bench)", &line, &["'nope'"]);
        let line = cli_error(&os(&[&"infer", &model, &"--input-shape", &"nope=3,4"]));
        assert_contains_all("unknown input name (infer)", &line, &["'nope'"]);
        let m = input_model();
        let err = api("set_input_shape of an unknown name", move || {
            let mut model = Model::load_bytes(&m).map_err(|e| format!("{e:#}"))?;
            model.set_input_shape("nope", &["3", "4"]).map_err(|e| format!("{e:#}"))
        })
        .expect_err("an unknown input name");
        assert_contains_all("unknown input name (library)", &err, &["'nope'"]);
    });
}

#[test]
fn missing_input() {
    isolated("missing_input", || {
        let scratch = Scratch::new("missing_input");
        let model = scratch.file("model.onnx", &input_model());
        let line = cli_error(&os(&[&"run", &model, &"--output-dir", &scratch.out_dir("out")]));
        assert_contains_all("missing --input", &line, &["x (float32 [3,4])", "--input"]);
        let line = cli_error(&os(&[&"bench", &model]));
        assert_contains_all("missing --input (bench)", &line, &["x (float32 [3,4])"]);
        let err = api_error("run without inputs", &input_model(), Some(vec![]));
        assert_contains_all("missing input (library)", &err, &["x"]);
        let err =
            api_error("run with two inputs", &input_model(), Some(vec![arange_f32(&[3, 4]), arange_f32(&[3, 4])]));
        assert_contains_all("extra input (library)", &err, &["x"]);
    });
}

/// Valid but unusual .npy layouts: big-endian data and Fortran order give the exact answer.
#[test]
fn input_npy_big_endian_and_fortran_order_are_exact() {
    isolated("input_npy_big_endian_and_fortran_order_are_exact", || {
        let scratch = Scratch::new("input_npy_big_endian_and_fortran_order_are_exact");
        let model = scratch.file("model.onnx", &input_model());
        let want = f32s(&[2, 2], vec![4., 6., 8., 10.]);
        let be: Vec<u8> = (0..12).flat_map(|v| (v as f32).to_be_bytes()).collect();
        // Fortran order: column-major data of the same logical [3, 4] arange.
        let fo: Vec<u8> =
            (0..4).flat_map(|c| (0..3).map(move |r| (r * 4 + c) as f32)).flat_map(f32::to_le_bytes).collect();
        for (name, bytes) in
            [("big_endian", npy_raw(">f4", false, &[3, 4], &be)), ("fortran", npy_raw("<f4", true, &[3, 4], &fo))]
        {
            let file = scratch.file(&format!("x_{name}.npy"), &bytes);
            let out = scratch.out_dir(&format!("out_{name}"));
            cli_ok(&os(&[&"run", &model, &"--input", &format!("x={}", file.display()), &"--output-dir", &out]));
            let got = sliceops::npy::read_npy(&out.join("y.npy")).unwrap();
            if let Err(e) = same(&got, &want) {
                panic!("{name}: {e}");
            }
            let t = sliceops::npy::read_npy_bytes(&bytes).unwrap();
            let got = api_run(name, &input_model(), vec![t]).remove(0).1;
            if let Err(e) = same(&got, &want) {
                panic!("{name} (library): {e}");
            }
        }
    });
}

// ------------------------------------------------------------------------------------------------
// Runtime parameters with bad values.
// ------------------------------------------------------------------------------------------------

/// StridedSlice over float [3, 4] with begin, end, strides as graph inputs of the given type and shape.
fn ss_runtime_model(dt: DataType, param_shape: &[D]) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &dims(&[3, 4]))
        .input("b", dt, param_shape)
        .input("e", dt, param_shape)
        .input("s", dt, param_shape)
        .node("StridedSlice", "ai.sliceops", "ss", &["x", "b", "e", "s"], &["y"], masks([0; 5]))
        .output("y")
        .bytes()
}

/// ONNX Slice over float [3, 4] with starts, ends, axes, steps as graph inputs.
fn slice_runtime_model(dt: DataType, param_shape: &[D]) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &dims(&[3, 4]))
        .input("st", dt, param_shape)
        .input("en", dt, param_shape)
        .input("ax", dt, param_shape)
        .input("sp", dt, param_shape)
        .node("Slice", "", "slice", &["x", "st", "en", "ax", "sp"], &["y"], vec![])
        .output("y")
        .bytes()
}

#[test]
fn runtime_begin_of_the_wrong_length() {
    isolated("runtime_begin_of_the_wrong_length", || {
        let scratch = Scratch::new("runtime_begin_of_the_wrong_length");
        let mut checks = Checks::default();
        // Declared [2], fed [3]: refused against the declaration, naming the input.
        let case = Case::new(
            "ss_begin_3_for_declared_2",
            ss_runtime_model(DataType::Int64, &[D::N(2)]),
            vec![("x", arange_f32(&[3, 4])), ("b", i64s(&[0, 0, 0])), ("e", i64s(&[1, 1])), ("s", i64s(&[1, 1]))],
            When::Run,
        )
        .needles(&["'b'", "[3]", "[2]"]);
        checks.extend(check_case(&scratch, &case));
        // Declared [K]: the lengths only meet at run time, in the node.
        let case = Case::new(
            "slice_starts_3_ends_2",
            slice_runtime_model(DataType::Int64, &[D::S("K")]),
            vec![
                ("x", arange_f32(&[3, 4])),
                ("st", i64s(&[0, 0, 0])),
                ("en", i64s(&[1, 1])),
                ("ax", i64s(&[0, 1])),
                ("sp", i64s(&[1, 1])),
            ],
            When::Run,
        )
        .needles(&["3", "2"])
        .any_of(&["'en'", "node 'slice' (Slice)"]);
        checks.extend(check_case(&scratch, &case));
        let model = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .input("st", DataType::Int64, &[D::S("K")])
            .input("en", DataType::Int64, &[D::S("L")])
            .node("Slice", "", "slice", &["x", "st", "en"], &["y"], vec![])
            .output("y")
            .bytes();
        checks.extend(check_case(
            &scratch,
            &Case::new(
                "slice_starts_3_on_rank_2",
                model.clone(),
                vec![("x", arange_f32(&[3, 4])), ("st", i64s(&[0, 0, 0])), ("en", i64s(&[1, 1, 1]))],
                When::Run,
            )
            .node("slice", "Slice")
            .needles(&["axis 2 is out of range for rank 2"]),
        ));
        checks.extend(check_case(
            &scratch,
            &Case::new(
                "slice_starts_1_ends_2",
                model,
                vec![("x", arange_f32(&[3, 4])), ("st", i64s(&[0])), ("en", i64s(&[1, 1]))],
                When::Run,
            )
            .node("slice", "Slice")
            .needles(&["starts, ends, axes and steps have different lengths: 1, 2, 1, 1"]),
        ));
        checks.finish();
    });
}

#[test]
fn runtime_step_zero() {
    isolated("runtime_step_zero", || {
        check_cases(
            "runtime_step_zero",
            &[
                Case::new(
                    "slice_step_0",
                    slice_runtime_model(DataType::Int64, &[D::N(1)]),
                    vec![
                        ("x", arange_f32(&[3, 4])),
                        ("st", i64s(&[0])),
                        ("en", i64s(&[2])),
                        ("ax", i64s(&[1])),
                        ("sp", i64s(&[0])),
                    ],
                    When::Run,
                )
                .node("slice", "Slice")
                .needles(&["axis 1 is 0: a step must be non-zero"]),
                Case::new(
                    "ss_stride_0",
                    ss_runtime_model(DataType::Int64, &[D::N(2)]),
                    vec![("x", arange_f32(&[3, 4])), ("b", i64s(&[0, 0])), ("e", i64s(&[2, 2])), ("s", i64s(&[1, 0]))],
                    When::Run,
                )
                .node("ss", "StridedSlice")
                .needles(&["spec entry 1 is 0: a step must be non-zero"]),
                Case::new(
                    "ss_int32_stride_0",
                    ss_runtime_model(DataType::Int32, &[D::N(2)]),
                    vec![("x", arange_f32(&[3, 4])), ("b", i32s(&[0, 0])), ("e", i32s(&[2, 2])), ("s", i32s(&[0, 1]))],
                    When::Run,
                )
                .node("ss", "StridedSlice")
                .needles(&["spec entry 0 is 0: a step must be non-zero"]),
                // Runtime values that are fine for the rank but out of range for the data.
                Case::new(
                    "slice_runtime_axis_min",
                    slice_runtime_model(DataType::Int64, &[D::N(1)]),
                    vec![
                        ("x", arange_f32(&[3, 4])),
                        ("st", i64s(&[0])),
                        ("en", i64s(&[2])),
                        ("ax", i64s(&[MIN])),
                        ("sp", i64s(&[1])),
                    ],
                    When::Run,
                )
                .node("slice", "Slice")
                .needles(&["axis -9223372036854775808 is out of range for rank 2"]),
                Case::new(
                    "ss_runtime_shrink_out_of_range",
                    Builder::new(13)
                        .input("x", DataType::Float, &dims(&[3, 4]))
                        .input("b", DataType::Int64, &[D::N(1)])
                        .input("e", DataType::Int64, &[D::N(1)])
                        .node("StridedSlice", "ai.sliceops", "ss", &["x", "b", "e"], &["y"], masks([0, 0, 0, 0, 1]))
                        .output("y")
                        .bytes(),
                    vec![("x", arange_f32(&[3, 4])), ("b", i64s(&[MIN])), ("e", i64s(&[0]))],
                    When::Run,
                )
                .node("ss", "StridedSlice")
                .needles(&["shrink index -9223372036854775808 at spec entry 0 is out of range for axis 0 of size 3"]),
            ],
        );
    });
}

/// An int32 begin tensor of rank 2: parameters must be 1-D.
#[test]
fn runtime_int32_begin_of_rank_2() {
    isolated("runtime_int32_begin_of_rank_2", || {
        let i32_2d =
            |v: &[i32]| tract_ndarray::ArrayD::from_shape_vec(vec![1, v.len()], v.to_vec()).unwrap().into_tensor();
        let ss = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .input("b", DataType::Int32, &[D::N(1), D::N(2)])
            .input("e", DataType::Int32, &[D::N(2)])
            .node("StridedSlice", "ai.sliceops", "ss", &["x", "b", "e"], &["y"], masks([0; 5]))
            .output("y")
            .bytes();
        let slice = Builder::new(13)
            .input("x", DataType::Float, &dims(&[3, 4]))
            .input("st", DataType::Int32, &[D::N(1), D::N(2)])
            .input("en", DataType::Int32, &[D::N(2)])
            .node("Slice", "", "slice", &["x", "st", "en"], &["y"], vec![])
            .output("y")
            .bytes();
        let scratch = Scratch::new("runtime_int32_begin_of_rank_2");
        let mut checks = Checks::default();
        // The rank is declared: the error can show before running (infer) or when running; either way
        // it names the node, the parameter and its shape.
        for (case, needles) in [
            (
                Case::new(
                    "ss_begin_1x2",
                    ss,
                    vec![("x", arange_f32(&[3, 4])), ("b", i32_2d(&[0, 1])), ("e", i32s(&[2, 3]))],
                    When::Run,
                )
                .node("ss", "StridedSlice"),
                ["begin", "[1, 2]"],
            ),
            (
                Case::new(
                    "slice_starts_1x2",
                    slice,
                    vec![("x", arange_f32(&[3, 4])), ("st", i32_2d(&[0, 1])), ("en", i32s(&[2, 3]))],
                    When::Run,
                )
                .node("slice", "Slice"),
                ["starts", "[1, 2]"],
            ),
        ] {
            let case = case.needles(&needles);
            let (node, op) = case.node.unwrap();
            let tensors: Vec<Tensor> = case.inputs.iter().map(|(_, t)| t.clone()).collect();
            checks.check(format!("{} / library", case.name), || {
                let err = api_error(&case.name, &case.model, Some(tensors));
                assert_contains_all(&case.name, &err, &[node, op, needles[0], needles[1]]);
            });
            let model = scratch.file(&format!("{}.onnx", case.name), &case.model);
            let mut run = os(&[&"run", &model, &"--output-dir", &scratch.out_dir("out")]);
            for (name, t) in &case.inputs {
                let p = scratch.npy(&format!("{}-{name}", case.name), t);
                run.extend(os(&[&"--input", &format!("{name}={}", p.display())]));
            }
            checks
                .check(format!("{} / CLI run", case.name), || assert_node_error(&cli_error(&run), node, op, &needles));
            checks.check(format!("{} / CLI infer", case.name), || {
                let infer = cli(&os(&[&"infer", &model]));
                if infer.code != Some(0) {
                    assert_node_error(&cli_error(&os(&[&"infer", &model])), node, op, &needles);
                }
            });
        }
        checks.finish();
    });
}

// ------------------------------------------------------------------------------------------------
// Valid extremes: exact answers.
// ------------------------------------------------------------------------------------------------

/// Named tensors (inputs or outputs), in graph order.
type Named = Vec<(String, Tensor)>;

/// How the parameters reach the node.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Params {
    /// Initializers, input of concrete shape.
    Const,
    /// Graph inputs.
    Runtime,
    /// Initializers, input declared `[N]`.
    Symbolic,
}

/// Expected output of a 1-D slice of `arange_f32(d)`.
fn expected_1d(indices: &[i64]) -> Tensor {
    f32s(&[indices.len()], indices.iter().map(|&i| i as f32).collect())
}

/// Checks a multi-output model against expected outputs through the API and `sliceops run`.
fn check_exact(scratch: &Scratch, name: &str, model: &[u8], inputs: &[(String, Tensor)], want: &[(String, Tensor)]) {
    let tensors: Vec<Tensor> = inputs.iter().map(|(_, t)| t.clone()).collect();
    let got = api_run(name, model, tensors);
    let mut failures = vec![];
    for ((gname, g), (wname, w)) in got.iter().zip(want) {
        assert_eq!(gname, wname);
        if let Err(e) = same(g, w) {
            failures.push(format!("library {name} output {wname}: {e}"));
        }
    }
    let path = scratch.file(&format!("{name}.onnx"), model);
    let out = scratch.out_dir(&format!("{name}-out"));
    let mut args = os(&[&"run", &path, &"--output-dir", &out]);
    for (n, t) in inputs {
        let p = scratch.npy(&format!("{name}-{n}"), t);
        args.extend(os(&[&"--input", &format!("{n}={}", p.display())]));
    }
    cli_ok(&args);
    for (wname, w) in want {
        let got = sliceops::npy::read_npy(&out.join(format!("{wname}.npy"))).unwrap();
        if let Err(e) = same(&got, w) {
            failures.push(format!("CLI {name} output {wname}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Symbolic models: the inferred length of each output, evaluated at `N = d`, is the real one.
fn check_symbolic_lengths(name: &str, model: &[u8], d: i64, want: &[(String, Tensor)]) {
    let m = model.to_vec();
    let want: Vec<(String, usize)> = want.iter().map(|(n, t)| (n.clone(), t.shape()[0])).collect();
    let failures = api(&format!("{name}: infer"), move || {
        let model = Model::load_bytes(&m).unwrap();
        let facts = model.infer().unwrap();
        let n = model.inference_model().symbols.sym("N");
        let values = SymbolValues::default().with(&n, d);
        let mut failures = vec![];
        for (name, len) in want {
            let f = facts.iter().find(|f| f.name == name).unwrap();
            let got = f.shape[0].eval(&values).to_i64().ok();
            if got != Some(len as i64) {
                failures.push(format!("{name}: inferred {} gives {got:?} at N={d}, the output has {len}", f.shape[0]));
            }
        }
        failures
    });
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

/// StridedSlice specs `x[b:e:s]` on a 1-D input (`None` = masked).
const SS_EXTREMES: &[(Option<i64>, Option<i64>, i64)] = &[
    (None, None, MIN),
    (None, None, MAX),
    (Some(MIN), Some(MAX), 1),
    (Some(MAX), Some(MIN), -1),
    (Some(MIN), Some(MIN), -1),
    (Some(MAX), Some(MAX), 1),
    (Some(MIN), Some(MAX), MAX),
    (Some(MAX), Some(MIN), MIN),
    (Some(MIN), None, -1),
    (None, Some(MIN), -1),
    (Some(MAX), None, MIN),
    (Some(-1), Some(MAX), -1),
    (Some(MIN), Some(MIN), MIN),
    (Some(MAX), Some(MAX), MAX),
    (Some(MIN), None, MIN),
    (None, Some(MAX), MAX),
    (Some(MIN + 1), Some(MAX - 1), MAX - 1),
];

/// `x[::INT64_MIN]`, `x[INT64_MAX:INT64_MIN:-1]`... on arange_f32(5), with constant, runtime and
/// symbolic-shape parameters, against Python's `slice.indices`.
#[test]
fn strided_slice_extreme_steps_and_bounds_are_exact() {
    let cases = SS_EXTREMES.iter().map(|&(b, e, s)| [b.unwrap_or(0), e.unwrap_or(0), s]).collect();
    check_extremes(
        "strided_slice_extreme_steps_and_bounds_are_exact",
        ExtremeOp {
            label: "ss",
            cases,
            node: |builder, i, [b, e, s], y| {
                let (begin, end, _) = SS_EXTREMES[i];
                let m = [begin.is_none() as i64, end.is_none() as i64, 0, 0, 0];
                builder.node("StridedSlice", "ai.sliceops", &format!("ss{i}"), &["x", b, e, s], &[y], masks(m))
            },
            indices: |d, i| {
                let (begin, end, step) = SS_EXTREMES[i];
                reference::python_indices(d, begin, end, step)
            },
        },
    );
}

/// ONNX Slice `(starts, ends, steps)` on a 1-D input.
const SLICE_EXTREMES: &[(i64, i64, i64)] = &[
    (0, MAX, MAX),
    (-1, MIN, MIN),
    (MIN, MAX, 1),
    (MAX, MIN, -1),
    (MIN, MIN, -1),
    (-1, MAX, -1),
    (MAX, MAX, -1),
    (MIN, MIN, 1),
    (MAX, MIN, MIN),
    (MIN, MAX, MAX),
    (MAX, MAX, MAX),
    (MIN, MIN, MIN),
    (MAX, MIN, 1),
    (MIN, MAX, -1),
    (-6, MIN, -1),
    (MIN + 1, MAX - 1, MAX - 1),
    (MAX - 1, MIN + 1, MIN + 1),
];

/// ONNX Slice with INT64_MIN / INT64_MAX starts, ends and steps, against the opset-13 text.
#[test]
fn slice_extreme_steps_and_bounds_are_exact() {
    check_extremes(
        "slice_extreme_steps_and_bounds_are_exact",
        ExtremeOp {
            label: "slice",
            cases: SLICE_EXTREMES.iter().map(|&(s, e, k)| [s, e, k]).collect(),
            node: |builder, i, [s, e, k], y| {
                builder.init_i64(&format!("ax{i}"), &[0]).node(
                    "Slice",
                    "",
                    &format!("slice{i}"),
                    &["x", s, e, &format!("ax{i}"), k],
                    &[y],
                    vec![],
                )
            },
            indices: |d, i| {
                let (s, e, k) = SLICE_EXTREMES[i];
                reference::onnx_indices(d, s, e, k)
            },
        },
    );
}

/// A 1-D slicing op with three i64 parameters per case, for the extreme-value tests: one node per
/// case over one input `x`, each case's parameters initializers or graph inputs.
struct ExtremeOp {
    /// Names the test's scratch files.
    label: &'static str,
    /// The three parameters of each case.
    cases: Vec<[i64; 3]>,
    /// Adds case `i`'s node, reading `x` and the three parameter values named, writing the output named.
    node: fn(Builder, usize, [&str; 3], &str) -> Builder,
    /// The indices case `i` takes from an axis of length `d`, by the reference rule.
    indices: fn(i64, usize) -> Vec<i64>,
}

impl ExtremeOp {
    fn param_names(i: usize) -> [String; 3] {
        [format!("p{i}_0"), format!("p{i}_1"), format!("p{i}_2")]
    }

    /// The model: `x` of `[5]` (`[N]` when symbolic), a node and an output `y{i}` per case.
    fn model(&self, params: Params) -> Vec<u8> {
        let shape = if params == Params::Symbolic { vec![D::S("N")] } else { vec![D::N(5)] };
        let mut b = Builder::new(13).input("x", DataType::Float, &shape);
        for (i, values) in self.cases.iter().enumerate() {
            let names = Self::param_names(i);
            for (n, &v) in names.iter().zip(values) {
                b = match params {
                    Params::Runtime => b.input(n, DataType::Int64, &[D::N(1)]),
                    _ => b.init_i64(n, &[v]),
                };
            }
            let [p0, p1, p2] = &names;
            b = (self.node)(b, i, [p0, p1, p2], &format!("y{i}"));
        }
        for i in 0..self.cases.len() {
            b = b.output(&format!("y{i}"));
        }
        b.bytes()
    }

    /// The inputs for `x = arange_f32(d)` and the outputs the reference gives.
    fn io(&self, params: Params, d: usize) -> (Named, Named) {
        let mut inputs = vec![("x".to_string(), arange_f32(&[d]))];
        let mut want = vec![];
        for (i, values) in self.cases.iter().enumerate() {
            if params == Params::Runtime {
                for (n, &v) in Self::param_names(i).into_iter().zip(values) {
                    inputs.push((n, i64s(&[v])));
                }
            }
            want.push((format!("y{i}"), expected_1d(&(self.indices)(d as i64, i))));
        }
        (inputs, want)
    }
}

/// Every case of `op` with constant, runtime and symbolic-shape parameters, through the library and
/// the CLI; symbolic models also at lengths 1 and 0, their inferred lengths checked. `test` is the
/// calling test's name (the child process runs it alone).
fn check_extremes(test: &str, op: ExtremeOp) {
    isolated(test, move || {
        let scratch = Scratch::new(test);
        for params in [Params::Const, Params::Runtime, Params::Symbolic] {
            let model = op.model(params);
            let ds: &[usize] = if params == Params::Symbolic { &[5, 1, 0] } else { &[5] };
            for &d in ds {
                let (inputs, want) = op.io(params, d);
                let case = format!("{}_{params:?}_{d}", op.label);
                check_exact(&scratch, &case, &model, &inputs, &want);
                if params == Params::Symbolic {
                    check_symbolic_lengths(&case, &model, d as i64, &want);
                }
            }
        }
    });
}

/// AsStrided with strides and offsets at the i64 limits over tensors they fit: length-1 axes with
/// stride i64::MAX, empty views with offset i64::MAX (an empty view needs no bounds).
#[test]
fn as_strided_extreme_strides_and_offsets_are_exact() {
    isolated("as_strided_extreme_strides_and_offsets_are_exact", || {
        let scratch = Scratch::new("as_strided_extreme_strides_and_offsets_are_exact");
        // (name, input length, size, stride, offset)
        type View<'a> = (&'a str, usize, &'a [i64], &'a [i64], i64);
        let cases: &[View] = &[
            ("len1_stride_max", 1, &[1], &[MAX], 0),
            ("len1_axes_stride_max_around_a_run", 3, &[1, 1, 3], &[MAX, MAX, 1], 0),
            ("empty_first_axis_offset_max", 3, &[0, 4], &[MAX, MAX], MAX),
            ("empty_last_axis_offset_max", 3, &[3, 0], &[MAX, 1], MAX),
            ("len1_stride_max_offset_last", 3, &[1, 2], &[MAX, 1], 1),
            ("inner_len1_stride_max", 2, &[2, 1], &[1, MAX], 0),
            ("broadcast_offset_last", 3, &[2, 3], &[0, 0], 2),
            ("rank0_view_offset_last", 7, &[], &[], 6),
            (
                "many_len1_axes",
                4,
                &[1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2],
                &[MAX, MAX - 1, 1, MAX, 3, MAX, 0, MAX, MAX, 2, MAX, 1],
                0,
            ),
        ];
        for &(name, n, size, stride, offset) in cases {
            let data: Vec<f32> = (0..n).map(|v| v as f32).collect();
            let (shape, values) = reference::as_strided(&data, size, stride, offset).expect("a valid view");
            let want = vec![("y".to_string(), f32s(&shape, values))];
            let inputs = vec![("x".to_string(), arange_f32(&[n]))];
            for (variant, dims) in [("const", vec![D::N(n as i64)]), ("symbolic", vec![D::S("N")])] {
                let model = as_model(&dims, size, stride, offset);
                check_exact(&scratch, &format!("{name}_{variant}"), &model, &inputs, &want);
            }
        }
    });
}

/// A chain composing into one view: reverse (Slice step -1 from INT64_MAX), AsStrided with a
/// length-1 axis of stride i64::MAX, StridedSlice with step INT64_MIN.
#[test]
fn chain_of_extreme_views_is_exact() {
    isolated("chain_of_extreme_views_is_exact", || {
        let scratch = Scratch::new("chain_of_extreme_views_is_exact");
        for (variant, shape) in [("const", vec![D::N(5)]), ("symbolic", vec![D::S("N")])] {
            let model = Builder::new(13)
                .input("x", DataType::Float, &shape)
                .init_i64("st", &[MAX])
                .init_i64("en", &[MIN])
                .init_i64("ax", &[0])
                .init_i64("sp", &[-1])
                .node("Slice", "", "rev", &["x", "st", "en", "ax", "sp"], &["r"], vec![])
                .node(
                    "AsStrided",
                    "ai.sliceops",
                    "as",
                    &["r"],
                    &["w"],
                    vec![("size", A::Is(vec![1, 5])), ("stride", A::Is(vec![MAX, 1])), ("offset", A::I(0))],
                )
                .init_i64("b", &[0, 0])
                .init_i64("e", &[0, 0])
                .init_i64("s", &[1, MIN])
                .node("StridedSlice", "ai.sliceops", "ss", &["w", "b", "e", "s"], &["y"], masks([0b11, 0b11, 0, 0, 0]))
                .output("r")
                .output("w")
                .output("y")
                .bytes();
            let want = vec![
                ("r".to_string(), f32s(&[5], vec![4., 3., 2., 1., 0.])),
                ("w".to_string(), f32s(&[1, 5], vec![4., 3., 2., 1., 0.])),
                ("y".to_string(), f32s(&[1, 1], vec![0.])),
            ];
            check_exact(&scratch, &format!("chain_{variant}"), &model, &[("x".to_string(), arange_f32(&[5]))], &want);
        }
    });
}

/// A 70-entry spec that is valid: 63 new axes (every usable mask bit), then 7 ranges on a rank-7
/// input, the first reversing axis 0 from INT64_MAX to INT64_MIN. The output has rank 70.
#[test]
fn strided_slice_70_entry_valid_spec_is_exact() {
    isolated("strided_slice_70_entry_valid_spec_is_exact", || {
        let scratch = Scratch::new("strided_slice_70_entry_valid_spec_is_exact");
        let in_shape = [2usize, 3, 1, 1, 1, 1, 2];
        let mut begin = vec![0i64; 70];
        let mut end = vec![0i64; 70];
        let mut strides = vec![1i64; 70];
        for i in 63..70 {
            begin[i] = MIN;
            end[i] = MAX;
        }
        (begin[63], end[63], strides[63]) = (MAX, MIN, -1);
        let model = ss_model(&dims(&in_shape), &begin, &end, &strides, [0, 0, 0, MAX, 0]);
        let x = arange_f32(&in_shape);
        let xs: Vec<f32> = x.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        // Axis 0 reversed: the two halves swap.
        let half = xs.len() / 2;
        let values: Vec<f32> = xs[half..].iter().chain(&xs[..half]).copied().collect();
        let mut out_shape = vec![1usize; 63];
        out_shape.extend(in_shape);
        let want = vec![("y".to_string(), f32s(&out_shape, values))];
        check_exact(&scratch, "ss70", &model, &[("x".to_string(), x)], &want);
    });
}

// ------------------------------------------------------------------------------------------------
// Beyond the listed cases: the same contract through fold / lower, the ATen and Paddle forms, the
// standard ops sliceops replaces (Pad over a shape, Range), and hostile command-line values.
// ------------------------------------------------------------------------------------------------

/// `fold` and `lower` analyse the model too: an invalid node is an error there as well, never a
/// model written back as if it were fine.
#[test]
fn fold_and_lower_refuse_invalid_models() {
    isolated("fold_and_lower_refuse_invalid_models", || {
        let scratch = Scratch::new("fold_and_lower_refuse_invalid_models");
        let mut checks = Checks::default();
        let cases: Vec<(&str, Vec<u8>, &str, &str, &str)> = vec![
            (
                "ss_two_ellipsis",
                ss_model(&dims(&[3, 4]), &[0; 3], &[1; 3], &[1; 3], [0, 0, 0b101, 0, 0]),
                "ss",
                "StridedSlice",
                "ellipsis_mask 5",
            ),
            (
                "ss_zero_stride",
                ss_model(&dims(&[3, 4]), &[0, 0], &[1, 1], &[1, 0], [0; 5]),
                "ss",
                "StridedSlice",
                "spec entry 1 is 0",
            ),
            ("ss_scalar", ss_model(&[], &[0], &[1], &[1], [0; 5]), "ss", "StridedSlice", "rank 0"),
            (
                "slice_repeated_axes",
                slice_model(&dims(&[3, 4]), &[0, 0], &[1, 1], Some(&[1, 1]), None),
                "slice",
                "Slice",
                "axis 1 appears more than once",
            ),
            (
                "slice_step_0",
                slice_model(&dims(&[3, 4]), &[0], &[1], Some(&[1]), Some(&[0])),
                "slice",
                "Slice",
                "axis 1 is 0",
            ),
            (
                "slice_axis_min",
                slice_model(&dims(&[3, 4]), &[0], &[1], Some(&[MIN]), None),
                "slice",
                "Slice",
                "axis -9223372036854775808",
            ),
            (
                "as_out_of_bounds",
                as_model(&dims(&[3, 3]), &[3, 3], &[3, 2], 0),
                "as",
                "AsStrided",
                "view reads element 10",
            ),
            ("as_offset_max", as_model(&dims(&[3, 3]), &[1], &[1], MAX), "as", "AsStrided", "9223372036854775807"),
        ];
        for (name, model, node, op, needle) in cases {
            let path = scratch.file(&format!("{name}.onnx"), &model);
            for cmd in ["fold", "lower"] {
                let out = scratch.dir.join(format!("{name}-{cmd}.onnx"));
                checks.check(format!("{name} / CLI {cmd}"), || {
                    let line = cli_error(&os(&[&cmd, &path, &"-o", &out]));
                    assert_node_error(&line, node, op, &[needle]);
                    assert!(!out.exists(), "{cmd} wrote {} for an invalid model", out.display());
                });
                let m = model.clone();
                checks.check(format!("{name} / library {cmd}"), || {
                    let r = api(&format!("{name} {cmd}"), move || {
                        let f = if cmd == "fold" { sliceops::fold::fold_bytes } else { sliceops::onnx::lower };
                        f(&m, None).map(|_| ()).map_err(|e| format!("{e:#}"))
                    });
                    let err = r.expect_err("an invalid model must not be written back");
                    assert_contains_all(name, &err, &[node, op, needle]);
                });
            }
        }
        checks.finish();
    });
}

/// `y = ATen[as_strided](x, size, stride, storage_offset)` over float [3, 4]; each parameter an
/// initializer (`Some`) or a graph input (`None`).
fn aten_model(size: Option<&[i64]>, stride: Option<&[i64]>, offset: Option<i64>) -> Vec<u8> {
    let mut b = Builder::new(13).input("x", DataType::Float, &dims(&[3, 4]));
    let n = size.map_or(2, |s| s.len()) as i64;
    b = match size {
        Some(v) => b.init_i64("size", v),
        None => b.input("size", DataType::Int64, &[D::N(n)]),
    };
    b = match stride {
        Some(v) => b.init_i64("stride", v),
        None => b.input("stride", DataType::Int64, &[D::N(n)]),
    };
    b = match offset {
        Some(v) => b.init("storage_offset", DataType::Int64, &[], v.to_le_bytes().to_vec()),
        None => b.input("storage_offset", DataType::Int64, &[]),
    };
    b.aten_as_strided("aten", &["x", "size", "stride", "storage_offset"], "y").output("y").bytes()
}

/// PyTorch's ATen fallback form: constant, runtime and mixed parameters with hostile values.
#[test]
fn aten_as_strided_hostile_parameters() {
    isolated("aten_as_strided_hostile_parameters", || {
        let x = || ("x", arange_f32(&[3, 4]));
        let off = |v: i64| ("storage_offset", tensor0(v));
        check_cases(
            "aten_as_strided_hostile_parameters",
            &[
                Case::new("offset_max_const", aten_model(Some(&[1]), Some(&[1]), Some(MAX)), vec![x()], When::Build)
                    .node("aten", "ATen")
                    .needles(&["view reads element 9223372036854775807 but the input has 12 elements"]),
                Case::new(
                    "extent_overflow_const",
                    aten_model(Some(&[3]), Some(&[MAX]), Some(0)),
                    vec![x()],
                    When::Build,
                )
                .node("aten", "ATen")
                .needles(&["overflows"]),
                // A known size with a runtime offset: the output shape is worked out before running.
                Case::new(
                    "negative_size_runtime_offset",
                    aten_model(Some(&[2, -5]), Some(&[1, 1]), None),
                    vec![x(), off(0)],
                    When::Build,
                )
                .node("aten", "ATen")
                .needles(&["size -5 is negative at index 1"]),
                Case::new(
                    "huge_size_runtime_offset",
                    aten_model(Some(&[1 << 30, 1 << 30]), Some(&[0, 0]), None),
                    vec![x(), off(0)],
                    When::Run,
                )
                .node("aten", "ATen")
                .needles(&["1152921504606846976", "cannot be allocated"]),
                Case::new(
                    "overflowing_size_runtime_offset",
                    aten_model(Some(&[1 << 62, 1 << 62]), Some(&[0, 0]), None),
                    vec![x(), off(0)],
                    When::Run,
                )
                .node("aten", "ATen")
                .needles(&["overflows"]),
                Case::new(
                    "offset_max_runtime",
                    aten_model(Some(&[1]), Some(&[1]), None),
                    vec![x(), off(MAX)],
                    When::Run,
                )
                .node("aten", "ATen")
                .needles(&["9223372036854775807"]),
                Case::new(
                    "negative_offset_runtime",
                    aten_model(Some(&[1]), Some(&[1]), None),
                    vec![x(), off(MIN)],
                    When::Run,
                )
                .node("aten", "ATen")
                .needles(&["offset -9223372036854775808 is negative"]),
                Case::new(
                    "runtime_size_and_stride_negative",
                    aten_model(None, None, Some(0)),
                    vec![x(), ("size", i64s(&[2, -1])), ("stride", i64s(&[1, 1]))],
                    When::Run,
                )
                .node("aten", "ATen")
                .needles(&["size -1 is negative at index 1"]),
                Case::new(
                    "runtime_stride_overflow",
                    aten_model(None, None, Some(0)),
                    vec![x(), ("size", i64s(&[2, 2])), ("stride", i64s(&[MAX, 1]))],
                    When::Run,
                )
                .node("aten", "ATen")
                .needles(&["overflows"]),
            ],
        );
    });
}

/// Paddle form (`Slice` in `ai.sliceops`) over float [3, 4] with `axes` attribute and runtime starts.
fn paddle_runtime_model(axes: &[i64]) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &dims(&[3, 4]))
        .input("starts", DataType::Int64, &[D::N(axes.len() as i64)])
        .node(
            "Slice",
            "ai.sliceops",
            "paddle",
            &["x", "starts"],
            &["y"],
            vec![("axes", A::Is(axes.to_vec())), ("ends", A::Is(vec![2; axes.len()]))],
        )
        .output("y")
        .bytes()
}

#[test]
fn paddle_slice_hostile_axes_with_runtime_starts() {
    isolated("paddle_slice_hostile_axes_with_runtime_starts", || {
        let inputs = |n: usize| vec![("x", arange_f32(&[3, 4])), ("starts", i64s(&vec![0; n]))];
        check_cases(
            "paddle_slice_hostile_axes_with_runtime_starts",
            &[
                Case::new("axis_max", paddle_runtime_model(&[MAX]), inputs(1), When::Build)
                    .node("paddle", "Slice")
                    .needles(&["axis 9223372036854775807 is out of range for rank 2"]),
                Case::new("axis_min", paddle_runtime_model(&[MIN]), inputs(1), When::Build)
                    .node("paddle", "Slice")
                    .needles(&["axis -9223372036854775808 is out of range for rank 2"]),
                Case::new("axes_repeated", paddle_runtime_model(&[0, -2]), inputs(2), When::Build)
                    .node("paddle", "Slice")
                    .needles(&["axis 0 appears more than once in axes"]),
            ],
        );
    });
}

/// The standard ops sliceops registers its own builders for: Pad over a shape vector with pads
/// that cross, and a Range whose length cannot be allocated.
#[test]
fn replaced_standard_ops_with_hostile_values() {
    isolated("replaced_standard_ops_with_hostile_values", || {
        let pad = |pads: &[i64]| {
            Builder::new(13)
                .input("x", DataType::Float, &dims(&[3, 4, 5]))
                .node("Shape", "", "shape", &["x"], &["s"], vec![])
                .init_i64("pads", pads)
                .node("Pad", "", "pad", &["s", "pads"], &["y"], vec![])
                .output("y")
                .bytes()
        };
        let range = |start: i64, limit: i64, delta: i64| {
            let scalar = |v: i64| v.to_le_bytes().to_vec();
            Builder::new(13)
                .input("x", DataType::Float, &dims(&[3]))
                .init("start", DataType::Int64, &[], scalar(start))
                .init("limit", DataType::Int64, &[], scalar(limit))
                .init("delta", DataType::Int64, &[], scalar(delta))
                .node("Range", "", "range", &["start", "limit", "delta"], &["y"], vec![])
                .output("y")
                .bytes()
        };
        check_cases(
            "replaced_standard_ops_with_hostile_values",
            &[
                // Crops 5 from the front of a length-3 vector (before + after + len >= 0 still holds).
                Case::new("pad_crop_past_the_start", pad(&[-5, 10]), x_input(&[3, 4, 5]), When::Build)
                    .node("pad", "Pad")
                    .needles(&["-5"]),
                Case::new("pad_crop_past_the_end", pad(&[10, -5]), x_input(&[3, 4, 5]), When::Build)
                    .node("pad", "Pad")
                    .needles(&["-5"]),
                Case::new("pad_min", pad(&[MIN, MAX]), x_input(&[3, 4, 5]), When::Build)
                    .node("pad", "Pad")
                    .needles(&["-9223372036854775808"]),
                Case::new("range_0_to_max", range(0, MAX, 1), x_input(&[3]), When::Build)
                    .node("range", "Range")
                    .needles(&["9223372036854775807"]),
                Case::new("range_min_to_max", range(MIN, MAX, 1), x_input(&[3]), When::Build).node("range", "Range"),
                Case::new("range_delta_0", range(0, 5, 0), x_input(&[3]), When::Build)
                    .node("range", "Range")
                    .needles(&["delta"]),
            ],
        );
    });
}

/// `infer --input-shape` with hostile dims: negative, overflowing, garbage. Either a result or one
/// clean error, never a crash; negative and overflowing dims are errors.
#[test]
fn infer_hostile_input_shapes() {
    isolated("infer_hostile_input_shapes", || {
        let scratch = Scratch::new("infer_hostile_input_shapes");
        let mut checks = Checks::default();
        let model = scratch.file("model.onnx", &input_model());
        let as_model_path = scratch.file("as.onnx", &as_model(&[D::S("N")], &[2], &[1], 0));
        for (path, shape, must_fail) in [
            (&model, "x=-1,4", true),
            (&model, "x=3,-4", true),
            (&model, "x=9223372036854775807,9223372036854775807", false),
            (&model, "x=4611686018427387904,4", false),
            (&model, "x=99999999999999999999999,4", true),
            (&model, "x=a b,4", true),
            (&model, "x=N,4", false),
            (&model, "x=N-10,4", false),
            (&model, "x=3", true),
            (&model, "x=", true),
            (&as_model_path, "x=-3", true),
            (&as_model_path, "x=0", true),
            (&as_model_path, "x=9223372036854775807", false),
        ] {
            checks.check(format!("infer --input-shape {shape} on {}", path.display()), || {
                let args = os(&[&"infer", path, &"--input-shape", &shape]);
                let out = cli(&args);
                if must_fail || out.code != Some(0) {
                    let line = cli_error(&args);
                    assert!(must_fail, "a valid shape was refused: {line}");
                }
            });
        }
        checks.finish();
    });
}

/// Where the outputs cannot be written.
#[test]
fn unwritable_outputs() {
    isolated("unwritable_outputs", || {
        let scratch = Scratch::new("unwritable_outputs");
        let model = scratch.file("model.onnx", &input_model());
        let x = scratch.npy("x", &arange_f32(&[3, 4]));
        let a_file = scratch.file("a_file", b"not a directory");
        let line =
            cli_error(&os(&[&"run", &model, &"--input", &format!("x={}", x.display()), &"--output-dir", &a_file]));
        assert_contains_all("output dir is a file", &line, &["a_file"]);
        let missing = scratch.dir.join("no").join("such").join("dir").join("out.onnx");
        for cmd in ["fold", "lower"] {
            let line = cli_error(&os(&[&cmd, &model, &"-o", &missing]));
            assert_contains_all(&format!("{cmd} into a missing directory"), &line, &["out.onnx"]);
            let line = cli_error(&os(&[&cmd, &model, &"-o", &scratch.dir]));
            assert_contains_all(&format!("{cmd} onto a directory"), &line, &["unwritable_outputs"]);
        }
    });
}
