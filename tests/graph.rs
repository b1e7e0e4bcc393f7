//! The three ops inside tract: models built in code, with constant and runtime parameters, run through
//! the optimized plan; exact symbolic inference; chains composing into one node; errors naming the node.

mod common;

use common::onnx_build::{Builder, A, D};
use common::tensors::{arange_f32, i64s};
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

fn run(bytes: &[u8], inputs: Vec<Tensor>) -> Tensor {
    let model = Model::load_bytes(bytes).unwrap();
    model.run(inputs).unwrap().remove(0).1
}

fn values_f32(t: &Tensor) -> (Vec<usize>, Vec<f32>) {
    (t.shape().to_vec(), t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec())
}

/// `x[1:, ::-2]` style StridedSlice over a [3, 4] input, begin/end/strides as given.
fn strided_model(begin: &str, end: &str, strides: &str, masks: [i64; 5]) -> Builder {
    let names = ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"];
    let attrs = names.iter().zip(masks).map(|(n, m)| (*n, A::I(m))).collect();
    Builder::new(13).input("x", DataType::Float, &[D::N(3), D::N(4)]).node(
        "StridedSlice",
        "ai.sliceops",
        "ss",
        &["x", begin, end, strides],
        &["y"],
        attrs,
    )
}

#[test]
fn strided_slice_with_constant_parameters() {
    // x[1:, ::-2] with begin_mask 0b10 and end_mask 0b11
    let bytes = strided_model("b", "e", "s", [0b10, 0b11, 0, 0, 0])
        .init_i64("b", &[1, 0])
        .init_i64("e", &[0, 0])
        .init_i64("s", &[1, -2])
        .output("y")
        .bytes();
    assert_eq!(values_f32(&run(&bytes, vec![arange_f32(&[3, 4])])), (vec![2, 2], vec![7., 5., 11., 9.]));
}

#[test]
fn strided_slice_with_int32_parameters() {
    let bytes = strided_model("b", "e", "s", [0, 0, 0, 0, 0b01])
        .init_i32("b", &[-1, 1])
        .init_i32("e", &[0, 4])
        .init_i32("s", &[1, 2])
        .output("y")
        .bytes();
    // x[-1, 1:4:2]
    assert_eq!(values_f32(&run(&bytes, vec![arange_f32(&[3, 4])])), (vec![2], vec![9., 11.]));
}

#[test]
fn strided_slice_with_runtime_parameters_and_stride_2() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(3), D::N(4)])
        .input("b", DataType::Int64, &[D::N(2)])
        .input("e", DataType::Int64, &[D::N(2)])
        .input("s", DataType::Int64, &[D::N(2)])
        .node("StridedSlice", "ai.sliceops", "ss", &["x", "b", "e", "s"], &["y"], vec![])
        .output("y")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let out = model.run(vec![arange_f32(&[3, 4]), i64s(&[2, 3]), i64s(&[-4, 0]), i64s(&[-2, -2])]).unwrap();
    // x[2:-4:-2, 3:0:-2]
    assert_eq!(values_f32(&out[0].1), (vec![2, 2], vec![11., 9., 3., 1.]));
    // The same plan again with other bounds: the runtime dims are rebound.
    let out = model.run(vec![arange_f32(&[3, 4]), i64s(&[0, 0]), i64s(&[3, 4]), i64s(&[1, 3])]).unwrap();
    assert_eq!(values_f32(&out[0].1), (vec![3, 2], vec![0., 3., 4., 7., 8., 11.]));
}

fn onnx_slice_runtime_model() -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &[D::N(4), D::N(6)])
        .input("starts", DataType::Int64, &[D::N(2)])
        .input("ends", DataType::Int64, &[D::N(2)])
        .input("steps", DataType::Int64, &[D::N(2)])
        .init_i64("axes", &[0, 1])
        .node("Slice", "", "slice", &["x", "starts", "ends", "axes", "steps"], &["y"], vec![])
        .output("y")
        .bytes()
}

