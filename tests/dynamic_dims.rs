//! Whole models with dynamic dims: each failure the dynamic-dims work measured, as a small model.
//! `run` binds what it is given; `infer` gives every value its most exact shape, names unnamed dims,
//! reports requirements, and goes on where a rule cannot express a dim.

mod common;

use common::onnx_build::{Builder, A, D};
use common::tensors::arange_f32;
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

/// `name: dtype [dims]` for every value, as `infer` reports them.
fn infer_lines(m: &Model) -> Vec<String> {
    m.infer()
        .unwrap()
        .iter()
        .map(|f| {
            let dims: Vec<String> = f.shape.iter().map(sliceops::format_dim).collect();
            format!("{}: {} [{}]", f.name, f.dtype_name, dims.join(", "))
        })
        .collect()
}

fn shape_of(m: &Model, value: &str) -> String {
    infer_lines(m).into_iter().find(|l| l.starts_with(&format!("{value}: "))).unwrap_or_else(|| {
        panic!("no fact for {value}: {:?}", infer_lines(m));
    })
}

#[test]
fn unnamed_input_dims_each_get_their_own_symbol() {
    // MXNet: no value, no name; paddle2onnx: -1 and `?` (twice, for height and width); tf2onnx: unk__N.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::Unset, D::N(-1), D::S("?"), D::S("?"), D::S("unk__12")])
        .node("Relu", "", "r", &["x"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [x_d0, x_d1, x_d2, x_d3, unk__12]");
    let analysis = m.analyse().unwrap();
    let kinds: Vec<String> = analysis.symbols.iter().map(|s| format!("{}:{:?}", s.name, s.origin)).collect();
    assert_eq!(kinds.len(), 5, "{kinds:?}");
    // run binds every dim from the tensor it is given.
    let out = m.run(vec![arange_f32(&[1, 2, 3, 4, 5])]).unwrap();
    assert_eq!(out[0].1.shape(), &[1, 2, 3, 4, 5]);
}

#[test]
fn an_assumption_names_an_unnamed_input_dim_as_it_prints() {
    // The dims print as x_d0 and x_d1; assumptions on them are on those dims, not on new symbols.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::Unset, D::S("?")])
        .init_i64("start", &[1])
        .init_i64("end", &[i64::MAX])
        .init_i64("axis", &[1])
        .node("Slice", "", "cut", &["x", "start", "end", "axis"], &["y"], vec![])
        .output("y")
        .bytes();
    let mut m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [x_d0, max(0,x_d1-1)]");
    m.assume("x_d1>=1").unwrap();
    m.assume("x_d0==1").unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [1, x_d1-1]");
    let names: Vec<String> = m.analyse().unwrap().symbols.iter().map(|s| s.name.clone()).collect();
    assert_eq!(names, ["x_d0", "x_d1"]);
}

#[test]
fn a_pad_by_run_time_amounts_keeps_the_dims_whose_pads_are_known() {
    // torchvision pads its images by (0, pw, 0, ph, 0, 0), written as a vector reshaped to [3, 2],
    // its rows reversed, transposed and flattened: [0, 0, 0, 0, ph, pw]. Here ph and pw are a run-time
    // input's values; the channel axis, padded by the known zeros, keeps its 3.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(3), D::S("H"), D::S("W")])
        .input("extra", DataType::Int64, &[D::N(2)])
        .init_i64("zero", &[0])
        .init_i64("one", &[1])
        .init_i64("rows", &[-1, 2])
        .init_i64("flat", &[-1])
        .init_i64("last", &[-1])
        .init_i64("before_first", &[i64::MIN + 1])
        .node("Gather", "", "ph", &["extra", "zero"], &["h"], vec![("axis", A::I(0))])
        .node("Gather", "", "pw", &["extra", "one"], &["w"], vec![("axis", A::I(0))])
        .node("Concat", "", "torch_order", &["zero", "w", "zero", "h", "zero", "zero"], &["v"], vec![("axis", A::I(0))])
        .node("Reshape", "", "pairs", &["v", "rows"], &["r"], vec![])
        .node("Slice", "", "reverse", &["r", "last", "before_first", "zero", "last"], &["s"], vec![])
        .node("Transpose", "", "swap", &["s"], &["t"], vec![("perm", A::Is(vec![1, 0]))])
        .node("Reshape", "", "onnx_order", &["t", "flat"], &["pads"], vec![])
        .node("Pad", "", "pad", &["x", "pads"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "pads"), "pads: int64 [6]");
    assert_eq!(shape_of(&m, "y"), "y: float32 [3, pad_1, pad_2]");
    let out = m.run(vec![Tensor::from(tract_ndarray::Array3::<f32>::ones((3, 2, 2))), tensor1(&[1i64, 2])]).unwrap();
    let y = &out[0].1;
    assert_eq!(y.shape(), &[3, 3, 4]);
    let ones = y.to_plain_array_view::<f32>().unwrap().iter().filter(|v| **v == 1.0).count();
    assert_eq!(ones, 12);
}

#[test]
fn dynamo_dims_written_as_expressions_are_read() {
    let bytes = Builder::new(18)
        .input("x", DataType::Float, &[D::S("batch"), D::S("8*height")])
        .node("Relu", "", "r", &["x"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [batch, 8*height]");
    assert_eq!(m.run(vec![arange_f32(&[2, 64])]).unwrap()[0].1.shape(), &[2, 64]);
}

/// `mask[:, :, :T, :T]` with `T` from `Shape(x)[1]`: the 4-node causal mask of transformers.
fn causal_mask() -> Vec<u8> {
    let table: Vec<f32> = (0..256).map(|i| if i % 16 <= i / 16 { 1.0 } else { 0.0 }).collect();
    Builder::new(13)
        .input("x", DataType::Float, &[D::S("batch"), D::S("seq")])
        .init_f32("mask", &[1, 1, 16, 16], &table)
        .init_i64("one", &[1])
        .init_i64("zero", &[0])
        .init_i64("zeros", &[0, 0])
        .init_i64("axes", &[2, 3])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "gather", &["s", "one"], &["t"], vec![("axis", A::I(0))])
        .node("Concat", "", "ends", &["t", "t"], &["e"], vec![("axis", A::I(0))])
        .node("Slice", "", "cut", &["mask", "zeros", "e", "axes"], &["m"], vec![])
        .output("m")
        .bytes()
}

#[test]
fn a_causal_mask_cut_by_a_shape_is_exact_and_runs() {
    let mut m = Model::load_bytes(&causal_mask()).unwrap();
    assert_eq!(shape_of(&m, "e"), "e: int64 [2]");
    assert_eq!(shape_of(&m, "m"), "m: float32 [1, 1, min(seq,16), min(seq,16)]");
    let out = m.run(vec![arange_f32(&[2, 5])]).unwrap();
    assert_eq!(out[0].1.shape(), &[1, 1, 5, 5]);
    let values = out[0].1.to_plain_array_view::<f32>().unwrap().iter().copied().collect::<Vec<_>>();
    let want: Vec<f32> = (0..25).map(|i| if i % 5 <= i / 5 { 1.0 } else { 0.0 }).collect();
    assert_eq!(values, want);
    // An upper bound on seq replaces the default one.
    m.assume("seq<=16").unwrap();
    assert_eq!(shape_of(&m, "m"), "m: float32 [1, 1, seq, seq]");
}

#[test]
fn the_value_of_a_shape_tensor_is_reported() {
    let m = Model::load_bytes(&causal_mask()).unwrap();
    let json = sliceops::report::analysis_json(&m.analyse().unwrap(), &m.cases().unwrap(), m.graph(), m.assumptions())
        .unwrap();
    let e = json["values"].as_array().unwrap().iter().find(|v| v["name"] == "e").unwrap();
    assert_eq!(e["value"], serde_json::json!(["seq", "seq"]));
    assert_eq!(e["producer"], serde_json::json!({"node": "ends", "op": "Concat"}));
}

#[test]
fn a_slice_end_divided_from_a_dim_is_exact() {
    // x[..., :H/4]
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(1), D::S("H")])
        .init_i64("one", &[1])
        .init_i64("four", &[4])
        .init_i64("zero", &[0])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "gather", &["s", "one"], &["h"], vec![("axis", A::I(0))])
        .node("Div", "", "quarter", &["h", "four"], &["q"], vec![])
        .node("Slice", "", "cut", &["x", "zero", "q", "one"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [1, H/4]");
    assert_eq!(m.run(vec![arange_f32(&[1, 10])]).unwrap()[0].1.shape(), &[1, 2]);
}

#[test]
fn a_float_range_over_a_dim_has_that_length() {
    // keras' positional embeddings: Range(0.0, float(T), 1.0).
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("batch"), D::S("T")])
        .init_i64("one", &[1])
        .init_f32("start", &[], &[0.0])
        .init_f32("delta", &[], &[1.0])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "gather", &["s", "one"], &["t"], vec![("axis", A::I(0))])
        .node("Squeeze", "", "squeeze", &["t"], &["t0"], vec![])
        .node("Cast", "", "cast", &["t0"], &["tf"], vec![("to", A::I(DataType::Float as i64))])
        .node("Range", "", "range", &["start", "tf", "delta"], &["r"], vec![])
        .output("r")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "r"), "r: float32 [T]");
    let out = m.run(vec![arange_f32(&[1, 4])]).unwrap();
    assert_eq!(out[0].1, tensor1(&[0f32, 1., 2., 3.]));
}

