//! `HardSwish` and `Gelu(approximate = "tanh")` on float32 as onnx defines them, at the extremes
//! where tract's kernels were wrong (issue 30): `HardSwish` of the largest floats is `x` (tract's
//! gave `inf`), `Gelu` of a large negative `x` is `-0` (tract's `x * 3e-7`), NaN stays; and the plan
//! runs them as `DefinedHardSwish` / `DefinedGeluTanh` (src/plan/ops/activation.rs), also for a
//! decomposed hard swish (`Add`, `Clip`, `Mul`, `Div`); `Softplus` of a large `x` is `x` (tract-onnx's
//! `Ln(Exp(x) + 1)` gave `inf`), float32 as `FusedSoftplus`. Expected values are the definitions'
//! own, or their float64 value within a stated number of units in the last place.

mod common;

use common::onnx_build::{Builder, A, D};
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

fn run(bytes: &[u8], x: &[f32]) -> (Vec<f32>, Vec<String>) {
    let m = Model::load_bytes(bytes).unwrap();
    let input = tensor1(x);
    let plan = m.plan_for(std::slice::from_ref(&input)).unwrap();
    let ops = plan.model().nodes().iter().map(|n| n.op().name().to_string()).collect();
    let out = m.run(vec![input]).unwrap().remove(0).1;
    (out.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec(), ops)
}

/// `got` equals `want` bit for bit (the sign of zero included), any NaN matching any NaN.
fn assert_identical(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
        assert!(same, "{what}: element {i} is {g:e}, the definition gives {w:e}");
    }
}