#[test]
fn onnx_slice_with_runtime_bounds_and_steps_2() {
    // Stock tract fails on runtime starts/ends and ignores runtime steps != 1.
    let bytes = onnx_slice_runtime_model();
    let out = run(&bytes, vec![arange_f32(&[4, 6]), i64s(&[3, 1]), i64s(&[0, 6]), i64s(&[-2, 3])]);
    // x[3:0:-2, 1:6:3]
    assert_eq!(values_f32(&out), (vec![2, 2], vec![19., 22., 7., 10.]));
}

#[test]
fn onnx_slice_runtime_starts_minus_1_ends_int64_max_steps_minus_1_is_empty() {
    let bytes = onnx_slice_runtime_model();
    let out = run(&bytes, vec![arange_f32(&[4, 6]), i64s(&[-1, 0]), i64s(&[i64::MAX, 6]), i64s(&[-1, 1])]);
    assert_eq!(values_f32(&out), (vec![0, 6], vec![]));
}

#[test]
fn onnx_slice_opset_1_attributes_clamp_bounds_below_minus_dim() {
    let bytes = Builder::new(1)
        .input("x", DataType::Float, &[D::N(4), D::N(3)])
        .node(
            "Slice",
            "",
            "s1",
            &["x"],
            &["y"],
            vec![("starts", A::Is(vec![-10, 1])), ("ends", A::Is(vec![-2, 1000])), ("axes", A::Is(vec![0, 1]))],
        )
        .output("y")
        .bytes();
    // x[-10:-2, 1:1000] == x[0:2, 1:3]
    assert_eq!(values_f32(&run(&bytes, vec![arange_f32(&[4, 3])])), (vec![2, 2], vec![1., 2., 4., 5.]));
}

#[test]
fn onnx_slice_opset_11_negative_axes_and_empty_after_clamping() {
    let bytes = Builder::new(11)
        .input("x", DataType::Float, &[D::N(4), D::N(3)])
        .init_i64("st", &[3, 0])
        .init_i64("en", &[1, 3])
        .init_i64("ax", &[-2, -1])
        .node("Slice", "", "s", &["x", "st", "en", "ax"], &["y"], vec![])
        .output("y")
        .bytes();
    // x[3:1, 0:3]: start past end after clamping gives an empty tensor (stock tract rejects it).
    assert_eq!(values_f32(&run(&bytes, vec![arange_f32(&[4, 3])])), (vec![0, 3], vec![]));
}

#[test]
fn paddle_slice_with_tensor_starts() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(4)])
        .input("starts", DataType::Int32, &[D::N(2)])
        .node(
            "Slice",
            "ai.sliceops",
            "paddle",
            &["x", "starts"],
            &["y"],
            vec![("axes", A::Is(vec![0, 1])), ("ends", A::Is(vec![2, 0])), ("strides", A::Is(vec![1, -1]))],
        )
        .output("y")
        .bytes();
    let starts = tract_ndarray::arr1(&[1i32, 3]).into_tensor();
    // Paddle strided_slice example 2 on [[1..4],[5..8]] - 1: x[1:2, 3:0:-1]
    assert_eq!(values_f32(&run(&bytes, vec![arange_f32(&[2, 4]), starts])), (vec![1, 3], vec![7., 6., 5.]));
}

#[test]
fn as_strided_and_aten_as_strided() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(3), D::N(3)])
        .node(
            "AsStrided",
            "ai.sliceops",
            "asc",
            &["x"],
            &["y"],
            vec![("size", A::Is(vec![2, 2])), ("stride", A::Is(vec![2, 3])), ("offset", A::Is(vec![2]))],
        )
        .init_i64("size", &[2, 2])
        .init_i64("stride", &[2, 3])
        .init("off", DataType::Int64, &[], 1i64.to_le_bytes().to_vec())
        .aten_as_strided("aten", &["x", "size", "stride", "off"], "z")
        .output("y")
        .output("z")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let out = model.run(vec![arange_f32(&[3, 3])]).unwrap();
    assert_eq!(values_f32(&out[0].1), (vec![2, 2], vec![2., 5., 4., 7.]));
    assert_eq!(values_f32(&out[1].1), (vec![2, 2], vec![1., 4., 3., 6.]));
}

