//! The command line as a product: help that says what the tool is, one help style, a short and a long
//! form for every option, a closed output pipe, and `.npz` inputs and outputs.

mod common;

use common::cli::{files_in, run_command, scratch, sliceops, Limits, Run};
use common::fixtures::{assert_same, fixtures, models_dir, Fixture};
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_sliceops");
const SUBCOMMANDS: [&str; 5] = ["run", "infer", "fold", "lower", "bench"];

fn fixture(name: &str) -> Fixture {
    fixtures().into_iter().find(|f| f.name == name).unwrap()
}

fn npz(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npz").join(name).display().to_string()
}

fn real_model(name: &str) -> String {
    models_dir().join("real").join(name).join("model.onnx").display().to_string()
}

#[test]
fn help_says_what_the_tool_is() {
    let o = sliceops(&["--help"]);
    assert_eq!(o.code, Some(0));
    let help = o.stdout.clone();
    assert!(help.starts_with("Runs, infers, folds and lowers whole ONNX models, with exact symbolic shapes"), "{help}");
    assert!(!help.contains("tensor slicing (StridedSlice"), "{help}");
    for sub in SUBCOMMANDS {
        assert!(help.contains(&format!("\n  {sub} ")), "{sub} missing from\n{help}");
    }
}

/// The help of the tool and of each subcommand.
fn helps() -> Vec<(String, String, String)> {
    let mut out = vec![];
    for sub in [None, Some("run"), Some("infer"), Some("fold"), Some("lower"), Some("bench")] {
        let args = |flag: &'static str| -> Vec<&str> { sub.into_iter().chain([flag]).collect() };
        let short = sliceops(&args("-h"));
        let long = sliceops(&args("--help"));
        assert!(short.code == Some(0) && long.code == Some(0));
        out.push((sub.unwrap_or("sliceops").to_string(), short.stdout.clone(), long.stdout.clone()));
    }
    out
}

#[test]
fn one_help_style_for_the_tool_and_every_subcommand() {
    // No subcommand has a long help of its own: -h and --help print the same, everywhere.
    for (sub, short, long) in helps() {
        assert_eq!(short, long, "{sub}: -h and --help differ");
        assert!(short.contains("\nUsage: sliceops"), "{sub}: {short}");
        assert!(short.contains("\nOptions:\n"), "{sub}: {short}");
    }
}

#[test]
fn every_option_has_a_short_and_a_long_form() {
    let mut seen = 0;
    for (sub, help, _) in helps() {
        let options = help.split("\nOptions:\n").nth(1).unwrap();
        // An option's line starts at column 2 (`  -x, --long`) or 6 (`      --long` without a short
        // form); wrapped help text is indented further.
        for line in options.lines().filter(|l| l.starts_with("  -") || l.starts_with("      --")) {
            let flags = line.trim_start();
            let short = flags.as_bytes();
            assert!(
                short.len() > 6 && short[0] == b'-' && short[1].is_ascii_alphabetic() && flags[2..].starts_with(", --"),
                "{sub}: an option without its short form: {line}"
            );
            seen += 1;
        }
    }
    // run 7 + infer 3 + fold 4 + lower 1 + bench 7, each with -h, and -h/-V of the tool.
    assert_eq!(seen, 7 + 3 + 4 + 1 + 7 + 5 + 2);
}

