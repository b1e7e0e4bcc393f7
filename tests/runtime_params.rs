//! Standard ops whose shape parameters are inputs (`Reduce*` axes, `Squeeze`/`Unsqueeze` axes,
//! `Expand`'s shape, `Reshape`'s target, `Pad`'s pads and axes, ...), in each regime: constant,
//! computed from shapes, data known only when the model runs; and their errors on bad parameters.

mod common;

use common::onnx_build::{Builder, A, D};
use common::tensors::{arange_f32 as arange, f32s, i64s};
use prost::Message;
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

fn shape_of(m: &Model, value: &str) -> String {
    let facts = m.infer().unwrap();
    let f = facts.iter().find(|f| f.name == value).unwrap_or_else(|| panic!("no fact for {value}"));
    let dims: Vec<String> = f.shape.iter().map(sliceops::format_dim).collect();
    format!("{} [{}]", f.dtype_name, dims.join(", "))
}

fn run(m: &Model, inputs: Vec<Tensor>) -> Tensor {
    m.run(inputs).unwrap().remove(0).1
}

fn run_err(m: &Model, inputs: Vec<Tensor>) -> String {
    format!("{:#}", m.run(inputs).unwrap_err())
}

/// `op(x, axes)`, axes a graph input of `n` values.
fn with_axes_input(op: &str, opset: i64, x: &[D], n: i64, attrs: Vec<(&str, A)>) -> Model {
    let bytes = Builder::new(opset)
        .input("x", DataType::Float, x)
        .input("axes", DataType::Int64, &[D::N(n)])
        .node(op, "", "r", &["x", "axes"], &["y"], attrs)
        .output("y")
        .bytes();
    Model::load_bytes(&bytes).unwrap()
}

/// `op(x, axes)`, axes an initializer.
fn with_axes_const(op: &str, opset: i64, x: &[D], axes: &[i64], attrs: Vec<(&str, A)>) -> Model {
    let bytes = Builder::new(opset)
        .input("x", DataType::Float, x)
        .init_i64("axes", axes)
        .node(op, "", "r", &["x", "axes"], &["y"], attrs)
        .output("y")
        .bytes();
    Model::load_bytes(&bytes).unwrap()
}

/// An op whose axes are a graph input of `n_axes` values: the shape inferred before anything runs,
/// then runs with given axes (input values `1..=n`, so no product or maximum hides an axis) and the output each gives.
struct AxesRow {
    op: &'static str,
    opset: i64,
    x: &'static [D],
    n_axes: i64,
    keepdims: Option<i64>,
    inferred: &'static str,
    runs: &'static [AxesRun],
}

/// `(input shape, axes, output shape, output values)`.
type AxesRun = (&'static [usize], &'static [i64], &'static [usize], &'static [f32]);

const AXES_ROWS: &[AxesRow] = &[
    // Either axis may be reduced: both dims are fresh, named after the node.
    AxesRow {
        op: "ReduceSum",
        opset: 13,
        x: &[D::N(2), D::N(3)],
        n_axes: 1,
        keepdims: None,
        inferred: "float32 [r_0, r_1]",
        runs: &[(&[2, 3], &[1], &[2, 1], &[6.0, 15.0]), (&[2, 3], &[-2], &[1, 3], &[5.0, 7.0, 9.0])],
    },
    // A dim of one stays one whichever axes are reduced.
    AxesRow {
        op: "ReduceMax",
        opset: 18,
        x: &[D::N(1), D::N(4)],
        n_axes: 1,
        keepdims: None,
        inferred: "float32 [1, r_1]",
        runs: &[(&[1, 4], &[1], &[1, 1], &[4.0])],
    },
    // Without keepdims the rank is known from the number of axes.
    AxesRow {
        op: "ReduceMean",
        opset: 18,
        x: &[D::N(2), D::N(3)],
        n_axes: 1,
        keepdims: Some(0),
        inferred: "float32 [r_0]",
        runs: &[(&[2, 3], &[0], &[3], &[2.5, 3.5, 4.5]), (&[2, 3], &[-1], &[2], &[2.0, 5.0])],
    },
    AxesRow {
        op: "ReduceProd",
        opset: 18,
        x: &[D::S("N"), D::N(1)],
        n_axes: 1,
        keepdims: None,
        inferred: "float32 [r_0, 1]",
        runs: &[(&[3, 1], &[0], &[1, 1], &[6.0])],
    },
    AxesRow {
        op: "Unsqueeze",
        opset: 13,
        x: &[D::N(2), D::N(3)],
        n_axes: 2,
        keepdims: None,
        inferred: "float32 [r_0, r_1, r_2, r_3]",
        runs: &[(&[2, 3], &[0, -1], &[1, 2, 3, 1], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])],
    },
    AxesRow {
        op: "Squeeze",
        opset: 13,
        x: &[D::N(1), D::N(3), D::N(1)],
        n_axes: 1,
        keepdims: None,
        inferred: "float32 [r_0, r_1]",
        runs: &[(&[1, 3, 1], &[2], &[1, 3], &[1.0, 2.0, 3.0])],
    },
];

