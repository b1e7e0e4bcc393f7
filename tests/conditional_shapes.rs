//! Conditional shapes: an `If` the analysis cannot decide, whose branches return different ranks or
//! dims, gives each value after it one fact per outcome, with its condition (`Model::cases`, the
//! `cases` of `infer`'s JSON, one table line per outcome), and runs give the shape of their outcome.

mod common;

use common::cli::sliceops;
use common::onnx_build::{Builder, D};
use common::tensors::{arange_f32, f32s};
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

/// `y = If(x.shape[0] == 1, squeeze(x, 0), x)` over `x: [N, 3]`, then `z = Relu(y)`.
fn squeeze_when_one() -> Vec<u8> {
    let then_branch = Builder::new(13)
        .init_i64("axes", &[0])
        .node("Squeeze", "", "squeeze", &["x", "axes"], &["then_y"], vec![])
        .output("then_y")
        .graph("then");
    let else_branch =
        Builder::new(13).node("Identity", "", "same", &["x"], &["else_y"], vec![]).output("else_y").graph("else");
    Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::N(3)])
        .init_i64("zero", &[0])
        .init_i64("one", &[1])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "rows", &["s", "zero"], &["n"], vec![])
        .node("Equal", "", "is_one", &["n", "one"], &["c"], vec![])
        .if_node("branch", "c", &["y"], then_branch, else_branch)
        .node("Relu", "", "relu", &["y"], &["z"], vec![])
        .output("z")
        .bytes()
}

/// Each outcome of the value `name`: `when -> dtype [dims]` (or `when -> ?`).
fn outcomes(m: &Model, name: &str) -> Vec<String> {
    let base = m.analyse().unwrap();
    let cases = m.cases().unwrap();
    sliceops::report::value_cases(name, &base, &cases)
        .unwrap_or_default()
        .into_iter()
        .map(|c| match c.fact {
            Ok((dtype, shape)) => {
                let dims: Vec<String> = shape.iter().map(sliceops::format_dim).collect();
                format!("{} -> {dtype} [{}]", c.when, dims.join(", "))
            }
            Err(_) => format!("{} -> ?", c.when),
        })
        .collect()
}

#[test]
fn a_squeeze_taken_when_a_dim_is_one_gives_one_shape_per_outcome() {
    let m = Model::load_bytes(&squeeze_when_one()).unwrap();
    let cases = m.cases().unwrap();
    let whens: Vec<Vec<String>> = cases.iter().map(|c| c.when.clone()).collect();
    assert_eq!(whens, [vec!["N == 1".to_string()], vec!["N != 1".to_string()]]);
    for value in ["y", "z"] {
        assert_eq!(outcomes(&m, value), ["N == 1 -> float32 [3]", "N != 1 -> float32 [N, 3]"], "{value}");
    }
    // Values before the If are the same in every outcome: no cases.
    assert!(outcomes(&m, "s").is_empty());
    // A run takes one outcome, with its shape.
    let one = m.run(vec![f32s(&[1, 3], vec![-1., 2., -3.])]).unwrap();
    assert_eq!(one[0].1, tensor1(&[0f32, 2., 0.]));
    let two = m.run(vec![arange_f32(&[2, 3])]).unwrap();
    assert_eq!(two[0].1.shape(), &[2, 3]);
}

#[test]
fn an_assumption_that_decides_the_condition_leaves_one_outcome() {
    for (assumption, shape) in [("N==1", "[3]"), ("N>=2", "[N, 3]")] {
        let mut m = Model::load_bytes(&squeeze_when_one()).unwrap();
        m.assume(assumption).unwrap();
        assert!(m.cases().unwrap().is_empty(), "{assumption}");
        let facts = m.infer().unwrap();
        let z = facts.iter().find(|f| f.name == "z").unwrap();
        let dims: Vec<String> = z.shape.iter().map(sliceops::format_dim).collect();
        assert_eq!(format!("[{}]", dims.join(", ")), shape, "{assumption}");
    }
}

