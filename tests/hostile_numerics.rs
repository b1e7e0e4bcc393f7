//! Hostile inputs, part 3 (issue 30), the numeric points: `--expect` exact on non-finite values,
//! bounded `bench --runs`, LogSoftmax over wide rows, LayerNormalization over constant rows, Gemm
//! with `alpha = 0`. Every expected value is computed here from the operator's definition (or is
//! one the definition gives exactly); NaN and infinities are compared by identity.

mod common;

use common::cli::{scratch, sliceops};
use common::onnx_build::{Builder, A, D};
use sliceops::Model;
use std::path::{Path, PathBuf};
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

fn dir(test: &str) -> PathBuf {
    scratch("hostile_numerics", test)
}

fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    tract_ndarray::ArrayD::from_shape_vec(shape, v.to_vec()).unwrap().into_tensor()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
}

fn run(bytes: &[u8], inputs: Vec<Tensor>) -> Vec<Tensor> {
    let m = Model::load_bytes(bytes).unwrap();
    m.run(inputs).unwrap().into_iter().map(|(_, t)| t).collect()
}

/// `got` equals `want` bit for bit, except that any NaN matches any NaN.
fn assert_identical(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
        assert!(same, "{what}: element {i} is {g:e}, the definition gives {w:e}\n got {got:?}\nwant {want:?}");
    }
}

fn write_npy(path: &Path, t: &Tensor) {
    let mut bytes = vec![];
    sliceops::npy::write_npy_to(&mut bytes, t).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn arg(p: &Path) -> String {
    p.display().to_string()
}

/// `y = Identity(x)` over float [N].
fn identity_model() -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &[D::S("N")])
        .node("Identity", "", "id", &["x"], &["y"], vec![])
        .output("y")
        .bytes()
}

// ------------------------------------------------------------------------------------------------
// 6. --expect: non-finite values by identity.

#[test]
fn expect_compares_infinities_and_nan_by_identity() {
    let d = dir("expect_compares_infinities_and_nan_by_identity");
    let model = d.join("model.onnx");
    std::fs::write(&model, identity_model()).unwrap();
    std::fs::create_dir_all(d.join("want")).unwrap();
    let check = |x: &[f32], want: &[f32]| {
        write_npy(&d.join("x.npy"), &f32s(&[x.len()], x));
        write_npy(&d.join("want").join("y.npy"), &f32s(&[want.len()], want));
        let input = format!("x={}", arg(&d.join("x.npy")));
        let out = arg(&d.join("out"));
        sliceops(&["run", &arg(&model), "--input", &input, "--output-dir", &out, "--expect", &arg(&d.join("want"))])
    };
    let inf = f32::INFINITY;
    // The case: an infinite tolerance let anything match an expected infinity.
    let e = check(&[0.0, 5.0, -inf, 1.0], &[inf, inf, inf, inf]);
    assert!(e.error().contains("y: element 0 is 0 but expected inf"), "{}", e.error());
    let e = check(&[1.0, -inf], &[1.0, inf]);
    assert!(e.error().contains("y: element 1 is -inf but expected inf"), "{}", e.error());
    let e = check(&[1.0, f32::NAN], &[1.0, inf]);
    assert!(e.error().contains("y: element 1 is NaN but expected inf"), "{}", e.error());
    let e = check(&[1.0, f32::MAX], &[1.0, inf]);
    assert!(
        e.error().contains("y: element 1 is 340282346638528860000000000000000000000 but expected inf"),
        "{}",
        e.error()
    );
    let e = check(&[inf, 2.0], &[f32::NAN, 2.0]);
    assert!(e.error().contains("y: element 0 is inf but expected NaN"), "{}", e.error());
    // Identical non-finite values match, finite ones within the tolerance as before.
    let ok = check(&[inf, -inf, f32::NAN, 1.0, 1000.05], &[inf, -inf, f32::NAN, 1.000001, 1000.0]);
    assert!(ok.ok().stdout.contains("every output matches"), "{}", ok.stdout);
    let e = check(&[1000.2], &[1000.0]);
    assert!(e.error().contains("y: element 0 is 1000.2000122070313 but expected 1000"), "{}", e.error());
}

