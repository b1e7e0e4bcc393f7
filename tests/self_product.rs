//! `Mul(x, x)` and `Pow(x, 2)` of integers: tract's declutter makes them its `Square`, which runs
//! floats only (`Square does not support I64`), so they run as our `SelfProduct`. torchvision's
//! Keypoint R-CNN export squares a shape value (`num_keypoints * num_keypoints`) inside its `Loop`
//! body. Expected values are exact by construction: `x * x`, wrapping on overflow as onnxruntime's
//! integer `Mul` does.

mod common;

use common::onnx_build::{Builder, A, D};
use common::tensors::{f32s, i64s};
use sliceops::tract_onnx::pb::tensor_proto::DataType;
use sliceops::tract_onnx::prelude::*;
use sliceops::Model;

fn vals<T: Datum + Clone>(t: &Tensor) -> Vec<T> {
    t.try_as_plain_ram().unwrap().as_slice::<T>().unwrap().to_vec()
}

fn run(bytes: Vec<u8>, inputs: Vec<Tensor>) -> Tensor {
    Model::load_bytes(&bytes).unwrap().run(inputs).unwrap().remove(0).1
}

#[test]
fn int64_times_itself_runs_and_wraps() {
    let bytes = Builder::new(17)
        .input("x", DataType::Int64, &[D::S("n")])
        .node("Mul", "", "sq", &["x", "x"], &["y"], vec![])
        .output("y")
        .bytes();
    let x = [3, -4, 0, 3_037_000_500, i64::MIN];
    let got = run(bytes, vec![i64s(&x)]);
    assert_eq!(got.datum_type(), DatumType::I64);
    assert_eq!(vals::<i64>(&got), x.iter().map(|v| v.wrapping_mul(*v)).collect::<Vec<_>>());
    assert_eq!(vals::<i64>(&got)[..3], [9, 16, 0]);
}

#[test]
fn int32_to_the_power_two_runs() {
    let bytes = Builder::new(17)
        .input("x", DataType::Int32, &[D::N(2), D::N(2)])
        .init_i32("two", &[2])
        .node("Pow", "", "pow", &["x", "two"], &["y"], vec![])
        .output("y")
        .bytes();
    let x = Tensor::from_shape(&[2, 2], &[-7i32, 5, 46_341, 1]).unwrap();
    let got = run(bytes, vec![x]);
    assert_eq!(got.datum_type(), DatumType::I32);
    assert_eq!(got.shape(), [2, 2]);
    assert_eq!(vals::<i32>(&got), [49, 25, 46_341i32.wrapping_mul(46_341), 1]);
}

#[test]
fn shape_value_squared_in_a_loop_body_runs() {
    // As in the Keypoint R-CNN export: the body casts an outer shape value and multiplies it by
    // itself, then adds it to the iteration number: scan[i] = k*k + i, with k = x's second dim.
    let body = Builder::new(17)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Cast", "", "cast", &["k"], &["kk"], vec![("to", A::I(DataType::Int64 as i64))])
        .node("Mul", "", "square", &["kk", "kk"], &["k2"], vec![])
        .node("Add", "", "plus_i", &["k2", "i"], &["scan"], vec![])
        .output("c_out")
        .output("scan")
        .graph("body");
    let bytes = Builder::new(17)
        .input("x", DataType::Float, &[D::S("m"), D::S("w")])
        .init_i64("one", &[1])
        .init("yes", DataType::Bool, &[], vec![1])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "dim", &["s", "one"], &["k1"], vec![("axis", A::I(0))])
        .node("Squeeze", "", "k", &["k1"], &["k"], vec![])
        .node("Gather", "", "rows", &["s", "one"], &["m1"], vec![("axis", A::I(0))])
        .node("Squeeze", "", "trips", &["m1"], &["trip"], vec![])
        .node("Loop", "", "loop", &["trip", "yes"], &["scans"], vec![("body", A::G(body))])
        .output("scans")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    for w in [3usize, 5] {
        let got = model.run(vec![f32s(&[2, w], vec![0.0; 2 * w])]).unwrap().remove(0).1;
        let w = w as i64;
        assert_eq!(got.datum_type(), DatumType::I64);
        assert_eq!(vals::<i64>(&got), (0..w).map(|i| w * w + i).collect::<Vec<_>>());
    }
}