#[test]
fn ops_with_runtime_axes() {
    for row in AXES_ROWS {
        let attrs = row.keepdims.map(|k| vec![("keepdims", A::I(k))]).unwrap_or_default();
        let m = with_axes_input(row.op, row.opset, row.x, row.n_axes, attrs);
        assert_eq!(shape_of(&m, "y"), row.inferred, "{}", row.op);
        for (x, axes, out, values) in row.runs {
            let n: usize = x.iter().product();
            let input = f32s(x, (1..=n).map(|v| v as f32).collect());
            let y = run(&m, vec![input, i64s(axes)]);
            assert_eq!(y, f32s(out, values.to_vec()), "{} over {x:?} with axes {axes:?}", row.op);
        }
    }
}

#[test]
fn ops_reject_bad_runtime_axes() {
    // (op, opset, input shape, axes, error)
    type Row = (&'static str, i64, &'static [usize], &'static [i64], &'static str);
    let rows: &[Row] = &[
        ("ReduceSum", 13, &[2, 3], &[2], "axis 2 is out of range for rank 2"),
        ("ReduceSum", 13, &[2, 3], &[i64::MIN], "axis -9223372036854775808 is out of range for rank 2"),
        ("ReduceMin", 18, &[2, 3], &[1, -1], "axis -1 appears twice in [1, -1]"),
        ("Unsqueeze", 13, &[2, 3], &[0, 4], "axis 4 is out of range for rank 4"),
        ("Squeeze", 13, &[1, 3, 1], &[1], "axis 1 has dim 3, only dims of 1 can be squeezed"),
    ];
    for (op, opset, x, axes, why) in rows {
        let dims: Vec<D> = x.iter().map(|&d| D::N(d as i64)).collect();
        let m = with_axes_input(op, *opset, &dims, axes.len() as i64, vec![]);
        let e = run_err(&m, vec![arange(x), i64s(axes)]);
        assert!(e.contains(&format!("node 'r' ({op}): {why}")), "{e}");
    }
}

#[test]
fn reduce_with_empty_runtime_axes() {
    let all = with_axes_input("ReduceSum", 13, &[D::N(2), D::N(3)], 0, vec![("keepdims", A::I(0))]);
    assert_eq!(shape_of(&all, "y"), "float32 []");
    let empty = Tensor::from_shape::<i64>(&[0], &[]).unwrap();
    assert_eq!(run(&all, vec![arange(&[2, 3]), empty.clone()]), tensor0(15f32));
    let noop = with_axes_input(
        "ReduceSum",
        13,
        &[D::N(2), D::N(3)],
        0,
        vec![("keepdims", A::I(0)), ("noop_with_empty_axes", A::I(1))],
    );
    assert_eq!(shape_of(&noop, "y"), "float32 [2, 3]");
    assert_eq!(run(&noop, vec![arange(&[2, 3]), empty]), arange(&[2, 3]));
}

#[test]
fn reduce_with_constant_axes_is_exact() {
    let m = with_axes_const("ReduceL2", 18, &[D::S("N"), D::N(2)], &[1], vec![("keepdims", A::I(0))]);
    assert_eq!(shape_of(&m, "y"), "float32 [N]");
    assert_eq!(run(&m, vec![f32s(&[2, 2], vec![3.0, 4.0, 6.0, 8.0])]), f32s(&[2], vec![5.0, 10.0]));
}

