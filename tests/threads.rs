//! The thread budget (`Model::set_threads`, `--threads`) through the public API and the command line:
//! plans kept per budget, the same outputs whatever the budget. What tract's executor and the copy
//! kernel see while a plan runs is tested inside the crate (`src/threads.rs`). No timing here: speed
//! is measured by benches/ort_whole_models.py.

use sliceops::tract_onnx::prelude::*;
use sliceops::Model;
use std::path::{Path, PathBuf};
use std::process::Command;

fn model_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(name)
}

fn x(name: &str) -> Tensor {
    sliceops::npy::read_npy(&model_dir(name).join("inputs/x.npy")).unwrap()
}

#[test]
fn a_second_run_with_the_same_shapes_and_budget_reuses_the_plan() {
    let name = "chain_slice_strided_slice_as_strided";
    let mut m = Model::load_path(model_dir(name).join("model.onnx")).unwrap();
    m.set_threads(Some(2)).unwrap();
    let first = m.plan_for(&[x(name)]).unwrap();
    m.run(vec![x(name)]).unwrap();
    m.run(vec![x(name)]).unwrap();
    // Setting the same budget again keeps the plan: the same plan object, nothing optimized again.
    m.set_threads(Some(2)).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &m.plan_for(&[x(name)]).unwrap()));
    assert_eq!(m.plans_made(), 1);
    // Another budget is another plan.
    m.set_threads(Some(1)).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first, &m.plan_for(&[x(name)]).unwrap()));
    assert_eq!(m.plans_made(), 2);
}

#[test]
fn outputs_are_the_same_whatever_the_budget() {
    let name = "chain_slice_strided_slice_as_strided";
    let mut m = Model::load_path(model_dir(name).join("model.onnx")).unwrap();
    let want = m.run(vec![x(name)]).unwrap();
    for n in [1, 2, 4] {
        m.set_threads(Some(n)).unwrap();
        let got = m.run(vec![x(name)]).unwrap();
        assert_eq!(got, want, "{n} threads");
    }
}

#[test]
fn the_command_line_takes_threads() {
    let name = "chain_slice_strided_slice_as_strided";
    let dir = model_dir(name);
    let out = std::env::temp_dir().join(format!("sliceops-threads-{}", std::process::id()));
    let model = dir.join("model.onnx").display().to_string();
    let input = format!("x={}", dir.join("inputs/x.npy").display());
    let expect = dir.join("expected").display().to_string();
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_sliceops")).args(args).output().unwrap();
    let o = run(&[
        "run",
        &model,
        "--input",
        &input,
        "--output-dir",
        &out.display().to_string(),
        "--threads",
        "2",
        "--expect",
        &expect,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["bench", &model, "--input", &input, "--runs", "2", "--threads", "1", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["runs"], 2);
    // A bad count is a usage error, like every argument clap rejects (README: exit 2 for bad usage),
    // told in one `error:` line naming the option and the accepted range; never a panic.
    let out_dir = out.display().to_string();
    for bad in ["0", "1025", "99999999999", "x"] {
        for command in ["run", "bench"] {
            let mut args = vec![command, model.as_str(), "--input", input.as_str(), "--threads", bad];
            if command == "run" {
                args.extend(["--output-dir", out_dir.as_str()]);
            }
            let o = run(&args);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{command} --threads {bad}: {stderr}");
            assert!(stderr.starts_with(&format!("error: invalid value '{bad}' for '--threads <N>'")), "{stderr}");
            if bad != "x" {
                assert!(stderr.contains("1..=1024"), "{stderr}");
            }
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
