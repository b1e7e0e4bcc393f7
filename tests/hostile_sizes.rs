//! Hostile inputs, sizes past 64 bits (issue 30, point 4): shapes whose element count or byte size
//! does not fit in 64 bits never wrap to an empty tensor. A node over constants whose output has
//! more elements than `i64` counts is an error naming it (`Tile`, `Expand`, `Resize` to
//! `[2^33, 2^33]`); one whose elements fit but whose bytes do not (`ConstantOfShape([2^62])`) is
//! typed with its exact shape and computed only when the model runs, where it is refused; `Shape`
//! of such a value gives its exact shape, as onnxruntime does; `fold` never writes an empty
//! initializer in its place. Every call under a 1 GiB address-space limit and the CLI deadline.

mod common;

use common::cli::{scratch, sliceops_limited, Limits};
use common::onnx_build::{Builder, D};
use prost::Message;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

const LIMIT: Limits = Limits { file_size: None, address_space: Some(1 << 30) };
const E62: i64 = 1 << 62;
const E33: i64 = 1 << 33;

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.display().to_string()
}

/// `big = ConstantOfShape([2^62])` (float32 zeros: 2^64 bytes), `y = Shape(big)`, `z = big[0:4]`.
fn constant_of_shape() -> Vec<u8> {
    Builder::new(13)
        .init_i64("s", &[E62])
        .node("ConstantOfShape", "", "huge", &["s"], &["big"], vec![])
        .node("Shape", "", "shape", &["big"], &["y"], vec![])
        .init_i64("st", &[0])
        .init_i64("en", &[4])
        .node("Slice", "", "small", &["big", "st", "en"], &["z"], vec![])
        .output("y")
        .output("z")
        .bytes()
}

/// `y = Shape(Expand(x, [2^62]))`, `x` a float input of shape [1] (or a constant when `constant`).
fn shape_of_expand(constant: bool) -> Vec<u8> {
    let b = Builder::new(13);
    let b = if constant { b.init_f32("x", &[1], &[1.0]) } else { b.input("x", DataType::Float, &[D::N(1)]) };
    b.init_i64("s", &[E62])
        .node("Expand", "", "huge", &["x", "s"], &["big"], vec![])
        .node("Shape", "", "shape", &["big"], &["y"], vec![])
        .output("y")
        .bytes()
}

/// Each node over constants to `[2^33, 2^33]`: its op and model.
fn uncountable() -> Vec<(&'static str, Vec<u8>)> {
    let one = || Builder::new(13).init_f32("one", &[1, 1], &[1.0]);
    let tail = |b: Builder| b.node("Shape", "", "shape", &["big"], &["y"], vec![]).output("y").bytes();
    let sizes = [1, 1, E33, E33];
    vec![
        ("Tile", tail(one().init_i64("r", &[E33, E33]).node("Tile", "", "huge", &["one", "r"], &["big"], vec![]))),
        ("Expand", tail(one().init_i64("s", &[E33, E33]).node("Expand", "", "huge", &["one", "s"], &["big"], vec![]))),
        (
            "ConstantOfShape",
            tail(Builder::new(13).init_i64("s", &[E33, E33]).node(
                "ConstantOfShape",
                "",
                "huge",
                &["s"],
                &["big"],
                vec![],
            )),
        ),
        (
            "Resize",
            tail(Builder::new(13).init_f32("img", &[1, 1, 1, 1], &[1.0]).init_i64("sizes", &sizes).node(
                "Resize",
                "",
                "huge",
                &["img", "", "", "sizes"],
                &["big"],
                vec![],
            )),
        ),
    ]
}

#[test]
fn elements_past_i64_are_an_error_naming_the_node() {
    let d = scratch("hostile_sizes", "elements_past_i64_are_an_error_naming_the_node");
    for (op, bytes) in uncountable() {
        let model = write(&d, &format!("{op}.onnx"), &bytes);
        let want = format!(
            "error: node 'huge' ({op}): its output of shape [1, 1, 8589934592, 8589934592] has more elements than \
             64-bit sizes can count (9223372036854775807 is the most)"
        );
        let want = if op == "Resize" { want } else { want.replace("[1, 1, ", "[") };
        let out = d.join(format!("{op}.out")).display().to_string();
        let folded = d.join(format!("{op}.folded.onnx")).display().to_string();
        for args in
            [vec!["infer", &model], vec!["run", &model, "--output-dir", &out], vec!["fold", &model, "-o", &folded]]
        {
            let run = sliceops_limited(&args, LIMIT);
            assert_eq!(run.error(), want, "{op} {}", args[0]);
        }
        assert!(!std::path::Path::new(&folded).exists(), "{op}: fold wrote a file");
    }
}

