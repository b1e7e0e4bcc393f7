//! `fold`'s rewrites one by one: each small model is folded, the nodes left are the ones expected, the
//! report counts the change, and the folded model gives the original's outputs (bit for bit, except
//! the fusions that change rounding, which `--exact` leaves out).

mod common;

use common::fixtures::same;
use common::onnx_build::{Builder, A, D};
use sliceops::fold::{fold, FoldOptions, Report};
use sliceops::onnx::proto;
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

const F: DataType = DataType::Float;

fn folded(bytes: &[u8], exact: bool) -> (proto::ModelProto, Report) {
    fold(bytes, None, &FoldOptions { exact, ..FoldOptions::default() }).expect("fold")
}

fn ops(model: &proto::ModelProto) -> Vec<String> {
    model.graph.as_ref().unwrap().node.iter().map(|n| n.op_type.clone().unwrap_or_default()).collect()
}

fn encode(model: &proto::ModelProto) -> Vec<u8> {
    prost::Message::encode_to_vec(model)
}

fn run(bytes: &[u8], inputs: &[Tensor]) -> Vec<(String, Tensor)> {
    Model::load_bytes(bytes).and_then(|m| m.run(inputs.to_vec())).expect("run")
}

/// The folded model's outputs equal the original's: same names, types, shapes and bits.
fn assert_same_outputs(original: &[u8], folded: &proto::ModelProto, inputs: &[Tensor]) {
    let want = run(original, inputs);
    let got = run(&encode(folded), inputs);
    assert_eq!(got.len(), want.len());
    for ((gn, g), (wn, w)) in got.iter().zip(&want) {
        assert_eq!(gn, wn);
        same(g, w).unwrap_or_else(|e| panic!("output {gn}: {e}"));
    }
}

/// The folded model's outputs are within `tol` of the original's (fusions change rounding).
fn assert_close_outputs(original: &[u8], folded: &proto::ModelProto, inputs: &[Tensor], tol: f32) {
    let want = run(original, inputs);
    let got = run(&encode(folded), inputs);
    for ((gn, g), (_, w)) in got.iter().zip(&want) {
        assert_eq!(g.shape(), w.shape(), "output {gn}");
        let values = |t: &Tensor| t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        for (a, b) in values(g).iter().zip(values(w)) {
            assert!((a - b).abs() <= tol * (1.0 + b.abs()), "output {gn}: {a} vs {b}");
        }
    }
}

fn changes(report: &Report, kind: &str) -> usize {
    report.changes.get(kind).copied().unwrap_or(0)
}

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    tract_ndarray::ArrayD::from_shape_vec(shape, (0..n).map(|i| i as f32 * 0.25 - 1.0).collect()).unwrap().into_tensor()
}

#[test]
fn nodes_over_constants_become_initializers() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(2), D::N(3)])
        .init_f32("a", &[3], &[1.0, 2.0, 3.0])
        .init_f32("b", &[3], &[0.5, 0.5, 0.5])
        .node("Mul", "", "ab", &["a", "b"], &["c"], vec![])
        .node("Add", "", "out", &["x", "c"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Add"]);
    assert_eq!(changes(&report, "nodes folded into constants"), 1);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3])]);
}

#[test]
fn a_constant_larger_than_its_inputs_stays_a_node() {
    // ConstantOfShape([64, 64]) would write 16 KB where the node reads 16 bytes: the node stays.
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(64), D::N(64)])
        .init_i64("shape", &[64, 64])
        .node("ConstantOfShape", "", "fill", &["shape"], &["ones"], vec![])
        .node("Add", "", "out", &["x", "ones"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["ConstantOfShape", "Add"]);
    assert_eq!(changes(&report, "nodes folded into constants"), 0);
    let g = model.graph.as_ref().unwrap();
    let ones = g.value_info.iter().find(|v| v.name.as_deref() == Some("ones")).expect("ones is annotated");
    assert!(format!("{ones:?}").contains("DimValue(64)"), "{ones:?}");
}

#[test]
fn shape_arithmetic_over_symbolic_dims_makes_a_constant_reshape_target() {
    // x: [N, 4, 6] reshaped to [Shape(x)[0], 24] through Shape -> Gather -> Unsqueeze -> Concat.
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N"), D::N(4), D::N(6)])
        .init_i64("zero", &[0])
        .init_i64("last", &[24])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "batch", &["s", "zero"], &["n"], vec![("axis", A::I(0))])
        .node("Concat", "", "target", &["n", "last"], &["t"], vec![("axis", A::I(0))])
        .node("Reshape", "", "flat", &["x", "t"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Reshape"]);
    assert_eq!(changes(&report, "Reshape targets made constant"), 1);
    let g = model.graph.as_ref().unwrap();
    let target = &g.node[0].input[1];
    let t = g.initializer.iter().find(|t| t.name.as_ref() == Some(target)).expect("a constant target");
    assert_eq!(ints_of(t), Some(vec![0, 24]));
    assert_same_outputs(&bytes, &model, &[ramp(&[3, 4, 6])]);
    assert_same_outputs(&bytes, &model, &[ramp(&[1, 4, 6])]);
}

#[test]
fn identity_dropout_and_same_type_cast_are_removed() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N"), D::N(3)])
        .node("Identity", "", "id", &["x"], &["a"], vec![])
        .node("Dropout", "", "drop", &["a"], &["b"], vec![])
        .node("Cast", "", "cast", &["b"], &["c"], vec![("to", A::I(1))])
        .node("Relu", "", "relu", &["c"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Relu"]);
    assert_eq!(model.graph.as_ref().unwrap().node[0].input, ["x"]);
    assert_eq!(changes(&report, "Identity removed"), 1);
    assert_eq!(changes(&report, "Dropout removed (inference)"), 1);
    assert_eq!(changes(&report, "Cast to the same type removed"), 1);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3])]);
}

