//! Long graphs run in time linear in their length (issue 15): chains of 20,000 nodes through `sliceops
//! run`, under the CLI deadline that marks a hang (the optimizer was quadratic: a 10,000-node chain
//! took minutes), with outputs checked value by value. That the optimizer driver which makes this
//! possible leaves the same model tract's own optimizer leaves, on real exports, and fuses elementwise
//! runs 16 steps at a time, is tested inside the crate (src/plan/tests.rs: it reads our plan ops).

mod common;

use common::cli::{scratch, sliceops};
use common::onnx_build::chain_model;
use tract_onnx::prelude::*;

/// Nodes in each long chain.
const NODES: usize = 20_000;

/// The input of every chain: `x: [4, 8]` float32, values -16 .. 15.
fn input() -> Tensor {
    let values: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
    Tensor::from_shape(&[4, 8], &values).unwrap()
}

/// `y` of the chain over [`input`], computed here: every Relu clamps at 0; every two slices reverse
/// both axes, one slice only axis 0.
fn expected(relu: bool, slices: usize) -> Tensor {
    let x = input();
    let x = x.to_plain_array_view::<f32>().unwrap();
    let mut y = x.to_owned();
    if relu {
        y.mapv_inplace(|v| v.max(0.0));
    }
    for s in 0..slices {
        y.invert_axis(tract_ndarray::Axis(s % 2));
    }
    y.into_tensor()
}

/// Runs `model` on [`input`] through the CLI and checks `y`.
fn run_chain(test: &str, model: Vec<u8>, want: Tensor) {
    let dir = scratch("long_graphs", test);
    let path = dir.join("model.onnx");
    std::fs::write(&path, model).unwrap();
    let x = dir.join("x.npy");
    let mut file = std::fs::File::create(&x).unwrap();
    sliceops::npy::write_npy_to(&mut file, &input()).unwrap();
    let out = dir.join("out");
    let binding = format!("x={}", x.display());
    let args = [
        "run".as_ref(),
        path.as_os_str(),
        "--input".as_ref(),
        binding.as_ref(),
        "--output-dir".as_ref(),
        out.as_os_str(),
    ];
    sliceops(&args).ok();
    let got = sliceops::npy::read_npy(&out.join("y.npy")).unwrap();
    assert_eq!(got, want, "{test}");
}

#[test]
fn a_relu_chain_of_20k_nodes_runs() {
    run_chain("relu", chain_model(NODES, |_| false), expected(true, 0));
}

#[test]
fn a_slice_chain_of_20k_nodes_runs() {
    run_chain("slice", chain_model(NODES, |_| true), expected(false, NODES));
}

#[test]
fn a_chain_of_20k_alternating_slices_and_relus_runs() {
    run_chain("mixed", chain_model(NODES, |i| i % 2 == 0), expected(true, NODES / 2));
}