// ------------------------------------------------------------------------------------------------
// 7. bench --runs is bounded.

#[test]
fn bench_runs_are_bounded_before_anything_is_allocated() {
    let d = dir("bench_runs_are_bounded_before_anything_is_allocated");
    let model = d.join("model.onnx");
    std::fs::write(&model, identity_model()).unwrap();
    write_npy(&d.join("x.npy"), &f32s(&[3], &[1.0, 2.0, 3.0]));
    let input = format!("x={}", arg(&d.join("x.npy")));
    for runs in ["4294967295", "500000000", "1000001", "0"] {
        let r = sliceops(&["bench", &arg(&model), "--input", &input, "--runs", runs]);
        assert_eq!(r.code, Some(2), "--runs {runs}\n{r:#?}");
        assert!(r.stderr.contains(&format!("invalid value '{runs}' for '--runs <N>'")), "{}", r.stderr);
        assert!(r.stderr.contains("1..=1000000"), "{}", r.stderr);
    }
    let r = sliceops(&["bench", &arg(&model), "--input", &input, "--runs", "3", "--format", "json"]);
    assert!(r.ok().stdout.contains("\"runs\":3"), "{}", r.stdout);
}

// ------------------------------------------------------------------------------------------------
// 8. LogSoftmax: x - max - ln(sum(exp(x - max))), never the log of an underflowed probability.

fn log_softmax_model(opset: i64, axis: Option<i64>, dims: &[i64]) -> Vec<u8> {
    let dims: Vec<D> = dims.iter().map(|&d| D::N(d)).collect();
    let attrs = axis.map(|a| vec![("axis", A::I(a))]).unwrap_or_default();
    Builder::new(opset)
        .input("x", DataType::Float, &dims)
        .node("LogSoftmax", "", "lsm", &["x"], &["y"], attrs)
        .output("y")
        .bytes()
}

/// The definition over `[outer, n, inner]`, in f64, rounded once.
fn log_softmax_reference(x: &[f32], n: usize, inner: usize) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    for (b, block) in x.chunks(n * inner).enumerate() {
        for j in 0..inner {
            let lane: Vec<f64> = (0..n).map(|k| f64::from(block[k * inner + j])).collect();
            let max = lane.iter().copied().fold(f64::NEG_INFINITY, |m, v| if v > m || v.is_nan() { v } else { m });
            let sum: f64 = lane.iter().map(|v| (v - max).exp()).sum();
            for (k, v) in lane.iter().enumerate() {
                out[b * n * inner + k * inner + j] = (v - max - sum.ln()) as f32;
            }
        }
    }
    out
}

#[test]
fn log_softmax_of_a_row_wider_than_the_exponent_range_is_finite() {
    // [0, -200]: the probability of -200 underflows to 0; its log-probability is -200.
    let y = run(&log_softmax_model(13, None, &[1, 2]), vec![f32s(&[1, 2], &[0.0, -200.0])]);
    assert_identical("[0, -200]", &values(&y[0]), &[0.0, -200.0]);
    let y =
        run(&log_softmax_model(13, None, &[2, 3]), vec![f32s(&[2, 3], &[10.0, -150.0, -1000.0, 3.0e4, 0.0, -3.0e4])]);
    assert_identical("wide rows", &values(&y[0]), &[0.0, -160.0, -1010.0, 0.0, -3.0e4, -6.0e4]);
}