#[test]
fn a_passthrough_into_a_graph_output_keeps_the_output_name() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(2), D::N(3)])
        .node("Relu", "", "relu", &["x"], &["r"], vec![])
        .node("Identity", "", "id", &["r"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, _) = folded(&bytes, true);
    let g = model.graph.as_ref().unwrap();
    assert_eq!(ops(&model), ["Relu"]);
    assert_eq!(g.node[0].output, ["y"]);
    assert_eq!(g.output[0].name.as_deref(), Some("y"));
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3])]);
}

#[test]
fn shape_preserving_slice_reshape_expand_and_tile_are_removed() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N"), D::N(3)])
        .init_i64("starts", &[0])
        .init_i64("ends", &[i64::MAX])
        .init_i64("axes", &[1])
        .init_i64("same", &[0, 3])
        .init_i64("ones", &[1, 1])
        .node("Slice", "", "all", &["x", "starts", "ends", "axes"], &["a"], vec![])
        .node("Reshape", "", "reshape", &["a", "same"], &["b"], vec![])
        .node("Expand", "", "expand", &["b", "ones"], &["c"], vec![])
        .node("Tile", "", "tile", &["c", "ones"], &["d"], vec![])
        .node("Relu", "", "relu", &["d"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Relu"]);
    assert_eq!(changes(&report, "shape-preserving Slice/Reshape/Expand/Tile/Pad removed"), 4);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3])]);
}

#[test]
fn a_split_with_one_output_is_removed() {
    // As exported by torchvision's SSD head: Split(x, split=[whole axis]), then one with no
    // `split` input along a symbolic axis (opset 13), and opset 18's `num_outputs` = 1.
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N"), D::N(3)])
        .init_i64("whole", &[3])
        .node("Split", "", "with_sizes", &["x", "whole"], &["a"], vec![("axis", A::I(1))])
        .node("Split", "", "no_sizes", &["a"], &["b"], vec![("axis", A::I(0))])
        .node("Relu", "", "relu", &["b"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Relu"]);
    assert_eq!(changes(&report, "single-output Split removed"), 2);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3])]);
    let bytes18 = Builder::new(18)
        .input("x", F, &[D::N(4), D::N(3)])
        .node("Split", "", "one", &["x"], &["a"], vec![("axis", A::I(1)), ("num_outputs", A::I(1))])
        .node("Neg", "", "neg", &["a"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes18, true);
    assert_eq!(ops(&model), ["Neg"]);
    assert_eq!(changes(&report, "single-output Split removed"), 1);
    assert_same_outputs(&bytes18, &model, &[ramp(&[4, 3])]);
}

#[test]
fn a_split_into_two_stays() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(4), D::N(3)])
        .init_i64("sizes", &[1, 3])
        .node("Split", "", "two", &["x", "sizes"], &["a", "b"], vec![("axis", A::I(0))])
        .node("Add", "", "add", &["b", "b"], &["y"], vec![])
        .output("a")
        .output("y")
        .bytes();
    let (model, _) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Split", "Add"]);
    assert_same_outputs(&bytes, &model, &[ramp(&[4, 3])]);
}

#[test]
fn a_slice_that_cuts_stays() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(4), D::N(3)])
        .init_i64("starts", &[1])
        .init_i64("ends", &[i64::MAX])
        .init_i64("axes", &[0])
        .node("Slice", "", "cut", &["x", "starts", "ends", "axes"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, _) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Slice"]);
    assert_same_outputs(&bytes, &model, &[ramp(&[4, 3])]);
}

#[test]
fn transposes_that_cancel_and_unsqueeze_squeeze_pairs_are_removed() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(2), D::N(3), D::N(4)])
        .init_i64("axis", &[1])
        .node("Transpose", "", "t1", &["x"], &["a"], vec![("perm", A::Is(vec![1, 2, 0]))])
        .node("Transpose", "", "t2", &["a"], &["b"], vec![("perm", A::Is(vec![2, 0, 1]))])
        .node("Unsqueeze", "", "u", &["b", "axis"], &["c"], vec![])
        .node("Squeeze", "", "s", &["c", "axis"], &["d"], vec![])
        .node("Relu", "", "relu", &["d"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Relu"]);
    assert_eq!(changes(&report, "Transpose pairs that cancel removed"), 1);
    assert_eq!(changes(&report, "Unsqueeze undone by Squeeze removed"), 1);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3, 4])]);
}

#[test]
fn transposes_that_do_not_cancel_merge_into_one() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(2), D::N(3), D::N(4)])
        .node("Transpose", "", "t1", &["x"], &["a"], vec![("perm", A::Is(vec![1, 2, 0]))])
        .node("Transpose", "", "t2", &["a"], &["y"], vec![("perm", A::Is(vec![1, 2, 0]))])
        .node("Transpose", "", "t3", &["a"], &["z"], vec![("perm", A::Is(vec![0, 2, 1]))])
        .output("y")
        .output("z")
        .bytes();
    let (model, report) = folded(&bytes, true);
    // Both readers of `a` are Transposes: each reads x with the composed permutation, and t1 goes.
    assert_eq!(ops(&model), ["Transpose", "Transpose"]);
    assert_eq!(changes(&report, "consecutive Transposes merged"), 2);
    let g = model.graph.as_ref().unwrap();
    let perms: Vec<_> = g.node.iter().map(|n| (n.input[0].clone(), n.attribute[0].ints.clone())).collect();
    assert_eq!(perms, [("x".to_string(), vec![2, 0, 1]), ("x".to_string(), vec![1, 0, 2])]);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3, 4])]);
}