/// `y0 = If(flag0, a, b)`, `y1 = If(flag1, a, b)`, ...: `a: [2]`, `b: [3, 2]`, boolean inputs
/// deciding the ranks, each on its own.
fn rank_by_flag(flags: usize) -> Vec<u8> {
    let mut b =
        Builder::new(13).input("a", DataType::Float, &[D::N(2)]).input("b", DataType::Float, &[D::N(3), D::N(2)]);
    for i in 0..flags {
        let (flag, out) = (format!("flag{i}"), format!("y{i}"));
        let (then_out, else_out) = (format!("then{i}"), format!("else{i}"));
        let then_branch =
            Builder::new(13).node("Identity", "", "t", &["a"], &[&then_out], vec![]).output(&then_out).graph("then");
        let else_branch =
            Builder::new(13).node("Identity", "", "e", &["b"], &[&else_out], vec![]).output(&else_out).graph("else");
        b = b
            .input(&flag, DataType::Bool, &[])
            .if_node(&format!("if{i}"), &flag, &[&out], then_branch, else_branch)
            .output(&out);
    }
    b.bytes()
}

#[test]
fn a_condition_on_an_input_value_is_named_after_it() {
    let m = Model::load_bytes(&rank_by_flag(1)).unwrap();
    assert_eq!(outcomes(&m, "y0"), ["flag0 -> float32 [2]", "not flag0 -> float32 [3, 2]"]);
    let json = sliceops::report::analysis_json(&m.analyse().unwrap(), &m.cases().unwrap(), m.graph(), &[]).unwrap();
    let y = json["values"].as_array().unwrap().iter().find(|v| v["name"] == "y0").unwrap();
    assert_eq!(
        y["cases"],
        serde_json::json!([
            {"when": "flag0", "dtype": "float32", "shape": [2], "dims": [2]},
            {"when": "not flag0", "dtype": "float32", "shape": [3, 2], "dims": [3, 2]},
        ])
    );
    assert_eq!(json["cases"], serde_json::json!([{"when": ["flag0"]}, {"when": ["not flag0"]}]));
}

#[test]
fn outcomes_stop_at_the_most_cases() {
    // Four independent flags: 16 outcomes, split in the order met, at most MAX_CASES.
    let m = Model::load_bytes(&rank_by_flag(4)).unwrap();
    let cases = m.cases().unwrap();
    assert_eq!(cases.len(), sliceops::MAX_CASES);
    assert_eq!(cases[0].when, ["flag0", "flag1", "flag2"]);
    assert_eq!(cases[7].when, ["not flag0", "not flag1", "not flag2"]);
}

#[test]
fn two_ifs_on_the_same_comparison_take_the_same_branch() {
    // `x.shape[0] == 1` tested twice: two outcomes, not four, and in each both Ifs agree.
    let squeeze = |out: &str, input: &str| {
        Builder::new(13)
            .init_i64("axes", &[0])
            .node("Squeeze", "", "squeeze", &[input, "axes"], &[out], vec![])
            .output(out)
            .graph("then")
    };
    let same = |out: &str, input: &str| {
        Builder::new(13).node("Identity", "", "same", &[input], &[out], vec![]).output(out).graph("else")
    };
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::N(3)])
        .input("w", DataType::Float, &[D::S("N"), D::N(4)])
        .init_i64("zero", &[0])
        .init_i64("one", &[1])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "rows", &["s", "zero"], &["n"], vec![])
        .node("Equal", "", "is_one", &["n", "one"], &["c"], vec![])
        .node("Shape", "", "shape_w", &["w"], &["sw"], vec![])
        .node("Gather", "", "rows_w", &["sw", "zero"], &["nw"], vec![])
        .node("Equal", "", "is_one_w", &["nw", "one"], &["cw"], vec![])
        .if_node("first", "c", &["y"], squeeze("ty", "x"), same("ey", "x"))
        .if_node("second", "cw", &["v"], squeeze("tv", "w"), same("ev", "w"))
        .output("y")
        .output("v")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(m.cases().unwrap().len(), 2);
    assert_eq!(outcomes(&m, "v"), ["N == 1 -> float32 [4]", "N != 1 -> float32 [N, 4]"]);
}