#[test]
fn log_softmax_follows_the_definition_on_every_axis_and_opset() {
    let x: Vec<f32> = (0..24).map(|i| ((i * 37 % 23) as f32 - 11.0) * 9.5).collect();
    // (opset, axis, n, inner) over [2, 3, 4]: opset 13 reduces one axis, opset 11 every axis from it.
    for (opset, axis, n, inner) in [(13, -1, 4, 1), (13, 1, 3, 4), (13, 0, 2, 12), (11, 1, 12, 1), (11, 0, 24, 1)] {
        let y = run(&log_softmax_model(opset, Some(axis), &[2, 3, 4]), vec![f32s(&[2, 3, 4], &x)]);
        let want = log_softmax_reference(&x, n, inner);
        for (i, (g, w)) in values(&y[0]).iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "opset {opset} axis {axis}: element {i} {g} vs {w}");
        }
    }
}

#[test]
fn log_softmax_axis_out_of_range_is_an_error_naming_the_node() {
    let m = Model::load_bytes(&log_softmax_model(13, Some(2), &[2, 3])).unwrap();
    let e = format!("{:#}", m.run(vec![f32s(&[2, 3], &[0.0; 6])]).unwrap_err());
    assert!(e.contains("node 'lsm' (LogSoftmax)") && e.contains("axis is 2 for an input of rank 2"), "{e}");
}

// ------------------------------------------------------------------------------------------------
// 10. LayerNormalization over constant rows.

