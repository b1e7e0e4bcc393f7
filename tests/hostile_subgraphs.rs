//! Hostile inputs, subgraph scopes (issue 30, point 3): a cycle that runs through a subgraph's read of
//! an outer value (a `Loop` body reading a value computed after the `Loop`, an `If` branch or a `Loop`
//! body reading the node's own output, a cycle inside a body) is an error when the model is loaded,
//! naming a node on the cycle, from the library and from the CLI (one `error:` line, exit 1); the
//! same models without the cycle still run and give their values.

mod common;

use common::cli::{scratch, sliceops};
use common::onnx_build::{Builder, A, D};
use tract_onnx::pb;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;
use D::N;

/// A Loop body `acc_out = acc + outer`, condition passed through; `outer` read from the graph.
fn body_reading(outer: &str) -> pb::GraphProto {
    Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("acc", DataType::Float, &[N(2)])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Add", "", "add", &["acc", outer], &["acc_out"], vec![])
        .output("c_out")
        .output("acc_out")
        .graph("body")
}

/// `z = Loop(M, cond, x)` with a body reading `outer`, then `w = Neg(z)`; outputs `z` and `w`.
fn loop_model(outer: &str) -> Vec<u8> {
    Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("cond", DataType::Bool, &[])
        .input("x", DataType::Float, &[N(2)])
        .node("Loop", "", "loop", &["M", "cond", "x"], &["z"], vec![("body", A::G(body_reading(outer)))])
        .node("Neg", "", "neg", &["z"], &["w"], vec![])
        .output("z")
        .output("w")
        .bytes()
}

/// A branch giving `Identity(value)`.
fn branch(name: &str, value: &str) -> pb::GraphProto {
    Builder::new(13)
        .node("Identity", "", &format!("{name}_id"), &[value], &[&format!("{name}_out")], vec![])
        .output(&format!("{name}_out"))
        .graph(name)
}

/// `z = If(cond, then: Identity(then_reads), else: Identity(x))`, `w = Neg(z)`.
fn if_model(then_reads: &str) -> Vec<u8> {
    Builder::new(13)
        .input("cond", DataType::Bool, &[])
        .input("x", DataType::Float, &[N(2)])
        .if_node("if", "cond", &["z"], branch("then", then_reads), branch("else", "x"))
        .node("Neg", "", "neg", &["z"], &["w"], vec![])
        .output("z")
        .output("w")
        .bytes()
}

/// An If whose then-branch holds a cycle of its own (two nodes feeding each other).
fn cycle_inside_a_branch() -> Vec<u8> {
    let then = Builder::new(13)
        .node("Add", "", "inner_a", &["x", "inner_b_out"], &["inner_a_out"], vec![])
        .node("Neg", "", "inner_b", &["inner_a_out"], &["inner_b_out"], vec![])
        .output("inner_b_out")
        .graph("then");
    Builder::new(13)
        .input("cond", DataType::Bool, &[])
        .input("x", DataType::Float, &[N(2)])
        .if_node("if", "cond", &["z"], then, branch("else", "x"))
        .output("z")
        .bytes()
}

/// A Loop whose body holds an If whose branch reads `w`, computed from the Loop's output: the cycle
/// runs through two levels of subgraph.
fn nested_read_of_a_later_value() -> Vec<u8> {
    let inner = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("acc", DataType::Float, &[N(2)])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .if_node("inner_if", "c", &["acc_out"], branch("then", "w"), branch("else", "acc"))
        .output("c_out")
        .output("acc_out")
        .graph("body");
    Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("cond", DataType::Bool, &[])
        .input("x", DataType::Float, &[N(2)])
        .node("Loop", "", "loop", &["M", "cond", "x"], &["z"], vec![("body", A::G(inner))])
        .node("Neg", "", "neg", &["z"], &["w"], vec![])
        .output("z")
        .output("w")
        .bytes()
}

fn load_error(bytes: &[u8]) -> String {
    match sliceops::Model::load_bytes(bytes) {
        Ok(_) => panic!("the model was loaded"),
        Err(e) => format!("{e:#}"),
    }
}