#[test]
fn short_forms_do_what_long_forms_do() {
    let f = fixture("sym_batch_onnx_slice");
    let model = f.model().display().to_string();
    let long = sliceops(&["infer", &model, "--input-shape", "x=N,3", "--assume", "N>=2", "--format", "json"]);
    let short = sliceops(&["infer", &model, "-s", "x=N,3", "-a", "N>=2", "-f", "json"]);
    assert_eq!(long.code, Some(0), "{}", long.stderr);
    assert_eq!(short.stdout, long.stdout);
    assert!(short.stdout.starts_with('{'));

    let dir = scratch("cli_product", "short-forms");
    let input = f.input_args()[1].clone();
    let (out, z) = (dir.join("out"), dir.join("out.npz"));
    let o = sliceops(&[
        "run",
        &model,
        "-i",
        &input,
        "-d",
        &out.display().to_string(),
        "-z",
        &z.display().to_string(),
        "-t",
        "1",
        "-e",
        &f.dir().join("expected").display().to_string(),
    ]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.ends_with(&format!("every output matches {}\n", f.dir().join("expected").display())));
    assert_eq!(files_in(&out), ["even.npy", "inner.npy"]);
    let arrays = sliceops::npz::read_npz(&z).unwrap();
    assert_eq!(arrays.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), f.outputs);

    let o = sliceops(&["bench", &model, "-i", &input, "-r", "2", "-f", "json", "-t", "1", "-p", "-n", "1"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let report: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(report["runs"], 2);
    assert_eq!(report["profile"]["nodes"].as_array().unwrap().len(), 1);

    for (cmd, extra) in [("fold", vec!["-x", "-s", "x=N,3", "-a", "N>=2"]), ("lower", vec![])] {
        let written = dir.join(format!("{cmd}.onnx"));
        let mut args = vec![cmd, &model, "-o"];
        let w = written.display().to_string();
        args.push(&w);
        args.extend(extra);
        let o = sliceops(&args);
        assert_eq!(o.code, Some(0), "{cmd}: {}", o.stderr);
        assert!(written.is_file());
    }
}

/// Runs `args` with stdout a pipe whose reading end is closed before the command writes anything.
fn closed_stdout(args: &[&str]) -> Run {
    let start = Instant::now();
    let mut child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    Run { code: status.code(), signal: status.signal(), stdout: String::new(), stderr: err, elapsed: start.elapsed() }
}

#[test]
fn a_closed_output_pipe_ends_quietly_with_status_0() {
    let model = real_model("gpt2_torch_legacy");
    let f = fixture("sym_batch_onnx_slice");
    let fixture_model = f.model().display().to_string();
    let out = scratch("cli_product", "closed-pipe");
    let out_arg = out.display().to_string();
    let input = f.input_args()[1].clone();
    for args in [
        vec!["infer", model.as_str()],
        vec!["infer", model.as_str(), "--format", "json"],
        vec!["run", &fixture_model, "--input", &input, "--output-dir", &out_arg],
        vec!["bench", &fixture_model, "--input", &input, "--runs", "1"],
        vec!["--help"],
    ] {
        let o = closed_stdout(&args);
        assert_eq!(o.code, Some(0), "{args:?}: {}", o.stderr);
        // Its warnings and notes, if any, as when stdout is read whole; no error.
        let mut whole = Command::new(BIN);
        whole.args(&args);
        let whole = run_command(whole, Limits::default());
        assert_eq!(o.stderr, whole.stderr, "{args:?}");
        assert!(!o.stderr.contains("error"), "{args:?}: {}", o.stderr);
    }
    // run wrote its files before printing its table.
    assert_eq!(files_in(&out), ["even.npy", "inner.npy"]);
    // As a user types it: the first line, the rest unwanted, every status in the pipe 0.
    let mut bash = Command::new("bash");
    bash.args(["-c", "set -o pipefail; \"$0\" infer \"$1\" | head -1", BIN, &model]);
    let o = run_command(bash, Limits::default());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(!o.stderr.contains("error"), "{}", o.stderr);
    assert!(o.stdout.starts_with("name ") && o.stdout.lines().count() == 1, "{}", o.stdout);
}

#[test]
fn input_from_an_npz_gives_every_input_by_name() {
    let f = fixture("onnx_slice_opset13_runtime");
    let model = f.model().display().to_string();
    let out = scratch("cli_product", "npz-in");
    let inputs = npz("inputs_runtime.npz");
    let o = sliceops(&["run", &model, "--input", &inputs, "--output-dir", &out.display().to_string()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    for (name, want) in f.outputs.iter().zip(f.expected()) {
        let got = sliceops::npy::read_npy(&out.join(format!("{name}.npy"))).unwrap();
        assert_same(name, &got, &want);
    }
    // bench reads it the same way.
    let o = sliceops(&["bench", &model, "-i", &inputs, "-r", "1", "-f", "json"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // An .npy given after the .npz replaces its array (a name given twice keeps its last tensor).
    let dir = scratch("cli_product", "npz-override");
    let x = sliceops::npy::read_npy(&f.dir().join("inputs/x.npy")).unwrap();
    let doubled = x.cast_to::<f32>().unwrap().to_plain_array_view::<f32>().unwrap().mapv(|v| v * 2.0);
    let path = dir.join("x2.npy");
    sliceops::npy::write_npy(&path, &doubled.clone().into()).unwrap();
    let o = sliceops(&[
        "run",
        &model,
        "-i",
        &inputs,
        "-i",
        &format!("x={}", path.display()),
        "-z",
        &dir.join("o.npz").display().to_string(),
    ]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let got = sliceops::npz::read_npz(&dir.join("o.npz")).unwrap();
    let want = f.expected()[0].cast_to::<f32>().unwrap().to_plain_array_view::<f32>().unwrap().mapv(|v| v * 2.0);
    assert_same("y doubled", &got[0].1, &want.into());
}

#[test]
fn npz_input_errors_are_one_clear_line() {
    let f = fixture("onnx_slice_opset13_runtime");
    let model = f.model().display().to_string();
    let dir = scratch("cli_product", "npz-errors");
    let text = dir.join("text.npz");
    std::fs::write(&text, "not a zip").unwrap();
    let error = |args: &[&str]| {
        let o = sliceops(args);
        assert_eq!(o.code, Some(1), "{args:?}: {}", o.stderr);
        // The fixture's own shape warning aside, one error line.
        let all = o.stderr.clone();
        let errors: Vec<&str> = all.lines().filter(|l| !l.starts_with("warning: ")).collect();
        assert_eq!(errors.len(), 1, "{all}");
        format!("{}\n", errors[0])
    };
    let e = error(&["run", &model, "--input", &text.display().to_string()]);
    assert_eq!(
        e,
        format!(
            "error: {}: not a zip archive (.npz): no end of central directory record in its last bytes\n",
            text.display()
        )
    );
    let e = error(&["run", &model, "--input", &format!("x={}", npz("inputs_runtime.npz"))]);
    assert!(e.contains("an .npz holds arrays by name: pass it alone, as --input "), "{e}");
    // An array the model has no input for: named, with the file.
    let e = error(&["run", &model, "--input", &npz("savez.npz")]);
    let prefix =
        format!("error: array 'mask' of {}: the model has no input named 'mask' (its inputs: ", npz("savez.npz"));
    assert!(e.starts_with(&prefix), "{e}");
    let e = error(&["run", &model, "--input", "missing.npz"]);
    assert!(e.starts_with("error: cannot read missing.npz"), "{e}");
    let e = error(&["run", &model, "--input", "plain"]);
    assert_eq!(e, "error: --input 'plain' is neither NAME=FILE.npy nor FILE.npz\n");
}

#[test]
fn output_npz_holds_every_output_and_nothing_else_is_written() {
    let f = fixture("ms_strided_slice_example_1");
    let dir = scratch("cli_product", "npz-out");
    let mut args = vec!["run".to_string(), f.model().display().to_string()];
    args.extend(f.input_args());
    args.extend(["--output-npz".to_string(), "outputs.npz".to_string()]);
    let mut command = Command::new(BIN);
    command.args(&args).current_dir(&dir);
    let o = run_command(command, Limits::default());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // No .npy beside it: --output-dir defaults to . only when no .npz is asked for.
    assert_eq!(files_in(&dir), ["outputs.npz"]);
    let got = sliceops::npz::read_npz(&dir.join("outputs.npz")).unwrap();
    assert_eq!(got.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), f.outputs);
    for ((name, got), want) in got.iter().zip(f.expected()) {
        assert_same(name, got, &want);
    }
}