#[test]
fn float_size_arithmetic_over_a_dim_tract_cannot_sign_is_followed() {
    // EfficientNet's SAME padding is computed in floats (`ceil(float(d) / 2)`) from a dim that tract
    // writes with negative terms: here `d = W - 2*(W/2)`, the length of `x[:, 2*(W//2):]`. Only the
    // fact that `d` is some tensor's dim tells that it is not negative (floor and truncation agree).
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(1), D::S("W")])
        .init_i64("one", &[1])
        .init_i64("zero", &[0])
        .init_i64("end", &[i64::MAX])
        .init("two", DataType::Int64, &[], 2i64.to_le_bytes().to_vec())
        .init_f32("twof", &[], &[2.0])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "gather", &["s", "one"], &["w"], vec![("axis", A::I(0))])
        .node("Div", "", "half", &["w", "two"], &["h"], vec![])
        .node("Mul", "", "even", &["h", "two"], &["e"], vec![])
        .node("Slice", "", "tail", &["x", "e", "end", "one"], &["t"], vec![])
        .node("Shape", "", "shape2", &["t"], &["s2"], vec![])
        .node("Gather", "", "gather2", &["s2", "one"], &["d"], vec![("axis", A::I(0))])
        .node("Cast", "", "tofloat", &["d"], &["df"], vec![("to", A::I(DataType::Float as i64))])
        .node("Div", "", "halff", &["df", "twof"], &["q"], vec![])
        .node("Ceil", "", "ceil", &["q"], &["c"], vec![])
        .node("Cast", "", "toint", &["c"], &["ci"], vec![("to", A::I(DataType::Int64 as i64))])
        .node("ConstantOfShape", "", "fill", &["ci"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "t"), "t: float32 [1, W-2*(W/2)]");
    assert_eq!(shape_of(&m, "y"), "y: float32 [(W-2*(W/2)+1)/2]");
    assert_eq!(m.run(vec![arange_f32(&[1, 5])]).unwrap()[0].1.shape(), &[1]);
    assert_eq!(m.run(vec![arange_f32(&[1, 6])]).unwrap()[0].1.shape(), &[0]);
}