fn symbolic_model(starts: i64, ends: i64, step: i64) -> Model {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::N(3)])
        .init_i64("st", &[starts])
        .init_i64("en", &[ends])
        .init_i64("ax", &[0])
        .init_i64("sp", &[step])
        .node("Slice", "", "s", &["x", "st", "en", "ax", "sp"], &["y"], vec![])
        .output("y")
        .bytes();
    Model::load_bytes(&bytes).unwrap()
}

fn inferred_dim0(model: &Model) -> String {
    let facts = model.infer().unwrap();
    sliceops::format_dim(&facts.iter().find(|f| f.name == "y").unwrap().shape[0])
}

#[test]
fn symbolic_x_1_to_minus_1_is_n_minus_2_once_n_ge_2() {
    let mut model = symbolic_model(1, -1, 1);
    assert_eq!(inferred_dim0(&model), "max(0,N-2)");
    model.assume("N>=2").unwrap();
    assert_eq!(inferred_dim0(&model), "N-2");
}

#[test]
fn symbolic_x_step_2_is_n_plus_1_over_2() {
    assert_eq!(inferred_dim0(&symbolic_model(0, i64::MAX, 2)), "(N+1)/2");
}

#[test]
fn symbolic_x_minus_3_colon_is_min_n_3_or_3() {
    let mut model = symbolic_model(-3, i64::MAX, 1);
    assert_eq!(inferred_dim0(&model), "min(N,3)");
    model.assume("N>=3").unwrap();
    assert_eq!(inferred_dim0(&model), "3");
}

#[test]
fn symbolic_shape_runs_with_concrete_inputs() {
    let model = symbolic_model(1, -1, 1);
    assert_eq!(values_f32(&model.run(vec![arange_f32(&[4, 3])]).unwrap()[0].1).0, vec![2, 3]);
    assert_eq!(values_f32(&model.run(vec![arange_f32(&[1, 3])]).unwrap()[0].1).0, vec![0, 3]);
}

#[test]
fn runtime_bounds_get_a_fresh_symbol_named_after_the_node() {
    let model = Model::load_bytes(&onnx_slice_runtime_model()).unwrap();
    let facts = model.infer().unwrap();
    let y = facts.iter().find(|f| f.name == "y").unwrap();
    let dims: Vec<String> = y.shape.iter().map(|d| d.to_string()).collect();
    assert_eq!(dims, vec!["slice_0", "slice_1"]);
}

fn chain_model(constant_input: bool) -> Vec<u8> {
    let mut b = Builder::new(13);
    b = if constant_input {
        b.init_f32("x", &[4, 6], &(0..24).map(|v| v as f32).collect::<Vec<_>>())
    } else {
        b.input("x", DataType::Float, &[D::N(4), D::N(6)])
    };
    b.init_i64("st", &[1])
        .init_i64("en", &[4])
        .init_i64("ax", &[0])
        .node("Slice", "", "first", &["x", "st", "en", "ax"], &["a"], vec![])
        .init_i64("b", &[0, 5])
        .init_i64("e", &[0, 0])
        .init_i64("s", &[1, -1])
        .node(
            "StridedSlice",
            "ai.sliceops",
            "second",
            &["a", "b", "e", "s"],
            &["c"],
            vec![("begin_mask", A::I(1)), ("end_mask", A::I(3))],
        )
        .node(
            "AsStrided",
            "ai.sliceops",
            "third",
            &["c"],
            &["y"],
            vec![("size", A::Is(vec![2, 2])), ("stride", A::Is(vec![6, 1])), ("offset", A::I(1))],
        )
        .output("y")
        .bytes()
}

