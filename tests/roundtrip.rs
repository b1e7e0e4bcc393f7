//! `fold` writes a model back losing nothing it did not fold.
//!
//! The model here sets every field of the ONNX IR that `proto/onnx.proto` knows: model metadata,
//! opset imports (ours, the default domain and an unknown one), training info, local functions, device
//! configurations (and a node's placement under one),
//! typed inputs with symbolic dims and denotations, int64 initializers in both storages, an
//! initializer with external data, a sparse initializer, quantization annotations, value_info with
//! metadata, a StridedSlice over the input, a foldable StridedSlice over an initializer, and a node of
//! an unknown domain with attributes of every type (subgraphs included). After `fold`, everything fold
//! has no business changing must be byte-identical; the slice gets its inferred value_info.

use prost::Message;
use sliceops::onnx::proto::{
    self, attribute_proto::AttributeType, tensor_proto::DataLocation, tensor_proto::DataType,
    tensor_shape_proto::dimension::Value as Dim, type_proto,
};
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// Building blocks.

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn kv(key: &str, value: &str) -> proto::StringStringEntryProto {
    proto::StringStringEntryProto { key: s(key), value: s(value) }
}

fn opset(domain: &str, version: i64) -> proto::OperatorSetIdProto {
    proto::OperatorSetIdProto { domain: s(domain), version: Some(version) }
}

/// An int64 initializer stored as little-endian `raw_data`.
fn i64_raw(name: &str, values: &[i64]) -> proto::TensorProto {
    proto::TensorProto {
        name: s(name),
        data_type: Some(DataType::Int64 as i32),
        dims: vec![values.len() as i64],
        raw_data: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ..Default::default()
    }
}

/// An int64 initializer stored in the typed `int64_data` field.
fn i64_typed(name: &str, values: &[i64]) -> proto::TensorProto {
    proto::TensorProto {
        name: s(name),
        data_type: Some(DataType::Int64 as i32),
        dims: vec![values.len() as i64],
        int64_data: values.to_vec(),
        ..Default::default()
    }
}

fn f32_typed(name: &str, dims: &[i64], values: &[f32]) -> proto::TensorProto {
    proto::TensorProto {
        name: s(name),
        data_type: Some(DataType::Float as i32),
        dims: dims.to_vec(),
        float_data: values.to_vec(),
        ..Default::default()
    }
}

fn dim(value: Dim, denotation: Option<&str>) -> proto::tensor_shape_proto::Dimension {
    proto::tensor_shape_proto::Dimension { value: Some(value), denotation: denotation.map(str::to_string) }
}

fn tensor_type(
    elem: DataType,
    dims: Vec<proto::tensor_shape_proto::Dimension>,
    denotation: Option<&str>,
) -> proto::TypeProto {
    proto::TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: Some(elem as i32),
            shape: Some(proto::TensorShapeProto { dim: dims }),
        })),
        denotation: denotation.map(str::to_string),
    }
}