#[test]
fn reduce_rejects_bad_constant_axes() {
    let m = with_axes_const("ReduceSum", 13, &[D::N(2), D::N(3)], &[3], vec![]);
    let e = format!("{:#}", m.infer().unwrap_err());
    assert!(e.contains("node 'r' (ReduceSum): axis 3 is out of range for rank 2"), "{e}");
    let too_many = with_axes_input("ReduceSum", 13, &[D::N(2)], 2, vec![("keepdims", A::I(0))]);
    let e = format!("{:#}", too_many.infer().unwrap_err());
    assert!(e.contains("node 'r' (ReduceSum): 2 axes for an input of rank 1"), "{e}");
}

#[test]
fn squeeze_with_constant_axes_checks_dims() {
    let m = with_axes_const("Squeeze", 13, &[D::N(2), D::N(3)], &[0], vec![]);
    let e = format!("{:#}", m.infer().unwrap_err());
    assert!(e.contains("node 'r' (Squeeze): axis 0 has dim 2, only dims of 1 can be squeezed"), "{e}");
}

#[test]
fn expand_with_runtime_shape() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(3), D::N(1)])
        .input("shape", DataType::Int64, &[D::N(3)])
        .node("Expand", "", "e", &["x", "shape"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    // The 3 stays whatever the shape says; the others depend on it.
    assert_eq!(shape_of(&m, "y"), "float32 [e_0, 3, e_2]");
    let y = run(&m, vec![f32s(&[3, 1], vec![1.0, 2.0, 3.0]), i64s(&[2, 1, 2])]);
    let want: Vec<f32> = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0].repeat(2);
    assert_eq!(y, f32s(&[2, 3, 2], want));
    let e = run_err(&m, vec![f32s(&[3, 1], vec![1.0, 2.0, 3.0]), i64s(&[1, 4, 2])]);
    assert!(e.contains("node 'e' (Expand): axis 1: dim 3 cannot be expanded to 4"), "{e}");
    let e = run_err(&m, vec![f32s(&[3, 1], vec![1.0, 2.0, 3.0]), i64s(&[1, 3, -2])]);
    assert!(e.contains("node 'e' (Expand): the shape holds -2 at index 2"), "{e}");
}

#[test]
fn tile_with_runtime_repeats() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(0)])
        .input("repeats", DataType::Int64, &[D::S("n")])
        .node("Tile", "", "t", &["x", "repeats"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    // A dim of 0 stays 0.
    assert_eq!(shape_of(&m, "y"), "float32 [t_0, 0]");
    let x = f32s(&[2, 0], vec![]);
    assert_eq!(run(&m, vec![x.clone(), i64s(&[3, 5])]), f32s(&[6, 0], vec![]));
    let e = run_err(&m, vec![x.clone(), i64s(&[-1, 1])]);
    assert!(e.contains("node 't' (Tile): repeat -1 at axis 0 is negative"), "{e}");
    let e = run_err(&m, vec![x, i64s(&[1, 1, 1])]);
    assert!(e.contains("node 't' (Tile): 3 repeats for an input of rank 2"), "{e}");
}

#[test]
fn tile_values_with_runtime_repeats() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(1), D::N(2)])
        .input("repeats", DataType::Int64, &[D::N(2)])
        .node("Tile", "", "t", &["x", "repeats"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let y = run(&m, vec![f32s(&[1, 2], vec![1.0, 2.0]), i64s(&[2, 2])]);
    assert_eq!(y, f32s(&[2, 4], vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0]));
    let e = run_err(&m, vec![f32s(&[1, 2], vec![1.0, 2.0]), i64s(&[i64::MAX, 2])]);
    assert!(e.contains("node 't' (Tile): an output of shape [9223372036854775807, 4] is too large to allocate"), "{e}");
}

#[test]
fn expand_and_tile_with_parameters_computed_from_shapes() {
    // `[batch, last]` from `z`'s shape: Expand's target [batch, 3], Tile's repeats [batch, 1].
    for (op, last) in [("Expand", "three"), ("Tile", "one")] {
        let bytes = Builder::new(13)
            .input("x", DataType::Float, &[D::N(1), D::N(3)])
            .input("z", DataType::Float, &[D::S("batch"), D::N(5)])
            .init_i64("zero", &[0])
            .init_i64("one", &[1])
            .init_i64("three", &[3])
            .node("Shape", "", "s", &["z"], &["zs"], vec![])
            .node("Slice", "", "first", &["zs", "zero", "one"], &["b"], vec![])
            .node("Concat", "", "c", &["b", last], &["param"], vec![("axis", A::I(0))])
            .node(op, "", "e", &["x", "param"], &["y"], vec![])
            .output("y")
            .bytes();
        let m = Model::load_bytes(&bytes).unwrap();
        assert_eq!(shape_of(&m, "y"), "float32 [batch, 3]", "{op}");
        let y = run(&m, vec![f32s(&[1, 3], vec![1.0, 2.0, 3.0]), arange(&[2, 5])]);
        assert_eq!(y, f32s(&[2, 3], vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]), "{op}");
    }
}