#[test]
fn neutral_constants_go_but_adding_zero_stays_with_exact() {
    let build = || {
        Builder::new(13)
            .input("x", F, &[D::S("N"), D::N(3)])
            .init_f32("one", &[], &[1.0])
            .init_f32("zero", &[1], &[0.0])
            .node("Mul", "", "mul", &["one", "x"], &["a"], vec![])
            .node("Sub", "", "sub", &["a", "zero"], &["b"], vec![])
            .node("Add", "", "add", &["b", "zero"], &["c"], vec![])
            .node("Relu", "", "relu", &["c"], &["y"], vec![])
            .output("y")
            .bytes()
    };
    let bytes = build();
    // -0.0 + 0.0 is +0.0: with --exact the Add stays.
    let (exact, report) = folded(&bytes, true);
    assert_eq!(ops(&exact), ["Add", "Relu"]);
    assert_eq!(changes(&report, "arithmetic with a neutral constant removed"), 2);
    assert_same_outputs(&bytes, &exact, &[ramp(&[2, 3])]);
    let (model, report) = folded(&bytes, false);
    assert_eq!(ops(&model), ["Relu"]);
    assert_eq!(changes(&report, "arithmetic with a neutral constant removed"), 3);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3])]);
}

#[test]
fn a_constant_that_broadcasts_is_not_neutral() {
    // x * ones([2, 3]) with x: [3] broadcasts to [2, 3]: not a no-op.
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(3)])
        .init_f32("ones", &[2, 3], &[1.0; 6])
        .node("Mul", "", "mul", &["x", "ones"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, _) = folded(&bytes, false);
    assert_eq!(ops(&model), ["Mul"]);
    assert_same_outputs(&bytes, &model, &[ramp(&[3])]);
}

#[test]
fn consecutive_reshapes_unsqueezes_and_concats_merge() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(2), D::N(6)])
        .input("z", F, &[D::N(2), D::N(6)])
        .init_i64("t1", &[3, 4])
        .init_i64("t2", &[12])
        .init_i64("a0", &[0])
        .init_i64("a1", &[1])
        .node("Reshape", "", "r1", &["x", "t1"], &["a"], vec![])
        .node("Reshape", "", "r2", &["a", "t2"], &["b"], vec![])
        .node("Unsqueeze", "", "u1", &["b", "a0"], &["c"], vec![])
        .node("Unsqueeze", "", "u2", &["c", "a1"], &["d"], vec![])
        .node("Concat", "", "inner", &["x", "z"], &["e"], vec![("axis", A::I(0))])
        .node("Concat", "", "outer", &["e", "x"], &["f"], vec![("axis", A::I(0))])
        .output("d")
        .output("f")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Reshape", "Unsqueeze", "Concat"]);
    assert_eq!(changes(&report, "consecutive Reshapes merged"), 1);
    assert_eq!(changes(&report, "consecutive Unsqueezes merged"), 1);
    assert_eq!(changes(&report, "consecutive Concats merged"), 1);
    assert_eq!(model.graph.as_ref().unwrap().node[2].input, ["x", "z", "x"]);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 6]), ramp(&[2, 6])]);
}

#[test]
fn repeated_nodes_and_identical_initializers_merge() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N"), D::N(3)])
        .init_f32("w1", &[3], &[1.0, 2.0, 3.0])
        .init_f32("w2", &[3], &[1.0, 2.0, 3.0])
        .node("Mul", "", "m1", &["x", "w1"], &["a"], vec![])
        .node("Mul", "", "m2", &["x", "w2"], &["b"], vec![])
        .node("Add", "", "sum", &["a", "b"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Mul", "Add"]);
    assert_eq!(changes(&report, "identical initializers merged"), 1);
    assert_eq!(changes(&report, "repeated nodes merged"), 1);
    assert_eq!(model.graph.as_ref().unwrap().initializer.len(), 1);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3])]);
}