/// The slicing nodes of a typed model: our ops, by name (`SliceView`: parameters known, alone or a
/// chain composed once; `DynSlice`: parameters known only at run time).
fn slicing_nodes(model: &TypedModel) -> usize {
    model.nodes().iter().filter(|n| matches!(&*n.op.name(), "SliceView" | "DynSlice")).count()
}

#[test]
fn a_3_op_chain_is_one_node_and_one_copy() {
    // x[1:4][:, ::-1] then as_strided(size [2,2], stride [6,1], offset 1)
    let model = Model::load_bytes(&chain_model(false)).unwrap();
    assert_eq!(slicing_nodes(&model.decluttered().unwrap()), 1);
    assert_eq!(slicing_nodes(&model.optimized().unwrap()), 1);
    let out = model.run(vec![arange_f32(&[4, 6])]).unwrap();
    assert_eq!(values_f32(&out[0].1), (vec![2, 2], vec![10., 9., 16., 15.]));
}

#[test]
fn a_3_op_chain_over_a_constant_folds_away() {
    let model = Model::load_bytes(&chain_model(true)).unwrap();
    assert_eq!(slicing_nodes(&model.decluttered().unwrap()), 0);
    let out = model.run(vec![]).unwrap();
    assert_eq!(values_f32(&out[0].1), (vec![2, 2], vec![10., 9., 16., 15.]));
}

#[test]
fn a_full_range_slice_vanishes() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::N(3)])
        .init_i64("st", &[0, 0])
        .init_i64("en", &[i64::MAX, 3])
        .node("Slice", "", "s", &["x", "st", "en"], &["y"], vec![])
        .node("Relu", "", "r", &["y"], &["z"], vec![])
        .output("z")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    assert_eq!(slicing_nodes(&model.decluttered().unwrap()), 0);
}

#[test]
fn shape_then_slice_over_concrete_dims_folds() {
    // y = Reshape(x, Concat(Shape(x)[0:1], [-1]))
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(3), D::N(4)])
        .node("Shape", "", "shape", &["x"], &["sh"], vec![])
        .init_i64("st", &[0])
        .init_i64("en", &[1])
        .node("Slice", "", "first_dim", &["sh", "st", "en"], &["d0"], vec![])
        .init_i64("minus1", &[-1])
        .node("Concat", "", "cat", &["d0", "minus1"], &["target"], vec![("axis", A::I(0))])
        .node("Reshape", "", "reshape", &["x", "target"], &["y"], vec![])
        .output("y")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let facts = model.infer().unwrap();
    assert_eq!(facts.iter().find(|f| f.name == "y").unwrap().shape, vec![TDim::from(2), TDim::from(12)]);
    assert_eq!(slicing_nodes(&model.decluttered().unwrap()), 0);
    assert_eq!(values_f32(&model.run(vec![arange_f32(&[2, 3, 4])]).unwrap()[0].1).0, vec![2, 12]);
}

#[test]
fn every_dtype_slices() {
    for (dt, dt_pb) in [
        (DatumType::F16, DataType::Float16),
        (DatumType::F64, DataType::Double),
        (DatumType::Bool, DataType::Bool),
        (DatumType::I8, DataType::Int8),
        (DatumType::U8, DataType::Uint8),
        (DatumType::I16, DataType::Int16),
        (DatumType::U16, DataType::Uint16),
        (DatumType::I32, DataType::Int32),
        (DatumType::U32, DataType::Uint32),
        (DatumType::I64, DataType::Int64),
        (DatumType::U64, DataType::Uint64),
    ] {
        let bytes = Builder::new(13)
            .input("x", dt_pb, &[D::N(3), D::N(4)])
            .init_i64("b", &[1, 0])
            .init_i64("e", &[0, 0])
            .init_i64("s", &[1, -2])
            .node(
                "StridedSlice",
                "ai.sliceops",
                "ss",
                &["x", "b", "e", "s"],
                &["y"],
                vec![("begin_mask", A::I(2)), ("end_mask", A::I(3))],
            )
            .output("y")
            .bytes();
        let input = arange_f32(&[3, 4]).cast_to_dt(dt).unwrap().into_owned();
        let out = run(&bytes, vec![input]);
        assert_eq!(out.datum_type(), dt);
        let back = out.cast_to::<f32>().unwrap();
        // The expected values go through the same dtype (bool keeps only "non-zero").
        let want = tract_ndarray::arr1(&[7f32, 5., 11., 9.]).into_tensor();
        let want = want.cast_to_dt(dt).unwrap().cast_to::<f32>().unwrap().into_owned();
        assert_eq!(values_f32(&back), (vec![2, 2], values_f32(&want).1), "{dt:?}");
    }
}

