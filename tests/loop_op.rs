//! ONNX `Loop`: counted and condition-terminated loops with loop-carried values, scan outputs and
//! outer-scope reads, loops that run no iteration, carried values that grow; the output facts
//! analysis gives them; malformed bodies and inputs as errors naming the node; the iteration bound.
//! Expected values are worked out by hand from the specification.

mod common;

use common::onnx_build::{Builder, A, D};
use common::{inferred, load_error, minted_in};
use sliceops::Model;
use tract_onnx::pb;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;
use D::N;

/// The body of a counted loop: `acc += w` (w read from the outer graph), scan `acc * i`; the
/// condition passes through, or is the constant `true` when `always`.
fn counting_body(always: bool) -> pb::GraphProto {
    let b = Builder::new(13).input("i", DataType::Int64, &[]).input("c", DataType::Bool, &[]).input(
        "acc",
        DataType::Float,
        &[N(2)],
    );
    let b = if always {
        b.init("yes", DataType::Bool, &[], vec![1]).node("Identity", "", "cond", &["yes"], &["c_out"], vec![])
    } else {
        b.node("Identity", "", "cond", &["c"], &["c_out"], vec![])
    };
    b.node("Add", "", "add", &["acc", "w"], &["acc_out"], vec![])
        .node("Cast", "", "cast", &["i"], &["i_f"], vec![("to", A::I(DataType::Float as i64))])
        .node("Mul", "", "mul", &["acc_out", "i_f"], &["scan"], vec![])
        .output("c_out")
        .output("acc_out")
        .output("scan")
        .graph("body")
}

/// `Loop(M, cond, x)` over [`counting_body`], `w` an outer value; outputs `acc` and `scans`; `x`
/// and `w` of length `len`.
fn counting_of(always: bool, len: D) -> Vec<u8> {
    let len2 = match &len {
        N(v) => N(*v),
        D::S(s) => D::S(s),
        D::Unset => D::Unset,
    };
    Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("cond", DataType::Bool, &[])
        .input("x", DataType::Float, &[len])
        .input("w", DataType::Float, &[len2])
        .node("Loop", "", "loop", &["M", "cond", "x"], &["acc", "scans"], vec![("body", A::G(counting_body(always)))])
        .output("acc")
        .output("scans")
        .bytes()
}

fn counting(always: bool) -> Vec<u8> {
    counting_of(always, N(2))
}

fn floats(shape: &[usize], v: &[f32]) -> Tensor {
    tract_ndarray::ArrayD::from_shape_vec(shape, v.to_vec()).unwrap().into_tensor()
}

fn run(bytes: &[u8], inputs: Vec<Tensor>) -> Vec<Tensor> {
    Model::load_bytes(bytes).unwrap().run(inputs).unwrap().into_iter().map(|(_, t)| t).collect()
}

