//! Float `Div` is a correctly rounded division (issue 30): tract's declutter makes it `a * (1/b)`,
//! 1 ulp off on ordinary values and wrong for subnormal divisors (`0 / 1e-45` NaN); the plan puts
//! back the divisions no fusion took as `ExactDiv` (src/plan/passes/exact_div.rs). Every value here
//! is checked against Rust's own `/` on the same float32 (or float64) operands: IEEE division, what
//! onnxruntime and numpy compute (tests/ort_special_values.py compares with onnxruntime itself).

mod common;

use common::onnx_build::{Builder, D};
use sliceops::tract_onnx::pb::tensor_proto::DataType;
use sliceops::tract_onnx::prelude::*;
use sliceops::Model;

/// Special and ordinary float32 values: zeros, subnormals, infinities, NaN, the extremes.
const SPECIAL: [f32; 16] = [
    0.0,
    -0.0,
    1e-45,
    -1e-45,
    1e-40,
    f32::MIN_POSITIVE,
    3.0,
    -100.0,
    7.0,
    0.1,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
    -f32::MAX,
    1e-30,
];

fn plan_ops(m: &Model, inputs: &[Tensor]) -> Vec<String> {
    let plan = m.plan_for(inputs).unwrap();
    plan.model().nodes().iter().map(|n| n.op().name().to_string()).collect()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
}

/// Bits of `got` against `a / b` for each pair (NaN as any NaN).
fn assert_quotients(got: &[f32], pairs: impl Iterator<Item = (f32, f32)>, what: &str) {
    let mut n = 0;
    for (i, (g, (a, b))) in got.iter().zip(pairs).enumerate() {
        let want = a / b;
        let same = g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan());
        assert!(same, "{what}: [{i}] {a:e} / {b:e} = {g:e}, expected {want:e}");
        n += 1;
    }
    assert_eq!(n, got.len(), "{what}: every value compared");
}

#[test]
fn every_pair_of_special_values_divides_exactly() {
    let n = SPECIAL.len();
    let bytes = Builder::new(13)
        .input("a", DataType::Float, &[D::N((n * n) as i64)])
        .input("b", DataType::Float, &[D::N((n * n) as i64)])
        .node("Div", "", "div", &["a", "b"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let a: Vec<f32> = (0..n * n).map(|i| SPECIAL[i / n]).collect();
    let b: Vec<f32> = (0..n * n).map(|i| SPECIAL[i % n]).collect();
    let inputs = [tensor1(&a), tensor1(&b)];
    let ops = plan_ops(&m, &inputs);
    assert!(ops.iter().any(|o| o == "ExactDiv") && !ops.iter().any(|o| o.contains("Recip")), "{ops:?}");
    let y = m.run(inputs.to_vec()).unwrap().remove(0).1;
    assert_quotients(&f32s(&y), a.iter().copied().zip(b.iter().copied()), "a / b");
    // The cases tract's product got wrong, by name.
    let got = f32s(&y);
    let at = |x: f32, d: f32| {
        let (i, j) = (
            SPECIAL.iter().position(|v| v.to_bits() == x.to_bits()),
            SPECIAL.iter().position(|v| v.to_bits() == d.to_bits()),
        );
        got[i.unwrap() * n + j.unwrap()]
    };
    assert_eq!(at(-100.0, 3.0), -33.333332);
    assert_eq!(at(0.0, 1e-45).to_bits(), 0f32.to_bits());
    assert_eq!(at(1e-30, 1e-45), 1e-30 / 1e-45);
    assert!(at(1e-30, 1e-45).is_finite());
    assert_eq!(at(1e-40, 1e-45), 1e-40 / 1e-45);
    assert!(at(0.0, 0.0).is_nan());
    assert_eq!(at(3.0, -0.0), f32::NEG_INFINITY);
}

/// `x / c` with `c` an initializer of `dims`.
fn by_constant(len: usize, dims: &[i64], c: &[f32]) -> Model {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(len as i64)])
        .init_f32("c", dims, c)
        .node("Div", "", "div", &["x", "c"], &["y"], vec![])
        .output("y")
        .bytes();
    Model::load_bytes(&bytes).unwrap()
}

#[test]
fn constant_divisors_divide_exactly_and_powers_of_two_stay_a_product() {
    let n = SPECIAL.len();
    let x: Vec<f32> = SPECIAL.iter().chain(SPECIAL.iter().rev()).copied().collect();
    let input = tensor1(&x).into_shape(&[2, n]).unwrap();
    for (c, exact_product) in [
        (3.0f32, false),
        (0.1, false),
        (-7.0, false),
        (1e-45, false),
        (0.0, false),
        (0.25, true),
        (-8.0, true),
        (2f32.powi(-127), true),
    ] {
        let m = by_constant(n, &[], &[c]);
        let ops = plan_ops(&m, std::slice::from_ref(&input));
        // A divisor whose reciprocal is exact keeps tract's product: the same bits, faster.
        assert_eq!(ops.iter().any(|o| o == "ExactDiv"), !exact_product, "x / {c:e}: {ops:?}");
        let y = m.run(vec![input.clone()]).unwrap().remove(0).1;
        assert_quotients(&f32s(&y), x.iter().map(|&v| (v, c)), &format!("x / {c:e}"));
    }
    // A divisor per column, broadcast over the rows, some of them powers of two.
    let c: Vec<f32> = SPECIAL.iter().rev().copied().collect();
    let m = by_constant(n, &[1, n as i64], &c);
    assert!(plan_ops(&m, std::slice::from_ref(&input)).iter().any(|o| o == "ExactDiv"));
    let y = m.run(vec![input]).unwrap().remove(0).1;
    assert_quotients(&f32s(&y), x.iter().enumerate().map(|(i, &v)| (v, c[i % n])), "x / c[column]");
}

#[test]
fn broadcasting_shapes_and_float64_divide_exactly() {
    // [3, 1, 4] / [2, 4]: ranks differ and both sides broadcast.
    let bytes = Builder::new(13)
        .input("a", DataType::Float, &[D::N(3), D::N(1), D::N(4)])
        .input("b", DataType::Float, &[D::N(2), D::N(4)])
        .node("Div", "", "div", &["a", "b"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let a: Vec<f32> = SPECIAL[..12].to_vec();
    let b: Vec<f32> = SPECIAL[8..].to_vec();
    let y = m
        .run(vec![tensor1(&a).into_shape(&[3, 1, 4]).unwrap(), tensor1(&b).into_shape(&[2, 4]).unwrap()])
        .unwrap()
        .remove(0)
        .1;
    assert_eq!(y.shape(), [3, 2, 4]);
    assert_quotients(&f32s(&y), (0..24).map(|i| (a[(i / 8) * 4 + i % 4], b[i % 8])), "[3,1,4] / [2,4]");
    // float64, through tract's own division: `0 / 5e-324` is 0 (the product by `1 / 5e-324`, NaN).
    let bytes = Builder::new(13)
        .input("a", DataType::Double, &[D::N(4)])
        .input("b", DataType::Double, &[D::N(4)])
        .node("Div", "", "div", &["a", "b"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let (a, b) = ([1.0f64, 2.0, -100.0, 0.0], [3.0f64, 3.0, 3.0, 5e-324]);
    let y = m.run(vec![tensor1(&a), tensor1(&b)]).unwrap().remove(0).1;
    let got = y.try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec();
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, d)| x / d).collect();
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}
