//! Compiles `proto/onnx.proto` (our transcription of the ONNX IR schema) into Rust types with prost.
//! protox parses the schema in pure Rust, so no `protoc` is needed on the machine.

fn main() {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    let descriptors = protox::compile(["onnx.proto"], ["proto"]).expect("proto/onnx.proto does not parse");
    prost_build::Config::new().compile_fds(descriptors).expect("prost cannot generate code for proto/onnx.proto");
}