fn unary(op: &str, opset: i64, attrs: Vec<(&'static str, A)>) -> Vec<u8> {
    Builder::new(opset)
        .input("x", DataType::Float, &[D::S("N")])
        .node(op, "", "op", &["x"], &["y"], attrs)
        .output("y")
        .bytes()
}

const MAX: f32 = f32::MAX;
const INF: f32 = f32::INFINITY;
const NAN: f32 = f32::NAN;

#[test]
fn hard_swish_of_the_largest_floats_is_x_and_nan_stays() {
    let xs = [MAX, MAX / 2.0, 1e38, 6e37, INF, -MAX, -INF, NAN, -0.0, 0.0, 3.0, -3.0, 1.0, -1.5, 2.5];
    // x * max(0, min(1, x * float32(1/6) + 0.5)), in float32: 1 * (1/6 + 1/2) = 0.6666667 and
    // 2.5 * (2.5/6 + 1/2) = 2.2916667 rounded; -inf * 0 is NaN.
    let want = [
        MAX,
        MAX / 2.0,
        1e38,
        6e37,
        INF,
        -0.0,
        NAN,
        NAN,
        -0.0,
        0.0,
        3.0,
        -0.0,
        f32::from_bits(0x3f2a_aaab),
        -0.375,
        f32::from_bits(0x4012_aaab),
    ];
    let (got, ops) = run(&unary("HardSwish", 14, vec![]), &xs);
    assert_identical("HardSwish", &got, &want);
    assert!(ops.iter().any(|o| o == "DefinedHardSwish"), "{ops:?}");
}

#[test]
fn a_decomposed_hard_swish_runs_as_the_definition() {
    // x * clip(x + 3, 0, 6) / 6, as exporters write MobileNetV3's activation.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N")])
        .init_f32("three", &[], &[3.0])
        .init_f32("zero", &[], &[0.0])
        .init_f32("six", &[], &[6.0])
        .node("Add", "", "add", &["x", "three"], &["s"], vec![])
        .node("Clip", "", "clip", &["s", "zero", "six"], &["c"], vec![])
        .node("Mul", "", "mul", &["x", "c"], &["p"], vec![])
        .node("Div", "", "div", &["p", "six"], &["y"], vec![])
        .output("y")
        .bytes();
    let xs = [1e38, NAN, -4.0, -0.0, 0.5, 7.0];
    // The graph's own arithmetic overflows at 1e38 (1e38 * 6 = inf); the plan computes the function
    // (see docs/untrusted.md), x there; 0.5 * (0.5 * float32(1/6) + 0.5) = 0.29166666.
    let want = [1e38, NAN, -0.0, -0.0, f32::from_bits(0x3e95_5555), 7.0];
    let (got, ops) = run(&bytes, &xs);
    assert_identical("decomposed hard swish", &got, &want);
    assert!(ops.iter().any(|o| o == "DefinedHardSwish"), "{ops:?}");
}

#[test]
fn activations_over_large_tensors_split_over_threads_with_the_same_bits() {
    // 1,200,000 values, over the split's 2^19 values a thread at 2 and 8 threads; every third a
    // special value, the others a ramp over [-15, 15].
    let special = [MAX, 1e38, -MAX, NAN, -0.0, 0.0, 3.0, -3.0, 1.0, -1.5, 2.5];
    let hard_swish_of_special =
        [MAX, 1e38, -0.0, NAN, -0.0, 0.0, 3.0, -0.0, f32::from_bits(0x3f2a_aaab), -0.375, f32::from_bits(0x4012_aaab)];
    let value =
        |i: usize| if i.is_multiple_of(3) { special[i / 3 % special.len()] } else { (i as f32 - 600_000.0) / 39_999.0 };
    let xs: Vec<f32> = (0..1_200_000).map(value).collect();
    // The graph's input (shared with the caller: written into a new tensor), and a value the op holds
    // alone (worked on in place).
    let negated_hard_swish = Builder::new(14)
        .input("x", DataType::Float, &[D::S("N")])
        .node("Neg", "", "neg", &["x"], &["n"], vec![])
        .node("HardSwish", "", "op", &["n"], &["y"], vec![])
        .output("y")
        .bytes();
    let cases = [
        ("HardSwish", unary("HardSwish", 14, vec![]), "DefinedHardSwish"),
        ("HardSwish of -x", negated_hard_swish, "DefinedHardSwish"),
        ("Gelu(tanh)", unary("Gelu", 20, vec![("approximate", A::S("tanh"))]), "DefinedGeluTanh"),
    ];
    for (what, bytes, op) in cases {
        let mut m = Model::load_bytes(&bytes).unwrap();
        let mut runs = vec![];
        for threads in [1, 2, 8] {
            m.set_threads(Some(threads)).unwrap();
            let input = tensor1(&xs);
            let plan = m.plan_for(std::slice::from_ref(&input)).unwrap();
            assert!(plan.model().nodes().iter().any(|n| n.op().name() == op), "{what}, {threads} threads");
            let out = m.run(vec![input]).unwrap().remove(0).1;
            runs.push(out.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec());
        }
        for (threads, run) in [2, 8].iter().zip(&runs[1..]) {
            assert_identical(&format!("{what}, {threads} threads against 1"), run, &runs[0]);
        }
        if what == "HardSwish" {
            let got: Vec<f32> = (0..special.len()).map(|k| runs[0][3 * k]).collect();
            assert_identical(what, &got, &hard_swish_of_special);
            let last = (xs.len() - 1) / 3 * 3;
            assert_identical(what, &[runs[2][last]], &[hard_swish_of_special[last / 3 % special.len()]]);
        }
    }
}

/// Gelu's tanh form in float64, as `x / (1 + exp(-2v))` (no cancellation).
fn gelu64(x: f32) -> f64 {
    let x = x as f64;
    let v = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    x / (1.0 + (-2.0 * v).exp())
}

#[test]
fn gelu_tanh_of_large_negative_inputs_is_minus_zero_and_close_to_float64_between() {
    let gelu = unary("Gelu", 20, vec![("approximate", A::S("tanh"))]);
    let extremes = [-MAX, -1e30, -100.0, -88.5, -12.0, -INF, NAN, MAX, 1e30, 100.0, 10.0, INF, 0.0, -0.0];
    let want = [-0.0, -0.0, -0.0, -0.0, -0.0, NAN, NAN, MAX, 1e30, 100.0, 10.0, INF, 0.0, -0.0];
    let (got, ops) = run(&gelu, &extremes);
    assert_identical("Gelu(tanh)", &got, &want);
    assert!(ops.iter().any(|o| o == "DefinedGeluTanh"), "{ops:?}");
    // Between: each value within 4 units of float32 of the function down to the smallest normal
    // (tract's kernel gave x * 3e-7 below -4: -2.9e-6 at -10, where the value is -1.2e-37), -0 below.
    let xs: Vec<f32> = (0..=1400).map(|i| -12.0 + i as f32 * 0.01).collect();
    let (got, _) = run(&gelu, &xs);
    for (x, g) in xs.iter().zip(&got) {
        let w = gelu64(*x);
        if *x < -10.0 && w.abs() < f32::MIN_POSITIVE as f64 {
            assert_eq!(g.to_bits(), (-0f32).to_bits(), "Gelu(tanh)({x}) = {g:e}, the function {w:e}: flushed");
            continue;
        }
        let unit = if w == 0.0 { 2f64.powi(-149) } else { 2f64.powi(w.abs().log2().floor() as i32 - 23) };
        assert!((*g as f64 - w).abs() <= 4.0 * unit, "Gelu(tanh)({x}) = {g:e}, the function {w:e}");
        assert!(*g <= 0.0 || *x > 0.0, "Gelu(tanh)({x}) = {g:e}: the sign of x");
    }
}

/// Softplus in float64, `max(x, 0) + ln(1 + exp(-|x|))`.
fn softplus64(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

#[test]
fn softplus_of_large_inputs_is_x_and_of_negative_ones_keeps_its_precision() {
    let model = unary("Softplus", 13, vec![]);
    let xs = [MAX, 1e30, 100.0, 88.75, INF, -INF, NAN, -MAX, -100.0];
    // x where exp(x) overflowed (tract-onnx's ln(exp(x) + 1) gave inf); +0 for -inf; below about
    // -87.3 the value (3.7e-44 at -100) is subnormal: flushed to +0.
    let want = [MAX, 1e30, 100.0, 88.75, INF, 0.0, NAN, 0.0, 0.0];
    let (got, ops) = run(&model, &xs);
    assert_identical("Softplus", &got, &want);
    assert!(ops.iter().any(|o| o == "FusedSoftplus"), "{ops:?}");
    // Between: within 2 units of float32 of the function (-20: 2.06e-9, where ln(exp(x) + 1) in
    // float32 gives 0).
    let xs: Vec<f32> = (0..=2000).map(|i| -80.0 + i as f32 * 0.09).chain([0.0, -0.0, -20.0]).collect();
    let (got, _) = run(&model, &xs);
    for (x, g) in xs.iter().zip(&got) {
        let w = softplus64(*x as f64);
        let unit = 2f64.powi(w.log2().floor() as i32 - 23);
        assert!((*g as f64 - w).abs() <= 2.0 * unit, "Softplus({x}) = {g:e}, the function {w:e}");
    }
}

#[test]
fn softplus_of_doubles_is_the_stable_form() {
    let model = Builder::new(13)
        .input("x", DataType::Double, &[D::S("N")])
        .node("Softplus", "", "op", &["x"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&model).unwrap();
    let xs = [1000.0f64, 800.0, -800.0, 0.0, -20.0, 3.5];
    let out = m.run(vec![tensor1(&xs)]).unwrap().remove(0).1;
    let got = out.try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec();
    assert_eq!(got[..4], [1000.0, 800.0, 0.0, std::f64::consts::LN_2]);
    // tract's element-wise ops, ln(1 + e) with 1 + e rounded first: within an ulp of 1.
    for (x, g) in xs.iter().zip(&got).skip(4) {
        let w = softplus64(*x);
        assert!((g - w).abs() <= f64::EPSILON * (1.0 + w), "Softplus({x}) = {g:e}, the function {w:e}");
    }
}