fn value_info(
    name: &str,
    t: proto::TypeProto,
    doc: &str,
    meta: Vec<proto::StringStringEntryProto>,
) -> proto::ValueInfoProto {
    proto::ValueInfoProto { name: s(name), r#type: Some(t), doc_string: s(doc), metadata_props: meta }
}

fn node(op: &str, domain: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> proto::NodeProto {
    proto::NodeProto {
        op_type: s(op),
        domain: s(domain),
        name: s(name),
        input: inputs.iter().map(|v| v.to_string()).collect(),
        output: outputs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

fn attr(name: &str, ty: AttributeType) -> proto::AttributeProto {
    proto::AttributeProto { name: s(name), r#type: Some(ty as i32), ..Default::default() }
}

fn int_attr(name: &str, v: i64) -> proto::AttributeProto {
    proto::AttributeProto { i: Some(v), ..attr(name, AttributeType::Int) }
}

fn sparse(name: &str) -> proto::SparseTensorProto {
    // A 3x3 float matrix with two non-zero entries, at linear offsets 1 and 7.
    proto::SparseTensorProto {
        values: Some(f32_typed(name, &[2], &[1.5, -2.5])),
        indices: Some(i64_typed(&format!("{name}_indices"), &[1, 7])),
        dims: vec![3, 3],
    }
}

/// A small self-contained subgraph: `out = Neg(in) + outer` where `outer` comes from the enclosing scope.
fn subgraph(name: &str, outer: &str) -> proto::GraphProto {
    let f1 = || vec![dim(Dim::DimValue(1), None)];
    proto::GraphProto {
        name: s(name),
        doc_string: s(&format!("subgraph {name}")),
        node: vec![
            node("Neg", "", &format!("{name}_neg"), &[&format!("{name}_in")], &[&format!("{name}_neg_out")]),
            node("Add", "", &format!("{name}_add"), &[&format!("{name}_neg_out"), outer], &[&format!("{name}_out")]),
        ],
        input: vec![value_info(&format!("{name}_in"), tensor_type(DataType::Float, f1(), None), "", vec![])],
        output: vec![value_info(&format!("{name}_out"), tensor_type(DataType::Float, f1(), None), "", vec![])],
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The model.

const EXTERNAL_FILE: &str = "weights.bin";
/// Bytes before the external tensor in its file (exercises the `offset` key).
const EXTERNAL_PAD: usize = 8;
const EXTERNAL_VALUES: [f32; 4] = [1.0, 2.0, 3.0, 4.0];

/// A fresh directory for one test, holding the external data file.
fn test_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sliceops-roundtrip-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut bytes = vec![0xAB; EXTERNAL_PAD];
    bytes.extend(EXTERNAL_VALUES.iter().flat_map(|v| v.to_le_bytes()));
    bytes.extend([0xCD; 4]); // trailing bytes that are not part of the tensor
    std::fs::write(dir.join(EXTERNAL_FILE), bytes).unwrap();
    dir
}

fn external_initializer(name: &str) -> proto::TensorProto {
    proto::TensorProto {
        name: s(name),
        doc_string: s("2x2 weights kept in weights.bin"),
        data_type: Some(DataType::Float as i32),
        dims: vec![2, 2],
        data_location: Some(DataLocation::External as i32),
        external_data: vec![
            kv("location", EXTERNAL_FILE),
            kv("offset", &EXTERNAL_PAD.to_string()),
            kv("length", &(4 * EXTERNAL_VALUES.len()).to_string()),
        ],
        metadata_props: vec![kv("origin", "external")],
        ..Default::default()
    }
}

/// The node of the unknown domain: every attribute type, a subgraph reading an outer initializer.
fn mystery_node() -> proto::NodeProto {
    let mut n = node(
        "Mystery",
        "com.example",
        "mystery",
        &["sliced", "table_slice", "ext_weight", "", "q_scale", "q_zero_point"],
        &["y", "aux"],
    );
    n.overload = s("v2");
    n.doc_string = s("an op nobody here knows; it must survive untouched");
    n.metadata_props = vec![kv("source", "hand-written"), kv("note", "ünïcödé ✓")];
    n.device_configurations = vec![node_device_configuration("sliced")];
    n.attribute = vec![
        proto::AttributeProto {
            f: Some(0.25),
            doc_string: s("a float attribute with a doc string"),
            ..attr("alpha", AttributeType::Float)
        },
        int_attr("count", -3),
        proto::AttributeProto { s: Some(b"reflect\xff\x00bytes".to_vec()), ..attr("mode", AttributeType::String) },
        proto::AttributeProto {
            t: Some(proto::TensorProto {
                name: s("attr_table"),
                data_type: Some(DataType::Int32 as i32),
                dims: vec![2, 2],
                int32_data: vec![1, -2, 3, -4],
                doc_string: s("a tensor attribute"),
                ..Default::default()
            }),
            ..attr("table", AttributeType::Tensor)
        },
        proto::AttributeProto { g: Some(subgraph("body", "sub_outer")), ..attr("body", AttributeType::Graph) },
        proto::AttributeProto {
            sparse_tensor: Some(sparse("attr_sparse")),
            ..attr("mask", AttributeType::SparseTensor)
        },
        proto::AttributeProto {
            tp: Some(tensor_type(
                DataType::Float16,
                vec![dim(Dim::DimParam("K".into()), Some("CHANNEL"))],
                Some("IMAGE"),
            )),
            ..attr("out_type", AttributeType::TypeProto)
        },
        proto::AttributeProto { floats: vec![0.5, -0.0, f32::INFINITY], ..attr("scales", AttributeType::Floats) },
        proto::AttributeProto { ints: vec![i64::MIN, 0, i64::MAX], ..attr("pads", AttributeType::Ints) },
        proto::AttributeProto {
            strings: vec![b"a".to_vec(), vec![], b"c/d%e".to_vec()],
            ..attr("names", AttributeType::Strings)
        },
        proto::AttributeProto {
            tensors: vec![i64_raw("attr_t0", &[7]), f32_typed("attr_t1", &[1], &[8.0])],
            ..attr("tables", AttributeType::Tensors)
        },
        proto::AttributeProto {
            graphs: vec![subgraph("branch", "sub_outer")],
            ..attr("branches", AttributeType::Graphs)
        },
        proto::AttributeProto {
            sparse_tensors: vec![sparse("attr_sparse2")],
            ..attr("masks", AttributeType::SparseTensors)
        },
        proto::AttributeProto {
            type_protos: vec![tensor_type(DataType::Bool, vec![], None)],
            ..attr("types", AttributeType::TypeProtos)
        },
    ];
    n
}

/// `x[:, 1:5:2]` over the runtime input, masks for the first axis.
fn runtime_slice_node() -> proto::NodeProto {
    let mut n = node("StridedSlice", "ai.sliceops", "slice_x", &["x", "ss_begin", "ss_end", "ss_strides"], &["sliced"]);
    n.attribute = vec![int_attr("begin_mask", 1), int_attr("end_mask", 1)];
    n.doc_string = s("x[:, 1:5:2]");
    n.metadata_props = vec![kv("exporter_op", "1-Default/StridedSlice-op0")];
    n
}

/// `table[1:5:2]` over an initializer: fold turns it into the initializer `table_slice` = [1, 3].
fn constant_slice_node() -> proto::NodeProto {
    node("StridedSlice", "ai.sliceops", "fold_me", &["table", "ss2_begin", "ss2_end", "ss2_strides"], &["table_slice"])
}

fn function() -> proto::FunctionProto {
    let mut product = node("Mul", "", "helper_mul", &["a", "b"], &["ab"]);
    product.doc_string = s("function body node");
    let mut body = node("LeakyRelu", "", "helper_relu", &["ab"], &["c"]);
    // The attribute's value is the caller's `gain`.
    body.attribute = vec![proto::AttributeProto { ref_attr_name: s("gain"), ..attr("alpha", AttributeType::Float) }];
    proto::FunctionProto {
        name: s("Helper"),
        domain: s("com.example"),
        overload: s("v1"),
        input: vec!["a".into(), "b".into()],
        output: vec!["c".into()],
        attribute: vec!["unused_attr".into()],
        attribute_proto: vec![proto::AttributeProto { f: Some(1.5), ..attr("gain", AttributeType::Float) }],
        node: vec![product, body],
        doc_string: s("a local function"),
        opset_import: vec![opset("", 13)],
        value_info: vec![value_info(
            "c",
            tensor_type(DataType::Float, vec![], None),
            "function value",
            vec![kv("k", "v")],
        )],
        metadata_props: vec![kv("function_meta", "1")],
    }
}

fn training_info() -> proto::TrainingInfoProto {
    let init_graph = proto::GraphProto {
        name: s("training_init"),
        node: vec![{
            let mut n = node("Constant", "", "init_const", &[], &["init_out"]);
            n.attribute = vec![proto::AttributeProto {
                t: Some(f32_typed("init_value", &[2, 2], &[0.0; 4])),
                ..attr("value", AttributeType::Tensor)
            }];
            n
        }],
        output: vec![value_info("init_out", tensor_type(DataType::Float, vec![], None), "", vec![])],
        ..Default::default()
    };
    let algorithm = proto::GraphProto {
        name: s("training_step"),
        node: vec![node("Identity", "", "step", &["ext_weight"], &["ext_weight_next"])],
        output: vec![value_info("ext_weight_next", tensor_type(DataType::Float, vec![], None), "", vec![])],
        ..Default::default()
    };
    proto::TrainingInfoProto {
        initialization: Some(init_graph),
        algorithm: Some(algorithm),
        initialization_binding: vec![kv("ext_weight", "init_out")],
        update_binding: vec![kv("ext_weight", "ext_weight_next")],
    }
}

fn full_model() -> proto::ModelProto {
    let x_type = tensor_type(
        DataType::Float,
        vec![dim(Dim::DimParam("N".into()), Some("DATA_BATCH")), dim(Dim::DimValue(6), Some("DATA_FEATURE"))],
        Some("TENSOR"),
    );
    let y_type = tensor_type(DataType::Float, vec![dim(Dim::DimParam("M".into()), None)], None);
    let graph = proto::GraphProto {
        name: s("everything"),
        doc_string: s("a graph with every field set"),
        node: vec![constant_slice_node(), runtime_slice_node(), mystery_node()],
        initializer: vec![
            i64_raw("ss_begin", &[0, 1]),
            i64_typed("ss_end", &[0, 5]),
            i64_raw("ss_strides", &[1, 2]),
            i64_raw("table", &[0, 1, 2, 3, 4, 5]),
            i64_raw("ss2_begin", &[1]),
            i64_raw("ss2_end", &[5]),
            i64_raw("ss2_strides", &[2]),
            external_initializer("ext_weight"),
            f32_typed("q_scale", &[], &[0.125]),
            proto::TensorProto {
                name: s("q_zero_point"),
                data_type: Some(DataType::Int8 as i32),
                dims: vec![],
                int32_data: vec![-4],
                ..Default::default()
            },
            f32_typed("sub_outer", &[1], &[10.0]),
        ],
        sparse_initializer: vec![sparse("sparse_w")],
        input: vec![value_info("x", x_type, "the data", vec![kv("layout", "NC")])],
        output: vec![
            value_info("y", y_type.clone(), "main output", vec![kv("unit", "m")]),
            value_info("aux", y_type, "", vec![]),
        ],
        // A hint that contradicts inference ([N, 3]; the slice gives [N, 2]); its other fields must stay.
        value_info: vec![value_info(
            "sliced",
            tensor_type(
                DataType::Float,
                vec![dim(Dim::DimParam("N".into()), None), dim(Dim::DimValue(3), None)],
                Some("TENSOR"),
            ),
            "the sliced input",
            vec![kv("checked", "no")],
        )],
        quantization_annotation: vec![proto::TensorAnnotation {
            tensor_name: s("sliced"),
            quant_parameter_tensor_names: vec![kv("SCALE_TENSOR", "q_scale"), kv("ZERO_POINT_TENSOR", "q_zero_point")],
        }],
        metadata_props: vec![kv("graph_meta", "g")],
    };
    proto::ModelProto {
        ir_version: Some(10),
        opset_import: vec![opset("", 13), opset("ai.sliceops", 1), opset("com.example", 1)],
        producer_name: s("sliceops-roundtrip"),
        producer_version: s("0.0.1-test"),
        domain: s("org.example.models"),
        model_version: Some(42),
        doc_string: s("every field set"),
        graph: Some(graph),
        metadata_props: vec![kv("author", "test"), kv("license", "MIT")],
        training_info: vec![training_info()],
        functions: vec![function()],
        configuration: vec![device_configuration()],
    }
}

/// A device configuration of two named devices (IR 11's multi-device fields).
fn device_configuration() -> proto::DeviceConfigurationProto {
    proto::DeviceConfigurationProto {
        name: s("two_gpus"),
        num_devices: Some(2),
        device: vec!["cuda:0".to_string(), "cuda:1".to_string()],
    }
}

/// A node's placement under [`device_configuration`]: its first input split in two along axis 0.
fn node_device_configuration(tensor: &str) -> proto::NodeDeviceConfigurationProto {
    proto::NodeDeviceConfigurationProto {
        configuration_id: s("two_gpus"),
        sharding_spec: vec![proto::ShardingSpecProto {
            tensor_name: s(tensor),
            device: vec![0, 1],
            index_to_device_group_map: vec![proto::IntIntListEntryProto { key: Some(0), value: vec![0, 1] }],
            sharded_dim: vec![proto::ShardedDimProto {
                axis: Some(0),
                simple_sharding: vec![proto::SimpleShardedDimProto {
                    dim: Some(proto::simple_sharded_dim_proto::Dim::DimParam("N".into())),
                    num_shards: Some(2),
                }],
            }],
        }],
        pipeline_stage: Some(1),
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison helpers: sub-messages compared as their encoded bytes, mismatches collected.

fn bytes<M: Message>(m: &M) -> Vec<u8> {
    m.encode_to_vec()
}

fn all_bytes<M: Message>(ms: &[M]) -> Vec<Vec<u8>> {
    ms.iter().map(bytes).collect()
}

struct Report(Vec<String>);

impl Report {
    fn same<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, got: T, want: T) {
        if got != want {
            self.0.push(format!("{what} changed:\n   got {got:?}\n  want {want:?}"));
        }
    }

    fn same_msgs<M: Message + std::fmt::Debug>(&mut self, what: &str, got: &[M], want: &[M]) {
        if all_bytes(got) != all_bytes(want) {
            self.0.push(format!("{what} changed (encoded bytes differ):\n   got {got:#?}\n  want {want:#?}"));
        }
    }

    fn check(&mut self, what: &str, ok: bool) {
        if !ok {
            self.0.push(what.to_string());
        }
    }

    fn finish(self) {
        assert!(self.0.is_empty(), "{} problem(s):\n- {}", self.0.len(), self.0.join("\n- "));
    }
}

fn find<'a>(list: &'a [proto::TensorProto], name: &str) -> Option<&'a proto::TensorProto> {
    list.iter().find(|t| t.name.as_deref() == Some(name))
}

/// The values of an int64 initializer, whichever storage it uses.
fn int64_values(t: &proto::TensorProto) -> Vec<i64> {
    match t.raw_data.as_deref() {
        Some(raw) if !raw.is_empty() => {
            raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
        }
        _ => t.int64_data.clone(),
    }
}

fn fold_in(dir: &Path, model: &proto::ModelProto) -> proto::ModelProto {
    let input = model.encode_to_vec();
    // The bytes sliceops reads are exactly what we built (prost round trip of our own message).
    assert_eq!(proto::ModelProto::decode(&*input).unwrap(), *model);
    let folded = match sliceops::fold::fold_bytes(&input, Some(dir)) {
        Ok(b) => b,
        Err(e) => panic!("fold failed on the full model: {e:#}"),
    };
    proto::ModelProto::decode(&*folded).expect("fold wrote bytes that do not decode as a ModelProto")
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn the_external_data_file_is_what_the_initializer_says() {
    // Guards the fixture itself: offset and length select exactly EXTERNAL_VALUES.
    let dir = test_dir("external");
    let file = std::fs::read(dir.join(EXTERNAL_FILE)).unwrap();
    let values: Vec<f32> = file[EXTERNAL_PAD..EXTERNAL_PAD + 16]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, EXTERNAL_VALUES);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fold_keeps_every_field_it_does_not_fold() {
    let dir = test_dir("full");
    let original = full_model();
    let folded = fold_in(&dir, &original);
    let mut r = Report(vec![]);

    // Model-level fields, one by one, then all of them at once (everything but the graph).
    r.same("ir_version", folded.ir_version, original.ir_version);
    r.same_msgs("opset_import", &folded.opset_import, &original.opset_import);
    r.same("producer_name", &folded.producer_name, &original.producer_name);
    r.same("producer_version", &folded.producer_version, &original.producer_version);
    r.same("domain", &folded.domain, &original.domain);
    r.same("model_version", folded.model_version, original.model_version);
    r.same("doc_string", &folded.doc_string, &original.doc_string);
    r.same_msgs("metadata_props", &folded.metadata_props, &original.metadata_props);
    r.same_msgs("training_info", &folded.training_info, &original.training_info);
    r.same_msgs("functions", &folded.functions, &original.functions);
    let without_graph = |m: &proto::ModelProto| bytes(&proto::ModelProto { graph: None, ..m.clone() });
    r.check(
        "the model's fields other than the graph are not byte-identical",
        without_graph(&folded) == without_graph(&original),
    );

    let (g, og) = (folded.graph.as_ref().expect("the folded model has a graph"), original.graph.as_ref().unwrap());
    r.same("graph.name", &g.name, &og.name);
    r.same("graph.doc_string", &g.doc_string, &og.doc_string);
    r.same_msgs("graph.input", &g.input, &og.input);
    // Mystery's outputs are unknown to analysis: the declared outputs stay exactly as written.
    r.same_msgs("graph.output", &g.output, &og.output);
    r.same_msgs("graph.sparse_initializer", &g.sparse_initializer, &og.sparse_initializer);
    r.same_msgs("graph.quantization_annotation", &g.quantization_annotation, &og.quantization_annotation);
    r.same_msgs("graph.metadata_props", &g.metadata_props, &og.metadata_props);

    // Nodes: the constant slice is folded away; the runtime slice and the Mystery node stay, as written.
    let names: Vec<_> = g.node.iter().map(|n| n.name.clone().unwrap_or_default()).collect();
    r.same("graph.node names", names, vec!["slice_x".to_string(), "mystery".to_string()]);
    let node = |name: &str| g.node.iter().find(|n| n.name.as_deref() == Some(name));
    r.same_msgs(
        "the StridedSlice node over x",
        &node("slice_x").cloned().into_iter().collect::<Vec<_>>(),
        &[runtime_slice_node()],
    );
    r.same_msgs(
        "the Mystery node (com.example)",
        &node("mystery").cloned().into_iter().collect::<Vec<_>>(),
        &[mystery_node()],
    );

    // Initializers: the ones still read stay byte-identical, in their order (the external one still
    // external: same data_location and external_data, no raw_data); the folded value is added; what
    // only the folded node read is gone.
    let kept = ["ss_begin", "ss_end", "ss_strides", "ext_weight", "q_scale", "q_zero_point", "sub_outer"];
    let want: Vec<proto::TensorProto> =
        og.initializer.iter().filter(|t| kept.contains(&t.name.as_deref().unwrap())).cloned().collect();
    let got: Vec<proto::TensorProto> =
        g.initializer.iter().filter(|t| kept.contains(&t.name.as_deref().unwrap_or(""))).cloned().collect();
    r.same_msgs("the initializers fold does not touch", &got, &want);
    if let Some(ext) = find(&g.initializer, "ext_weight") {
        r.same_msgs("the external-data initializer", std::slice::from_ref(ext), &[external_initializer("ext_weight")]);
        r.check("the external-data initializer was inlined", ext.raw_data.is_none());
    } else {
        r.check("the external-data initializer (read by Mystery) was removed", false);
    }
    for gone in ["table", "ss2_begin", "ss2_end", "ss2_strides"] {
        r.check(
            &format!("initializer {gone} (read only by the folded node) is still there"),
            find(&g.initializer, gone).is_none(),
        );
    }
    match find(&g.initializer, "table_slice") {
        Some(t) => {
            r.same("table_slice data_type", t.data_type, Some(DataType::Int64 as i32));
            r.same("table_slice dims", t.dims.clone(), vec![2]);
            r.same("table_slice values", int64_values(t), vec![1, 3]);
        }
        None => r.check("no initializer table_slice for the folded table[1:5:2]", false),
    }
    let mut init_names: Vec<_> = g.initializer.iter().filter_map(|t| t.name.clone()).collect();
    init_names.sort();
    let mut want_names: Vec<String> = kept.iter().chain(&["table_slice"]).map(|n| n.to_string()).collect();
    want_names.sort();
    r.same("initializer names", init_names, want_names);

    // value_info: exactly the slice output, its declared doc/metadata/denotation kept, its shape inferred.
    let infos: Vec<_> = g.value_info.iter().map(|v| v.name.clone().unwrap_or_default()).collect();
    r.same("value_info names", infos, vec!["sliced".to_string()]);
    match g.value_info.iter().find(|v| v.name.as_deref() == Some("sliced")) {
        Some(v) => {
            let declared = &og.value_info[0];
            r.same("value_info sliced: doc_string", &v.doc_string, &declared.doc_string);
            r.same_msgs("value_info sliced: metadata_props", &v.metadata_props, &declared.metadata_props);
            let t = v.r#type.as_ref();
            r.same("value_info sliced: type denotation", t.and_then(|t| t.denotation.as_deref()), Some("TENSOR"));
            let want = tensor_type(
                DataType::Float,
                vec![dim(Dim::DimParam("N".into()), None), dim(Dim::DimValue(2), None)],
                None,
            );
            r.same(
                "value_info sliced: tensor type (inferred [N, 2] float)",
                t.and_then(|t| t.value.clone()),
                want.value,
            );
        }
        None => r.check("no value_info for the slice output 'sliced'", false),
    }

    // Nothing else in the graph: compare the whole graph with what we expect it to be.
    let mut expected = og.clone();
    expected.node = vec![runtime_slice_node(), mystery_node()];
    expected.initializer = g.initializer.clone(); // checked above
    expected.value_info = g.value_info.clone(); // checked above
    r.check(
        "the graph has other changes than the folded node, initializers and value_info",
        bytes(g) == bytes(&expected),
    );

    let _ = std::fs::remove_dir_all(&dir);
    r.finish();
}

#[test]
fn fold_keeps_initializers_that_annotations_and_training_info_name() {
    // Initializers that no node reads but that the graph's quantization annotation or the model's
    // training info refers to by name are part of the model: removing them leaves dangling names
    // (the annotation points at nothing, the training bindings at a missing initializer).
    let dir = test_dir("bindings");
    let mut model = full_model();
    {
        let g = model.graph.as_mut().unwrap();
        let m = g.node.iter_mut().find(|n| n.name.as_deref() == Some("mystery")).unwrap();
        // Mystery no longer reads ext_weight nor the quantization parameters.
        m.input = vec!["sliced".into(), "table_slice".into()];
        // A trainable weight only the training algorithm updates.
        g.initializer.push(f32_typed("trainable", &[2, 2], &[0.5; 4]));
    }
    model.training_info[0].initialization_binding = vec![kv("trainable", "init_out")];
    model.training_info[0].update_binding = vec![kv("trainable", "ext_weight_next")];
    let folded = fold_in(&dir, &model);
    let g = folded.graph.as_ref().unwrap();
    let mut r = Report(vec![]);
    for name in ["q_scale", "q_zero_point"] {
        r.check(
            &format!("initializer {name}, named by graph.quantization_annotation, was removed"),
            find(&g.initializer, name).is_some(),
        );
    }
    r.check("initializer trainable, bound by training_info, was removed", find(&g.initializer, "trainable").is_some());
    r.check(
        "initializer ext_weight, read by training_info's algorithm graph, was removed",
        find(&g.initializer, "ext_weight").is_some(),
    );
    r.same_msgs(
        "graph.quantization_annotation",
        &g.quantization_annotation,
        &model.graph.as_ref().unwrap().quantization_annotation,
    );
    r.same_msgs("training_info", &folded.training_info, &model.training_info);
    let _ = std::fs::remove_dir_all(&dir);
    r.finish();
}

#[test]
fn fold_keeps_the_dim_denotations_of_declared_types() {
    // Inference replaces declared dims (hints) with the inferred ones, but a dim's denotation says what
    // the axis means, not how long it is: where the declared rank is the inferred rank, each axis keeps
    // its denotation (and the type its own), in value_info and in graph outputs alike. (A Relu after the
    // slice: an Identity would be removed, its graph output name moving to the slice.)
    let dir = test_dir("denotations");
    let declared = |last: Dim| {
        tensor_type(
            DataType::Float,
            vec![dim(Dim::DimParam("N".into()), Some("DATA_BATCH")), dim(last, Some("DATA_FEATURE"))],
            Some("TENSOR"),
        )
    };
    let model = proto::ModelProto {
        ir_version: Some(10),
        opset_import: vec![opset("", 13), opset("ai.sliceops", 1)],
        graph: Some(proto::GraphProto {
            name: s("denotations"),
            node: vec![runtime_slice_node(), node("Relu", "", "relu", &["sliced"], &["y"])],
            initializer: vec![
                i64_raw("ss_begin", &[0, 1]),
                i64_typed("ss_end", &[0, 5]),
                i64_raw("ss_strides", &[1, 2]),
            ],
            input: vec![value_info("x", declared(Dim::DimValue(6)), "", vec![])],
            // Both declared shapes are wrong in their last dim (3, M); inference gives [N, 2].
            value_info: vec![value_info("sliced", declared(Dim::DimValue(3)), "", vec![])],
            output: vec![value_info("y", declared(Dim::DimParam("M".into())), "", vec![])],
            ..Default::default()
        }),
        ..Default::default()
    };
    let folded = fold_in(&dir, &model);
    let g = folded.graph.as_ref().unwrap();
    let want = declared(Dim::DimValue(2));
    let mut r = Report(vec![]);
    let sliced = g.value_info.iter().find(|v| v.name.as_deref() == Some("sliced"));
    r.same("value_info 'sliced' type", sliced.and_then(|v| v.r#type.clone()), Some(want.clone()));
    let y = g.output.iter().find(|v| v.name.as_deref() == Some("y"));
    r.same("graph output 'y' type", y.and_then(|v| v.r#type.clone()), Some(want));
    let _ = std::fs::remove_dir_all(&dir);
    r.finish();
}