#[test]
fn dead_nodes_and_unused_initializers_go() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(2), D::N(3)])
        .init_f32("unused", &[3], &[1.0, 2.0, 3.0])
        .node("Relu", "", "kept", &["x"], &["y"], vec![])
        .node("Neg", "", "dead", &["x"], &["nobody"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Relu"]);
    assert!(model.graph.as_ref().unwrap().initializer.is_empty());
    assert_eq!(changes(&report, "dead nodes removed"), 1);
    assert_eq!(changes(&report, "unused initializers removed"), 1);
}

fn conv_bn(channels: usize) -> Vec<u8> {
    let c = channels as i64;
    let w: Vec<f32> = (0..channels * channels).map(|i| (i % 5) as f32 * 0.1 - 0.2).collect();
    let per = |f: fn(usize) -> f32| (0..channels).map(f).collect::<Vec<f32>>();
    Builder::new(13)
        .input("x", F, &[D::S("N"), D::N(c), D::N(4), D::N(4)])
        .init_f32("w", &[c, c, 1, 1], &w)
        .init_f32("scale", &[c], &per(|i| 1.0 + i as f32 * 0.5))
        .init_f32("bias", &[c], &per(|i| i as f32 * 0.25))
        .init_f32("mean", &[c], &per(|i| i as f32 * 0.1))
        .init_f32("var", &[c], &per(|i| 0.5 + i as f32))
        .init_f32("shift", &[1, c, 1, 1], &per(|i| 1.0 - i as f32))
        .node("Conv", "", "conv", &["x", "w"], &["a"], vec![])
        .node("BatchNormalization", "", "bn", &["a", "scale", "bias", "mean", "var"], &["b"], vec![])
        .node("Add", "", "shift", &["b", "shift"], &["y"], vec![])
        .output("y")
        .bytes()
}

#[test]
fn batchnorm_and_a_per_channel_add_fold_into_the_conv() {
    let bytes = conv_bn(3);
    let (model, report) = folded(&bytes, false);
    assert_eq!(ops(&model), ["Conv"]);
    assert_eq!(changes(&report, "BatchNormalization folded into Conv (not bit-exact)"), 1);
    assert_eq!(changes(&report, "Add of a per-channel constant folded into the Conv bias (not bit-exact)"), 1);
    assert_close_outputs(&bytes, &model, &[ramp(&[2, 3, 4, 4])], 1e-5);
    // --exact keeps the three nodes.
    let (exact, _) = folded(&bytes, true);
    assert_eq!(ops(&exact), ["Conv", "BatchNormalization", "Add"]);
    assert_same_outputs(&bytes, &exact, &[ramp(&[2, 3, 4, 4])]);
}

#[test]
fn matmul_and_add_make_a_gemm() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N"), D::N(3)])
        .init_f32("w", &[3, 2], &[1.0, -1.0, 0.5, 2.0, -0.25, 0.75])
        .init_f32("b", &[2], &[0.5, -0.5])
        .node("MatMul", "", "mm", &["x", "w"], &["a"], vec![])
        .node("Add", "", "add", &["a", "b"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, false);
    assert_eq!(ops(&model), ["Gemm"]);
    assert_eq!(changes(&report, "MatMul + Add made a Gemm (not bit-exact)"), 1);
    assert_close_outputs(&bytes, &model, &[ramp(&[5, 3])], 1e-6);
    let (exact, _) = folded(&bytes, true);
    assert_eq!(ops(&exact), ["MatMul", "Add"]);
}

#[test]
fn every_value_gets_a_full_shape_symbolic_dims_included() {
    // Shape -> Gather gives N at run time; the Slice's end is that runtime value.
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N"), D::N(8)])
        .init_i64("zero", &[0])
        .init_i64("axis0", &[1])
        .init_i64("start", &[0])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "n", &["s", "zero"], &["n"], vec![("axis", A::I(0))])
        .node("Slice", "", "cut", &["x", "start", "n", "axis0"], &["a"], vec![])
        .node("Relu", "", "relu", &["a"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert!(report.unshaped.is_empty(), "{:?}", report.unshaped);
    let g = model.graph.as_ref().unwrap();
    let outputs: Vec<String> = g.output.iter().filter_map(|o| o.name.clone()).collect();
    for node in &g.node {
        for o in &node.output {
            let info = if outputs.contains(o) { g.output.iter() } else { g.value_info.iter() }
                .find(|v| v.name.as_ref() == Some(o))
                .unwrap_or_else(|| panic!("{o} has no value_info"));
            let Some(proto::type_proto::Value::TensorType(t)) = info.r#type.as_ref().and_then(|t| t.value.clone())
            else {
                panic!("{o} has no tensor type")
            };
            assert!(t.elem_type.is_some_and(|e| e != 0), "{o}: no element type");
            let shape = t.shape.unwrap_or_else(|| panic!("{o}: no shape"));
            assert!(shape.dim.iter().all(|d| d.value.is_some()), "{o}: a dim without value or name: {shape:?}");
        }
    }
    assert_same_outputs(&bytes, &model, &[ramp(&[5, 8])]);
}

#[test]
fn an_unsqueeze_feeding_several_unsqueezes_merges_into_each() {
    // x: [N] -> Unsqueeze(0) -> [1, N], read by Unsqueeze(2) and Unsqueeze(1): both read x instead.
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N")])
        .init_i64("a0", &[0])
        .init_i64("a1", &[1])
        .init_i64("a2", &[2])
        .node("Unsqueeze", "", "u0", &["x", "a0"], &["a"], vec![])
        .node("Unsqueeze", "", "u1", &["a", "a2"], &["b"], vec![])
        .node("Unsqueeze", "", "u2", &["a", "a1"], &["c"], vec![])
        .node("Add", "", "sum", &["b", "c"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Unsqueeze", "Unsqueeze", "Add"]);
    assert_eq!(changes(&report, "consecutive Unsqueezes merged"), 2);
    let g = model.graph.as_ref().unwrap();
    let axes = |ix: usize| {
        let name = &g.node[ix].input[1];
        ints_of(g.initializer.iter().find(|t| t.name.as_ref() == Some(name)).unwrap())
    };
    assert_eq!((g.node[0].input[0].as_str(), axes(0)), ("x", Some(vec![0, 2])));
    assert_eq!((g.node[1].input[0].as_str(), axes(1)), ("x", Some(vec![0, 1])));
    assert_same_outputs(&bytes, &model, &[ramp(&[3])]);
    assert_same_outputs(&bytes, &model, &[ramp(&[5])]);
}

#[test]
fn an_unsqueeze_read_by_another_kind_of_node_stays() {
    let bytes = Builder::new(13)
        .input("x", F, &[D::S("N")])
        .init_i64("a0", &[0])
        .init_i64("a1", &[1])
        .node("Unsqueeze", "", "u0", &["x", "a0"], &["a"], vec![])
        .node("Unsqueeze", "", "u1", &["a", "a1"], &["b"], vec![])
        .node("Relu", "", "relu", &["a"], &["c"], vec![])
        .output("b")
        .output("c")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Unsqueeze", "Unsqueeze", "Relu"]);
    assert_eq!(changes(&report, "consecutive Unsqueezes merged"), 0);
    assert_same_outputs(&bytes, &model, &[ramp(&[4])]);
}

#[test]
fn a_squeeze_before_a_reshape_merges_and_a_reshape_back_goes() {
    // x: [1] -> Squeeze -> [] -> Reshape([1]) -> [1]: the Reshape reads x, keeps its shape, and goes.
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(1)])
        .input("z", F, &[D::N(2), D::N(3)])
        .init_i64("one", &[1])
        .init_i64("t", &[3, 2])
        .node("Squeeze", "", "s", &["x"], &["a"], vec![])
        .node("Reshape", "", "r", &["a", "one"], &["b"], vec![])
        .node("Flatten", "", "f", &["z"], &["c"], vec![("axis", A::I(1))])
        .node("Reshape", "", "r2", &["c", "t"], &["d"], vec![])
        .node("Mul", "", "mul", &["d", "b"], &["y"], vec![])
        .output("y")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Reshape", "Mul"]);
    assert_eq!(changes(&report, "Squeeze/Unsqueeze/Flatten merged into the Reshape after it"), 2);
    assert_eq!(model.graph.as_ref().unwrap().node[0].input[0], "z");
    assert_same_outputs(&bytes, &model, &[ramp(&[1]), ramp(&[2, 3])]);
}

fn qkv(opset: i64) -> Vec<u8> {
    let w =
        |seed: usize, n: usize| (0..4 * n).map(|i| ((i * 7 + seed) % 11) as f32 * 0.125 - 0.5).collect::<Vec<f32>>();
    Builder::new(opset)
        .input("x", F, &[D::S("N"), D::N(3), D::N(4)])
        .init_f32("wq", &[4, 2], &w(1, 2))
        .init_f32("wk", &[4, 2], &w(2, 2))
        .init_f32("wv", &[4, 3], &w(3, 3))
        .node("MatMul", "", "q", &["x", "wq"], &["q"], vec![])
        .node("MatMul", "", "k", &["x", "wk"], &["k"], vec![])
        .node("MatMul", "", "v", &["x", "wv"], &["v"], vec![])
        .node("Relu", "", "relu", &["q"], &["y"], vec![])
        .output("y")
        .output("k")
        .output("v")
        .bytes()
}

#[test]
fn parallel_matmuls_sharing_an_input_fuse_into_one_and_a_split() {
    for opset in [11, 13, 18] {
        let bytes = qkv(opset);
        let (model, report) = folded(&bytes, false);
        assert_eq!(ops(&model), ["MatMul", "Split", "Relu"], "opset {opset}");
        assert_eq!(changes(&report, "parallel MatMuls fused into one and a Split (not bit-exact)"), 3);
        let g = model.graph.as_ref().unwrap();
        assert_eq!(g.node[1].output, ["q", "k", "v"]);
        let w = g.initializer.iter().find(|t| t.name.as_ref() == Some(&g.node[0].input[1])).unwrap();
        assert_eq!(w.dims, [4, 7]);
        assert_close_outputs(&bytes, &model, &[ramp(&[2, 3, 4])], 1e-6);
        assert_close_outputs(&bytes, &model, &[ramp(&[5, 3, 4])], 1e-6);
        // --exact keeps the three MatMuls.
        let (exact, report) = folded(&bytes, true);
        assert_eq!(ops(&exact), ["MatMul", "MatMul", "MatMul", "Relu"]);
        assert!(report.changes.is_empty(), "{:?}", report.changes);
        assert_same_outputs(&bytes, &exact, &[ramp(&[2, 3, 4])]);
    }
}

#[test]
fn two_parallel_matmuls_or_shared_weights_stay() {
    // Two MatMuls would stay two nodes; a weight another node reads would be copied.
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(2), D::N(4)])
        .init_f32("w1", &[4, 2], &[0.5; 8])
        .init_f32("w2", &[4, 2], &[0.25; 8])
        .node("MatMul", "", "a", &["x", "w1"], &["a"], vec![])
        .node("MatMul", "", "b", &["x", "w2"], &["b"], vec![])
        .node("MatMul", "", "c", &["x", "w1"], &["c"], vec![])
        .output("a")
        .output("b")
        .output("c")
        .bytes();
    let (model, report) = folded(&bytes, false);
    assert_eq!(ops(&model), ["MatMul", "MatMul", "MatMul"]);
    assert_eq!(changes(&report, "parallel MatMuls fused into one and a Split (not bit-exact)"), 0);
}

