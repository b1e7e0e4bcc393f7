//! One walk over every tensor a model holds, for both proto flavours: tract's (`tract_onnx::pb`, which
//! loading prepares) and ours ([`crate::schema::proto`], which write-back edits). The two schemas name
//! the fields the walk reads alike, so one macro body opens a graph or an attribute of either; only
//! where the walk starts ([`TensorTree::roots`]) is written per flavour.

use crate::schema::proto;
use tract_onnx::pb;

/// A decoded model whose tensors [`for_each_tensor`] visits.
pub(crate) trait TensorTree {
    /// The schema's `GraphProto`.
    type Graph;
    /// The schema's `AttributeProto`.
    type Attribute;
    /// The schema's `TensorProto`.
    type Tensor;

    /// Where the walk starts: the graphs and the attributes held by the model itself.
    fn roots(&mut self) -> (Vec<&mut Self::Graph>, Vec<&mut Self::Attribute>);

    /// A graph's own tensors (initializers, then the values and indices of its sparse initializers),
    /// and its nodes' attributes.
    fn open_graph<'a>(
        graph: &'a mut Self::Graph,
        tensors: &mut Vec<&'a mut Self::Tensor>,
        attributes: &mut Vec<&'a mut Self::Attribute>,
    );

    /// An attribute's tensors (`t`, `tensors`, then the values and indices of `sparse_tensor` and
    /// `sparse_tensors`), and its subgraphs (`g`, `graphs`).
    fn open_attribute<'a>(
        attribute: &'a mut Self::Attribute,
        tensors: &mut Vec<&'a mut Self::Tensor>,
        graphs: &mut Vec<&'a mut Self::Graph>,
    );
}

/// Calls `f` on every tensor of `model`: those [`TensorTree::roots`] reach, through every subgraph of
/// every attribute. Explicit stacks, not recursion, walk the subgraphs (attributes before graphs), so
/// the order is the same from call to call.
pub(crate) fn for_each_tensor<M: TensorTree>(
    model: &mut M,
    f: &mut dyn FnMut(&mut M::Tensor) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let (mut graphs, mut attributes) = model.roots();
    let mut tensors = vec![];
    loop {
        if let Some(attribute) = attributes.pop() {
            M::open_attribute(attribute, &mut tensors, &mut graphs);
        } else if let Some(graph) = graphs.pop() {
            M::open_graph(graph, &mut tensors, &mut attributes);
        } else {
            return Ok(());
        }
        for tensor in tensors.drain(..) {
            f(tensor)?;
        }
    }
}

/// `open_graph` and `open_attribute` for one schema, read by field name.
macro_rules! open_fields {
    ($graph:ty, $attribute:ty, $tensor:ty) => {
        fn open_graph<'a>(
            graph: &'a mut $graph,
            tensors: &mut Vec<&'a mut $tensor>,
            attributes: &mut Vec<&'a mut $attribute>,
        ) {
            tensors.extend(graph.initializer.iter_mut());
            for sparse in graph.sparse_initializer.iter_mut() {
                tensors.extend(sparse.values.iter_mut().chain(sparse.indices.iter_mut()));
            }
            attributes.extend(graph.node.iter_mut().flat_map(|n| n.attribute.iter_mut()));
        }

        fn open_attribute<'a>(
            attribute: &'a mut $attribute,
            tensors: &mut Vec<&'a mut $tensor>,
            graphs: &mut Vec<&'a mut $graph>,
        ) {
            tensors.extend(attribute.t.iter_mut().chain(attribute.tensors.iter_mut()));
            for sparse in attribute.sparse_tensor.iter_mut().chain(attribute.sparse_tensors.iter_mut()) {
                tensors.extend(sparse.values.iter_mut().chain(sparse.indices.iter_mut()));
            }
            graphs.extend(attribute.g.iter_mut().chain(attribute.graphs.iter_mut()));
        }
    };
}

/// What tract reads: the main graph and the functions' nodes (tract ignores training graphs).
impl TensorTree for pb::ModelProto {
    type Graph = pb::GraphProto;
    type Attribute = pb::AttributeProto;
    type Tensor = pb::TensorProto;

    fn roots(&mut self) -> (Vec<&mut pb::GraphProto>, Vec<&mut pb::AttributeProto>) {
        let graphs = self.graph.iter_mut().collect();
        let attributes = self.functions.iter_mut().flat_map(|f| f.node.iter_mut()).flat_map(|n| n.attribute.iter_mut());
        (graphs, attributes.collect())
    }

    open_fields!(pb::GraphProto, pb::AttributeProto, pb::TensorProto);
}

/// All that write-back writes: the main graph, training graphs, functions' attribute defaults and
/// nodes.
impl TensorTree for proto::ModelProto {
    type Graph = proto::GraphProto;
    type Attribute = proto::AttributeProto;
    type Tensor = proto::TensorProto;

    fn roots(&mut self) -> (Vec<&mut proto::GraphProto>, Vec<&mut proto::AttributeProto>) {
        let mut graphs: Vec<&mut proto::GraphProto> = self.graph.iter_mut().collect();
        for t in self.training_info.iter_mut() {
            graphs.extend(t.initialization.iter_mut().chain(t.algorithm.iter_mut()));
        }
        let mut attributes = vec![];
        for func in self.functions.iter_mut() {
            let proto::FunctionProto { node, attribute_proto, .. } = func;
            attributes.extend(attribute_proto.iter_mut());
            attributes.extend(node.iter_mut().flat_map(|n| n.attribute.iter_mut()));
        }
        (graphs, attributes)
    }

    open_fields!(proto::GraphProto, proto::AttributeProto, proto::TensorProto);
}