#[test]
fn an_integer_range_over_a_dim_is_not_max_t_0() {
    // Range(0, T, 1) has length T (a dim is never negative), so a Reshape to [T, 1] types.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("T")])
        .init_i64("zero", &[0])
        .init_i64("one", &[1])
        .init_i64("target", &[-1, 1])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Squeeze", "", "squeeze", &["s", "zero"], &["t"], vec![])
        .node("Squeeze", "", "squeeze0", &["zero", "zero"], &["z"], vec![])
        .node("Squeeze", "", "squeeze1", &["one", "zero"], &["o"], vec![])
        .node("Range", "", "range", &["z", "t", "o"], &["r"], vec![])
        .node("Reshape", "", "reshape", &["r", "target"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "r"), "r: int64 [T]");
    assert_eq!(shape_of(&m, "y"), "y: int64 [T, 1]");
}

#[test]
fn flatten_over_two_symbols_is_their_product() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("batch"), D::S("seq"), D::N(8)])
        .node("Flatten", "", "flatten", &["x"], &["y"], vec![("axis", A::I(2))])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [batch*seq, 8]");
    assert_eq!(m.run(vec![arange_f32(&[2, 3, 8])]).unwrap()[0].1.shape(), &[6, 8]);
}

#[test]
fn targets_built_from_shape_gather_concat_type() {
    // torch's `x.view(x.size(0), x.size(1), 2, -1)`, and tf2onnx's BroadcastTo (ones expanded to
    // `[x.size(0), 3]`): the target is Concat(Gather(Shape(x)), constant tail).
    // (op, its data input, dims gathered from x's shape, the constant tail, y's shape)
    type Row = (&'static str, &'static str, &'static [i64], &'static [i64], &'static str);
    let rows: [Row; 2] = [
        ("Reshape", "x", &[0, 1], &[2, -1], "y: float32 [batch, seq, 2, 4]"),
        ("Expand", "one", &[0], &[3], "y: float32 [batch, 3]"),
    ];
    for (op, data, gathered, tail, want) in rows {
        let bytes = Builder::new(13)
            .input("x", DataType::Float, &[D::S("batch"), D::S("seq"), D::N(8)])
            .init_f32("one", &[1], &[1.0])
            .init_i64("gathered", gathered)
            .init_i64("tail", tail)
            .node("Shape", "", "shape", &["x"], &["s"], vec![])
            .node("Gather", "", "gather", &["s", "gathered"], &["head"], vec![("axis", A::I(0))])
            .node("Concat", "", "concat", &["head", "tail"], &["target"], vec![("axis", A::I(0))])
            .node(op, "", "op", &[data, "target"], &["y"], vec![])
            .output("y")
            .bytes();
        let m = Model::load_bytes(&bytes).unwrap();
        assert_eq!(shape_of(&m, "y"), want, "{op}");
    }
}

#[test]
fn dims_a_concat_needs_equal_are_a_requirement() {
    // An FPN: a map of height (H+15)/16 concatenated with an upsampled one of height 2*((H+31)/32).
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(1), D::N(2), D::S("H")])
        .init_i64("zero", &[0])
        .init_i64("big", &[i64::MAX])
        .init_i64("axis2", &[2])
        .init_i64("s16", &[16])
        .init_i64("s32", &[32])
        .node("Slice", "", "stride16", &["x", "zero", "big", "axis2", "s16"], &["a"], vec![])
        .node("Slice", "", "stride32", &["x", "zero", "big", "axis2", "s32"], &["b"], vec![])
        .node("Concat", "", "upsample", &["b", "b"], &["bb"], vec![("axis", A::I(2))])
        .node("Concat", "", "fpn", &["a", "bb"], &["y"], vec![("axis", A::I(1))])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "a"), "a: float32 [1, 2, (H+15)/16]");
    assert_eq!(shape_of(&m, "bb"), "bb: float32 [1, 2, 2*((H+31)/32)]");
    assert_eq!(shape_of(&m, "y"), "y: float32 [1, 4, (H+15)/16]");
    let analysis = m.analyse().unwrap();
    let reqs: Vec<String> = analysis.requirements.iter().map(|r| format!("{r} ({}, {})", r.node, r.op)).collect();
    assert_eq!(reqs, vec!["(H+15)/16 == 2*((H+31)/32) (fpn, Concat)"]);
    // It holds for H = 64, and running checks it: H = 48 breaks it.
    assert_eq!(m.run(vec![arange_f32(&[1, 2, 64])]).unwrap()[0].1.shape(), &[1, 4, 4]);
    let err = format!("{:#}", m.run(vec![arange_f32(&[1, 2, 48])]).unwrap_err());
    assert!(err.contains("fpn") || err.contains("Concat") || err.contains("concat"), "{err}");
}

