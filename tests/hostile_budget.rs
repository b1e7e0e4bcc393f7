//! Hostile inputs, sizes computed from values (issue 15): a tiny model whose constants ask for a huge
//! tensor (`ConstantOfShape([2048, 1048576])`, 8 GiB of float) is analysed, folded and lowered
//! without computing it, under a 1 GiB address-space limit and the CLI deadline; `run`, which would
//! need the memory, refuses it with one clear error before allocating. One case per op whose output
//! size comes from values: ConstantOfShape, Expand, Tile, Range, Pad, OneHot, Resize (and Upsample,
//! built as a Resize), Concat.

mod common;

use common::cli::{scratch, sliceops_limited, Limits};
use common::onnx_build::{Builder, A};
use prost::Message;
use tract_onnx::pb::tensor_proto::DataType;

/// The address space every call gets: an eighth of the tensor the models ask for.
const LIMIT: Limits = Limits { file_size: None, address_space: Some(1 << 30) };

/// 2048 x 1048576: 8 GiB as float32.
const BIG: [i64; 2] = [2048, 1 << 20];

/// `y = big[0:1, 0:4]` after the nodes of `b` made `big` (rank 2); opset 13 Slice.
fn slice_of_big(b: Builder) -> Vec<u8> {
    b.init_i64("st", &[0, 0])
        .init_i64("en", &[1, 4])
        .node("Slice", "", "small", &["big", "st", "en"], &["y"], vec![])
        .output("y")
        .bytes()
}