/// A bidirectional LSTM over x: [T, N, 2] whose initial states are zeros expanded at run time to
/// [2, N, 2] (`Shape -> Slice -> Concat -> Expand`), with the zero `state_zero`.
fn lstm_zero_states(state_zero: f32) -> Vec<u8> {
    let w: Vec<f32> = (0..32).map(|i| ((i * 5) % 7) as f32 * 0.1 - 0.3).collect();
    let r: Vec<f32> = (0..32).map(|i| ((i * 3) % 5) as f32 * 0.1 - 0.2).collect();
    Builder::new(13)
        .input("x", F, &[D::N(3), D::S("N"), D::N(2)])
        .init_f32("w", &[2, 8, 2], &w)
        .init_f32("r", &[2, 8, 2], &r)
        .init_f32("zero", &[1], &[state_zero])
        .init_i64("dirs", &[2])
        .init_i64("hidden", &[2])
        .init_i64("one", &[1])
        .init_i64("two", &[2])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Slice", "", "batch", &["s", "one", "two"], &["n"], vec![])
        .node("Concat", "", "state_shape", &["dirs", "n", "hidden"], &["t"], vec![("axis", A::I(0))])
        .node("Expand", "", "h0", &["zero", "t"], &["h0"], vec![])
        .node("Expand", "", "c0", &["zero", "t"], &["c0"], vec![])
        .node(
            "LSTM",
            "",
            "lstm",
            &["x", "w", "r", "", "", "h0", "c0"],
            &["y"],
            vec![("hidden_size", A::I(2)), ("direction", A::S("bidirectional"))],
        )
        .output("y")
        .bytes()
}