/// LayerNormalization over the last axis of float [2, 7], scale and bias initializers or inputs.
fn layer_norm_model(eps: f32, affine_inputs: bool) -> Vec<u8> {
    let b = Builder::new(17).input("x", DataType::Float, &[D::N(2), D::N(7)]);
    let b = if affine_inputs {
        b.input("scale", DataType::Float, &[D::N(7)]).input("bias", DataType::Float, &[D::N(7)])
    } else {
        b.init_f32("scale", &[7], &[1.0; 7]).init_f32("bias", &[7], &[0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    };
    b.node("LayerNormalization", "", "ln", &["x", "scale", "bias"], &["y"], vec![("epsilon", A::F(eps))])
        .output("y")
        .bytes()
}

#[test]
fn layer_norm_of_constant_rows_gives_the_bias_or_nan_without_epsilon() {
    for affine_inputs in [false, true] {
        let inputs = |x: Vec<f32>| {
            let mut v = vec![f32s(&[2, 7], &x)];
            if affine_inputs {
                v.push(f32s(&[7], &[1.0; 7]));
                v.push(f32s(&[7], &[0.5; 7]));
            }
            v
        };
        // Rows of 1e20: the normalized row is 0, the output the bias.
        let y = run(&layer_norm_model(1e-5, affine_inputs), inputs(vec![1e20; 14]));
        assert_identical(&format!("1e20 rows, affine inputs {affine_inputs}"), &values(&y[0]), &[0.5; 14]);
        let mut mixed = vec![1e20f32; 7];
        mixed.extend([-3.5e7f32; 7]);
        let y = run(&layer_norm_model(1e-5, affine_inputs), inputs(mixed));
        assert_identical(&format!("mixed rows, affine inputs {affine_inputs}"), &values(&y[0]), &[0.5; 14]);
        // eps 0 over constant rows: 0 / 0.
        let y = run(&layer_norm_model(0.0, affine_inputs), inputs(vec![3.0; 14]));
        assert_identical(&format!("eps 0, affine inputs {affine_inputs}"), &values(&y[0]), &[f32::NAN; 14]);
    }
}

// ------------------------------------------------------------------------------------------------
// 11. Gemm with alpha = 0: 0 * AB, NaN where AB is infinite.

fn gemm_model(alpha: f32, beta: f32) -> Vec<u8> {
    Builder::new(13)
        .input("a", DataType::Float, &[D::N(2), D::N(2)])
        .input("b", DataType::Float, &[D::N(2), D::N(2)])
        .input("c", DataType::Float, &[D::N(2), D::N(2)])
        .node("Gemm", "", "gemm", &["a", "b", "c"], &["y"], vec![("alpha", A::F(alpha)), ("beta", A::F(beta))])
        .output("y")
        .bytes()
}

#[test]
fn gemm_with_alpha_zero_keeps_the_nan_of_an_infinite_product() {
    let inf = f32::INFINITY;
    let a = f32s(&[2, 2], &[inf, 1.0, 2.0, 3.0]);
    let b = f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let c = f32s(&[2, 2], &[5.0, inf, 7.0, 8.0]);
    let nan = f32::NAN;
    // onnx's reference: np.dot(a, b) * alpha, plus c * beta unless beta is 0 (then C is not read).
    for (alpha, beta, want) in [
        (0.0, 1.0, [nan, nan, 7.0, 8.0]),
        (1.0, 0.0, [inf, inf, 11.0, 16.0]),
        (0.0, 0.0, [nan, nan, 0.0, 0.0]),
        (0.0, 2.0, [nan, nan, 14.0, 16.0]),
    ] {
        let y = run(&gemm_model(alpha, beta), vec![a.clone(), b.clone(), c.clone()]);
        assert_identical(&format!("alpha {alpha} beta {beta}"), &values(&y[0]), &want);
    }
    // A negative product times 0 is -0.0, as IEEE multiplication gives.
    let y = run(&gemm_model(0.0, 0.0), vec![f32s(&[2, 2], &[-1.0, 0.0, 1.0, 0.0]), b.clone(), c.clone()]);
    assert_identical("signed zeros", &values(&y[0]), &[-0.0, -0.0, 0.0, 0.0]);
}

// ------------------------------------------------------------------------------------------------
// 5. Writes: only a regular file or a new name; a symlink is replaced as a name.

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // Safety: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).unwrap().file_type().is_fifo()
}

#[test]
fn fold_and_lower_refuse_fifos_and_devices_by_name() {
    let d = dir("fold_and_lower_refuse_fifos_and_devices_by_name");
    let model = d.join("model.onnx");
    std::fs::write(&model, identity_model()).unwrap();
    let fifo = d.join("out.onnx");
    mkfifo(&fifo);
    for command in ["fold", "lower"] {
        let r = sliceops(&[command, &arg(&model), "-o", &arg(&fifo)]);
        assert_eq!(
            r.error(),
            format!("error: cannot write {}: it is a named pipe (FIFO), not a regular file", fifo.display()),
            "{command}"
        );
        assert!(is_fifo(&fifo), "{command} replaced the FIFO");
    }
    // /dev/null is refused before anything is read or written: it stays a character device.
    for command in ["fold", "lower"] {
        let r = sliceops(&[command, &arg(&model), "-o", "/dev/null"]);
        assert_eq!(r.error(), "error: cannot write /dev/null: it is a character device, not a regular file");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata("/dev/null").unwrap().file_type().is_char_device());
    let mut names = common::cli::files_in(&d);
    names.sort();
    assert_eq!(names, ["model.onnx", "out.onnx"]);
}

#[test]
fn run_refuses_a_fifo_output_and_replaces_a_symlink_as_a_name() {
    let d = dir("run_refuses_a_fifo_output_and_replaces_a_symlink_as_a_name");
    let model = d.join("model.onnx");
    std::fs::write(&model, identity_model()).unwrap();
    write_npy(&d.join("x.npy"), &f32s(&[2], &[1.5, -2.0]));
    let input = format!("x={}", arg(&d.join("x.npy")));
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let target = out.join("y.npy");
    mkfifo(&target);
    let r = sliceops(&["run", &arg(&model), "--input", &input, "--output-dir", &arg(&out)]);
    assert_eq!(
        r.error(),
        format!("error: cannot write {}: it is a named pipe (FIFO), not a regular file", target.display())
    );
    assert!(is_fifo(&target));
    assert_eq!(common::cli::files_in(&out), ["y.npy"]);
    // A symlink to a file outside the folder: the link is replaced, the file it named untouched.
    std::fs::remove_file(&target).unwrap();
    let outside = d.join("outside.bin");
    std::fs::write(&outside, b"keep me").unwrap();
    std::os::unix::fs::symlink(&outside, &target).unwrap();
    sliceops(&["run", &arg(&model), "--input", &input, "--output-dir", &arg(&out)]).ok();
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
    assert!(std::fs::symlink_metadata(&target).unwrap().file_type().is_file());
    assert_eq!(values(&sliceops::npy::read_npy(&target).unwrap()), [1.5, -2.0]);
    assert_eq!(common::cli::files_in(&out), ["y.npy"]);
}

// ------------------------------------------------------------------------------------------------
// 13. Cancellable runs.

/// A Loop with no trip count and a condition that stays true, its body adding 1 to a float [64]
/// and squaring a [32, 32] matrix: it would run to the iteration bound (millions of iterations).
fn endless_loop() -> Vec<u8> {
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("v", DataType::Float, &[D::N(32), D::N(32)])
        .init_f32("half", &[], &[0.5])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("MatMul", "", "square", &["v", "v"], &["sq"], vec![])
        .node("Mul", "", "scale", &["sq", "half"], &["v_out"], vec![])
        .output("c_out")
        .output("v_out")
        .graph("body");
    Builder::new(13)
        .input("v", DataType::Float, &[D::N(32), D::N(32)])
        .init("yes", DataType::Bool, &[], vec![1])
        .node("Loop", "", "loop", &["", "yes", "v"], &["y"], vec![("body", A::G(body))])
        .output("y")
        .bytes()
}

#[test]
fn a_run_stops_at_its_timeout_between_loop_iterations() {
    use sliceops::{Cancel, Cancelled, Reason};
    use std::time::{Duration, Instant};
    let m = Model::load_bytes(&endless_loop()).unwrap();
    let v = f32s(&[32, 32], &[0.03; 1024]);
    let timeout = Duration::from_millis(200);
    let start = Instant::now();
    let e = m.run_with(vec![v.clone()], &Cancel::with_timeout(timeout)).unwrap_err();
    let took = start.elapsed();
    let c = Cancelled::find(&e).unwrap_or_else(|| panic!("not a cancellation: {e:#}"));
    assert_eq!(c.reason, Reason::Timeout(timeout));
    assert!(c.after >= timeout && took < Duration::from_secs(2), "stopped after {:?}, took {took:?}", c.after);
    // From another thread, by the handle.
    let cancel = Cancel::new();
    let stopper = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            cancel.cancel();
        })
    };
    let e = m.run_with(vec![v.clone()], &cancel).unwrap_err();
    stopper.join().unwrap();
    assert_eq!(Cancelled::find(&e).map(|c| c.reason.clone()), Some(Reason::Requested), "{e:#}");
    // A handle not cancelled and a timeout not reached change nothing.
    let finite = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2)])
        .node("Relu", "", "relu", &["x"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&finite).unwrap();
    let y = m.run_with(vec![f32s(&[2], &[-1.0, 2.0])], &Cancel::with_timeout(Duration::from_secs(60))).unwrap();
    assert_identical("relu", &values(&y[0].1), &[0.0, 2.0]);
}

