//! Builds small ONNX models in code for the graph tests.

#![allow(dead_code)]

use prost::Message;
use tract_onnx::pb::{self, attribute_proto::AttributeType, tensor_proto::DataType, type_proto};

/// An ONNX model under construction.
pub struct Builder {
    graph: pb::GraphProto,
    opsets: Vec<(String, i64)>,
}

/// A dim of a declared input shape.
pub enum D {
    /// Known.
    N(i64),
    /// Symbolic.
    S(&'static str),
    /// Neither a value nor a name (MXNet).
    Unset,
}

/// A node attribute.
pub enum A {
    /// int
    I(i64),
    /// ints
    Is(Vec<i64>),
    /// string
    S(&'static str),
    /// float
    F(f32),
    /// floats
    Fs(Vec<f32>),
    /// a subgraph
    G(pb::GraphProto),
    /// a tensor
    T(pb::TensorProto),
}

fn shape_proto(dims: &[D]) -> pb::TensorShapeProto {
    pb::TensorShapeProto {
        dim: dims
            .iter()
            .map(|d| pb::tensor_shape_proto::Dimension {
                value: match d {
                    D::N(v) => Some(pb::tensor_shape_proto::dimension::Value::DimValue(*v)),
                    D::S(s) => Some(pb::tensor_shape_proto::dimension::Value::DimParam(s.to_string())),
                    D::Unset => None,
                },
                ..Default::default()
            })
            .collect(),
    }
}

/// A value info with a tensor type.
pub fn value_info(name: &str, dt: DataType, dims: &[D]) -> pb::ValueInfoProto {
    pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: dt as i32,
                shape: Some(shape_proto(dims)),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

impl Builder {
    /// A model importing the default domain at `opset` and `ai.sliceops` 1.
    pub fn new(opset: i64) -> Builder {
        Builder {
            graph: pb::GraphProto { name: "g".into(), ..Default::default() },
            opsets: vec![(String::new(), opset), ("ai.sliceops".into(), 1)],
        }
    }

    /// Imports `domain` at `version` too.
    pub fn import(mut self, domain: &str, version: i64) -> Self {
        self.opsets.push((domain.into(), version));
        self
    }

    /// Adds a graph input.
    pub fn input(mut self, name: &str, dt: DataType, dims: &[D]) -> Self {
        self.graph.input.push(value_info(name, dt, dims));
        self
    }

    /// Adds an int64 initializer.
    pub fn init_i64(self, name: &str, values: &[i64]) -> Self {
        self.init(name, DataType::Int64, &[values.len() as i64], values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// Adds an int32 initializer.
    pub fn init_i32(self, name: &str, values: &[i32]) -> Self {
        self.init(name, DataType::Int32, &[values.len() as i64], values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// Adds a float initializer of the given shape.
    pub fn init_f32(self, name: &str, dims: &[i64], values: &[f32]) -> Self {
        self.init(name, DataType::Float, dims, values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// Adds a raw initializer.
    pub fn init(mut self, name: &str, dt: DataType, dims: &[i64], raw: Vec<u8>) -> Self {
        self.graph.initializer.push(pb::TensorProto {
            name: name.into(),
            data_type: dt as i32,
            dims: dims.to_vec(),
            raw_data: raw,
            ..Default::default()
        });
        self
    }

    /// Adds an initializer as given.
    pub fn initializer(mut self, t: pb::TensorProto) -> Self {
        self.graph.initializer.push(t);
        self
    }

    /// Adds a node.
    pub fn node(
        mut self,
        op: &str,
        domain: &str,
        name: &str,
        inputs: &[&str],
        outputs: &[&str],
        attrs: Vec<(&str, A)>,
    ) -> Self {
        let attribute = attrs
            .into_iter()
            .map(|(n, a)| {
                let mut p = pb::AttributeProto { name: n.into(), ..Default::default() };
                match a {
                    A::I(i) => {
                        p.r#type = AttributeType::Int as i32;
                        p.i = i;
                    }
                    A::Is(v) => {
                        p.r#type = AttributeType::Ints as i32;
                        p.ints = v;
                    }
                    A::S(s) => {
                        p.r#type = AttributeType::String as i32;
                        p.s = s.as_bytes().to_vec();
                    }
                    A::F(f) => {
                        p.r#type = AttributeType::Float as i32;
                        p.f = f;
                    }
                    A::Fs(v) => {
                        p.r#type = AttributeType::Floats as i32;
                        p.floats = v;
                    }
                    A::G(g) => {
                        p.r#type = AttributeType::Graph as i32;
                        p.g = Some(g);
                    }
                    A::T(t) => {
                        p.r#type = AttributeType::Tensor as i32;
                        p.t = Some(t);
                    }
                }
                p
            })
            .collect();
        self.graph.node.push(pb::NodeProto {
            op_type: op.into(),
            domain: domain.into(),
            name: name.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            attribute,
            ..Default::default()
        });
        self
    }

    /// Adds an `If` node on `cond` with the two branches.
    pub fn if_node(
        self,
        name: &str,
        cond: &str,
        outputs: &[&str],
        then_branch: pb::GraphProto,
        else_branch: pb::GraphProto,
    ) -> Self {
        let branches = vec![("then_branch", A::G(then_branch)), ("else_branch", A::G(else_branch))];
        self.node("If", "", name, &[cond], outputs, branches)
    }

    /// Adds PyTorch's ATen fallback node for `aten::as_strided(x, size, stride, storage_offset)`.
    pub fn aten_as_strided(self, name: &str, inputs: &[&str], output: &str) -> Self {
        let attrs = vec![("operator", A::S("as_strided")), ("overload_name", A::S(""))];
        self.node("ATen", "org.pytorch.aten", name, inputs, &[output], attrs)
    }

    /// Adds a graph input with no declared type (a Scan body's may take the Scan input's).
    pub fn input_untyped(mut self, name: &str) -> Self {
        self.graph.input.push(pb::ValueInfoProto { name: name.into(), ..Default::default() });
        self
    }

    /// Adds a graph output (no declared type).
    pub fn output(mut self, name: &str) -> Self {
        self.graph.output.push(pb::ValueInfoProto { name: name.into(), ..Default::default() });
        self
    }

    /// Adds a graph output with a declared type and shape.
    pub fn output_typed(mut self, name: &str, dt: DataType, dims: &[D]) -> Self {
        self.graph.output.push(value_info(name, dt, dims));
        self
    }

    /// Adds a value_info annotation.
    pub fn value_info(mut self, name: &str, dt: DataType, dims: &[D]) -> Self {
        self.graph.value_info.push(value_info(name, dt, dims));
        self
    }

    /// The graph built so far, as a subgraph for an `If` branch (its name `name`).
    pub fn graph(mut self, name: &str) -> pb::GraphProto {
        self.graph.name = name.into();
        self.graph
    }

    /// The encoded model.
    pub fn bytes(self) -> Vec<u8> {
        pb::ModelProto {
            ir_version: 8,
            opset_import: self
                .opsets
                .into_iter()
                .map(|(domain, version)| pb::OperatorSetIdProto { domain, version })
                .collect(),
            graph: Some(self.graph),
            ..Default::default()
        }
        .encode_to_vec()
    }
}

/// A chain of `nodes` nodes over float `x: [4, 8]` to `y`; node `i` is `Slice` (`x[::-1]` on axis `i % 2` of the
/// slices made so far) when `slice(i)`, else `Relu`.
pub fn chain_model(nodes: usize, slice: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut b = Builder::new(13)
        .input("x", DataType::Float, &[D::N(4), D::N(8)])
        .init_i64("st", &[-1])
        .init_i64("en", &[i64::MIN])
        .init_i64("ax0", &[0])
        .init_i64("ax1", &[1])
        .init_i64("step", &[-1]);
    let mut slices = 0;
    for i in 0..nodes {
        let src = if i == 0 { "x".to_string() } else { format!("v{}", i - 1) };
        let dst = if i == nodes - 1 { "y".to_string() } else { format!("v{i}") };
        let name = format!("n{i}");
        b = if slice(i) {
            let axes = if slices % 2 == 0 { "ax0" } else { "ax1" };
            slices += 1;
            b.node("Slice", "", &name, &[&src, "st", "en", axes, "step"], &[&dst], vec![])
        } else {
            b.node("Relu", "", &name, &[&src], &[&dst], vec![])
        };
    }
    b.output("y").bytes()
}
