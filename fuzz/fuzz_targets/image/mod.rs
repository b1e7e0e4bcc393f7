//! Shared body of the image-decoder targets (one per format): arbitrary bytes, given the format's
//! signature when they lack it, decoded by a one-node model (`ImageDecoder`, opset 20) through the
//! public API, in each pixel format. Each run gives pixels, the empty image or an error naming the
//! node: never a panic, and never an allocation past the budget the node charges from the headers
//! (what the process can allocate: run these targets with the address space bounded, e.g.
//! `ulimit -v 4194304` and `-s none`, or with `-malloc_limit_mb` above the machine's memory, so that
//! libFuzzer's limit and the node's budget agree; a larger allocation is caught by libFuzzer).

use sliceops::onnx::proto;
use sliceops::tract_onnx::prelude::*;
use sliceops::Model;
use std::sync::OnceLock;

/// The pixel formats, with their channels.
const FORMATS: [(&str, usize); 2] = [("RGB", 3), ("Grayscale", 1)];

/// A one-node model decoding its input `data` (1-D uint8 of length `n`) to `y` in `format`.
fn decoder(format: &str) -> Model {
    let value = |name: &str, elem: proto::tensor_proto::DataType, dims: Vec<proto::tensor_shape_proto::Dimension>| {
        proto::ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(proto::TypeProto {
                value: Some(proto::type_proto::Value::TensorType(proto::type_proto::Tensor {
                    elem_type: Some(elem as i32),
                    shape: Some(proto::TensorShapeProto { dim: dims }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        }
    };
    let dim = |name: &str| proto::tensor_shape_proto::Dimension {
        value: Some(proto::tensor_shape_proto::dimension::Value::DimParam(name.into())),
        ..Default::default()
    };
    let u8 = proto::tensor_proto::DataType::Uint8;
    let model = proto::ModelProto {
        ir_version: Some(9),
        opset_import: vec![proto::OperatorSetIdProto { domain: Some(String::new()), version: Some(20) }],
        graph: Some(proto::GraphProto {
            name: Some("decode".into()),
            node: vec![proto::NodeProto {
                name: Some("dec".into()),
                op_type: Some("ImageDecoder".into()),
                input: vec!["data".into()],
                output: vec!["y".into()],
                attribute: vec![proto::AttributeProto {
                    name: Some("pixel_format".into()),
                    r#type: Some(proto::attribute_proto::AttributeType::String as i32),
                    s: Some(format.as_bytes().to_vec()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            input: vec![value("data", u8, vec![dim("n")])],
            output: vec![value("y", u8, vec![dim("h"), dim("w"), dim("c")])],
            ..Default::default()
        }),
        ..Default::default()
    };
    Model::load_bytes(&prost::Message::encode_to_vec(&model)).expect("the decoder model loads")
}

/// The decoder models, one per pixel format, made once.
fn decoders() -> &'static [(Model, usize); 2] {
    static MODELS: OnceLock<[(Model, usize); 2]> = OnceLock::new();
    MODELS.get_or_init(|| FORMATS.map(|(format, channels)| (decoder(format), channels)))
}

/// Decodes `data` (prefixed with `signature` unless it starts with it) in each pixel format.
pub fn check(signature: &[u8], data: &[u8]) {
    let data = if data.starts_with(signature) { data.to_vec() } else { [signature, data].concat() };
    for (model, channels) in decoders() {
        match model.run(vec![tensor1(&data)]) {
            Ok(outputs) => {
                let y = &outputs[0].1;
                let shape = y.shape();
                assert_eq!(shape.len(), 3, "{shape:?}");
                // Pixels in the format's channels, or the empty image of a stream that cannot be decoded.
                assert!(shape[2] == *channels || shape.iter().product::<usize>() == 0, "{shape:?}");
            }
            Err(e) => {
                let text = format!("{e:#}");
                assert!(text.contains("node 'dec' (ImageDecoder)"), "{text}");
                assert!(!text.contains("panicked"), "{text}");
            }
        }
    }
}