#[test]
fn run_timeout_on_the_command_line_is_one_error_line() {
    let d = dir("run_timeout_on_the_command_line_is_one_error_line");
    let model = d.join("model.onnx");
    std::fs::write(&model, endless_loop()).unwrap();
    write_npy(&d.join("v.npy"), &f32s(&[32, 32], &[0.03; 1024]));
    let input = format!("v={}", arg(&d.join("v.npy")));
    let out = d.join("out");
    let r = sliceops(&["run", &arg(&model), "--input", &input, "--output-dir", &arg(&out), "--timeout", "0.3"]);
    assert!(r.elapsed < std::time::Duration::from_secs(2), "took {:?}", r.elapsed);
    assert_eq!(r.error(), "error: run cancelled after 0.3 s (--timeout)");
    assert!(!out.exists(), "nothing written");
    for bad in ["0", "-1", "nan", "inf", "1e9", "soon"] {
        let r = sliceops(&["run", &arg(&model), "--input", &input, &format!("--timeout={bad}")]);
        assert_eq!(r.code, Some(2), "--timeout {bad}\n{r:#?}");
        assert!(r.stderr.contains("--timeout <SECONDS>"), "{}", r.stderr);
    }
}

#[test]
fn bench_timeout_stops_the_whole_bench_with_one_error_line() {
    let d = dir("bench_timeout_stops_the_whole_bench_with_one_error_line");
    let model = d.join("model.onnx");
    std::fs::write(&model, endless_loop()).unwrap();
    write_npy(&d.join("v.npy"), &f32s(&[32, 32], &[0.03; 1024]));
    let input = format!("v={}", arg(&d.join("v.npy")));
    // One endless run: stopped inside it (the warm-up), between Loop iterations.
    for args in [vec!["--timeout", "0.3"], vec!["-T", "0.3", "--profile"], vec!["-T", "0.3", "--format", "json"]] {
        let mut all = vec!["bench", model.to_str().unwrap(), "--input", &input];
        all.extend(args.iter().copied());
        let r = sliceops(&all);
        assert!(r.elapsed < std::time::Duration::from_secs(3), "{args:?} took {:?}", r.elapsed);
        assert_eq!(r.error(), "error: bench cancelled after 0.3 s (--timeout)", "{args:?}");
        assert_eq!(r.stdout, "", "{args:?}: nothing printed");
    }
    // Many short runs past the deadline together: stopped between runs.
    let short = d.join("identity.onnx");
    std::fs::write(&short, identity_model()).unwrap();
    write_npy(&d.join("x.npy"), &f32s(&[1 << 16], &vec![1.5; 1 << 16]));
    let x = format!("x={}", arg(&d.join("x.npy")));
    let r = sliceops(&["bench", &arg(&short), "--input", &x, "--runs", "1000000", "--timeout", "0.2"]);
    assert!(r.elapsed < std::time::Duration::from_secs(3), "took {:?}", r.elapsed);
    assert_eq!(r.error(), "error: bench cancelled after 0.2 s (--timeout)");
    // A deadline not reached changes nothing: the usual report.
    let r = sliceops(&["bench", &arg(&short), "--input", &x, "--runs", "3", "--timeout", "60", "--format", "json"]);
    r.ok();
    let report: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(report["runs"], 3);
    for bad in ["0", "-1", "nan", "1e9"] {
        let r = sliceops(&["bench", &arg(&short), "--input", &x, &format!("--timeout={bad}")]);
        assert_eq!(r.code, Some(2), "--timeout {bad}\n{r:#?}");
        assert!(r.stderr.contains("--timeout <SECONDS>"), "{}", r.stderr);
    }
}

