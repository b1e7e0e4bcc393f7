//! Shape work at scale: a generated graph of 10,000 slicing nodes over an input with a symbolic batch
//! dim (chains of ten `x[1:-1]`), loaded, inferred and folded. With `SLICEOPS_SCALE_MODEL=PATH` the
//! model is also written there, for `benches/shape_inference.py PATH`, which times
//! `onnx.shape_inference.infer_shapes` on it.

use criterion::{criterion_group, criterion_main, Criterion};
use prost::Message;
use std::time::Duration;
use tract_onnx::pb;

/// The model: `nodes` ONNX Slice nodes `x[1:-1]` in chains of ten from `x: [N, 64]`.
pub fn scale_model(nodes: usize) -> Vec<u8> {
    use pb::tensor_shape_proto::{dimension::Value, Dimension};
    let dim = |v: Value| Dimension { value: Some(v), ..Default::default() };
    let shape = pb::TensorShapeProto { dim: vec![dim(Value::DimParam("N".into())), dim(Value::DimValue(64))] };
    let tensor = pb::type_proto::Tensor { elem_type: 1, shape: Some(shape) };
    let mut graph = pb::GraphProto { name: "scale".into(), ..Default::default() };
    graph.input.push(pb::ValueInfoProto {
        name: "x".into(),
        r#type: Some(pb::TypeProto { value: Some(pb::type_proto::Value::TensorType(tensor)), ..Default::default() }),
        ..Default::default()
    });
    let init = |name: &str, v: &[i64]| pb::TensorProto {
        name: name.into(),
        data_type: 7,
        dims: vec![v.len() as i64],
        raw_data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        ..Default::default()
    };
    graph.initializer.extend([init("st", &[1, 0]), init("en", &[-1, 64])]);
    for i in 0..nodes {
        let input = if i % 10 == 0 { "x".to_string() } else { format!("v{}", i - 1) };
        graph.node.push(pb::NodeProto {
            op_type: "Slice".into(),
            name: format!("s{i}"),
            input: vec![input, "st".into(), "en".into()],
            output: vec![format!("v{i}")],
            ..Default::default()
        });
        if i % 10 == 9 {
            graph.output.push(pb::ValueInfoProto { name: format!("v{i}"), ..Default::default() });
        }
    }
    let opset = vec![pb::OperatorSetIdProto { domain: String::new(), version: 13 }];
    pb::ModelProto { ir_version: 8, opset_import: opset, graph: Some(graph), ..Default::default() }.encode_to_vec()
}

fn scale(c: &mut Criterion) {
    let bytes = scale_model(10_000);
    if let Ok(dir) = std::env::var("SLICEOPS_SCALE_MODEL") {
        std::fs::write(dir, &bytes).unwrap();
    }
    let mut group = c.benchmark_group("scale_10000_nodes");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("load_infer_fold", |b| {
        b.iter(|| {
            let model = sliceops::Model::load_bytes(&bytes).unwrap();
            let facts = model.infer().unwrap();
            assert_eq!(facts.len(), 10_001);
            sliceops::fold::fold_bytes(&bytes, None).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);
