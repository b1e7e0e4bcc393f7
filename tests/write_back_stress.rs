//! Lossless write-back under stress: a large initializer, an external-data initializer, an unknown
//! domain's node, a function and metadata go through `fold` and `lower`; everything unrelated to the
//! rewrite comes back byte for byte.

use prost::Message;
use sliceops::onnx::proto::{self, tensor_proto::DataType};

fn tensor_i64(name: &str, values: &[i64]) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        data_type: Some(DataType::Int64 as i32),
        dims: vec![values.len() as i64],
        raw_data: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ..Default::default()
    }
}

fn value(name: &str, dims: &[i64]) -> proto::ValueInfoProto {
    use proto::tensor_shape_proto::{dimension::Value, Dimension};
    let dim = dims.iter().map(|&d| Dimension { value: Some(Value::DimValue(d)), ..Default::default() }).collect();
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(proto::type_proto::Tensor {
                elem_type: Some(DataType::Float as i32),
                shape: Some(proto::TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn node(op: &str, domain: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> proto::NodeProto {
    proto::NodeProto {
        op_type: Some(op.into()),
        domain: Some(domain.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// `y = StridedSlice(x)[::2] + big[::2]`, `z = Mystery(y, weights)` of an unknown domain.
fn stress_model(dir: &std::path::Path) -> proto::ModelProto {
    const N: usize = 1 << 22; // 16 MB of f32
    let big: Vec<u8> = (0..N as u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    std::fs::write(dir.join("weights.bin"), vec![7u8; 64]).unwrap();
    let external = proto::TensorProto {
        name: Some("weights".into()),
        data_type: Some(DataType::Float as i32),
        dims: vec![16],
        data_location: Some(proto::tensor_proto::DataLocation::External as i32),
        external_data: vec![
            proto::StringStringEntryProto { key: Some("location".into()), value: Some("weights.bin".into()) },
            proto::StringStringEntryProto { key: Some("length".into()), value: Some("64".into()) },
        ],
        ..Default::default()
    };
    let mut strided = node("StridedSlice", "ai.sliceops", "ss", &["x", "b", "e", "s"], &["xs"]);
    strided.doc_string = Some("half of x".into());
    let mut big_slice = node("StridedSlice", "ai.sliceops", "bs", &["big", "b", "e", "s"], &["bigs"]);
    big_slice.doc_string = Some("half of big, folded".into());
    let mut mystery = node("Mystery", "com.example", "mystery", &["y", "weights"], &["z"]);
    mystery.attribute.push(proto::AttributeProto {
        name: Some("note".into()),
        r#type: Some(proto::attribute_proto::AttributeType::String as i32),
        s: Some(b"kept as is".to_vec()),
        ..Default::default()
    });
    let graph = proto::GraphProto {
        name: Some("stress".into()),
        input: vec![value("x", &[N as i64])],
        output: vec![
            value("y", &[(N / 2) as i64]),
            proto::ValueInfoProto { name: Some("z".into()), ..Default::default() },
        ],
        initializer: vec![
            proto::TensorProto {
                name: Some("big".into()),
                data_type: Some(DataType::Float as i32),
                dims: vec![N as i64],
                raw_data: Some(big),
                ..Default::default()
            },
            external,
            tensor_i64("b", &[0]),
            tensor_i64("e", &[0]),
            tensor_i64("s", &[2]),
        ],
        node: vec![
            // Masks: x[::2] and big[::2].
            proto::NodeProto { attribute: vec![mask()], ..strided },
            proto::NodeProto { attribute: vec![mask()], ..big_slice },
            node("Add", "", "add", &["xs", "bigs"], &["y"]),
            mystery,
        ],
        ..Default::default()
    };
    proto::ModelProto {
        ir_version: Some(8),
        producer_name: Some("stress".into()),
        doc_string: Some("a model to keep".into()),
        metadata_props: vec![proto::StringStringEntryProto { key: Some("k".into()), value: Some("v".into()) }],
        opset_import: vec![
            proto::OperatorSetIdProto { domain: Some(String::new()), version: Some(13) },
            proto::OperatorSetIdProto { domain: Some("ai.sliceops".into()), version: Some(1) },
            proto::OperatorSetIdProto { domain: Some("com.example".into()), version: Some(1) },
        ],
        functions: vec![proto::FunctionProto {
            name: Some("Helper".into()),
            domain: Some("com.example".into()),
            input: vec!["a".into()],
            output: vec!["b".into()],
            node: vec![node("Identity", "", "id", &["a"], &["b"])],
            ..Default::default()
        }],
        graph: Some(graph),
        ..Default::default()
    }
}

fn mask() -> proto::AttributeProto {
    proto::AttributeProto {
        name: Some("end_mask".into()),
        r#type: Some(proto::attribute_proto::AttributeType::Int as i32),
        i: Some(1),
        ..Default::default()
    }
}

fn init<'a>(g: &'a proto::GraphProto, name: &str) -> Option<&'a proto::TensorProto> {
    g.initializer.iter().find(|t| t.name.as_deref() == Some(name))
}

#[test]
fn fold_and_lower_keep_everything_unrelated_under_stress() {
    let dir = std::env::temp_dir().join(format!("sliceops-stress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = stress_model(&dir);
    let bytes = model.encode_to_vec();
    let original_graph = model.graph.clone().unwrap();
    for (what, out) in [
        ("fold", sliceops::fold::fold_bytes(&bytes, Some(&dir)).unwrap()),
        ("lower", sliceops::onnx::lower(&bytes, Some(&dir)).unwrap()),
    ] {
        let back = proto::ModelProto::decode(&*out).unwrap();
        assert_eq!(back.metadata_props, model.metadata_props, "{what}");
        assert_eq!(back.functions, model.functions, "{what}");
        assert_eq!(back.doc_string, model.doc_string, "{what}");
        assert_eq!(back.producer_name, model.producer_name, "{what}");
        let g = back.graph.unwrap();
        // The unknown domain's node and the external-data reference are untouched.
        let mystery = g.node.iter().find(|n| n.name.as_deref() == Some("mystery")).unwrap();
        assert_eq!(
            mystery,
            original_graph.node.iter().find(|n| n.name.as_deref() == Some("mystery")).unwrap(),
            "{what}"
        );
        assert_eq!(init(&g, "weights"), init(&original_graph, "weights"), "{what}");
        assert!(g.opset_import_is_kept_for(&back.opset_import, "com.example"), "{what}");
        match what {
            // fold: big[::2] is a constant now (8 MB, exact values), big itself is gone (nothing reads it).
            "fold" => {
                let folded = init(&g, "bigs").expect("the folded slice of big");
                let raw = folded.raw_data.as_ref().unwrap();
                assert_eq!(raw.len(), 1 << 23);
                assert_eq!(&raw[4..8], &2f32.to_le_bytes());
                assert!(init(&g, "big").is_none());
            }
            // lower: big stays byte for byte, no custom node remains.
            _ => {
                assert_eq!(init(&g, "big"), init(&original_graph, "big"));
                assert!(!g.node.iter().any(|n| n.domain.as_deref() == Some("ai.sliceops")));
            }
        }
    }
}

trait OpsetKept {
    fn opset_import_is_kept_for(&self, imports: &[proto::OperatorSetIdProto], domain: &str) -> bool;
}

impl OpsetKept for proto::GraphProto {
    fn opset_import_is_kept_for(&self, imports: &[proto::OperatorSetIdProto], domain: &str) -> bool {
        imports.iter().any(|o| o.domain.as_deref() == Some(domain) && o.version == Some(1))
    }
}