fn load_err(bytes: &[u8]) -> String {
    format!("{:#}", Model::load_bytes(bytes).and_then(|m| m.typed().map(|_| ())).unwrap_err())
}

#[test]
fn errors_name_the_node_and_op() {
    let bytes = strided_model("b", "e", "s", [0, 0, 0b101, 0, 0])
        .init_i64("b", &[0, 0, 0])
        .init_i64("e", &[1, 1, 1])
        .init_i64("s", &[1, 1, 1])
        .output("y")
        .bytes();
    let err = load_err(&bytes);
    assert!(err.contains("node 'ss' (StridedSlice): ellipsis_mask 5 sets more than one ellipsis"), "{err}");

    let bytes = strided_model("b", "e", "s", [0, 0, 0, 0, 0])
        .init_i64("b", &[0, 0])
        .init_i64("e", &[1, 1])
        .init_i64("s", &[1, 0])
        .output("y")
        .bytes();
    let err = load_err(&bytes);
    assert!(err.contains("node 'ss' (StridedSlice): spec entry 1 is 0: a step must be non-zero"), "{err}");

    let bytes = strided_model("b", "e", "s", [-1, 0, 0, 0, 0])
        .init_i64("b", &[0])
        .init_i64("e", &[1])
        .init_i64("s", &[1])
        .output("y")
        .bytes();
    let err = format!("{:#}", Model::load_bytes(&bytes).unwrap_err());
    assert!(err.contains("node 'ss' (StridedSlice): begin_mask is -1: masks must be >= 0"), "{err}");
}

#[test]
fn runtime_errors_name_the_node_and_do_not_panic() {
    let model = Model::load_bytes(&onnx_slice_runtime_model()).unwrap();
    let err =
        format!("{:#}", model.run(vec![arange_f32(&[4, 6]), i64s(&[0, 0]), i64s(&[1, 1]), i64s(&[1, 0])]).unwrap_err());
    assert!(err.contains("node 'slice' (Slice): axis 1 is 0: a step must be non-zero"), "{err}");
    // Parameter lengths only known at run time.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(4), D::N(6)])
        .input("starts", DataType::Int64, &[D::S("K")])
        .input("ends", DataType::Int64, &[D::S("L")])
        .node("Slice", "", "slice", &["x", "starts", "ends"], &["y"], vec![])
        .output("y")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let err = format!("{:#}", model.run(vec![arange_f32(&[4, 6]), i64s(&[0]), i64s(&[1, 1])]).unwrap_err());
    assert!(
        err.contains("node 'slice' (Slice): starts, ends, axes and steps have different lengths: 1, 2, 1, 1"),
        "{err}"
    );
}

#[test]
fn wrong_declared_shapes_are_hints() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(3), D::N(4)])
        .init_i64("st", &[1])
        .init_i64("en", &[3])
        .node("Slice", "", "s", &["x", "st", "en"], &["y"], vec![])
        .value_info("y", DataType::Float, &[D::N(99), D::S("K")])
        .output_typed("y", DataType::Float, &[D::N(99), D::N(4)])
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let warnings = model.shape_warnings(&model.infer().unwrap()).unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "value 'y' is declared with shape [99,K] but inference gives [2,4]; using the inferred shape"
    );
    assert_eq!(values_f32(&model.run(vec![arange_f32(&[3, 4])]).unwrap()[0].1).0, vec![2, 4]);
}