#[test]
fn zero_initial_states_of_a_recurrent_op_become_the_default() {
    let bytes = lstm_zero_states(0.0);
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["LSTM"]);
    assert_eq!(changes(&report, "recurrent op inputs of zeros made the default"), 2);
    assert_eq!(model.graph.as_ref().unwrap().node[0].input, ["x", "w", "r"]);
    assert!(report.unshaped.is_empty(), "{:?}", report.unshaped);
    assert_same_outputs(&bytes, &model, &[ramp(&[3, 1, 2])]);
    assert_same_outputs(&bytes, &model, &[ramp(&[3, 4, 2])]);
}

#[test]
fn nonzero_or_negative_zero_initial_states_stay() {
    for z in [0.5, -0.0] {
        let bytes = lstm_zero_states(z);
        let (model, report) = folded(&bytes, true);
        assert_eq!(changes(&report, "recurrent op inputs of zeros made the default"), 0, "{z}");
        assert_eq!(model.graph.as_ref().unwrap().node.last().unwrap().input.len(), 7, "{z}");
        assert_same_outputs(&bytes, &model, &[ramp(&[3, 2, 2])]);
    }
}

/// `y = If(cond)` over float `x: [2, N]` with the given branches.
fn if_model(then_branch: tract_onnx::pb::GraphProto, else_branch: tract_onnx::pb::GraphProto) -> Vec<u8> {
    Builder::new(13)
        .input("x", F, &[D::N(2), D::S("N")])
        .input("cond", DataType::Bool, &[])
        .init_i64("two", &[2])
        .if_node("choose", "cond", &["y"], then_branch, else_branch)
        .output("y")
        .bytes()
}

/// A branch returning `op(x)` as `out`.
fn unary_branch(op: &str, out: &str) -> tract_onnx::pb::GraphProto {
    Builder::new(13).node(op, "", &format!("{out}_node"), &["x"], &[out], vec![]).output(out).graph(out)
}

/// The branch `name` of the main graph's node `ix`.
fn branch(model: &proto::ModelProto, ix: usize, name: &str) -> proto::GraphProto {
    let node = &model.graph.as_ref().unwrap().node[ix];
    node.attribute.iter().find(|a| a.name.as_deref() == Some(name)).unwrap().g.clone().unwrap()
}

/// Float `x: [2, N]` and `c = (x.shape[0] == 2)`, known true (`rows` is that dim).
fn rows_are_two() -> Builder {
    Builder::new(13)
        .input("x", F, &[D::N(2), D::S("N")])
        .init_i64("zero", &[0])
        .init_i64("two", &[2])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "rows", &["s", "zero"], &["rows"], vec![])
        .node("Equal", "", "is_two", &["rows", "two"], &["c"], vec![])
}

fn branch_ops(g: &proto::GraphProto) -> Vec<String> {
    g.node.iter().map(|n| n.op_type.clone().unwrap_or_default()).collect()
}

#[test]
fn an_if_whose_condition_is_known_becomes_the_branch_it_takes() {
    // Two Ifs on `x.shape[0] == 2` (true), whose then branches both name their value `t` (siblings
    // may): inlined side by side, the second `t` is renamed.
    let bytes = rows_are_two()
        .if_node("first", "c", &["y"], unary_branch("Relu", "t"), unary_branch("Neg", "e"))
        .if_node("second", "c", &["z"], unary_branch("Sigmoid", "t"), unary_branch("Neg", "e"))
        .output("y")
        .output("z")
        .bytes();
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Relu", "Sigmoid"]);
    assert_eq!(changes(&report, "If with a known condition inlined"), 2);
    let g = model.graph.as_ref().unwrap();
    assert_eq!(g.node[0].output, ["y"]);
    assert_eq!(g.node[1].output, ["z"]);
    assert_eq!((report.all_nodes_before, report.all_nodes_after), (9, 2));
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 5])]);
}

#[test]
fn an_inlined_branch_returning_an_outer_value_gets_an_identity_and_keeps_its_names_apart() {
    // The then branch returns `x` itself and makes `rows` (a name the main graph has) on the way.
    let then_branch = Builder::new(13)
        .node("Relu", "", "inner", &["x"], &["rows"], vec![])
        .node("Relu", "", "inner2", &["rows"], &["t"], vec![])
        .output("x")
        .output("t")
        .graph("then");
    let else_branch = Builder::new(13)
        .node("Neg", "", "neg", &["x"], &["e1"], vec![])
        .node("Neg", "", "neg2", &["x"], &["e2"], vec![])
        .output("e1")
        .output("e2")
        .graph("else");
    let bytes = rows_are_two()
        .if_node("choose", "c", &["a", "b"], then_branch, else_branch)
        .node("Cast", "", "rows_f", &["rows"], &["rows_f"], vec![("to", A::I(1))])
        .node("Mul", "", "scale", &["a", "rows_f"], &["y"], vec![])
        .output("y")
        .output("b")
        .bytes();
    // `rows` (2) is read after the If: the inlined branch's own `rows` must not replace it.
    let (model, report) = folded(&bytes, true);
    assert_eq!(changes(&report, "If with a known condition inlined"), 1);
    assert_eq!(ops(&model), ["Relu", "Relu", "Mul"]);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3])]);
}