#[test]
fn infer_prints_one_line_per_outcome() {
    let dir = common::cli::scratch("conditional_shapes", "table");
    let model = dir.join("model.onnx");
    std::fs::write(&model, squeeze_when_one()).unwrap();
    let run = sliceops(&["infer".as_ref(), model.as_os_str()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().map(str::trim_end).collect();
    let z = lines.iter().position(|l| l.starts_with("z ")).unwrap();
    let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(words(lines[z + 1]), ["when", "N", "==", "1", "float32", "[3]"]);
    assert_eq!(words(lines[z + 2]), ["when", "N", "!=", "1", "float32", "[N,", "3]"]);
}

#[test]
fn silero_vad_is_known_exactly_in_each_outcome() {
    // The network lives in the branches of `If(sr == 16000)`; inside, the decoder squeezes its
    // time axis when it is 1 ((samples+320)/512 frames at 16 kHz, (samples+160)/256 at 8 kHz): the
    // outcome where it is not 1 cannot run (its LSTM gets a rank-4 input).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/real/silero_vad_wheel/model.onnx");
    let m = Model::load_path(&path).unwrap();
    let cases = m.cases().unwrap();
    let whens: Vec<String> = cases.iter().map(|c| c.when.join(" and ")).collect();
    assert_eq!(
        whens,
        [
            "sr == 16000 and (input_d1+320)/512 == 1",
            "sr == 16000 and (input_d1+320)/512 != 1",
            "sr != 16000 and (input_d1+160)/256 == 1",
            "sr != 16000 and (input_d1+160)/256 != 1",
        ]
    );
    let output = outcomes(&m, "output");
    assert_eq!(output[0], "sr == 16000 and (input_d1+320)/512 == 1 -> float32 [input_d0, 1]");
    assert_eq!(output[1], "sr == 16000 and (input_d1+320)/512 != 1 -> ?");
    assert_eq!(output[2], "sr != 16000 and (input_d1+160)/256 == 1 -> float32 [input_d0, 1]");
    assert_eq!(outcomes(&m, "stateN")[0], "sr == 16000 and (input_d1+320)/512 == 1 -> float32 [2, input_d0, 128]");
    // A run at 16 kHz, 512 samples, batch 2: the first outcome, at input_d0 = 2.
    let out = m
        .run(vec![
            Tensor::zero::<f32>(&[2, 512]).unwrap(),
            Tensor::zero::<f32>(&[2, 2, 128]).unwrap(),
            tensor0(16000i64),
        ])
        .unwrap();
    assert_eq!(out[0].1.shape(), &[2, 1]);
    assert_eq!(out[1].1.shape(), &[2, 2, 128]);
}

/// The declared dims of each of a graph's outputs and `value_info`s, by name.
fn declared_dims(g: &tract_onnx::pb::GraphProto) -> Vec<(String, Vec<String>)> {
    use tract_onnx::pb::{tensor_shape_proto::dimension::Value as Dim, type_proto::Value};
    g.value_info
        .iter()
        .chain(&g.output)
        .map(|v| {
            let dims = match v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
                Some(Value::TensorType(t)) => t.shape.as_ref().map_or(vec![], |s| {
                    s.dim
                        .iter()
                        .map(|d| match &d.value {
                            Some(Dim::DimValue(v)) => v.to_string(),
                            Some(Dim::DimParam(p)) => p.clone(),
                            None => "?".into(),
                        })
                        .collect()
                }),
                _ => vec![],
            };
            (v.name.clone(), dims)
        })
        .collect()
}

#[test]
fn fold_shapes_both_branches() {
    use prost::Message;
    let folded = sliceops::fold::fold_bytes(&squeeze_when_one(), None).unwrap();
    let model = tract_onnx::pb::ModelProto::decode(&*folded).unwrap();
    let graph = model.graph.unwrap();
    let node = graph.node.iter().find(|n| n.op_type == "If").unwrap();
    let branch = |name: &str| node.attribute.iter().find(|a| a.name == name).unwrap().g.clone().unwrap();
    assert_eq!(declared_dims(&branch("then_branch")), [("then_y".to_string(), vec!["3".to_string()])]);
    assert_eq!(
        declared_dims(&branch("else_branch")).last().unwrap(),
        &("else_y".to_string(), vec!["N".to_string(), "3".to_string()])
    );
    // After the If, the rank depends on the outcome: no single shape is written.
    for (name, dims) in declared_dims(&graph) {
        assert!(!["y", "z"].contains(&name.as_str()) || dims.is_empty(), "{name}: {dims:?}");
    }
}

/// `y = If(N == 1 and M == 1, squeeze(x), x)` over `x: [N, M]` (`Or` and `<` in place of `And` and
/// `==` when `or`).
fn squeeze_when_both_one(or: bool) -> Vec<u8> {
    let then_branch = Builder::new(13)
        .init_i64("axes", &[0, 1])
        .node("Squeeze", "", "squeeze", &["x", "axes"], &["then_y"], vec![])
        .output("then_y")
        .graph("then");
    let else_branch =
        Builder::new(13).node("Identity", "", "same", &["x"], &["else_y"], vec![]).output("else_y").graph("else");
    let (join, cmp) = if or { ("Or", "Less") } else { ("And", "Equal") };
    Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::S("M")])
        .init_i64("zero", &[0])
        .init_i64("one", &[1])
        .init_i64("two", &[2])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "rows", &["s", "zero"], &["n"], vec![])
        .node("Gather", "", "cols", &["s", "one"], &["m"], vec![])
        .node(cmp, "", "rows_one", &["n", if or { "two" } else { "one" }], &["c0"], vec![])
        .node(cmp, "", "cols_one", &["m", if or { "two" } else { "one" }], &["c1"], vec![])
        .node(join, "", "both", &["c0", "c1"], &["c"], vec![])
        .if_node("branch", "c", &["y"], then_branch, else_branch)
        .output("y")
        .bytes()
}