#[test]
fn placeholder_dim_names_are_not_contradictions() {
    // Exporters name dims they do not compute (`Slicey_dim_0`): against a number or an expression they
    // contradict nothing. Another rank does.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::N(4)])
        .init_i64("st", &[1])
        .init_i64("en", &[3])
        .init_i64("ax", &[1])
        .node("Slice", "", "s", &["x", "st", "en", "ax"], &["y"], vec![])
        .node("Relu", "", "r", &["y"], &["z"], vec![])
        .value_info("y", DataType::Float, &[D::S("Slicey_dim_0"), D::S("Slicey_dim_1")])
        .output_typed("z", DataType::Float, &[D::N(7), D::S("N"), D::N(2)])
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let warnings = model.shape_warnings(&model.infer().unwrap()).unwrap();
    assert_eq!(
        warnings,
        vec!["value 'z' is declared with shape [7,N,2] but inference gives [N,2]; using the inferred shape"]
    );
}

#[test]
fn descending_range_has_its_exact_length() {
    // Range(start, -1, -1) with start from a Shape, as MXNet's reverse writes it; stock tract's rule
    // divides by the step cast to unsigned and rejects the graph.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(5)])
        .node("Shape", "", "shape", &["x"], &["sh"], vec![])
        .init_i64("one", &[1])
        .node("Sub", "", "sub", &["sh", "one"], &["last"], vec![])
        .node("Squeeze", "", "sq", &["last"], &["start"], vec![])
        .init("minus1", DataType::Int64, &[], (-1i64).to_le_bytes().to_vec())
        .node("Range", "", "range", &["start", "minus1", "minus1"], &["idx"], vec![])
        .node("Gather", "", "gather", &["x", "idx"], &["y"], vec![])
        .output("y")
        .bytes();
    assert_eq!(values_f32(&run(&bytes, vec![arange_f32(&[5])])), (vec![5], vec![4., 3., 2., 1., 0.]));
}

#[test]
fn pad_over_a_shape_vector() {
    // Pad(Shape(x), [0, 8 - rank], 1): MXNet's way to bring a shape to rank 8.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(3)])
        .node("Shape", "", "shape", &["x"], &["sh"], vec![])
        .init_i64("pads", &[0, 2])
        .init_i64("one", &[1])
        .node("Pad", "", "pad", &["sh", "pads", "one"], &["sh4"], vec![])
        .node("Reshape", "", "reshape", &["x", "sh4"], &["y"], vec![])
        .output("y")
        .bytes();
    let out = run(&bytes, vec![arange_f32(&[2, 3])]);
    assert_eq!(out.shape(), &[2, 3, 1, 1]);
}

fn decluttered_ops(fixture: &str) -> Vec<String> {
    let path = format!("{}/models/{fixture}/model.onnx", env!("CARGO_MANIFEST_DIR"));
    let model = Model::load_path(path).unwrap().decluttered().unwrap();
    model.nodes().iter().map(|n| n.op.name().to_string()).collect()
}

#[test]
fn exported_patterns_become_one_view_per_output() {
    // torch: as_strided and unfold as Reshape(x, [-1]) + Gather over a constant affine table.
    assert_eq!(decluttered_ops("torch_as_strided_dynamo"), ["Source", "SliceView", "SliceView"]);
    assert_eq!(decluttered_ops("pytorch_style_as_strided_gather"), ["Source", "SliceView"]);
    // tf2onnx: Slice with sentinel bounds + Squeeze/Unsqueeze.
    assert_eq!(decluttered_ops("tf2onnx_style_int32_sentinels"), ["Source", "SliceView"]);
    assert_eq!(decluttered_ops("tf2onnx_style_1e9_sentinels"), ["Source", "SliceView"]);
    // torch slicing with a dynamic batch: Slice chains + Unsqueeze + Gather with a scalar index.
    assert_eq!(decluttered_ops("torch_slice_torchscript_dynamic_batch"), ["Source", "SliceView", "SliceView"]);
    // MXNet's reverse: Reshape, Transpose, Gather over a Range, Transpose, Reshape.
    assert_eq!(decluttered_ops("mxnet_style_reverse"), ["Source", "SliceView"]);
}