#[test]
fn if_branches_fold_with_what_is_known_of_the_outer_values() {
    // The then branch tests `x.shape[0] == two` (the outer constant) in a nested If: known only with
    // the outer facts, it folds to the Relu; the branch's Constant becomes one of its initializers.
    let nested = Builder::new(13)
        .node("Shape", "", "in_shape", &["x"], &["in_s"], vec![])
        .node("Constant", "", "in_zero", &[], &["in_zero"], vec![("value_int", A::I(0))])
        .node("Gather", "", "in_rows", &["in_s", "in_zero"], &["in_rows"], vec![])
        .node("Equal", "", "in_is_two", &["in_rows", "two"], &["in_c"], vec![])
        .if_node("nested", "in_c", &["t"], unary_branch("Relu", "r"), unary_branch("Neg", "n"))
        .output("t")
        .graph("then");
    let bytes = if_model(nested, unary_branch("Identity", "e"));
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["If"]);
    let then_branch = branch(&model, 0, "then_branch");
    assert_eq!(branch_ops(&then_branch), ["Relu"]);
    assert_eq!(then_branch.output[0].name.as_deref(), Some("t"));
    // The branch's output has its type and shape, the outer symbol kept.
    let shape = |v: &proto::ValueInfoProto| format!("{:?}", v.r#type);
    assert!(shape(&then_branch.output[0]).contains("DimParam(\"N\")"), "{}", shape(&then_branch.output[0]));
    // Neither the outer constant nor an input was added to the branch.
    assert!(then_branch.input.is_empty() && then_branch.initializer.is_empty(), "{then_branch:?}");
    assert_eq!(changes(&report, "If with a known condition inlined"), 1);
    assert_eq!((report.all_nodes_before, report.all_nodes_after), (9, 3));
    assert!(report.kept_subgraphs.is_empty(), "{:?}", report.kept_subgraphs);
    for cond in [true, false] {
        assert_same_outputs(&bytes, &model, &[ramp(&[2, 3]), tensor0(cond)]);
    }
}

#[test]
fn a_branch_that_cannot_be_analysed_is_kept_and_said() {
    // Squeezing axis 0 of `x: [2, N]` cannot type: that branch stays as it was (it is never taken
    // for these shapes), the other folds.
    let squeeze = Builder::new(13)
        .node("Constant", "", "axes", &[], &["axes"], vec![("value_ints", A::Is(vec![0]))])
        .node("Squeeze", "", "squeeze", &["x", "axes"], &["t"], vec![])
        .output("t")
        .graph("then");
    let else_branch = Builder::new(13)
        .node("Constant", "", "one", &[], &["one"], vec![("value_float", A::F(1.0))])
        .node("Add", "", "plus", &["x", "one"], &["e"], vec![])
        .output("e")
        .graph("else");
    let bytes = if_model(squeeze.clone(), else_branch);
    let (model, report) = folded(&bytes, true);
    assert_eq!(report.kept_subgraphs.len(), 1, "{:?}", report.kept_subgraphs);
    assert!(report.kept_subgraphs[0].starts_with("choose/then_branch: "), "{:?}", report.kept_subgraphs);
    assert_eq!(branch_ops(&branch(&model, 0, "then_branch")), ["Constant", "Squeeze"]);
    assert_eq!(branch_ops(&branch(&model, 0, "else_branch")), ["Add"]);
    assert_eq!(changes(&report, "Constant nodes made initializers"), 1);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3]), tensor0(false)]);
}

#[test]
fn a_dim_compared_with_a_value_it_may_take_is_not_folded() {
    // silero-vad's pattern: `If(shape[-1] == 1)` squeezes the last axis, else keeps it. The last dim
    // `(T+3)/4` is 1 for some T and not for others, so the comparison (tract decides it false, as the
    // two are written differently) and the If stay, and the branches return different ranks.
    let then_branch = Builder::new(13)
        .init_i64("last", &[-1])
        .node("Squeeze", "", "squeeze", &["p", "last"], &["t"], vec![])
        .output("t")
        .graph("then");
    let bytes = Builder::new(13)
        .input("x", F, &[D::N(2), D::S("T")])
        .init_i64("axes", &[1])
        .init_i64("one", &[1])
        .init_i64("minus_one", &[-1])
        .init_i64("pads", &[0, 0, 0, 3])
        .node("Pad", "", "pad", &["x", "pads"], &["padded"], vec![])
        .node("Unsqueeze", "", "unsqueeze", &["padded", "axes"], &["u"], vec![])
        .node(
            "AveragePool",
            "",
            "pool",
            &["u"],
            &["p"],
            vec![("kernel_shape", A::Is(vec![4])), ("strides", A::Is(vec![4]))],
        )
        .node("Shape", "", "shape", &["p"], &["s"], vec![])
        .node("Gather", "", "last_dim", &["s", "minus_one"], &["d"], vec![])
        .node("Equal", "", "is_one", &["d", "one"], &["c"], vec![])
        .if_node("choose", "c", &["y"], then_branch, unary_branch("Identity", "e"))
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let a = m.analyse().unwrap();
    let c = a.typed.outlet_fact(a.outlets["c"]).unwrap();
    assert!(c.konst.is_none(), "{c:?}");
    let (model, report) = folded(&bytes, true);
    assert_eq!(ops(&model), ["Pad", "Unsqueeze", "AveragePool", "Shape", "Gather", "Equal", "If"]);
    assert_eq!(changes(&report, "If with a known condition inlined"), 0);
    // T = 1 takes the squeeze (rank 2), T = 5 does not (rank 3); the folded model does the same.
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 1])]);
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 5])]);
}

