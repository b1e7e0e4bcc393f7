//! The command line, as users call it: every subcommand on real fixtures, and its error paths.

mod common;

use common::cli::{scratch, sliceops, Run};
use common::fixtures::{assert_same, escape, fixtures, Fixture};
use std::path::Path;

fn fixture(name: &str) -> Fixture {
    fixtures().into_iter().find(|f| f.name == name).unwrap()
}

fn run_fixture(model: &Path, f: &Fixture, out: &Path) -> Run {
    let mut args = vec!["run".to_string(), model.display().to_string()];
    args.extend(f.input_args());
    args.extend(["--output-dir".to_string(), out.display().to_string()]);
    sliceops(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn assert_outputs(f: &Fixture, out: &Path) {
    for (name, want) in f.outputs.iter().zip(f.expected()) {
        let got = sliceops::npy::read_npy(&out.join(format!("{}.npy", escape(name)))).unwrap();
        assert_same(&format!("{}: {name}", f.name), &got, &want);
    }
}

#[test]
fn run_writes_escaped_npy_files_and_prints_a_table() {
    let f = fixture("ms_strided_slice_example_1");
    let out = scratch("cli", "run");
    let o = run_fixture(&f.model(), &f, &out);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "name                        dtype    shape\n1-Default/StridedSlice-op0  float32  [2, 1, 1]\n"
    );
    assert!(out.join("1-Default%2FStridedSlice-op0.npy").exists());
    assert_outputs(&f, &out);
}

#[test]
fn run_every_dtype_through_npy() {
    for f in fixtures().into_iter().filter(|f| f.name.starts_with("ss_dtype_")) {
        let out = scratch("cli", &f.name);
        let o = run_fixture(&f.model(), &f, &out);
        assert_eq!(o.code, Some(0), "{}: {}", f.name, o.stderr);
        assert_outputs(&f, &out);
    }
}

#[test]
fn run_without_inputs_says_which_are_needed() {
    let o = sliceops(&["run", &fixture("sym_batch_onnx_slice").model().display().to_string()]);
    assert_eq!(o.code, Some(1));
    assert_eq!(o.stderr, "error: the model needs inputs: x (float32 [N,3]); pass each as --input NAME=FILE.npy, or in an --input FILE.npz\n");
}

#[test]
fn run_rejects_an_unknown_input_name_and_a_wrong_dtype() {
    let f = fixture("ss_dtype_int8");
    let model = f.model().display().to_string();
    let o = sliceops(&["run", &model, "--input", "nope=x.npy"]);
    assert_eq!(o.code, Some(1));
    assert_eq!(o.stderr, "error: the model has no input named 'nope' (its inputs: x)\n");
    let other = fixture("ss_dtype_float32");
    let wrong = other.dir().join("inputs/x.npy").display().to_string();
    let o = sliceops(&["run", &model, "--input", &format!("x={wrong}")]);
    assert_eq!(o.code, Some(1));
    assert_eq!(o.stderr, "error: input 'x' is float32 but the model expects int8\n");
}

#[test]
fn infer_json_has_exact_symbolic_dims() {
    let model = fixture("sym_batch_onnx_slice").model().display().to_string();
    let o = sliceops(&["infer", &model, "--assume", "N>=2", "--format", "json"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let json: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "values": [
                {"name": "x", "dtype": "float32", "shape": ["N", 3], "dims": [{"sym": "N"}, 3], "producer": null},
                {
                    "name": "inner", "dtype": "float32", "shape": ["N-2", 3],
                    "dims": [{"add": [{"sym": "N"}, -2]}, 3],
                    "producer": {"node": "slice_inner", "op": "Slice"},
                },
                {
                    "name": "even", "dtype": "float32", "shape": ["(N+1)/2", 3],
                    "dims": [{"div": [{"add": [{"sym": "N"}, 1]}, 2]}, 3],
                    "producer": {"node": "slice_even", "op": "Slice"},
                },
            ],
            "symbols": [
                {"name": "N", "origin": {"kind": "input", "input": "x", "axis": 0, "declared": "N"}, "min": 2, "max": 1000000000, "at_most": null},
            ],
            "requirements": [],
            "assumptions": {
                "given": ["N>=2"],
                "default": "every symbol S is a dim: 0 <= S <= 1000000000 (the upper bound unless an assumption bounds S from above)",
            },
            "fallbacks": [],
            "cases": [],
        })
    );
}