#[test]
fn exporter_sentinels_resolve_as_at_run_time() {
    // tf2onnx: x[-1:INT32_MAX] on a symbolic axis, then the shrink (Squeeze) of it.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::N(3)])
        .init_i64("start", &[-1])
        .init_i64("end", &[i32::MAX as i64])
        .init_i64("end64", &[i64::MAX])
        .init_i64("zero", &[0])
        .node("Slice", "", "last", &["x", "start", "end", "zero"], &["l"], vec![])
        .node("Slice", "", "all", &["x", "zero", "end64", "zero"], &["a"], vec![])
        .output("l")
        .output("a")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "l"), "l: float32 [min(N,1), 3]");
    assert_eq!(shape_of(&m, "a"), "a: float32 [N, 3]");
    let mut m = m;
    m.assume("N>=1").unwrap();
    assert_eq!(shape_of(&m, "l"), "l: float32 [1, 3]");
}

#[test]
fn an_int64_max_cast_to_int64_keeps_its_value() {
    // tract casts integers to dims through i32, which made INT64_MAX -1 where it meets a Shape.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N")])
        .init_i64("big", &[i64::MAX])
        .init_i64("zero", &[0])
        .node("Cast", "", "cast", &["big"], &["end"], vec![("to", A::I(DataType::Int64 as i64))])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Min", "", "min", &["end", "s"], &["e"], vec![])
        .node("Slice", "", "cut", &["x", "zero", "end", "zero"], &["y"], vec![])
        .output("y")
        .output("e")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [N]");
    let out = m.run(vec![arange_f32(&[4])]).unwrap();
    assert_eq!(out[0].1.shape(), &[4]);
    assert_eq!(out[1].1, tensor1(&[4i64]));
}

