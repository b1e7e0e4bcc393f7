//! Long graphs run in time linear in their length (issue 15): chains of 20,000 nodes through `sliceops
//! run`, under the CLI deadline that marks a hang (the optimizer was quadratic: a 10,000-node chain
//! took minutes), with outputs checked value by value. And the optimizer driver that makes this
//! possible leaves the same model tract's own optimizer leaves, on real exports.

mod common;

use common::cli::{scratch, sliceops};
use common::onnx_build::chain_model;
use sliceops::Model;
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

/// The model without node names (tract names new nodes in an order that varies from run to run):
/// each node's inputs, op and output facts, and the model's inputs and outputs. The ops our kernels
/// run in the plan (`AxisSoftmax`, `RowResize`, `PlaneMaxPool`, `CubePow`, `BroadcastBin`, `NanActivation`) are shown as the tract op
/// each one replaces.
fn structure(model: &TypedModel) -> String {
    let mut text = format!("inputs {:?} outputs {:?}\n", model.inputs, model.outputs);
    for node in &model.nodes {
        let facts: Vec<String> = node.outputs.iter().map(|o| format!("{:?}", o.fact)).collect();
        let op = if let Some(softmax) = node.op_as::<sliceops::plan::AxisSoftmax>() {
            format!("{:?}", softmax.stock)
        } else if let Some(resize) = node.op_as::<sliceops::plan::RowResize>() {
            format!("{:?}", resize.stock)
        } else if let Some(pool) = node.op_as::<sliceops::plan::PlaneMaxPool>() {
            format!("{:?}", pool.stock)
        } else if let Some(cube) = node.op_as::<sliceops::plan::CubePow>() {
            format!("{:?}", cube.stock)
        } else if let Some(bin) = node.op_as::<sliceops::plan::BroadcastBin>() {
            format!("{:?}", bin.stock)
        } else if let Some(sigmoid) = node.op_as::<sliceops::plan::NanActivation>() {
            format!("{:?}", sigmoid.stock)
        } else {
            format!("{:?}", node.op)
        };
        text += &format!("{} {:?} {op} {facts:?}\n", node.id, node.inputs);
    }
    text
}

#[test]
fn the_optimizer_leaves_the_model_tract_leaves_on_real_exports() {
    for name in
        ["gpt2_torch_dynamo", "llama_torch_dynamo", "ocr_rec_paddle2onnx", "vit_torch_dynamo", "yolov8_ultralytics"]
    {
        let path = common::fixtures::models_dir().join("real").join(name).join("model.onnx");
        let model = Model::load_path(&path).unwrap();
        let ours = model.optimized_without_rewrites().unwrap();
        let tracts = model.typed().unwrap().into_optimized().unwrap();
        assert_eq!(structure(&ours), structure(&tracts), "{name}");
    }
}

#[test]
fn elementwise_runs_fuse_into_chains_of_at_most_16_steps() {
    let model = Model::load_bytes(&chain_model(100, |_| false)).unwrap();
    let optimized = model.optimized().unwrap();
    // Each fused chain of Relus (max by 0) then runs as our `ScalarSteps`, which keeps NaN, with the
    // chain's steps.
    let chains: Vec<usize> = optimized
        .nodes
        .iter()
        .filter_map(|n| n.op_as::<sliceops::plan::ScalarSteps>())
        .map(|c| c.steps.len())
        .collect();
    // tract's own fuse makes the first chain (the head and the 15 nodes after it); the rest of the
    // run goes 16 at a time, in node order.
    assert_eq!(chains, [16, 16, 16, 16, 16, 16, 4]);
    let y = model.run(vec![input()]).unwrap();
    assert_eq!(y[0].1, expected(true, 0));
}
