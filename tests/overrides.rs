//! Initializers listed as graph inputs are defaults a caller may replace, as onnxruntime allows: the
//! CLI's `--input` and the library's [`Model::feeding`] take them; without a tensor, the default holds.

mod common;

use common::cli::{scratch, sliceops};
use common::onnx_build::{Builder, D};
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

/// `y = x + w`, `w` an initializer (10, 20) listed as a graph input too; `k` an initializer that is not.
fn model() -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &[D::N(2)])
        .input("w", DataType::Float, &[D::N(2)])
        .init_f32("w", &[2], &[10.0, 20.0])
        .init_f32("k", &[2], &[0.0, 0.0])
        .node("Add", "", "add", &["x", "w"], &["s"], vec![])
        .node("Add", "", "add_k", &["s", "k"], &["y"], vec![])
        .output("y")
        .bytes()
}

fn t(values: &[f32]) -> Tensor {
    Tensor::from_shape(&[values.len()], values).unwrap()
}

#[test]
fn a_default_holds_unless_a_tensor_replaces_it() {
    let m = Model::load_bytes(&model()).unwrap();
    assert_eq!(m.overridable_inputs(), ["w"]);
    assert_eq!(m.input_names(), ["x"]);
    assert!(m.feeding(&["x".into()]).unwrap().is_none());
    assert_eq!(m.run(vec![t(&[1.0, 2.0])]).unwrap()[0].1, t(&[11.0, 22.0]));
    let fed = m.feeding(&["x".into(), "w".into()]).unwrap().expect("w replaced");
    assert_eq!(fed.input_names(), ["x", "w"]);
    let inputs = fed.order_inputs(vec![("w".into(), t(&[-1.0, -2.0])), ("x".into(), t(&[1.0, 2.0]))], "").unwrap();
    assert_eq!(fed.run(inputs).unwrap()[0].1, t(&[0.0, 0.0]));
}

#[test]
fn only_initializers_listed_as_inputs_can_be_replaced() {
    let m = Model::load_bytes(&model()).unwrap();
    let Err(err) = m.overriding(&["k".into()]) else { panic!("k is not a graph input") };
    assert_eq!(err.to_string(), "'k' is not a graph input with a default value (those are: w)");
}

#[test]
fn the_cli_feeds_an_initializer_listed_as_an_input() {
    let dir = scratch("overrides", "cli");
    let path = dir.join("model.onnx");
    std::fs::write(&path, model()).unwrap();
    for (name, values) in [("x", [1.0f32, 2.0]), ("w", [5.0, 6.0])] {
        let mut file = std::fs::File::create(dir.join(format!("{name}.npy"))).unwrap();
        sliceops::npy::write_npy_to(&mut file, &t(&values)).unwrap();
    }
    let arg = |name: &str| format!("{name}={}", dir.join(format!("{name}.npy")).display());
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let model = path.to_str().unwrap();
    sliceops(&["run", model, "--input", &arg("x"), "--output-dir", out]).ok();
    assert_eq!(sliceops::npy::read_npy(&dir.join("out/y.npy")).unwrap(), t(&[11.0, 22.0]));
    sliceops(&["run", model, "--input", &arg("x"), "--input", &arg("w"), "--output-dir", out]).ok();
    assert_eq!(sliceops::npy::read_npy(&dir.join("out/y.npy")).unwrap(), t(&[6.0, 8.0]));
    let run = sliceops(&[
        "run",
        model,
        "--input",
        &arg("x"),
        "--input",
        &format!("k={}", &arg("w")[2..]),
        "--output-dir",
        out,
    ]);
    assert_eq!(run.error(), "error: the model has no input named 'k' (its inputs: x)");
}