// ------------------------------------------------------------------------------------------------
// 9 and the property test: NaN, infinities, signed zeros, huge and tiny values through the float ops
// touched here, against their definitions (onnx's reference: numpy's maximum and minimum keep NaN).

/// `y = op(x)` over float [N]: one node, its constants as initializers.
fn unary_model(op: &str) -> Vec<u8> {
    let b = Builder::new(13).input("x", DataType::Float, &[D::S("N")]).init_f32("zero", &[], &[0.0]);
    let b = match op {
        "Relu" | "Sigmoid" => b.node(op, "", "op", &["x"], &["y"], vec![]),
        "HardSigmoid" => b.node(op, "", "op", &["x"], &["y"], vec![]),
        "Clip" => b.init_f32("six", &[], &[6.0]).node("Clip", "", "op", &["x", "zero", "six"], &["y"], vec![]),
        "Max0" => b.node("Max", "", "op", &["x", "zero"], &["y"], vec![]),
        "Min0" => b.node("Min", "", "op", &["x", "zero"], &["y"], vec![]),
        "LogSoftmax" => b.node(op, "", "op", &["x"], &["y"], vec![]),
        other => panic!("no model for {other}"),
    };
    b.output("y").bytes()
}

/// numpy's maximum and minimum: NaN if either is, else the first when they are equal.
fn np_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