#[test]
fn branches_nested_deeper_than_the_limit_are_left_as_they_are() {
    // 18 Ifs nested in their then branches, each on the input `cond`: folding goes 16 deep.
    let mut inner = unary_branch("Relu", "r");
    for d in 0..18 {
        let out = format!("i{d}");
        inner = Builder::new(13)
            .if_node(&out, "cond", &[&out], inner, unary_branch("Neg", &format!("n{d}")))
            .output(&out)
            .graph(&out);
    }
    let bytes = if_model(inner, unary_branch("Identity", "e"));
    let (model, report) = folded(&bytes, true);
    assert_eq!(report.all_nodes_after, report.all_nodes_before);
    assert_eq!(report.kept_subgraphs.len(), 2, "{:?}", report.kept_subgraphs);
    assert!(
        report.kept_subgraphs.iter().all(|k| k.ends_with("nested more than 16 deep")),
        "{:?}",
        report.kept_subgraphs
    );
    assert_same_outputs(&bytes, &model, &[ramp(&[2, 3]), tensor0(true)]);
}

/// The values of an int64 or int32 initializer, raw or typed.
fn ints_of(t: &sliceops::onnx::proto::TensorProto) -> Option<Vec<i64>> {
    use sliceops::onnx::proto::tensor_proto::DataType;
    let dt = DataType::try_from(t.data_type?).ok()?;
    match (dt, t.raw_data.as_ref()) {
        (DataType::Int64, Some(raw)) if raw.len() % 8 == 0 => {
            Some(raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect())
        }
        (DataType::Int32, Some(raw)) if raw.len() % 4 == 0 => {
            Some(raw.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes(c.try_into().unwrap()))).collect())
        }
        (DataType::Int64, None) => Some(t.int64_data.clone()),
        (DataType::Int32, None) => Some(t.int32_data.iter().map(|&v| i64::from(v)).collect()),
        _ => None,
    }
}

/// A `Loop` over `acc += c; scan = acc * d`, `c` and `d` `Constant` nodes of its body.
fn loop_with_body_constants() -> Vec<u8> {
    let konst = |name: &str, v: [f32; 2]| {
        let t = tract_onnx::pb::TensorProto {
            dims: vec![2],
            data_type: DataType::Float as i32,
            float_data: v.to_vec(),
            name: name.into(),
            ..Default::default()
        };
        ("value", A::T(t))
    };
    let body = Builder::new(13)
        .input("i", DataType::Int64, &[])
        .input("cond", DataType::Bool, &[])
        .input("acc", F, &[D::N(2)])
        .node("Identity", "", "keep", &["cond"], &["cond_out"], vec![])
        .node("Constant", "", "c", &[], &["c"], vec![konst("c", [1.5, -2.0])])
        .node("Constant", "", "d", &[], &["d"], vec![konst("d", [3.0, 0.5])])
        .node("Add", "", "add", &["acc", "c"], &["acc_out"], vec![])
        .node("Mul", "", "mul", &["acc_out", "d"], &["scan"], vec![])
        .output("cond_out")
        .output("acc_out")
        .output("scan")
        .graph("body");
    Builder::new(13)
        .input("M", DataType::Int64, &[])
        .input("x", F, &[D::N(2)])
        .init("yes", DataType::Bool, &[], vec![1])
        .node("Loop", "", "loop", &["M", "yes", "x"], &["acc", "scans"], vec![("body", A::G(body))])
        .output("acc")
        .output("scans")
        .bytes()
}

#[test]
fn constants_of_a_loop_body_become_its_initializers() {
    let bytes = loop_with_body_constants();
    let (model, report) = folded(&bytes, false);
    let body = model.graph.as_ref().unwrap().node[0].attribute[0].g.as_ref().unwrap();
    let body_ops: Vec<&str> = body.node.iter().map(|n| n.op_type.as_deref().unwrap_or_default()).collect();
    assert_eq!(body_ops, ["Identity", "Add", "Mul"]);
    let names: Vec<&str> = body.initializer.iter().map(|t| t.name.as_deref().unwrap_or_default()).collect();
    assert_eq!(names, ["c", "d"]);
    assert_eq!(changes(&report, "Constant of a Loop or Scan body made an initializer"), 2);
    let inputs = [tensor0(3i64), tensor1(&[1.0f32, 2.0])];
    assert_same_outputs(&bytes, &model, &inputs);
    // acc = x + 3c = [5.5, -4]; the last scan row is acc * d = [16.5, -2].
    let out = run(&encode(&model), &inputs);
    let acc = out[0].1.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
    assert_eq!(acc, [5.5, -4.0]);
    let scans = out[1].1.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
    assert_eq!(out[1].1.shape(), [3, 2]);
    assert_eq!(scans[4..], [16.5, -2.0]);
}
