//! The optimizer driver (moved here from tests/long_graphs.rs, as it reads our plan ops): it leaves
//! the same model tract's own optimizer leaves, on real exports, and fuses elementwise runs in linear
//! time, 16 steps at a time.

use crate::onnx::proto;
use crate::Model;
use std::path::Path;
use tract_onnx::prelude::*;

/// The input of the chain: `x: [4, 8]` float32, values -16 .. 15.
fn input() -> Tensor {
    let values: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
    Tensor::from_shape(&[4, 8], &values).unwrap()
}

/// `y` of the chain over [`input`]: every Relu clamps at 0.
fn expected() -> Tensor {
    let mut y = input().to_plain_array_view::<f32>().unwrap().to_owned();
    y.mapv_inplace(|v| v.max(0.0));
    y.into_tensor()
}

/// A chain of `nodes` Relu nodes over float `x: [4, 8]` to `y`, opset 13.
fn relu_chain(nodes: usize) -> Vec<u8> {
    let value = |name: &str| proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(crate::onnx::type_proto(f32::datum_type(), &[4.into(), 8.into()]).unwrap()),
        ..Default::default()
    };
    let node = |i: usize| proto::NodeProto {
        name: Some(format!("n{i}")),
        op_type: Some("Relu".into()),
        input: vec![if i == 0 { "x".to_string() } else { format!("v{}", i - 1) }],
        output: vec![if i == nodes - 1 { "y".to_string() } else { format!("v{i}") }],
        ..Default::default()
    };
    let model = proto::ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto { domain: Some(String::new()), version: Some(13) }],
        graph: Some(proto::GraphProto {
            name: Some("chain".into()),
            node: (0..nodes).map(node).collect(),
            input: vec![value("x")],
            output: vec![value("y")],
            ..Default::default()
        }),
        ..Default::default()
    };
    prost::Message::encode_to_vec(&model)
}

/// The model without node names (tract names new nodes in an order that varies from run to run):
/// each node's inputs, op and output facts, and the model's inputs and outputs. The ops our kernels
/// run in the plan (`AxisSoftmax`, `RowResize`, `PlaneMaxPool`, `CubePow`, `BroadcastBin`, `NanActivation`,
/// `DefinedActivation`) are shown as the tract op
/// each one replaces.
fn structure(model: &TypedModel) -> String {
    let mut text = format!("inputs {:?} outputs {:?}\n", model.inputs, model.outputs);
    for node in &model.nodes {
        let facts: Vec<String> = node.outputs.iter().map(|o| format!("{:?}", o.fact)).collect();
        let op = if let Some(softmax) = node.op_as::<super::ops::AxisSoftmax>() {
            format!("{:?}", softmax.stock)
        } else if let Some(resize) = node.op_as::<super::ops::RowResize>() {
            format!("{:?}", resize.stock)
        } else if let Some(pool) = node.op_as::<super::ops::PlaneMaxPool>() {
            format!("{:?}", pool.stock)
        } else if let Some(cube) = node.op_as::<super::ops::CubePow>() {
            format!("{:?}", cube.stock)
        } else if let Some(bin) = node.op_as::<super::ops::BroadcastBin>() {
            format!("{:?}", bin.stock)
        } else if let Some(sigmoid) = node.op_as::<super::ops::NanActivation>() {
            format!("{:?}", sigmoid.stock)
        } else if let Some(defined) = node.op_as::<super::ops::DefinedActivation>() {
            format!("{:?}", defined.stock)
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
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/real").join(name).join("model.onnx");
        let model = Model::load_path(&path).unwrap();
        let ours = model.optimized_without_rewrites().unwrap();
        let tracts = model.typed().unwrap().into_optimized().unwrap();
        assert_eq!(structure(&ours), structure(&tracts), "{name}");
    }
}

#[test]
fn elementwise_runs_fuse_into_chains_of_at_most_16_steps() {
    let model = Model::load_bytes(&relu_chain(100)).unwrap();
    let optimized = model.optimized().unwrap();
    // Each fused chain of Relus (max by 0) then runs as our `ScalarSteps`, which keeps NaN, with the
    // chain's steps.
    let chains: Vec<usize> =
        optimized.nodes.iter().filter_map(|n| n.op_as::<super::ops::ScalarSteps>()).map(|c| c.steps.len()).collect();
    // tract's own fuse makes the first chain (the head and the 15 nodes after it); the rest of the
    // run goes 16 at a time, in node order.
    assert_eq!(chains, [16, 16, 16, 16, 16, 16, 4]);
    let y = model.run(vec![input()]).unwrap();
    assert_eq!(y[0].1, expected());
}