fn write_npy(path: &std::path::Path, t: &Tensor) {
    sliceops::npy::write_npy(path, t).unwrap();
}

/// Each cyclic model: its name, its bytes, and the error the library and the CLI give.
fn cyclic() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    vec![
        (
            "loop_body_reads_a_later_value",
            loop_model("w"),
            "node 'loop' (Loop): the graph is not acyclic: it has a cycle through this node (a subgraph of it \
             reads 'w' from the graph)",
        ),
        (
            "loop_body_reads_its_own_output",
            loop_model("z"),
            "node 'loop' (Loop): the graph is not acyclic: it has a cycle through this node (a subgraph of it \
             reads 'z' from the graph)",
        ),
        (
            "if_reads_its_own_output",
            if_model("z"),
            "node 'if' (If): the graph is not acyclic: it has a cycle through this node (a subgraph of it reads \
             'z' from the graph)",
        ),
        (
            "if_reads_a_later_value",
            if_model("w"),
            "node 'if' (If): the graph is not acyclic: it has a cycle through this node (a subgraph of it reads \
             'w' from the graph)",
        ),
        (
            "cycle_inside_a_branch",
            cycle_inside_a_branch(),
            "the graph is not acyclic: it has a cycle through this node (it reads 'inner_",
        ),
        (
            "nested_read_of_a_later_value",
            nested_read_of_a_later_value(),
            "node 'loop' (Loop): the graph is not acyclic: it has a cycle through this node (a subgraph of it \
             reads 'w' from the graph)",
        ),
    ]
}

#[test]
fn cycles_through_subgraph_reads_are_errors_at_load() {
    for (name, bytes, want) in cyclic() {
        let err = load_error(&bytes);
        assert!(err.contains(want), "{name}: {err}");
    }
}

#[test]
fn cycles_through_subgraph_reads_are_one_cli_error() {
    let dir = scratch("hostile_subgraphs", "cycles_through_subgraph_reads_are_one_cli_error");
    let x = dir.join("x.npy");
    write_npy(&x, &tensor1(&[1f32, 2.]));
    let m = dir.join("m.npy");
    write_npy(&m, &tensor0(3i64));
    let cond = dir.join("cond.npy");
    write_npy(&cond, &tensor0(true));
    for (name, bytes, want) in cyclic() {
        let model = dir.join(format!("{name}.onnx"));
        std::fs::write(&model, &bytes).unwrap();
        let out = dir.join(format!("{name}.out"));
        let model = model.display().to_string();
        for args in [
            vec!["infer".to_string(), model.clone()],
            vec![
                "run".into(),
                model.clone(),
                "--input".into(),
                format!("M={}", m.display()),
                "--input".into(),
                format!("cond={}", cond.display()),
                "--input".into(),
                format!("x={}", x.display()),
                "--output-dir".into(),
                out.display().to_string(),
            ],
        ] {
            let run = sliceops(&args);
            let line = run.error();
            assert!(line.starts_with("error: ") && line.contains(want), "{name} {}: {line}", args[0]);
        }
        assert!(!out.exists(), "{name}: run wrote {}", out.display());
    }
}

/// The same shapes without a cycle: a Loop body and an If branch reading a value computed before them.
#[test]
fn reads_of_earlier_values_still_run() {
    let acyclic = Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("cond", DataType::Bool, &[])
        .input("x", DataType::Float, &[N(2)])
        .node("Neg", "", "neg", &["x"], &["v"], vec![])
        .node("Loop", "", "loop", &["M", "cond", "x"], &["z"], vec![("body", A::G(body_reading("v")))])
        .if_node("if", "cond", &["w"], branch("then", "z"), branch("else", "v"))
        .output("z")
        .output("w")
        .bytes();
    let model = sliceops::Model::load_bytes(&acyclic).unwrap();
    let out = model.run(vec![tensor0(3i64), tensor0(true), tensor1(&[1f32, 2.])]).unwrap();
    // x + 3 * (-x), and the then-branch's copy of it.
    assert_eq!(out[0].1, tensor1(&[-2f32, -4.]));
    assert_eq!(out[1].1, tensor1(&[-2f32, -4.]));
}