#[test]
fn bytes_past_u64_keep_their_exact_shape_and_are_refused_when_run() {
    let d = scratch("hostile_sizes", "bytes_past_u64_keep_their_exact_shape_and_are_refused_when_run");
    let model = write(&d, "cos.onnx", &constant_of_shape());
    let run = sliceops_limited(&["infer", &model], LIMIT);
    run.ok();
    let rows: Vec<&str> = run.stdout.lines().map(str::trim_end).collect();
    assert!(rows.contains(&"y     int64    [1]"), "{run:#?}");
    assert!(rows.contains(&"z     float32  [4]"), "{run:#?}");
    assert!(
        run.stderr.contains(
            "note: node 'huge' (ConstantOfShape): computed only when the model runs: its output (shape \
             [4611686018427387904]) has a dim past 32 bits, which tract's own rules misread: it is not computed \
             before the model runs"
        ),
        "{run:#?}"
    );
    // The library: Shape gives the exact dim, as onnxruntime does.
    let facts = sliceops::Model::load_bytes(&constant_of_shape()).unwrap().infer().unwrap();
    let big = facts.iter().find(|f| f.name == "big").unwrap();
    assert_eq!(big.shape, [E62.to_dim()]);
    // run: one error naming the node, before anything is allocated.
    let out = d.join("out").display().to_string();
    let run = sliceops_limited(&["run", &model, "--output-dir", &out], LIMIT);
    let line = run.error();
    assert!(
        line.starts_with("error: node 'huge")
            && line.contains("value of shape [4611686018427387904] would take more bytes than can be counted"),
        "{line}"
    );
    assert!(!std::path::Path::new(&out).join("y.npy").exists());
    // fold: the node stays; no empty initializer takes its place.
    let folded = d.join("folded.onnx");
    sliceops_limited(&["fold", &model, "-o", &folded.display().to_string()], LIMIT).ok();
    let proto = sliceops::onnx::proto::ModelProto::decode(&*std::fs::read(&folded).unwrap()).unwrap();
    let graph = proto.graph.unwrap();
    assert!(graph.node.iter().any(|n| n.op_type.as_deref() == Some("ConstantOfShape")), "{graph:?}");
    for init in &graph.initializer {
        let numel: i64 = init.dims.iter().product();
        let stored = init.raw_data.as_ref().map_or(0, |r| r.len()) + init.int64_data.len() + init.float_data.len();
        assert!(numel == 0 || stored > 0, "an empty initializer {:?} of dims {:?}", init.name, init.dims);
    }
}

#[test]
fn shape_of_a_value_past_u64_bytes_is_its_exact_shape() {
    let d = scratch("hostile_sizes", "shape_of_a_value_past_u64_bytes_is_its_exact_shape");
    let x = d.join("x.npy");
    sliceops::npy::write_npy(&x, &tensor1(&[2f32])).unwrap();
    for constant in [false, true] {
        let model = write(&d, &format!("m{constant}.onnx"), &shape_of_expand(constant));
        let out = d.join(format!("out{constant}"));
        let mut args = vec!["run".to_string(), model.clone(), "--output-dir".into(), out.display().to_string()];
        if !constant {
            args.extend(["--input".to_string(), format!("x={}", x.display())]);
        }
        sliceops_limited(&args, LIMIT).ok();
        let y = sliceops::npy::read_npy(&out.join("y.npy")).unwrap();
        assert_eq!(y, tensor1(&[E62]), "constant x: {constant}");
        // fold gives the same value as an initializer.
        let folded = d.join(format!("f{constant}.onnx"));
        sliceops_limited(&["fold", &model, "-o", &folded.display().to_string()], LIMIT).ok();
        let out = d.join(format!("fout{constant}"));
        let mut args =
            vec!["run".to_string(), folded.display().to_string(), "--output-dir".into(), out.display().to_string()];
        if !constant {
            args.extend(["--input".to_string(), format!("x={}", x.display())]);
        }
        sliceops_limited(&args, LIMIT).ok();
        assert_eq!(sliceops::npy::read_npy(&out.join("y.npy")).unwrap(), tensor1(&[E62]));
    }
}

/// Sizes known only when the model runs: a shape input of `[2^62]`, `[2^32 + 1]` or `[2^33, 2^33]`, or
/// repeats of `[2^32 + 1, 1]`, are refused by the node computing them, with one error giving the
/// exact shape, never an empty or truncated tensor.
#[test]
fn runtime_sizes_past_32_and_64_bits_are_refused_when_run() {
    let d = scratch("hostile_sizes", "runtime_sizes_past_32_and_64_bits_are_refused_when_run");
    let model = Builder::new(13)
        .input("s", DataType::Int64, &[D::S("n")])
        .node("ConstantOfShape", "", "huge", &["s"], &["y"], vec![])
        .output("y")
        .bytes();
    let model = write(&d, "runtime.onnx", &model);
    let tile = Builder::new(13)
        .init_f32("one", &[1, 1], &[1.0])
        .input("r", DataType::Int64, &[D::N(2)])
        .node("Tile", "", "huge", &["one", "r"], &["y"], vec![])
        .output("y")
        .bytes();
    let tile = write(&d, "tile.onnx", &tile);
    let e32 = (1i64 << 32) + 1;
    for (path, input, values, op, shape) in [
        (&model, "s", vec![E62], "ConstantOfShape", "[4611686018427387904]"),
        (&model, "s", vec![e32], "ConstantOfShape", "[4294967297]"),
        (&model, "s", vec![E33, E33], "ConstantOfShape", "[8589934592, 8589934592]"),
        (&tile, "r", vec![e32, 1], "Tile", "[4294967297, 1]"),
    ] {
        let npy = d.join("in.npy");
        sliceops::npy::write_npy(&npy, &tensor1(&values)).unwrap();
        let out = d.join("out").display().to_string();
        let run = sliceops_limited(
            &["run", path, "--input", &format!("{input}={}", npy.display()), "--output-dir", &out],
            LIMIT,
        );
        let want = format!("error: node 'huge' ({op}): an output of shape {shape} is too large to allocate");
        assert_eq!(run.error(), want, "{values:?}");
        assert!(!std::path::Path::new(&out).join("y.npy").exists());
    }
}