#[test]
fn split_with_runtime_sizes() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(5), D::N(2)])
        .input("sizes", DataType::Int64, &[D::N(2)])
        .node("Split", "", "s", &["x", "sizes"], &["a", "b"], vec![])
        .output("a")
        .output("b")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "a"), "float32 [s_0_0, 2]");
    assert_eq!(shape_of(&m, "b"), "float32 [s_1_0, 2]");
    let out = m.run(vec![arange(&[5, 2]), i64s(&[2, 3])]).unwrap();
    assert_eq!(out[0].1, arange(&[2, 2]));
    let rest: Vec<f32> = (4..10).map(|i| i as f32).collect();
    assert_eq!(out[1].1, f32s(&[3, 2], rest));
    let e = run_err(&m, vec![arange(&[5, 2]), i64s(&[2, 2])]);
    assert!(e.contains("node 's' (Split): the sizes sum to 4 but axis 0 has dim 5"), "{e}");
    let e = run_err(&m, vec![arange(&[5, 2]), i64s(&[6, -1])]);
    assert!(e.contains("node 's' (Split): size -1 of output 1 is negative"), "{e}");
    let e = run_err(&m, vec![arange(&[5, 2]), i64s(&[i64::MAX, i64::MAX])]);
    assert!(e.contains("node 's' (Split): the sizes overflow when summed"), "{e}");
}

#[test]
fn unsqueeze_with_a_scalar_axis() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2)])
        .input("axes", DataType::Int64, &[])
        .node("Unsqueeze", "", "r", &["x", "axes"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "float32 [r_0, r_1]");
    assert_eq!(run(&m, vec![arange(&[2]), tensor0(1i64)]), arange(&[2, 1]));
}

#[test]
fn constant_of_shape_with_a_runtime_shape() {
    let value = tract_onnx::pb::TensorProto {
        data_type: DataType::Int32 as i32,
        dims: vec![1],
        int32_data: vec![7],
        ..Default::default()
    };
    let bytes = Builder::new(13)
        .input("shape", DataType::Int64, &[D::N(2)])
        .node("ConstantOfShape", "", "c", &["shape"], &["y"], vec![])
        .output("y")
        .bytes();
    // The builder has no tensor attributes: the `value` is added to the decoded model.
    let mut model = tract_onnx::pb::ModelProto::decode(&bytes[..]).unwrap();
    let node = &mut model.graph.as_mut().unwrap().node[0];
    node.attribute.push(tract_onnx::pb::AttributeProto {
        name: "value".into(),
        r#type: tract_onnx::pb::attribute_proto::AttributeType::Tensor as i32,
        t: Some(value),
        ..Default::default()
    });
    let m = Model::load_bytes(&model.encode_to_vec()).unwrap();
    assert_eq!(shape_of(&m, "y"), "int32 [c_0, c_1]");
    assert_eq!(run(&m, vec![i64s(&[2, 1])]), Tensor::from_shape(&[2, 1], &[7i32, 7]).unwrap());
    let e = run_err(&m, vec![i64s(&[2, -3])]);
    assert!(e.contains("node 'c' (ConstantOfShape): the shape holds -3 at index 1"), "{e}");
    let e = run_err(&m, vec![i64s(&[1 << 40, 1 << 40])]);
    assert!(
        e.contains("node 'c' (ConstantOfShape): an output of shape [1099511627776, 1099511627776] is too large"),
        "{e}"
    );
}