fn f32_raw(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Each case: name, model, the op kept, the shape of `y`, the dtype of `y`.
fn cases() -> Vec<(&'static str, Vec<u8>, &'static str, &'static str, &'static str)> {
    let one = |b: Builder| b.init_f32("one", &[1, 1], &[1.0]);
    let mut cases = vec![
        (
            "constant_of_shape",
            slice_of_big(Builder::new(13).init_i64("s", &BIG).node(
                "ConstantOfShape",
                "",
                "huge",
                &["s"],
                &["big"],
                vec![],
            )),
            "ConstantOfShape",
            "[1, 4]",
            "float32",
        ),
        (
            "expand",
            slice_of_big(one(Builder::new(13)).init_i64("s", &BIG).node(
                "Expand",
                "",
                "huge",
                &["one", "s"],
                &["big"],
                vec![],
            )),
            "Expand",
            "[1, 4]",
            "float32",
        ),
        (
            "tile",
            slice_of_big(one(Builder::new(13)).init_i64("r", &BIG).node(
                "Tile",
                "",
                "huge",
                &["one", "r"],
                &["big"],
                vec![],
            )),
            "Tile",
            "[1, 4]",
            "float32",
        ),
        (
            "pad",
            slice_of_big(one(Builder::new(13)).init_i64("p", &[0, 0, BIG[0] - 1, BIG[1] - 1]).node(
                "Pad",
                "",
                "huge",
                &["one", "p"],
                &["big"],
                vec![],
            )),
            "Pad",
            "[1, 4]",
            "float32",
        ),
        (
            "one_hot",
            slice_of_big(
                Builder::new(13)
                    .init_i64("ix", &[0; 2048])
                    .init_i64("depth", &[BIG[1]])
                    .init_f32("values", &[2], &[0.0, 1.0])
                    .node("OneHot", "", "huge", &["ix", "depth", "values"], &["big"], vec![]),
            ),
            "OneHot",
            "[1, 4]",
            "float32",
        ),
    ];
    // Range: 2^31 int64 values, 16 GiB.
    cases.push((
        "range",
        Builder::new(13)
            .init("start", DataType::Int64, &[], 0i64.to_le_bytes().to_vec())
            .init("limit", DataType::Int64, &[], (1i64 << 31).to_le_bytes().to_vec())
            .init("delta", DataType::Int64, &[], 1i64.to_le_bytes().to_vec())
            .node("Range", "", "huge", &["start", "limit", "delta"], &["big"], vec![])
            .init_i64("st", &[0])
            .init_i64("en", &[4])
            .node("Slice", "", "small", &["big", "st", "en"], &["y"], vec![])
            .output("y")
            .bytes(),
        "Range",
        "[4]",
        "int64",
    ));
    // Resize: a [1, 1, 1, 1] image scaled by [1, 1, 2048, 1048576].
    let scales = f32_raw(&[1.0, 1.0, BIG[0] as f32, BIG[1] as f32]);
    let image = |b: Builder| b.init_f32("img", &[1, 1, 1, 1], &[1.0]);
    let slice4 = |b: Builder| {
        b.init_i64("st", &[0, 0, 0, 0])
            .init_i64("en", &[1, 1, 1, 4])
            .node("Slice", "", "small", &["big", "st", "en"], &["y"], vec![])
            .output("y")
            .bytes()
    };
    cases.push((
        "resize",
        slice4(image(Builder::new(13)).init("scales", DataType::Float, &[4], scales.clone()).node(
            "Resize",
            "",
            "huge",
            &["img", "", "scales"],
            &["big"],
            vec![],
        )),
        "Resize",
        "[1, 1, 1, 4]",
        "float32",
    ));
    // Concat: one 1 MiB initializer 4096 times over, 4 GiB.
    let names = vec!["part"; 4096];
    cases.push((
        "concat",
        slice_of_big(Builder::new(13).init_f32("part", &[256, 1024], &vec![1.0; 256 * 1024]).node(
            "Concat",
            "",
            "huge",
            &names,
            &["big"],
            vec![("axis", A::I(0))],
        )),
        "Concat",
        "[1, 4]",
        "float32",
    ));
    cases
}

#[test]
fn values_over_the_analysis_budget_are_never_computed() {
    let d = scratch("hostile_budget", "values_over_the_analysis_budget_are_never_computed");
    let mut failures = vec![];
    for (name, bytes, op, shape, dtype) in cases() {
        let model = d.join(format!("{name}.onnx"));
        std::fs::write(&model, &bytes).unwrap();
        let model = model.display().to_string();
        // infer: the exact shape, and a note saying the node runs later.
        let run = sliceops_limited(&["infer", &model], LIMIT);
        let want_row = format!("y     {dtype}  {shape}");
        if run.code != Some(0) || !run.stdout.lines().any(|l| l.trim_end() == want_row) {
            failures.push(format!("{name}: infer\n{run:#?}"));
        } else if !run.stderr.contains(&format!("note: node 'huge' ({op}): computed only when the model runs")) {
            failures.push(format!("{name}: infer gave no note on 'huge'\n{run:#?}"));
        }
        // fold: the node stays, the file stays small.
        let out = d.join(format!("{name}.folded.onnx"));
        let run = sliceops_limited(&["fold", &model, "-o", &out.display().to_string()], LIMIT);
        if run.code != Some(0) {
            failures.push(format!("{name}: fold\n{run:#?}"));
        } else {
            let written = std::fs::read(&out).unwrap();
            let folded = sliceops::onnx::proto::ModelProto::decode(&*written).unwrap();
            let kept = folded.graph.as_ref().unwrap().node.iter().any(|n| n.op_type.as_deref() == Some(op));
            if !kept || written.len() > bytes.len() + 4096 {
                failures.push(format!("{name}: fold kept {op}: {kept}, wrote {} bytes", written.len()));
            }
        }
        // run: refused before allocating.
        let out = d.join(format!("{name}.out"));
        let run = sliceops_limited(&["run", &model, "--output-dir", &out.display().to_string()], LIMIT);
        if run.code != Some(1) || !run.stderr.contains("more than this process can allocate") {
            failures.push(format!("{name}: run\n{run:#?}"));
        } else {
            let line = run.error();
            if !line.starts_with("error: node 'huge") {
                failures.push(format!("{name}: run error does not name the node: {line}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