#[test]
fn a_condition_joining_comparisons_is_split_as_a_whole() {
    let m = Model::load_bytes(&squeeze_when_both_one(false)).unwrap();
    // In the outcome where both hold, both are assumed (the squeezed value is a scalar).
    assert_eq!(outcomes(&m, "y"), ["N == 1 and M == 1 -> float32 []", "N != 1 or M != 1 -> float32 [N, M]"]);
    assert_eq!(m.run(vec![f32s(&[1, 1], vec![5.])]).unwrap()[0].1, tensor0(5f32));
    assert_eq!(m.run(vec![arange_f32(&[1, 3])]).unwrap()[0].1.shape(), &[1, 3]);
    // An assumption deciding one part decides an `And` it makes false, not one it leaves open.
    let mut m = Model::load_bytes(&squeeze_when_both_one(false)).unwrap();
    m.assume("N==2").unwrap();
    assert!(m.cases().unwrap().is_empty());
    let mut m = Model::load_bytes(&squeeze_when_both_one(false)).unwrap();
    m.assume("N==1").unwrap();
    assert_eq!(outcomes(&m, "y").len(), 2);
    // `Or`: its negation is the `And` of the negated parts, and both of those are assumed.
    let m = Model::load_bytes(&squeeze_when_both_one(true)).unwrap();
    let whens: Vec<Vec<String>> = m.cases().unwrap().iter().map(|c| c.when.clone()).collect();
    assert_eq!(whens, [vec!["N < 2 or M < 2".to_string()], vec!["N >= 2 and M >= 2".to_string()]]);
}