#[test]
fn constant_of_shape_without_value_is_float32_zeros() {
    let bytes = Builder::new(13)
        .input("shape", DataType::Int64, &[D::N(1)])
        .node("ConstantOfShape", "", "c", &["shape"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "float32 [c_0]");
    assert_eq!(run(&m, vec![i64s(&[3])]), f32s(&[3], vec![0.0, 0.0, 0.0]));
}

/// How a shape parameter reaches the node in a table test.
#[derive(Debug, Clone, Copy)]
enum Regime {
    /// An initializer.
    Constant,
    /// A graph input.
    Data,
}

/// `op(x, param)` with `param` (int64, `values`) in `regime`; x float32 of `x`.
fn param_model(op: &str, x: &[D], values: &[i64], regime: Regime, attrs: Vec<(&str, A)>) -> Model {
    let b = Builder::new(18).input("x", DataType::Float, x);
    let b = match regime {
        Regime::Constant => b.init_i64("p", values),
        Regime::Data => b.input("p", DataType::Int64, &[D::N(values.len() as i64)]),
    };
    let bytes = b.node(op, "", "n", &["x", "p"], &["y"], attrs).output("y").bytes();
    Model::load_bytes(&bytes).unwrap()
}

/// Runs `m` on `x` and the parameter `values` (a graph input only in the data regime).
fn run_param(m: &Model, x: Tensor, values: &[i64], regime: Regime) -> anyhow::Result<Tensor> {
    let inputs = match regime {
        Regime::Constant => vec![x],
        Regime::Data => vec![x, i64s(values)],
    };
    Ok(m.run(inputs)?.remove(0).1)
}

/// A Reshape table row: input shape, target, the constant regime's inferred shape, the data
/// regime's, the output shape.
type ReshapeRow = (&'static [usize], &'static [i64], &'static str, &'static str, &'static [usize]);

#[test]
fn reshape_table_in_each_regime() {
    let rows: [ReshapeRow; 6] = [
        (&[2, 3, 4], &[4, -1], "float32 [4, 6]", "float32 [n_0, n_1]", &[4, 6]),
        (&[2, 3, 4], &[0, 12], "float32 [2, 12]", "float32 [n_0, n_1]", &[2, 12]),
        (&[2, 3, 4], &[-1], "float32 [24]", "float32 [24]", &[24]),
        (&[2, 3, 4], &[2, 0, 2, -1], "float32 [2, 3, 2, 2]", "float32 [n_0, n_1, n_2, n_3]", &[2, 3, 2, 2]),
        (&[0, 3], &[3, -1], "float32 [3, 0]", "float32 [n_0, n_1]", &[3, 0]),
        (&[6], &[1, 2, 3], "float32 [1, 2, 3]", "float32 [n_0, n_1, n_2]", &[1, 2, 3]),
    ];
    for (shape, target, constant, data, out) in rows {
        let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
        let x = arange(shape);
        let want_y = arange(out);
        for (regime, want) in [(Regime::Constant, constant), (Regime::Data, data)] {
            let m = param_model("Reshape", &dims, target, regime, vec![]);
            assert_eq!(shape_of(&m, "y"), want, "{shape:?} to {target:?} in {regime:?}");
            let y = run_param(&m, x.clone(), target, regime).unwrap();
            assert_eq!(y, want_y, "{shape:?} to {target:?} in {regime:?}");
        }
    }
}

#[test]
fn reshape_rejects_bad_targets_in_each_regime() {
    let rows: [(&[i64], &str); 4] = [
        (&[-1, -1], "the target shape has more than one -1"),
        (&[5, -1], "the input has 24 elements, not a multiple of the other target dims' 5"),
        (&[2, -3, 4], "target dim 1 is -3"),
        (&[5, 5], "the input has 24 elements but the target shape 25"),
    ];
    let dims = [D::N(2), D::N(3), D::N(4)];
    for (target, needle) in rows {
        let m = param_model("Reshape", &dims, target, Regime::Data, vec![]);
        let e = run_err(&m, vec![arange(&[2, 3, 4]), i64s(target)]);
        assert!(e.contains(&format!("node 'n' (Reshape): {needle}")), "{target:?}: {e}");
        let e = match Model::load_bytes(
            &Builder::new(18)
                .input("x", DataType::Float, &dims)
                .init_i64("p", target)
                .node("Reshape", "", "n", &["x", "p"], &["y"], vec![])
                .output("y")
                .bytes(),
        )
        .and_then(|m| m.typed())
        {
            Ok(_) => panic!("{target:?} was accepted"),
            Err(e) => format!("{e:#}"),
        };
        assert!(e.contains(&format!("node 'n' (Reshape): {needle}")), "{target:?}: {e}");
    }
    // allowzero: a 0 is a 0, and -1 with it has no answer.
    let m = param_model("Reshape", &[D::N(0), D::N(3)], &[3, 0], Regime::Data, vec![("allowzero", A::I(1))]);
    assert_eq!(run(&m, vec![f32s(&[0, 3], vec![]), i64s(&[3, 0])]), f32s(&[3, 0], vec![]));
    let e = run_err(&m, vec![f32s(&[0, 3], vec![]), i64s(&[-1, 0])]);
    assert!(e.contains("node 'n' (Reshape): the target shape has both -1 and 0 with allowzero"), "{e}");
}

#[test]
fn reshape_to_a_shape_computed_from_shapes() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("batch"), D::N(6)])
        .init_i64("zero", &[0])
        .init_i64("one", &[1])
        .init_i64("rest", &[2, 3])
        .node("Shape", "", "s", &["x"], &["xs"], vec![])
        .node("Slice", "", "first", &["xs", "zero", "one"], &["b"], vec![])
        .node("Concat", "", "c", &["b", "rest"], &["target"], vec![("axis", A::I(0))])
        .node("Reshape", "", "n", &["x", "target"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "float32 [batch, 2, 3]");
    let y = run(&m, vec![arange(&[2, 6])]);
    assert_eq!(y, arange(&[2, 2, 3]));
}

