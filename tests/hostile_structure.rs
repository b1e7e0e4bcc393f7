//! Hostile inputs, part 3 (issue 30), two structural bugs: sizes a `ConstantOfShape` makes from a
//! run-time value inside an `If` branch or a `Loop` body (their `Shape` read as numbers), and sparse
//! initializers (`GraphProto.sparse_initializer`), which the structure check did not count and tract
//! does not read. Expected values are onnxruntime's (1.31.1) on the same models, written out.

mod common;

use common::onnx_build::{Builder, A, D};
use prost::Message;
use sliceops::Model;
use tract_onnx::pb;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

fn i64s(shape: &[usize], v: &[i64]) -> Tensor {
    tract_ndarray::ArrayD::from_shape_vec(shape, v.to_vec()).unwrap().into_tensor()
}

fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    tract_ndarray::ArrayD::from_shape_vec(shape, v.to_vec()).unwrap().into_tensor()
}

fn run(bytes: &[u8], inputs: Vec<Tensor>) -> anyhow::Result<Vec<Tensor>> {
    let m = Model::load_bytes(bytes)?;
    Ok(m.run(inputs)?.into_iter().map(|(_, t)| t).collect())
}

/// `Shape(ConstantOfShape(s))` as a graph of its own, `s` read from the scope around it.
fn shape_of_constant(
    name: &str,
    extra_inputs: &[(&str, DataType)],
    passthrough: Option<(&str, &str)>,
) -> pb::GraphProto {
    let c = format!("c_{name}");
    let y = format!("y_{name}");
    let mut b = Builder::new(13);
    for (n, dt) in extra_inputs {
        b = b.input(n, *dt, &[]);
    }
    b = b.node("ConstantOfShape", "", &format!("cos_{name}"), &["s"], &[&c], vec![]);
    b = b.node("Shape", "", &format!("shape_{name}"), &[&c], &[&y], vec![]);
    if let Some((from, to)) = passthrough {
        b = b.node("Identity", "", &format!("id_{name}"), &[from], &[to], vec![]).output(to);
    }
    b.output(&y).graph(name)
}

#[test]
fn shape_of_a_constant_of_run_time_shape_inside_if_and_loop_gives_its_values() {
    // If: either branch computes Shape(ConstantOfShape(s)) of the outer s.
    let model = Builder::new(13)
        .input("s", DataType::Int64, &[D::N(2)])
        .input("b", DataType::Bool, &[])
        .if_node("if", "b", &["y"], shape_of_constant("t", &[], None), shape_of_constant("e", &[], None))
        .output("y")
        .bytes();
    for (s, b) in [([3i64, 5], true), ([2, 7], false), ([0, 4], true)] {
        let y = run(&model, vec![i64s(&[2], &s), tensor0(b)]).unwrap();
        assert_eq!(y[0], i64s(&[2], &s), "s = {s:?}, b = {b}");
    }
    // Loop: the body's scan output stacks it per iteration ([[3, 5], [3, 5]] for 2 iterations).
    // Outputs in the body's order: the condition first, then the scan output.
    let body = shape_of_constant("body", &[("i", DataType::Int64), ("c", DataType::Bool)], Some(("c", "c_out")));
    let model = Builder::new(13)
        .input("s", DataType::Int64, &[D::N(2)])
        .input("n", DataType::Int64, &[])
        .init("yes", DataType::Bool, &[], vec![1])
        .node("Loop", "", "loop", &["n", "yes"], &["y"], vec![("body", A::G(body))])
        .output("y")
        .bytes();
    let y = run(&model, vec![i64s(&[2], &[3, 5]), tensor0(2i64)]).unwrap();
    assert_eq!(y[0], i64s(&[2, 2], &[3, 5, 3, 5]));
    let y = run(&model, vec![i64s(&[2], &[4, 1]), tensor0(3i64)]).unwrap();
    assert_eq!(y[0], i64s(&[3, 2], &[4, 1, 4, 1, 4, 1]));
}

fn float_tensor(name: &str, dims: &[i64], values: &[f32]) -> pb::TensorProto {
    pb::TensorProto {
        name: name.into(),
        data_type: DataType::Float as i32,
        dims: dims.to_vec(),
        float_data: values.to_vec(),
        ..Default::default()
    }
}

fn int64_tensor(name: &str, dims: &[i64], values: &[i64]) -> pb::TensorProto {
    pb::TensorProto {
        name: name.into(),
        data_type: DataType::Int64 as i32,
        dims: dims.to_vec(),
        int64_data: values.to_vec(),
        ..Default::default()
    }
}