#[test]
fn infer_with_an_input_shape_gives_concrete_dims() {
    let model = fixture("sym_batch_onnx_slice").model().display().to_string();
    let o = sliceops(&["infer", &model, "--input-shape", "x=7,3"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "name   dtype    shape\nx      float32  [7, 3]\ninner  float32  [5, 3]\neven   float32  [4, 3]\n"
    );
}

#[test]
fn fold_and_lower_write_models_that_still_run() {
    for name in
        ["const_fold_strided_slice_initializer", "chain_slice_strided_slice_as_strided", "paddle_slice_tensor_starts"]
    {
        let f = fixture(name);
        for command in ["fold", "lower"] {
            let dir = scratch("cli", &format!("{command}-{name}"));
            let written = dir.join("out.onnx");
            let o = sliceops(&[command, &f.model().display().to_string(), "-o", &written.display().to_string()]);
            assert_eq!(o.code, Some(0), "{command} {name}: {}", o.stderr);
            let o = run_fixture(&written, &f, &dir);
            assert_eq!(o.code, Some(0), "{command} {name} then run: {}", o.stderr);
            assert_outputs(&f, &dir);
        }
    }
}

#[test]
fn lower_refuses_what_standard_onnx_cannot_express() {
    // torch's as_strided with a runtime size: its output shape is data, which no standard op gives.
    use common::onnx_build::{Builder, D};
    use tract_onnx::pb::tensor_proto::DataType;
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(3), D::N(3)])
        .input("size", DataType::Int64, &[D::N(2)])
        .init_i64("stride", &[2, 3])
        .aten_as_strided("aten", &["x", "size", "stride"], "y")
        .output("y")
        .bytes();
    let dir = scratch("cli", "refuse");
    let (model, out) = (dir.join("model.onnx"), dir.join("out.onnx"));
    std::fs::write(&model, bytes).unwrap();
    let o = sliceops(&["lower", &model.display().to_string(), "-o", &out.display().to_string()]);
    assert_eq!(o.code, Some(1));
    assert_eq!(
        o.stderr.trim_end(),
        "error: node 'aten' (ATen): size and stride must be constants to lower as_strided",
        "{}",
        o.stderr
    );
    assert!(!out.exists());
}

#[test]
fn bench_prints_json_timings() {
    let f = fixture("ms_doc_5x6x7");
    let mut args = vec!["bench".to_string(), f.model().display().to_string(), "--runs".into(), "3".into()];
    args.extend(f.input_args());
    args.extend(["--format".to_string(), "json".to_string()]);
    let o = sliceops(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let json: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(json["runs"], 3);
    let (median, min) = (json["median_s"].as_f64().unwrap(), json["min_s"].as_f64().unwrap());
    assert!(min > 0.0 && min <= median, "{json}");
    // The phases before the timed runs: loading, making the plan, the warm-up run.
    for phase in ["load_s", "plan_s", "first_run_s"] {
        assert!(json[phase].as_f64().is_some_and(|s| s > 0.0), "{phase}: {json}");
    }
}

#[test]
fn every_command_has_help() {
    for command in ["run", "infer", "fold", "lower", "bench"] {
        let o = sliceops(&[command, "--help"]);
        assert_eq!(o.code, Some(0));
        assert!(o.stdout.starts_with("Usage: sliceops") || o.stdout.contains("Usage: sliceops"), "{command}");
    }
    let o = sliceops(&["--help"]);
    assert!(o.stdout.contains("infer"));
}

#[test]
fn bad_usage_exits_2_and_errors_exit_1() {
    assert_eq!(sliceops(&["frobnicate"]).code, Some(2));
    assert_eq!(sliceops(&["fold", "x.onnx"]).code, Some(2));
    let o = sliceops(&["run", "/nonexistent/model.onnx"]);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.starts_with("error: cannot read /nonexistent/model.onnx"), "{}", o.stderr);
}