/// `Pad(x, pads[, value][, axes])` with pads (and axes) graph inputs, opset 18.
fn pad_model(x: &[D], pads: usize, axes: Option<usize>, mode: &'static str) -> Model {
    let mut b = Builder::new(18).input("x", DataType::Float, x).input("pads", DataType::Int64, &[D::N(pads as i64)]);
    let mut inputs = vec!["x", "pads"];
    if let Some(n) = axes {
        b = b.input("axes", DataType::Int64, &[D::N(n as i64)]);
        inputs.extend(["", "axes"]);
    }
    let bytes = b.node("Pad", "", "p", &inputs, &["y"], vec![("mode", A::S(mode))]).output("y").bytes();
    Model::load_bytes(&bytes).unwrap()
}

#[test]
fn pad_with_runtime_pads_and_axes() {
    let m = pad_model(&[D::N(2), D::N(3)], 4, None, "constant");
    assert_eq!(shape_of(&m, "y"), "float32 [p_0, p_1]");
    let y = run(&m, vec![arange(&[2, 3]), i64s(&[1, 0, 0, 2])]);
    let want = [0., 0., 0., 0., 0., 0., 1., 2., 0., 0., 3., 4., 5., 0., 0.];
    assert_eq!(y, f32s(&[3, 5], want.to_vec()));
    // With axes known only at run time too; the axis they leave keeps its dim once they are known.
    let m = pad_model(&[D::N(2), D::N(3)], 2, Some(1), "edge");
    assert_eq!(shape_of(&m, "y"), "float32 [p_0, p_1]");
    let y = run(&m, vec![arange(&[2, 3]), i64s(&[1, 1]), i64s(&[-1])]);
    assert_eq!(y, f32s(&[2, 5], vec![0., 0., 1., 2., 2., 3., 3., 4., 5., 5.]));
    let y = run(&m, vec![arange(&[2, 3]), i64s(&[0, 2]), i64s(&[0])]);
    assert_eq!(y, f32s(&[4, 3], vec![0., 1., 2., 3., 4., 5., 3., 4., 5., 3., 4., 5.]));
}