/// `y = If(cond)` with the given branches, both reading the outer float `x` of `x_dims`.
fn if_over(x_dims: &[D], then_branch: tract_onnx::pb::GraphProto, else_branch: tract_onnx::pb::GraphProto) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, x_dims)
        .input("cond", DataType::Bool, &[])
        .if_node("branch", "cond", &["y"], then_branch, else_branch)
        .output("y")
        .bytes()
}

/// `If(cond)`: the then branch squeezes axis 0 of `x`, the else branch axis 1 (not 1 for these
/// shapes: analysing it with them fails, as silero-vad's 8 kHz branch does at 16 kHz).
fn if_model(else_output_axis: i64) -> Vec<u8> {
    let then_branch = Builder::new(13)
        .init_i64("then_axes", &[0])
        .node("Squeeze", "", "then_squeeze", &["x", "then_axes"], &["then_y"], vec![])
        .output("then_y")
        .graph("then");
    let else_branch = Builder::new(13)
        .init_i64("else_axes", &[else_output_axis])
        .node("Squeeze", "", "else_squeeze", &["x", "else_axes"], &["else_y"], vec![])
        .output("else_y")
        .graph("else");
    if_over(&[D::N(1), D::S("K")], then_branch, else_branch)
}

#[test]
fn an_if_runs_the_branch_taken_when_the_other_cannot_be_analysed() {
    let m = Model::load_bytes(&if_model(1)).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [K]");
    let out = m.run(vec![arange_f32(&[1, 4]), tensor0(true)]).unwrap();
    assert_eq!(out[0].1, tensor1(&[0f32, 1., 2., 3.]));
    // Taking the branch that cannot run with these shapes is an error at run time, naming it.
    let err = format!("{:#}", m.run(vec![arange_f32(&[1, 4]), tensor0(false)]).unwrap_err());
    assert!(err.contains("branch"), "{err}");
}

#[test]
fn branches_returning_different_shapes_give_a_fresh_dim() {
    // Over x: [2, K], the then branch keeps column 0 ([2, 1]), the else branch returns x ([2, K]):
    // the same rank with different dims, so the second dim is a fresh symbol of the If.
    let then_branch = Builder::new(13)
        .init_i64("t_starts", &[0])
        .init_i64("t_ends", &[1])
        .init_i64("t_axes", &[1])
        .node("Slice", "", "then_cut", &["x", "t_starts", "t_ends", "t_axes"], &["then_y"], vec![])
        .output("then_y")
        .graph("then");
    let else_branch =
        Builder::new(13).node("Identity", "", "else_same", &["x"], &["else_y"], vec![]).output("else_y").graph("else");
    let bytes = if_over(&[D::N(2), D::S("K")], then_branch, else_branch);
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [2, branch_0_1]");
    let a = m.analyse().unwrap();
    let fresh = a.symbols.iter().find(|s| s.name == "branch_0_1").unwrap();
    assert!(matches!(&fresh.origin, sliceops::Origin::Node { node, .. } if node == "branch"), "{fresh:?}");
    assert_eq!(m.run(vec![arange_f32(&[2, 3]), tensor0(true)]).unwrap()[0].1.shape(), &[2, 1]);
    assert_eq!(m.run(vec![arange_f32(&[2, 3]), tensor0(false)]).unwrap()[0].1.shape(), &[2, 3]);
}