fn np_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

/// The definition of `op` over `x`, as onnx's reference computes it (float32 arithmetic where it
/// uses it); `tolerance` is the absolute error allowed on finite results (0: exact).
fn unary_reference(op: &str, x: &[f32]) -> (Vec<f32>, f32) {
    match op {
        "Relu" | "Max0" => (x.iter().map(|&v| np_max(v, 0.0)).collect(), 0.0),
        "Min0" => (x.iter().map(|&v| np_min(v, 0.0)).collect(), 0.0),
        "Clip" => (x.iter().map(|&v| np_min(np_max(v, 0.0), 6.0)).collect(), 0.0),
        "HardSigmoid" => (x.iter().map(|&v| np_max(0.0, np_min(1.0, v * 0.2 + 0.5))).collect(), 0.0),
        // tract's sigmoid is a rational approximation: within 1e-6 of the exact value.
        "Sigmoid" => (x.iter().map(|&v| (1.0 / (1.0 + (-f64::from(v)).exp())) as f32).collect(), 1e-6),
        "LogSoftmax" => (log_softmax_reference(x, x.len(), 1), 0.0),
        other => panic!("no reference for {other}"),
    }
}

fn special_value() -> impl proptest::strategy::Strategy<Value = f32> {
    use proptest::prelude::*;
    prop_oneof![
        Just(f32::NAN),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::MAX),
        Just(-f32::MAX),
        Just(f32::MIN_POSITIVE),
        Just(1e-45f32),
        Just(-1e-45f32),
        Just(1e30f32),
        Just(-1e30f32),
        -100.0f32..100.0,
        -1e6f32..1e6,
    ]
}

/// Checks `got` against the reference: NaN where it has NaN, the same infinity where it has one,
/// finite values within `tol` (bit for bit, signed zeros included, when `tol` is 0).
fn check_against(what: &str, got: &[f32], want: &[f32], tol: f32, rel: f32) -> Result<(), String> {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() || w.is_infinite() || (tol == 0.0 && rel == 0.0) {
            (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits()
        } else {
            g.is_finite() && (g - w).abs() <= tol + rel * w.abs()
        };
        if !ok {
            return Err(format!("{what}: element {i} is {g:e}, the definition gives {w:e}"));
        }
    }
    Ok(())
}