#[test]
fn a_gather_that_is_not_affine_stays_a_gather() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(6)])
        .init_i64("idx", &[0, 1, 3])
        .node("Gather", "", "g", &["x", "idx"], &["y"], vec![])
        .output("y")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let ops: Vec<String> = model.decluttered().unwrap().nodes().iter().map(|n| n.op.name().to_string()).collect();
    assert!(ops.iter().any(|o| o == "Gather"), "{ops:?}");
    assert_eq!(values_f32(&model.run(vec![arange_f32(&[6])]).unwrap()[0].1), (vec![3], vec![0., 1., 3.]));
}

#[test]
fn affine_gathers_with_negative_and_scalar_indices_are_views() {
    // x[:, [-1, -3, -5]] (a reversed step of 2 from the end) and x[:, 2] as Gathers.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(5)])
        .init_i64("idx", &[-1, -3, -5])
        .node("Gather", "", "g", &["x", "idx"], &["y"], vec![("axis", A::I(1))])
        .init("two", DataType::Int64, &[], 2i64.to_le_bytes().to_vec())
        .node("Gather", "", "g2", &["x", "two"], &["z"], vec![("axis", A::I(1))])
        .output("y")
        .output("z")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let ops: Vec<String> = model.decluttered().unwrap().nodes().iter().map(|n| n.op.name().to_string()).collect();
    assert_eq!(ops, ["Source", "SliceView", "SliceView"]);
    let out = model.run(vec![arange_f32(&[2, 5])]).unwrap();
    assert_eq!(values_f32(&out[0].1), (vec![2, 3], vec![4., 2., 0., 9., 7., 5.]));
    assert_eq!(values_f32(&out[1].1), (vec![2], vec![2., 7.]));
}

#[test]
fn duplicate_node_names_are_renamed_not_refused() {
    // ONNX allows nodes to share a name; stock tract refuses them ("Duplicate node name"). The second `s`
    // must not become `s.1`, which a third node already holds.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(6)])
        .init_i64("one", &[1])
        .init_i64("minus_one", &[-1])
        .init_i64("big", &[i64::MAX])
        .node("Slice", "", "s", &["x", "one", "minus_one"], &["a"], vec![])
        .node("Slice", "", "s", &["a", "one", "big"], &["b"], vec![])
        .node("Relu", "", "s.1", &["b"], &["c"], vec![])
        .node("Relu", "", "s", &["c"], &["y"], vec![])
        .output("y")
        .bytes();
    let model = Model::load_bytes(&bytes).unwrap();
    let facts = model.infer().unwrap();
    let shapes: Vec<(&str, Vec<TDim>)> = facts.iter().map(|f| (f.name.as_str(), f.shape.clone())).collect();
    let want = [("x", 6), ("a", 4), ("b", 3), ("c", 3), ("y", 3)].map(|(n, d)| (n, vec![TDim::Val(d)]));
    assert_eq!(shapes, want);
    let x = tract_ndarray::arr1(&[-3f32, -2., -1., 0., 1., 2.]).into_tensor();
    assert_eq!(values_f32(&model.run(vec![x]).unwrap()[0].1), (vec![3], vec![0., 0., 1.]));
}

#[test]
fn a_shape_output_is_int64_as_onnx_declares_it() {
    // tract computes Shape as dims; the caller (and `sliceops run`, which writes .npy) gets int64.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(3)])
        .node("Shape", "", "shape", &["x"], &["y"], vec![])
        .output("y")
        .bytes();
    let out = Model::load_bytes(&bytes).unwrap().run(vec![arange_f32(&[2, 3])]).unwrap().remove(0).1;
    assert_eq!(out.datum_type(), DatumType::I64);
    assert_eq!(out.try_as_plain_ram().unwrap().as_slice::<i64>().unwrap(), &[2, 3]);
}