/// `If(cond)` over `x: [1, K]` whose branches both squeeze axis 1 (1 only when K is), each declaring
/// its output as given.
fn declared_if_model(then_dims: &[D], else_dims: &[D]) -> Vec<u8> {
    let branch = |name: &str, dims: &[D]| {
        Builder::new(13)
            .init_i64(&format!("{name}_axes"), &[1])
            .node(
                "Squeeze",
                "",
                &format!("{name}_squeeze"),
                &["x", &format!("{name}_axes")],
                &[&format!("{name}_y")],
                vec![],
            )
            .output_typed(&format!("{name}_y"), DataType::Float, dims)
            .graph(name)
    };
    if_over(&[D::N(1), D::S("K")], branch("then", then_dims), branch("else", else_dims))
}

#[test]
fn branches_that_cannot_be_analysed_count_with_what_they_declare() {
    // Neither branch types with K symbolic: the If's output is what both declare, `[1]`.
    let m = Model::load_bytes(&declared_if_model(&[D::N(1)], &[D::N(1)])).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [1]");
    let out = m.run(vec![arange_f32(&[1, 1]), tensor0(true)]).unwrap();
    assert_eq!(out[0].1, tensor1(&[0f32]));
    // Dims they declare differently, or leave unnamed, are a fresh symbol bound when it runs.
    let m = Model::load_bytes(&declared_if_model(&[D::N(1)], &[D::S("L")])).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [branch_0_0]");
    assert_eq!(m.run(vec![arange_f32(&[1, 1]), tensor0(false)]).unwrap()[0].1, tensor1(&[0f32]));
    // Branches declaring different ranks leave the output unknown rather than guessed.
    let m = Model::load_bytes(&declared_if_model(&[D::N(1)], &[D::N(1), D::N(1)])).unwrap();
    assert!(infer_lines(&m).iter().all(|l| !l.starts_with("y: ")), "{:?}", infer_lines(&m));
}

#[test]
fn a_graph_output_that_is_a_graph_input_runs() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N")])
        .node("Relu", "", "r", &["x"], &["y"], vec![])
        .output("x")
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let out = m.run(vec![arange_f32(&[3])]).unwrap();
    assert_eq!(out[0].1, tensor1(&[0f32, 1., 2.]));
    assert_eq!(out[1].0, "y");
}

#[test]
fn run_keeps_one_plan_per_input_shapes() {
    let m = Model::load_bytes(&causal_mask()).unwrap();
    assert_eq!(m.plans_made(), 0);
    m.run(vec![arange_f32(&[1, 5])]).unwrap();
    m.run(vec![arange_f32(&[1, 5])]).unwrap();
    assert_eq!(m.plans_made(), 1);
    m.run(vec![arange_f32(&[2, 7])]).unwrap();
    assert_eq!(m.plans_made(), 2);
    m.run(vec![arange_f32(&[1, 5])]).unwrap();
    assert_eq!(m.plans_made(), 2);
}

#[test]
fn every_onnx_element_type_is_analysed_by_name() {
    use tract_onnx::pb;
    let mut b = Builder::new(21)
        .input("x", DataType::Float, &[D::S("N"), D::N(3)])
        .input("names", DataType::String, &[D::S("K")])
        .node("Cast", "", "to_bf16", &["x"], &["xb"], vec![("to", A::I(DataType::Bfloat16 as i64))])
        .node("Cast", "", "to_f8", &["x"], &["x8"], vec![("to", A::I(DataType::Float8e4m3fn as i64))])
        .node("Identity", "", "same_names", &["names"], &["n"], vec![])
        .output("xb")
        .output("x8")
        .output("n");
    // An int4 initializer [1, -2, 7]: two values per byte, low nibble first.
    b = b
        .init("w", DataType::Int4, &[3], vec![0xe1, 0x07])
        .node("Identity", "", "w_same", &["w"], &["wi"], vec![])
        .output("wi");
    let bytes = b.bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let lines = infer_lines(&m);
    assert_eq!(
        lines,
        vec![
            "x: float32 [N, 3]",
            "names: str [K]",
            "xb: bfloat16 [N, 3]",
            "x8: float8_e4m3fn [N, 3]",
            "n: str [K]",
            "wi: int4 [3]",
        ]
    );
    let strings = tract_ndarray::arr1(&["a".to_string()]).into_tensor();
    let err = format!("{:#}", m.run(vec![arange_f32(&[2, 3]), strings]).unwrap_err());
    assert!(err.contains("bfloat16") && err.contains("run does not"), "{err}");
    let _ = pb::ModelProto::default();
}

