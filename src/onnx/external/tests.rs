//! Write-back of large tensors next to the output (`fold`/`lower` past the size limit): moved here
//! from tests/hostile_files.rs, as [`place_external_data`] is internal.

use super::{place_external_data, Placement};
use crate::onnx::proto;
use crate::onnx::proto::tensor_proto::DataType;
use std::path::{Path, PathBuf};

/// A fresh, empty folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sliceops-external-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const W: [f32; 4] = [1.5, -2.0, 3.25, 8.0];

/// `w.bin`: 8 padding bytes, then `W`.
fn write_w_bin(d: &Path) {
    let mut bytes = vec![0xAB; 8];
    bytes.extend(W.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(d.join("w.bin"), bytes).unwrap();
}

#[test]
fn over_the_size_limit_large_tensors_go_next_to_the_output() {
    let d = scratch("over_the_size_limit_large_tensors_go_next_to_the_output");
    let (a, b) = (d.join("a"), d.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    write_w_bin(&a);
    let floats = |name: &str, n: usize, scale: f32| proto::TensorProto {
        name: Some(name.into()),
        data_type: Some(DataType::Float as i32),
        dims: vec![n as i64],
        raw_data: Some((0..n).flat_map(|v| (v as f32 * scale).to_le_bytes()).collect()),
        ..Default::default()
    };
    let (big, mid, small) = (floats("big", 4096, 1.0), floats("mid", 750, -1.0), floats("small", 4, 0.5));
    let ext = proto::TensorProto {
        name: Some("w".into()),
        data_type: Some(DataType::Float as i32),
        dims: vec![4],
        data_location: Some(proto::tensor_proto::DataLocation::External as i32),
        external_data: [("location", "w.bin"), ("offset", "8")]
            .iter()
            .map(|(k, v)| proto::StringStringEntryProto { key: Some(k.to_string()), value: Some(v.to_string()) })
            .collect(),
        ..Default::default()
    };
    let mut model = proto::ModelProto {
        ir_version: Some(8),
        graph: Some(proto::GraphProto {
            name: Some("g".into()),
            initializer: vec![mid.clone(), small.clone(), ext, big.clone()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let out = b.join("m.onnx");
    let (placement, data) = place_external_data(&mut model, Some(&a), &out, 2048).unwrap();
    let data_file = b.join("m.onnx.data");
    assert_eq!(placement, Placement::External { file: data_file.clone(), tensors: 2 });
    assert!(!data_file.exists(), "the data file is renamed into place only on commit");
    data.unwrap().commit().unwrap();
    // In walk order: mid (3000 bytes) at 0, big (16384 bytes) at the next multiple of 64.
    let bytes = std::fs::read(&data_file).unwrap();
    assert_eq!(bytes.len(), 3008 + 16384);
    assert_eq!(&bytes[..3000], &mid.raw_data.clone().unwrap()[..]);
    assert_eq!(&bytes[3000..3008], &[0u8; 8]);
    assert_eq!(&bytes[3008..], &big.raw_data.clone().unwrap()[..]);
    let inits = &model.graph.as_ref().unwrap().initializer;
    let entries = |t: &proto::TensorProto| -> Vec<(String, String)> {
        t.external_data.iter().map(|e| (e.key.clone().unwrap(), e.value.clone().unwrap())).collect()
    };
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    assert_eq!(entries(&inits[0]), pairs(&[("location", "m.onnx.data"), ("offset", "0"), ("length", "3000")]));
    assert_eq!(entries(&inits[3]), pairs(&[("location", "m.onnx.data"), ("offset", "3008"), ("length", "16384")]));
    assert_eq!((inits[0].raw_data.as_ref(), inits[3].raw_data.as_ref()), (None, None));
    assert_eq!(inits[1], small);
    // The external tensor of the input was read in.
    assert_eq!(inits[2].raw_data.as_deref(), Some(&W.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()[..]));
    assert_eq!((inits[2].data_location, inits[2].external_data.len()), (None, 0));
    // The model and its data file load back to the same values.
    let mut back: tract_onnx::pb::ModelProto = prost::Message::decode(&*prost::Message::encode_to_vec(&model)).unwrap();
    back.opset_import = vec![tract_onnx::pb::OperatorSetIdProto { domain: String::new(), version: 13 }];
    let g = back.graph.as_mut().unwrap();
    g.node.push(tract_onnx::pb::NodeProto {
        op_type: "Identity".into(),
        input: vec!["big".into()],
        output: vec!["y".into()],
        name: "id".into(),
        ..Default::default()
    });
    g.output.push(tract_onnx::pb::ValueInfoProto { name: "y".into(), ..Default::default() });
    let path = b.join("m.onnx");
    std::fs::write(&path, prost::Message::encode_to_vec(&back)).unwrap();
    let y = crate::Model::load_path(&path).unwrap().run(vec![]).unwrap().remove(0).1;
    assert_eq!(y.try_as_plain_ram().unwrap().as_bytes(), &big.raw_data.unwrap()[..]);
}