#[test]
fn pad_with_constant_axes_keeps_the_other_dims() {
    let bytes = Builder::new(18)
        .input("x", DataType::Float, &[D::S("batch"), D::N(3)])
        .input("pads", DataType::Int64, &[D::N(2)])
        .init_i64("axes", &[1])
        .node("Pad", "", "p", &["x", "pads", "", "axes"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "float32 [batch, p_1]");
    let y = run(&m, vec![arange(&[1, 3]), i64s(&[2, 0])]);
    assert_eq!(y, f32s(&[1, 5], vec![0., 0., 0., 1., 2.]));
}

#[test]
fn pad_rejects_bad_pads_in_each_regime() {
    let rows: [(&[i64], &'static str, &str); 5] = [
        (&[0, -1, 0, 0], "constant", "pads [-1, 0] on axis 1 are negative: cropping is not supported"),
        (&[0, 3, 0, 0], "reflect", "reflect pads [3, 0] on axis 1 must be below its dim 3"),
        (&[1, 0, 0], "constant", "3 pads for 2 padded axes: 2 per axis are needed"),
        (&[i64::MAX, 0, 1, 0], "constant", "axis 0: 2 + 9223372036854775807 + 1 overflows"),
        (&[0, 0, 0, 0, 0, 0], "constant", "6 pads for 2 padded axes"),
    ];
    for (pads, mode, needle) in rows {
        let m = pad_model(&[D::N(2), D::N(3)], pads.len(), None, mode);
        let e = run_err(&m, vec![arange(&[2, 3]), i64s(pads)]);
        assert!(e.contains(&format!("node 'p' (Pad): {needle}")), "{pads:?}: {e}");
        let bytes = Builder::new(18)
            .input("x", DataType::Float, &[D::N(2), D::N(3)])
            .init_i64("pads", pads)
            .node("Pad", "", "p", &["x", "pads"], &["y"], vec![("mode", A::S(mode))])
            .output("y")
            .bytes();
        let e = match Model::load_bytes(&bytes).and_then(|m| m.typed()) {
            Ok(_) => panic!("{pads:?} was accepted"),
            Err(e) => format!("{e:#}"),
        };
        assert!(e.contains(&format!("node 'p' (Pad): {needle}")), "{pads:?}: {e}");
    }
    let m = pad_model(&[D::N(2), D::N(3)], 2, Some(1), "constant");
    let e = run_err(&m, vec![arange(&[2, 3]), i64s(&[1, 1]), i64s(&[2])]);
    assert!(e.contains("node 'p' (Pad): axis 2 is out of range for rank 2"), "{e}");
}

/// `Resize(x, "", scales)` or `Resize(x, "", "", sizes)` (opset 13, nearest), the parameter a graph
/// input of `n` values or, with `values`, an initializer.
fn resize_model(x: &[D], sizes: bool, n: usize, values: Option<&[f32]>) -> Model {
    let name = if sizes { "sizes" } else { "scales" };
    let mut b = Builder::new(13).input("x", DataType::Float, x);
    b = match (values, sizes) {
        (Some(v), true) => b.init_i64(name, &v.iter().map(|&f| f as i64).collect::<Vec<_>>()),
        (Some(v), false) => b.init_f32(name, &[v.len() as i64], v),
        (None, true) => b.input(name, DataType::Int64, &[D::N(n as i64)]),
        (None, false) => b.input(name, DataType::Float, &[D::N(n as i64)]),
    };
    let inputs: Vec<&str> = if sizes { vec!["x", "", "", name] } else { vec!["x", "", name] };
    Model::load_bytes(&b.node("Resize", "", "r", &inputs, &["y"], vec![]).output("y").bytes()).unwrap()
}

#[test]
fn resize_scales_and_sizes_in_each_regime() {
    let x = [D::S("batch"), D::N(1), D::N(2), D::N(3)];
    // Constant scales: floor(d * scale), whole scales exact on a symbolic dim.
    let m = resize_model(&x, false, 4, Some(&[1.0, 1.0, 1.5, 2.0]));
    assert_eq!(shape_of(&m, "y"), "float32 [batch, 1, 3, 6]");
    // Runtime scales or sizes: the resized axes are fresh.
    let m = resize_model(&x, false, 4, None);
    assert_eq!(shape_of(&m, "y"), "float32 [r_0, r_1, r_2, r_3]");
    let y = run(&m, vec![arange(&[1, 1, 2, 3]), f32s(&[4], vec![1.0, 1.0, 1.0, 2.0])]);
    assert_eq!(y, f32s(&[1, 1, 2, 6], vec![0., 0., 1., 1., 2., 2., 3., 3., 4., 4., 5., 5.]));
    let m = resize_model(&x, true, 4, None);
    let y = run(&m, vec![arange(&[1, 1, 2, 3]), i64s(&[1, 1, 1, 3])]);
    assert_eq!(y, f32s(&[1, 1, 1, 3], vec![0., 1., 2.]));
    // Bad values are errors naming the node, before tract's Resize runs.
    let e = run_err(&m, vec![arange(&[1, 1, 2, 3]), i64s(&[1, 1, -2, 3])]);
    assert!(e.contains("node 'r' (Resize): size -2 for axis 2 is negative"), "{e}");
    let m = resize_model(&x, false, 4, None);
    let e = run_err(&m, vec![arange(&[1, 1, 2, 3]), f32s(&[4], vec![1.0, 0.0, 1.0, 1.0])]);
    assert!(e.contains("node 'r' (Resize): scale 0 for axis 1 must be positive and finite"), "{e}");
    let m = resize_model(&x, false, 3, None);
    let e = run_err(&m, vec![arange(&[1, 1, 2, 3]), f32s(&[3], vec![1.0, 1.0, 1.0])]);
    assert!(e.contains("node 'r' (Resize): 3 values for 4 resized axes"), "{e}");
}

#[test]
fn resize_to_sizes_computed_from_shapes() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(1), D::N(1), D::N(2), D::N(2)])
        .input("z", DataType::Float, &[D::S("h"), D::S("w")])
        .init_i64("one_one", &[1, 1])
        .node("Shape", "", "s", &["z"], &["zs"], vec![])
        .node("Concat", "", "c", &["one_one", "zs"], &["sizes"], vec![("axis", A::I(0))])
        .node("Resize", "", "r", &["x", "", "", "sizes"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    assert_eq!(shape_of(&m, "y"), "float32 [1, 1, h, w]");
    let y = run(&m, vec![arange(&[1, 1, 2, 2]), arange(&[4, 4])]);
    assert_eq!(y.shape(), [1, 1, 4, 4]);
    assert_eq!(y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap()[..4], [0., 0., 1., 1.]);
}

/// `y = Upsample(x, scales)` at opset 9 over float `x: [1, 1, 2, 2]`, the scales an initializer or
/// (with `values` None) a graph input.
fn upsample_model(mode: &'static str, values: Option<&[f32]>) -> Model {
    let b = Builder::new(9).input("x", DataType::Float, &[D::N(1), D::N(1), D::N(2), D::N(2)]);
    let b = match values {
        Some(v) => b.init_f32("scales", &[4], v),
        None => b.input("scales", DataType::Float, &[D::N(4)]),
    };
    let b = b.node("Upsample", "", "up", &["x", "scales"], &["y"], vec![("mode", A::S(mode))]);
    Model::load_bytes(&b.output("y").bytes()).unwrap()
}

#[test]
fn upsample_is_the_resize_of_opset_10_in_each_regime() {
    let x = f32s(&[1, 1, 2, 2], vec![0.0, 1.0, 2.0, 3.0]);
    // Nearest repeats each value (floor of x_out / scale); linear interpolates at x_out / scale, the
    // last column clamped: [0, 1] -> [0, 0.5, 1, 1].
    let nearest = vec![0., 0., 0., 1., 1., 1., 0., 0., 0., 1., 1., 1., 2., 2., 2., 3., 3., 3., 2., 2., 2., 3., 3., 3.];
    let linear = vec![0., 0.5, 1., 1., 1., 1.5, 2., 2., 2., 2.5, 3., 3., 2., 2.5, 3., 3.];
    let cases = [
        ("nearest", [1.0, 1.0, 2.0, 3.0], [1, 1, 4, 6], nearest),
        ("linear", [1.0, 1.0, 2.0, 2.0], [1, 1, 4, 4], linear),
    ];
    for (mode, scales, shape, values) in cases {
        let want = f32s(&shape, values);
        let constant = upsample_model(mode, Some(&scales));
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        assert_eq!(shape_of(&constant, "y"), format!("float32 [{}]", dims.join(", ")), "{mode}");
        assert_eq!(run(&constant, vec![x.clone()]), want, "{mode}");
        let runtime = upsample_model(mode, None);
        assert_eq!(shape_of(&runtime, "y"), "float32 [up_0, up_1, up_2, up_3]", "{mode}");
        assert_eq!(run(&runtime, vec![x.clone(), f32s(&[4], scales.to_vec())]), want, "{mode}");
    }
    let e = run_err(&upsample_model("nearest", None), vec![x.clone(), f32s(&[4], vec![1.0, 1.0, f32::NAN, 1.0])]);
    assert!(e.contains("node 'up' (Upsample): "), "{e}");
    // Opset 7 gives the scales as an attribute.
    let bytes = Builder::new(7)
        .input("x", DataType::Float, &[D::N(1), D::N(1), D::N(2), D::N(2)])
        .node("Upsample", "", "up", &["x"], &["y"], vec![("scales", A::Fs(vec![1.0, 1.0, 2.0, 2.0]))])
        .output("y")
        .bytes();
    let e = format!("{:#}", Model::load_bytes(&bytes).unwrap_err());
    assert!(e.contains("node 'up' (Upsample): the scales as an attribute (opset 7) are not supported"), "{e}");
}