#[test]
fn declared_shapes_that_contradict_inference_are_warnings() {
    // The dynamo exporter declares its own symbols for outputs the input makes concrete.
    let f = fixture("torch_slice_dynamo");
    let out = scratch("cli", "warn");
    let o = run_fixture(&f.model(), &f, &out);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_outputs(&f, &out);
}

#[test]
fn lower_prints_what_it_rewrote() {
    let f = fixture("ss_shrink_ellipsis_new_axis_reverse");
    let dir = scratch("cli", "lower-report");
    let written = dir.join("out.onnx");
    let o = sliceops(&["lower", &f.model().display().to_string(), "-o", &written.display().to_string()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let stdout = &o.stdout;
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["nodes: 1 -> 3", "  StridedSlice rewritten: 1", "every new value has a type and shape"]
    );
    // Lowering its own output again finds nothing to rewrite.
    let again = dir.join("again.onnx");
    let o = sliceops(&["lower", &written.display().to_string(), "-o", &again.display().to_string()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.starts_with("nothing to rewrite"), "{}", o.stdout);
}

#[test]
fn unsupported_operators_are_named_with_their_opset_in_one_line() {
    use common::onnx_build::{Builder, D};
    use tract_onnx::pb::tensor_proto::DataType;
    // A standard operator nothing here implements, and one of a domain nobody registered.
    let cases = [
        ("RegexFullMatch", "", "operator RegexFullMatch of opset 20 is not supported"),
        ("Frobnicate", "com.example", "operator Frobnicate of domain com.example (version 3) is not supported"),
    ];
    for (op, domain, why) in cases {
        let bytes = Builder::new(20)
            .import("com.example", 3)
            .input("x", DataType::Uint8, &[D::N(4)])
            .node("Neg", "", "first", &["x"], &["a"], vec![])
            .node(op, domain, "op", &["a"], &["b"], vec![])
            .node("Identity", "", "last", &["b"], &["y"], vec![])
            .output("y")
            .bytes();
        let dir = scratch("cli", &format!("unsupported-{op}"));
        let (model, x) = (dir.join("model.onnx"), dir.join("x.npy"));
        std::fs::write(&model, bytes).unwrap();
        let four = tract_onnx::prelude::Tensor::from_shape(&[4], &[1u8, 2, 3, 4]).unwrap();
        sliceops::npy::write_npy(&x, &four).unwrap();
        let (model, x) = (model.display().to_string(), format!("x={}", x.display()));
        let o = sliceops(&["run", &model, "--input", &x, "--output-dir", &dir.join("out").display().to_string()]);
        assert_eq!(o.code, Some(1));
        assert_eq!(o.stderr, format!("error: value 'b' cannot be computed: node 'op' ({op}): {why}\n"));
        // infer still types what it can, and says why the rest is unknown.
        let o = sliceops(&["infer", &model]);
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        let lines: Vec<Vec<String>> =
            o.stdout.lines().map(|l| l.split_whitespace().map(String::from).collect()).collect();
        assert!(lines.contains(&vec!["a".into(), "uint8".into(), "[4]".into()]), "{}", o.stdout);
        assert!(lines.contains(&vec!["y".into(), "?".into(), "?".into()]), "{}", o.stdout);
        assert_eq!(o.stderr, format!("note: node 'op' ({op}): its outputs are unknown: {why}\n"));
    }
}