/// `If(size(shape) == 2)`, known when analysing: its branch squeezes axis 0 of
/// `ConstantOfShape(shape)`, a dim known only when the model runs.
fn known_if_squeezing_a_runtime_dim() -> Vec<u8> {
    let then_branch = Builder::new(13)
        .init_i64("axes", &[0])
        .node("Squeeze", "", "squeeze", &["x", "axes"], &["then_y"], vec![])
        .output("then_y")
        .graph("then");
    let else_branch =
        Builder::new(13).node("Identity", "", "same", &["x"], &["else_y"], vec![]).output("else_y").graph("else");
    Builder::new(13)
        .input("shape", DataType::Int64, &[D::N(2)])
        .init_i64("two", &[2])
        .node("ConstantOfShape", "", "zeros", &["shape"], &["x"], vec![])
        .node("Size", "", "size", &["shape"], &["n"], vec![])
        .node("Equal", "", "is_two", &["n", "two"], &["cond"], vec![])
        .if_node("branch", "cond", &["y"], then_branch, else_branch)
        .output("y")
        .bytes()
}

#[test]
fn a_branch_known_to_be_taken_squeezes_a_dim_known_only_when_it_runs() {
    // The dim is 1 or the model is wrong: the branch is typed (rank 1) and the run checks it.
    let m = Model::load_bytes(&known_if_squeezing_a_runtime_dim()).unwrap();
    let facts = m.infer().unwrap();
    let y = facts.iter().find(|f| f.name == "y").unwrap();
    assert_eq!(y.shape.len(), 1, "{y:?}");
    let out = m.run(vec![tensor1(&[1i64, 3])]).unwrap();
    assert_eq!(out[0].1, tensor1(&[0f32, 0., 0.]));
    let err = format!("{:#}", m.run(vec![tensor1(&[2i64, 3])]).unwrap_err());
    assert!(err.contains("'squeeze'") && err.contains("only dims of 1 can be squeezed"), "{err}");
}

#[test]
fn an_if_on_a_value_with_branches_of_different_ranks_runs_with_the_values() {
    // `If(c)` returns the scalar `a` or the vector `b` of 1: the rank of `y` depends on the value of
    // `c`, so the plan for these inputs is made from their values.
    let then_branch =
        Builder::new(13).node("Identity", "", "t", &["a"], &["then_y"], vec![]).output("then_y").graph("then");
    let else_branch =
        Builder::new(13).node("Identity", "", "e", &["b"], &["else_y"], vec![]).output("else_y").graph("else");
    let bytes = Builder::new(13)
        .input("c", DataType::Bool, &[])
        .input("a", DataType::Float, &[])
        .input("b", DataType::Float, &[D::N(1)])
        .init_f32("k", &[3], &[1., 2., 3.])
        .if_node("branch", "c", &["y"], then_branch, else_branch)
        .node("Add", "", "add", &["y", "k"], &["z"], vec![])
        .output("z")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let run = |c: bool| m.run(vec![tensor0(c), tensor0(10f32), tensor1(&[20f32])]).unwrap().remove(0).1;
    assert_eq!(run(true), tensor1(&[11f32, 12., 13.]));
    assert_eq!(run(false), tensor1(&[21f32, 22., 23.]));
}

#[test]
fn a_requirement_true_for_every_input_is_not_reported() {
    // `u` is x[:, 1:] ([N, max(0,T-1)]), `y` is declared [N, T-1]: concatenated on axis 0 they need
    // T-1 == max(0,T-1), which holds since T-1 is already a dim (of y).
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::S("T")])
        .input("y", DataType::Float, &[D::S("N"), D::S("T-1")])
        .init_i64("start", &[1])
        .init_i64("end", &[i64::MAX])
        .init_i64("axis", &[1])
        .node("Slice", "", "cut", &["x", "start", "end", "axis"], &["u"], vec![])
        .node("Concat", "", "cat", &["u", "y"], &["z"], vec![("axis", A::I(0))])
        .output("z")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let a = m.analyse().unwrap();
    let reqs: Vec<String> = a.requirements.iter().map(|r| r.to_string()).collect();
    assert!(reqs.is_empty(), "{reqs:?}");
    assert_eq!(shape_of(&m, "z"), "z: float32 [2*N, T-1]");
}