/// `w` as a sparse [2, 3] initializer: 1.5 at (0, 0), -2 at (1, 1), 4 at (1, 2).
fn sparse_w(coordinates: bool) -> pb::SparseTensorProto {
    let indices = if coordinates {
        int64_tensor("w_idx", &[3, 2], &[0, 0, 1, 1, 1, 2])
    } else {
        int64_tensor("w_idx", &[3], &[0, 4, 5])
    };
    pb::SparseTensorProto {
        values: Some(float_tensor("w", &[3], &[1.5, -2.0, 4.0])),
        indices: Some(indices),
        dims: vec![2, 3],
    }
}

/// `y = x + w` over [2, 3], `w` sparse; with `in_branch`, inside both branches of an `If`, each
/// holding its own sparse `w`.
fn sparse_model(sparse: pb::SparseTensorProto, in_branch: bool) -> Vec<u8> {
    let bytes = if in_branch {
        let branch = |name: &str| {
            let mut g = Builder::new(13)
                .node("Add", "", &format!("add_{name}"), &["x", "w"], &[&format!("y_{name}")], vec![])
                .output(&format!("y_{name}"))
                .graph(name);
            g.sparse_initializer.push(sparse.clone());
            g
        };
        Builder::new(13)
            .input("x", DataType::Float, &[D::N(2), D::N(3)])
            .input("b", DataType::Bool, &[])
            .if_node("if", "b", &["y"], branch("t"), branch("e"))
            .output("y")
            .bytes()
    } else {
        Builder::new(13)
            .input("x", DataType::Float, &[D::N(2), D::N(3)])
            .node("Add", "", "add", &["x", "w"], &["y"], vec![])
            .output("y")
            .bytes()
    };
    let mut m = pb::ModelProto::decode(&*bytes).unwrap();
    if !in_branch {
        m.graph.as_mut().unwrap().sparse_initializer.push(sparse);
    }
    m.encode_to_vec()
}

#[test]
fn sparse_initializers_are_defined_and_read_dense() {
    let x = f32s(&[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // onnxruntime: [[1.5, 1, 2], [3, 2, 9]].
    let want = f32s(&[2, 3], &[1.5, 1.0, 2.0, 3.0, 2.0, 9.0]);
    for coordinates in [false, true] {
        let y = run(&sparse_model(sparse_w(coordinates), false), vec![x.clone()]).unwrap();
        assert_eq!(y[0], want, "coordinates: {coordinates}");
        let y = run(&sparse_model(sparse_w(coordinates), true), vec![x.clone(), tensor0(true)]).unwrap();
        assert_eq!(y[0], want, "in a branch, coordinates: {coordinates}");
    }
    // The analysis sees it as a constant too.
    let m = Model::load_bytes(&sparse_model(sparse_w(false), false)).unwrap();
    let facts = m.infer().unwrap();
    let y = facts.iter().find(|f| f.name == "y").unwrap();
    assert_eq!(&y.shape[..], &[2.to_dim(), 3.to_dim()][..]);
}

#[test]
fn bad_sparse_initializers_are_errors_naming_them() {
    let error = |sparse: pb::SparseTensorProto| match Model::load_bytes(&sparse_model(sparse, false)) {
        Ok(_) => panic!("loaded"),
        Err(e) => sliceops::describe_error(&e),
    };
    let mut s = sparse_w(false);
    s.indices = Some(int64_tensor("w_idx", &[3], &[0, 4, 6]));
    assert_eq!(error(s), "sparse initializer 'w': index 6 is outside its shape [2, 3]");
    let mut s = sparse_w(true);
    s.indices = Some(int64_tensor("w_idx", &[3, 2], &[0, 0, 1, 1, 2, 0]));
    assert_eq!(error(s), "sparse initializer 'w': index 2 is outside its shape [2, 3]");
    let mut s = sparse_w(false);
    s.indices = Some(int64_tensor("w_idx", &[2], &[0, 4]));
    assert_eq!(error(s), "sparse initializer 'w': its indices have shape [2]: expected [3] or [3, 2]");
    let mut s = sparse_w(false);
    s.dims = vec![1 << 40, 1 << 40];
    assert_eq!(
        error(s),
        "sparse initializer 'w': its dense shape [1099511627776, 1099511627776] of F32 is past 2147483647 bytes"
    );
    let mut s = sparse_w(false);
    s.dims = vec![2, -3];
    assert_eq!(error(s), "sparse initializer 'w': a negative dim in its shape [2, -3]");
    let mut s = sparse_w(false);
    s.indices = None;
    assert_eq!(error(s), "sparse initializer 'w': it has 3 values and no indices");
}