fn run_error(bytes: &[u8], inputs: Vec<Tensor>) -> String {
    match Model::load_bytes(bytes).and_then(|m| m.run(inputs)) {
        Ok(_) => panic!("the model ran"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn a_counted_loop_carries_state_scans_and_reads_the_outer_graph() {
    let x = floats(&[2], &[1.0, 2.0]);
    let w = floats(&[2], &[0.5, -1.0]);
    let out = run(&counting(false), vec![tensor0(3i64), tensor0(true), x, w]);
    assert_eq!(out[0], floats(&[2], &[2.5, -1.0]));
    // acc after each iteration, times the iteration number: [1.5, 1]*0, [2, 0]*1, [2.5, -1]*2.
    assert_eq!(out[1], floats(&[3, 2], &[0.0, 0.0, 2.0, 0.0, 5.0, -2.0]));
}

#[test]
fn a_false_condition_or_a_zero_trip_count_runs_no_iteration() {
    let x = floats(&[2], &[1.0, 2.0]);
    let w = floats(&[2], &[0.5, -1.0]);
    for (m, cond) in [(0i64, true), (5, false), (-4, true)] {
        let out = run(&counting(false), vec![tensor0(m), tensor0(cond), x.clone(), w.clone()]);
        assert_eq!(out[0], x, "M {m}, cond {cond}");
        assert_eq!(out[1].shape(), &[0, 2], "M {m}, cond {cond}");
        assert_eq!(out[1].datum_type(), f32::datum_type());
        // With the length a symbol, the scan output's other dims come from the body translated for
        // the values given.
        let out = run(&counting_of(false, D::S("n")), vec![tensor0(m), tensor0(cond), x.clone(), w.clone()]);
        assert_eq!((&out[0], out[1].shape()), (&x, &[0, 2][..]), "M {m}, cond {cond}");
    }
}

#[test]
fn output_facts_follow_from_the_body() {
    // Loop-invariant carried value: its facts; the number of iterations only known when running.
    let facts = inferred(&counting(false), &["acc", "scans"]);
    assert_eq!(facts[0], "F32 [2]");
    assert!(facts[1].starts_with("F32 [loop_") && facts[1].ends_with(", 2]"), "{}", facts[1]);
    let facts = inferred(&counting_of(false, D::S("n")), &["acc", "scans"]);
    assert_eq!(facts[0], "F32 [n]");
    assert!(facts[1].starts_with("F32 [loop_") && facts[1].ends_with(", n]"), "{}", facts[1]);
    // M a constant, no cond, the body's condition the constant true: M iterations.
    let bytes = Builder::new(13)
        .init_i64("M", &[4])
        .input("x", DataType::Float, &[N(2)])
        .input("w", DataType::Float, &[N(2)])
        .node("Loop", "", "loop", &["M", "", "x"], &["acc", "scans"], vec![("body", A::G(counting_body(true)))])
        .output("acc")
        .output("scans")
        .bytes();
    assert_eq!(inferred(&bytes, &["acc", "scans"]), ["F32 [2]", "F32 [4, 2]"]);
    let out = run(&bytes, vec![floats(&[2], &[0.0, 0.0]), floats(&[2], &[1.0, 1.0])]);
    assert_eq!(out[1], floats(&[4, 2], &[0.0, 0.0, 2.0, 2.0, 6.0, 6.0, 12.0, 12.0]));
    // M a dim: as many iterations as x has values.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("n")])
        .input("w", DataType::Float, &[D::S("n")])
        .node("Shape", "", "shape", &["x"], &["M"], vec![])
        .node("Loop", "", "loop", &["M", "", "x"], &["acc", "scans"], vec![("body", A::G(counting_body(true)))])
        .output("acc")
        .output("scans")
        .bytes();
    assert_eq!(inferred(&bytes, &["acc", "scans"]), ["F32 [n]", "F32 [n, n]"]);
    let out = run(&bytes, vec![floats(&[3], &[0.0; 3]), floats(&[3], &[1.0; 3])]);
    assert_eq!(out[1], floats(&[3, 3], &[0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 6.0, 6.0, 6.0]));
}

#[test]
fn an_iteration_count_known_only_when_running_is_bounded() {
    // M a dim, the condition a run-time value: at most M iterations.
    let bytes = Builder::new(13)
        .input("cond", DataType::Bool, &[])
        .input("x", DataType::Float, &[D::S("n")])
        .input("w", DataType::Float, &[D::S("n")])
        .node("Shape", "", "shape", &["x"], &["M"], vec![])
        .node("Loop", "", "loop", &["M", "cond", "x"], &["acc", "scans"], vec![("body", A::G(counting_body(false)))])
        .output("acc")
        .output("scans")
        .bytes();
    assert_eq!(inferred(&bytes, &["scans"]), ["F32 [loop_1_0, n]"]);
    assert_eq!(minted_in(&bytes, &[]), ["loop_1_0 Some(0)..Some(1000000000) <= n"]);
    // M a run-time value: at most the iterations a Loop makes.
    assert_eq!(minted_in(&counting(false), &[]), ["loop_1_0 Some(0)..Some(4194304) <= 4194304"]);
    // A while loop with no M: the same.
    assert_eq!(minted_in(&doubling(), &[]), ["loop_1_0 Some(0)..Some(4194304) <= 4194304"]);
}

/// `while v < limit: v *= 2`, scanning v; `limit` read from the outer graph, no trip count.
fn doubling() -> Vec<u8> {
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("v", DataType::Int64, &[])
        .init("two", DataType::Int64, &[], 2i64.to_le_bytes().to_vec())
        .node("Mul", "", "mul", &["v", "two"], &["v_out"], vec![])
        .node("Less", "", "less", &["v_out", "limit"], &["c_out"], vec![])
        .output("c_out")
        .output("v_out")
        .output("v_out")
        .graph("body");
    Builder::new(13)
        .input("cond", DataType::Bool, &[])
        .input("v0", DataType::Int64, &[])
        .input("limit", DataType::Int64, &[])
        .node("Loop", "", "loop", &["", "cond", "v0"], &["v", "seen"], vec![("body", A::G(body))])
        .output("v")
        .output("seen")
        .bytes()
}

#[test]
fn a_condition_ends_a_while_loop() {
    let out = run(&doubling(), vec![tensor0(true), tensor0(1i64), tensor0(20i64)]);
    assert_eq!(out[0], tensor0(32i64));
    assert_eq!(out[1], tensor1(&[2i64, 4, 8, 16, 32]));
    // A do-while: the condition given true, the body's false at once: one iteration.
    let out = run(&doubling(), vec![tensor0(true), tensor0(50i64), tensor0(20i64)]);
    assert_eq!(out[1], tensor1(&[100i64]));
}

#[test]
fn a_carried_value_may_grow() {
    // s = concat(s, [1]) three times: its length a symbol for analysis.
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("s", DataType::Float, &[N(1)])
        .init_f32("one", &[1], &[1.0])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Concat", "", "cat", &["s", "one"], &["s_out"], vec![("axis", A::I(0))])
        .output("c_out")
        .output("s_out")
        .graph("body");
    let bytes = Builder::new(13)
        .init_i64("M", &[3])
        .input("s0", DataType::Float, &[N(1)])
        .node("Loop", "", "loop", &["M", "", "s0"], &["s"], vec![("body", A::G(body))])
        .output("s")
        .bytes();
    let fact = &inferred(&bytes, &["s"])[0];
    assert!(fact.starts_with("F32 [loop_"), "{fact}");
    assert_eq!(run(&bytes, vec![floats(&[1], &[7.0])])[0], floats(&[4], &[7.0, 1.0, 1.0, 1.0]));
}

/// The pattern of torchvision's mask and keypoint pasting: `acc` starts empty (`x[0:0]`, of shape
/// `[0, n]`) and every iteration of a loop counted by `x`'s rows appends row `i` twice. With `until`,
/// the body's condition is the graph input `go` (one iteration when it is false), else `true`.
fn appending_rows_of(until: bool) -> Vec<u8> {
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("acc", DataType::Float, &[D::Unset, D::Unset])
        .init("yes", DataType::Bool, &[], vec![1])
        .init_i64("zero", &[0])
        .node("Identity", "", "cond", &[if until { "go" } else { "yes" }], &["c_out"], vec![])
        .node("Gather", "", "row", &["x", "i"], &["row"], vec![("axis", A::I(0))])
        .node("Unsqueeze", "", "unsq", &["row", "zero"], &["row1"], vec![])
        .node("Concat", "", "cat", &["acc", "row1", "row1"], &["acc_out"], vec![("axis", A::I(0))])
        .output("c_out")
        .output("acc_out")
        .graph("body");
    let b = Builder::new(13).input("x", DataType::Float, &[D::S("m"), D::S("n")]);
    let b = if until { b.input("go", DataType::Bool, &[]) } else { b };
    b.init_i64("zero", &[0])
        .init_i64("first", &[0])
        .node("Slice", "", "empty", &["x", "zero", "zero", "first"], &["acc0"], vec![])
        .node("Shape", "", "shape", &["x"], &["sh"], vec![])
        .init("at", DataType::Int64, &[], 0i64.to_le_bytes().to_vec())
        .node("Gather", "", "rows", &["sh", "at"], &["M"], vec![("axis", A::I(0))])
        .node("Loop", "", "loop", &["M", "", "acc0"], &["acc"], vec![("body", A::G(body))])
        .output("acc")
        .bytes()
}

fn appending_rows() -> Vec<u8> {
    appending_rows_of(false)
}

#[test]
fn a_carried_dim_growing_by_the_same_step_in_a_counted_loop_is_exact() {
    // Two rows an iteration, as many iterations as x has rows; the other dim stays n.
    assert_eq!(inferred(&appending_rows(), &["acc"]), ["F32 [2*m, n]"]);
    let x = floats(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let expected = floats(&[6, 2], &[1.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 5.0, 6.0, 5.0, 6.0]);
    assert_eq!(run(&appending_rows(), vec![x]), [expected]);
    // No iteration: the empty start comes back.
    assert_eq!(run(&appending_rows(), vec![floats(&[0, 2], &[])]), [floats(&[0, 2], &[])]);
    // A run-time condition may end it early: at most two rows per row of x.
    let early = appending_rows_of(true);
    assert_eq!(inferred(&early, &["acc"]), ["F32 [loop_0_0, n]"]);
    assert_eq!(minted_in(&early, &[]), ["loop_0_0 Some(0)..Some(1000000000) <= 2*m"]);
    let x = floats(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(run(&early, vec![x.clone(), tensor0(true)])[0].shape(), &[6, 2]);
    assert_eq!(run(&early, vec![x, tensor0(false)])[0].shape(), &[2, 2]);
}

#[test]
fn malformed_loops_are_errors_naming_the_node() {
    // The body returns one value fewer than it must.
    let mut body = counting_body(false);
    body.output.pop();
    body.output.pop();
    let bytes = Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("x", DataType::Float, &[N(2)])
        .input("w", DataType::Float, &[N(2)])
        .node("Loop", "", "loop", &["M", "", "x"], &["acc"], vec![("body", A::G(body))])
        .output("acc")
        .bytes();
    let e = load_error(&bytes);
    assert!(e.contains("node 'loop' (Loop)") && e.contains("the body returns 1 outputs"), "{e}");
    // A carried value changing type.
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("v", DataType::Float, &[])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Identity", "", "id", &["i"], &["v_out"], vec![])
        .output("c_out")
        .output("v_out")
        .graph("body");
    let bytes = Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("v", DataType::Float, &[])
        .node("Loop", "", "loop", &["M", "", "v"], &["y"], vec![("body", A::G(body))])
        .output("y")
        .bytes();
    let e = load_error(&bytes);
    assert!(e.contains("node 'loop' (Loop)") && e.contains("loop-carried value 0 goes in as F32"), "{e}");
    // No body; too few body inputs.
    let bytes =
        Builder::new(13).input("M", DataType::Int64, &[]).node("Loop", "", "loop", &["M", ""], &[], vec![]).bytes();
    let e = load_error(&bytes);
    assert!(e.contains("node 'loop' (Loop)") && e.contains("no 'body'"), "{e}");
    let bytes = Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("x", DataType::Float, &[N(2)])
        .node("Loop", "", "loop", &["M", "", "x", "x"], &["a", "b"], vec![("body", A::G(counting_body(false)))])
        .bytes();
    let e = load_error(&bytes);
    assert!(e.contains("node 'loop' (Loop)") && e.contains("the body takes 3 inputs"), "{e}");
    // M not an integer, cond not a bool, the body's condition not a bool.
    for (m_type, cond_type, cast, want) in [
        (DataType::Float, DataType::Bool, false, "M must be one integer, got F32 of shape []"),
        (DataType::Int64, DataType::Int64, false, "cond must be one bool, got I64 of shape []"),
        (DataType::Int64, DataType::Bool, true, "the body's condition output is F32, not bool"),
    ] {
        let body = Builder::new(13).input("i", DataType::Int64, &[]).input("c", DataType::Bool, &[]).input(
            "v",
            DataType::Float,
            &[N(2)],
        );
        let body = if cast {
            body.node("Cast", "", "cond", &["c"], &["c_out"], vec![("to", A::I(DataType::Float as i64))])
        } else {
            body.node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        };
        let body = body.node("Identity", "", "id", &["v"], &["v_out"], vec![]).output("c_out").output("v_out");
        let bytes = Builder::new(13)
            .input("M", m_type, &[])
            .input("C", cond_type, &[])
            .input("v", DataType::Float, &[N(2)])
            .node("Loop", "", "loop", &["M", "C", "v"], &["y"], vec![("body", A::G(body.graph("body")))])
            .output("y")
            .bytes();
        let e = load_error(&bytes);
        assert!(e.contains("node 'loop' (Loop)") && e.contains(want), "{e}");
    }
    // M not one value, at run time.
    let bytes = Builder::new(13)
        .input("M", DataType::Int64, &[D::S("n")])
        .input("cond", DataType::Bool, &[])
        .input("x", DataType::Float, &[N(2)])
        .input("w", DataType::Float, &[N(2)])
        .node("Loop", "", "loop", &["M", "cond", "x"], &["acc", "scans"], vec![("body", A::G(counting_body(false)))])
        .output("acc")
        .output("scans")
        .bytes();
    let e =
        run_error(&bytes, vec![tensor1(&[1i64, 2]), tensor0(true), floats(&[2], &[0.0; 2]), floats(&[2], &[0.0; 2])]);
    assert!(e.contains("node 'loop' (Loop)") && e.contains("M must be one integer"), "{e}");
}

#[test]
fn a_loop_that_never_ends_stops_at_the_iteration_bound() {
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("v", DataType::Int64, &[])
        .init("yes", DataType::Bool, &[], vec![1])
        .node("Identity", "", "cond", &["yes"], &["c_out"], vec![])
        .node("Identity", "", "id", &["i"], &["v_out"], vec![])
        .output("c_out")
        .output("v_out")
        .graph("body");
    let bytes = Builder::new(13)
        .input("v", DataType::Int64, &[])
        .node("Loop", "", "loop", &["", "", "v"], &["y"], vec![("body", A::G(body))])
        .output("y")
        .bytes();
    let e = run_error(&bytes, vec![tensor0(0i64)]);
    let bound = sliceops::MAX_ITERATIONS;
    assert!(e.contains("node 'loop' (Loop)") && e.contains(&format!("still running after {bound} iterations")), "{e}");
}

/// A loop of `outer` iterations whose body runs a loop of `inner` iterations (the inner trip count
/// read from the main graph, two scopes out), counting every inner iteration in `n`.
fn nested(outer: i64, inner: i64) -> (Vec<u8>, Vec<Tensor>) {
    let one = || Builder::new(13).init("one", DataType::Int64, &[], 1i64.to_le_bytes().to_vec());
    let inner_body = one()
        .input("j", DataType::Int64, &[])
        .input("c2", DataType::Bool, &[])
        .input("n2", DataType::Int64, &[])
        .node("Identity", "", "cond2", &["c2"], &["c2_out"], vec![])
        .node("Add", "", "inc", &["n2", "one"], &["n2_out"], vec![])
        .output("c2_out")
        .output("n2_out")
        .graph("inner");
    let outer_body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("n", DataType::Int64, &[])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Loop", "", "inner", &["inner_m", "", "n"], &["n_out"], vec![("body", A::G(inner_body))])
        .output("c_out")
        .output("n_out")
        .graph("outer");
    let bytes = Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("inner_m", DataType::Int64, &[])
        .input("n0", DataType::Int64, &[])
        .node("Loop", "", "loop", &["M", "", "n0"], &["n"], vec![("body", A::G(outer_body))])
        .output("n")
        .bytes();
    (bytes, vec![tensor0(outer), tensor0(inner), tensor0(0i64)])
}

#[test]
fn nested_loops_read_outer_scopes_and_share_the_iteration_bound() {
    let (bytes, inputs) = nested(7, 5);
    assert_eq!(run(&bytes, inputs)[0], tensor0(35i64));
    // 2049 x 2048 inner iterations: each loop under the bound, together over it.
    let (bytes, inputs) = nested(2049, 2048);
    let e = run_error(&bytes, inputs);
    assert!(e.contains("node 'loop' (Loop)") || e.contains("node 'inner' (Loop)"), "{e}");
    assert!(e.contains("still running after"), "{e}");
}

#[test]
fn scan_outputs_past_what_the_process_can_allocate_are_refused() {
    use common::cli::{scratch, sliceops_limited, Limits};
    // Each iteration scans a 64 MiB value made outside the loop; 1,000 iterations would take 64 GiB,
    // under a 1 GiB address space.
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Identity", "", "id", &["big"], &["scan"], vec![])
        .output("c_out")
        .output("scan")
        .graph("body");
    let bytes = Builder::new(13)
        .init_i64("shape", &[1 << 24])
        .init_i64("M", &[1000])
        .input("x", DataType::Float, &[N(1)])
        .node("ConstantOfShape", "", "huge", &["shape"], &["big"], vec![])
        .node("Loop", "", "loop", &["M", ""], &["scans"], vec![("body", A::G(body))])
        .node("Identity", "", "keep", &["x"], &["y"], vec![])
        .output("scans")
        .output("y")
        .bytes();
    let d = scratch("loop_op", "scan_outputs_past_what_the_process_can_allocate_are_refused");
    let model = d.join("model.onnx");
    std::fs::write(&model, &bytes).unwrap();
    sliceops::npy::write_npy(&d.join("x.npy"), &floats(&[1], &[0.0])).unwrap();
    let (model, x) = (model.display().to_string(), format!("x={}", d.join("x.npy").display()));
    let limits = Limits { file_size: None, address_space: Some(1 << 30) };
    let run = sliceops_limited(&["infer", &model], limits);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let out = d.join("out").display().to_string();
    let run = sliceops_limited(&["run", &model, "--input", &x, "--output-dir", &out], limits);
    let line = run.error();
    assert!(line.starts_with("error: node 'loop' (Loop)"), "{line}");
    assert!(line.contains("its scan outputs take more than this process can allocate"), "{line}");
}

#[test]
fn loops_and_ifs_nest_either_way() {
    // An If in the body (adding w on even iterations, -w on odd ones), the Loop in an If's branch;
    // w read from the main graph through both.
    let even = Builder::new(13).node("Identity", "", "pos", &["w"], &["r"], vec![]).output("r").graph("then");
    let odd = Builder::new(13).node("Neg", "", "neg", &["w"], &["r2"], vec![]).output("r2").graph("else");
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("acc", DataType::Float, &[N(2)])
        .init("two", DataType::Int64, &[], 2i64.to_le_bytes().to_vec())
        .init("zero", DataType::Int64, &[], 0i64.to_le_bytes().to_vec())
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Mod", "", "mod", &["i", "two"], &["m"], vec![])
        .node("Equal", "", "eq", &["m", "zero"], &["is_even"], vec![])
        .if_node("step", "is_even", &["d"], even, odd)
        .node("Add", "", "add", &["acc", "d"], &["acc_out"], vec![])
        .output("c_out")
        .output("acc_out")
        .output("acc_out")
        .graph("body");
    let looping = Builder::new(13)
        .node("Loop", "", "loop", &["M", "", "x"], &["a", "s"], vec![("body", A::G(body))])
        .output("a")
        .output("s")
        .graph("then");
    let once = Builder::new(13)
        .node("Identity", "", "same", &["x"], &["a2"], vec![])
        .node("Unsqueeze", "", "one", &["x", "ax"], &["s2"], vec![])
        .output("a2")
        .output("s2")
        .graph("else");
    let bytes = Builder::new(13)
        .input("flag", DataType::Bool, &[])
        .input("M", DataType::Int64, &[])
        .input("x", DataType::Float, &[N(2)])
        .input("w", DataType::Float, &[N(2)])
        .init_i64("ax", &[0])
        .if_node("choose", "flag", &["acc", "scans"], looping, once)
        .output("acc")
        .output("scans")
        .bytes();
    let inputs = |flag: bool| vec![tensor0(flag), tensor0(5i64), floats(&[2], &[1.0, 2.0]), floats(&[2], &[0.5, -1.0])];
    let out = run(&bytes, inputs(true));
    assert_eq!(out[0], floats(&[2], &[1.5, 1.0]));
    let rows: Vec<f32> = [[1.5, 1.0], [1.0, 2.0]].iter().cycle().take(5).flatten().copied().collect();
    assert_eq!(out[1], floats(&[5, 2], &rows));
    let out = run(&bytes, inputs(false));
    assert_eq!(out[1], floats(&[1, 2], &[1.0, 2.0]));
}

#[test]
fn a_carried_value_doubling_at_every_iteration_is_refused_before_it_is_allocated() {
    use common::cli::{scratch, sliceops_limited, Limits};
    // s = concat(s, s): the body is translated for each length, each translation's values weighed
    // against what the process can allocate (1 GiB of address space here).
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("s", DataType::Float, &[N(1)])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Concat", "", "cat", &["s", "s"], &["s_out"], vec![("axis", A::I(0))])
        .output("c_out")
        .output("s_out")
        .graph("body");
    let bytes = Builder::new(13)
        .init_i64("M", &[100])
        .input("s0", DataType::Float, &[N(1)])
        .node("Loop", "", "loop", &["M", "", "s0"], &["s"], vec![("body", A::G(body))])
        .output("s")
        .bytes();
    let d = scratch("loop_op", "a_carried_value_doubling_at_every_iteration_is_refused_before_it_is_allocated");
    let model = d.join("model.onnx");
    std::fs::write(&model, &bytes).unwrap();
    sliceops::npy::write_npy(&d.join("s0.npy"), &floats(&[1], &[3.0])).unwrap();
    let (model, s0) = (model.display().to_string(), format!("s0={}", d.join("s0.npy").display()));
    let limits = Limits { file_size: None, address_space: Some(1 << 30) };
    let out = d.join("out").display().to_string();
    let run = sliceops_limited(&["run", &model, "--input", &s0, "--output-dir", &out], limits);
    let line = run.error();
    assert!(line.starts_with("error: node 'loop' (Loop)"), "{line}");
    assert!(line.contains("more than this process can allocate"), "{line}");
}

#[test]
fn a_body_translated_at_every_iteration_is_bounded() {
    // s = concat(s, s[0:1]): the dims of the body cannot follow a symbol for s's length (the slice's
    // is min(1, n)), so the body is translated for each length.
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("c", DataType::Bool, &[])
        .input("s", DataType::Float, &[N(1)])
        .init_i64("st", &[0])
        .init_i64("en", &[1])
        .node("Identity", "", "cond", &["c"], &["c_out"], vec![])
        .node("Slice", "", "head", &["s", "st", "en"], &["h"], vec![])
        .node("Concat", "", "cat", &["s", "h"], &["s_out"], vec![("axis", A::I(0))])
        .output("c_out")
        .output("s_out")
        .graph("body");
    let bytes = Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("s0", DataType::Float, &[N(1)])
        .node("Loop", "", "loop", &["M", "", "s0"], &["s"], vec![("body", A::G(body))])
        .output("s")
        .bytes();
    let out = run(&bytes, vec![tensor0(300i64), floats(&[1], &[3.0])]);
    assert_eq!(out[0], floats(&[301], &[3.0; 301]));
    let bound = sliceops::MAX_TRANSLATIONS;
    let e = run_error(&bytes, vec![tensor0(bound as i64 + 10), floats(&[1], &[3.0])]);
    assert!(e.contains("node 'loop' (Loop)") && e.contains(&format!("was translated {bound} times")), "{e}");
}