/// x[:, 1:] (`u`) through a Relu (`v`), with a second input `y: [N, T-1]` when `with_y`.
fn slice_after_first(with_y: bool) -> Vec<u8> {
    let mut b = Builder::new(13).input("x", DataType::Float, &[D::S("N"), D::S("T")]);
    if with_y {
        b = b.input("y", DataType::Float, &[D::S("N"), D::S("T-1")]).output("y");
    }
    b.init_i64("start", &[1])
        .init_i64("end", &[i64::MAX])
        .init_i64("axis", &[1])
        .node("Slice", "", "cut", &["x", "start", "end", "axis"], &["u"], vec![])
        .node("Relu", "", "relu", &["u"], &["v"], vec![])
        .output("v")
        .bytes()
}

#[test]
fn a_max_with_zero_over_another_values_dim_is_reported_as_that_dim() {
    // x[:, 1:] is [N, max(0,T-1)]. With `y` declared [N, T-1], T-1 is the dim of a value, never
    // negative where the model runs: the slice reads [N, T-1] (wav2vec2's positional conv drops its
    // last frame so). Without such a value the max stays: T may be 0.
    let m = Model::load_bytes(&slice_after_first(true)).unwrap();
    assert_eq!(shape_of(&m, "u"), "u: float32 [N, T-1]");
    assert_eq!(shape_of(&m, "v"), "v: float32 [N, T-1]");
    let m = Model::load_bytes(&slice_after_first(false)).unwrap();
    assert_eq!(shape_of(&m, "u"), "u: float32 [N, max(0,T-1)]");
    // fold writes the same dims
    use prost::Message;
    use sliceops::onnx::proto;
    let folded = sliceops::fold::fold_bytes(&slice_after_first(true), None).unwrap();
    let graph = proto::ModelProto::decode(&*folded).unwrap().graph.unwrap();
    let v = graph.output.iter().find(|o| o.name.as_deref() == Some("v")).unwrap();
    let Some(proto::type_proto::Value::TensorType(t)) = v.r#type.as_ref().unwrap().value.as_ref() else {
        panic!("{v:?}")
    };
    let dims: Vec<String> = t
        .shape
        .as_ref()
        .unwrap()
        .dim
        .iter()
        .map(|d| match &d.value {
            Some(proto::tensor_shape_proto::dimension::Value::DimParam(p)) => p.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(dims, ["N", "T-1"]);
}

#[test]
fn a_size_rounded_up_in_floats_after_a_max_over_the_batch_is_exact() {
    // torchvision's batching of images: the largest height over the batch (a ReduceMax over the
    // heights cast to float), rounded up to a multiple of 32 in floats, is the padded height.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(3), D::S("H")])
        .init_i64("one", &[1])
        .init_i64("axes", &[0])
        .init_f32("stride", &[], &[32.0])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "height", &["s", "one"], &["h"], vec![("axis", A::I(0))])
        .node("Concat", "", "heights", &["h"], &["hs"], vec![("axis", A::I(0))])
        .node("Cast", "", "to_float", &["hs"], &["hf"], vec![("to", A::I(DataType::Float as i64))])
        .node("ReduceMax", "", "largest", &["hf"], &["m"], vec![("keepdims", A::I(0))])
        .node("Div", "", "div", &["m", "stride"], &["q"], vec![])
        .node("Ceil", "", "ceil", &["q"], &["c"], vec![])
        .node("Mul", "", "mul", &["c", "stride"], &["p"], vec![])
        .node("Cast", "", "to_int", &["p"], &["pi"], vec![("to", A::I(DataType::Int64 as i64))])
        .node("Unsqueeze", "", "unsq", &["pi", "axes"], &["size"], vec![])
        .node("ConstantOfShape", "", "padded", &["size"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "y: float32 [32*((H+31)/32)]");
    for (h, padded) in [(1, 32), (32, 32), (40, 64), (64, 64)] {
        let out = m.run(vec![Tensor::zero::<f32>(&[3, h]).unwrap()]).unwrap();
        assert_eq!(out[0].1.shape(), &[padded], "H = {h}");
    }
}