#[test]
fn nan_propagates_through_relu_clip_max_min_hard_sigmoid_and_sigmoid() {
    let nan = f32::NAN;
    let x = [nan, -1.0, 2.0, 7.0, nan];
    for (op, want) in [
        ("Relu", [nan, 0.0, 2.0, 7.0, nan]),
        ("Clip", [nan, 0.0, 2.0, 6.0, nan]),
        ("Max0", [nan, 0.0, 2.0, 7.0, nan]),
        ("Min0", [nan, -1.0, 0.0, 0.0, nan]),
        ("HardSigmoid", [nan, 0.3, 0.9, 1.0, nan]),
    ] {
        let y = run(&unary_model(op), vec![f32s(&[5], &x)]);
        assert_identical(op, &values(&y[0]), &want);
        // The reference function the property test uses gives the same values.
        assert_identical(&format!("{op} reference"), &unary_reference(op, &x).0, &want);
    }
    let y = run(&unary_model("Sigmoid"), vec![f32s(&[3], &[nan, 0.0, nan])]);
    let y = values(&y[0]);
    assert!(y[0].is_nan() && y[2].is_nan() && y[1] == 0.5, "{y:?}");
    // More than one block of the kernels, NaN at the end.
    let mut long = vec![-3.0f32; 2500];
    long[2499] = nan;
    long[1024] = nan;
    for op in ["Relu", "Clip", "Sigmoid", "HardSigmoid"] {
        let y = values(&run(&unary_model(op), vec![f32s(&[2500], &long)])[0]);
        assert!(y[2499].is_nan() && y[1024].is_nan() && !y[1023].is_nan() && !y[0].is_nan(), "{op}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..proptest::prelude::ProptestConfig::default() })]

    #[test]
    fn special_values_follow_the_definitions(
        x in proptest::collection::vec(special_value(), 1..=40),
        op in proptest::sample::select(vec!["Relu", "Clip", "Max0", "Min0", "HardSigmoid", "Sigmoid", "LogSoftmax"]),
    ) {
        let y = run(&unary_model(op), vec![f32s(&[x.len()], &x)]);
        let (want, tol) = unary_reference(op, &x);
        let rel = if op == "LogSoftmax" { 1e-6 } else { 0.0 };
        let tol = if op == "LogSoftmax" { 1e-5 } else { tol };
        if let Err(e) = check_against(op, &values(&y[0]), &want, tol, rel) {
            return Err(proptest::test_runner::TestCaseError::fail(format!("{e}\n   x {x:?}")));
        }
    }

    #[test]
    fn gemm_with_alpha_zero_is_zero_or_nan(
        a in proptest::collection::vec(special_value(), 6),
        b in proptest::collection::vec(special_value(), 6),
    ) {
        // [2, 3] x [3, 2], alpha 0, beta 0: 0 * (AB), AB summed in float64 to find which are finite.
        let y = run(&gemm_model_2x3(), vec![f32s(&[2, 3], &a), f32s(&[3, 2], &b)]);
        let mut want = vec![];
        for i in 0..2 {
            for j in 0..2 {
                let terms: Vec<f32> = (0..3).map(|k| a[i * 3 + k] * b[k * 2 + j]).collect();
                let finite = terms.iter().all(|t| t.is_finite());
                let sum: f64 = terms.iter().map(|t| f64::from(*t)).sum();
                // A finite float32 sum of finite terms may still overflow: then the product is infinite.
                want.push(if finite && (sum.abs() as f32).is_finite() { Some(sum) } else { None });
            }
        }
        let got = values(&y[0]);
        for (g, w) in got.iter().zip(&want) {
            match w {
                // Certainly finite with margin: 0 of the product's sign, or 0 when it is 0.
                Some(s) if s.abs() < 1e37 => proptest::prop_assert!(*g == 0.0, "got {g} for a finite product {s}\n a {a:?}\n b {b:?}"),
                // Not finite (or on the edge of float32's range): NaN, unless rounding kept it finite.
                _ => proptest::prop_assert!(g.is_nan() || *g == 0.0, "got {g}\n a {a:?}\n b {b:?}"),
            }
        }
        // A NaN or an infinity read by a product makes a term NaN or infinite (inf * 0 is NaN), so the
        // product is NaN or infinite, and 0 times it NaN.
        for i in 0..2 {
            for j in 0..2 {
                if (0..3).any(|k| !a[i * 3 + k].is_finite() || !b[k * 2 + j].is_finite()) {
                    proptest::prop_assert!(got[i * 2 + j].is_nan(), "a non-finite input, {} out", got[i * 2 + j]);
                }
            }
        }
    }
}

fn gemm_model_2x3() -> Vec<u8> {
    Builder::new(13)
        .input("a", DataType::Float, &[D::N(2), D::N(3)])
        .input("b", DataType::Float, &[D::N(3), D::N(2)])
        .node("Gemm", "", "gemm", &["a", "b"], &["y"], vec![("alpha", A::F(0.0)), ("beta", A::F(0.0))])
        .output("y")
        .bytes()
}
