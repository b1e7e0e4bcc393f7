//! What one lowering knows (the model's facts and integer constants) and what it writes: fresh
//! names, initializers, standard nodes and the Slice → Squeeze → Unsqueeze chain.

use crate::onnx::node::node_name;
use crate::onnx::tensor_to_proto;
use crate::schema::proto::{self, NodeProto};
use anyhow::Context;
use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// One lowering's state: what it knows of the model and the initializers it has written.
pub(super) struct Lowering<'a> {
    /// The analysed facts of the model's values, by name.
    pub(super) facts: &'a HashMap<String, InferenceFact>,
    /// Integer initializers and Constant outputs of the model, by name (tract merges identical
    /// constants, so analysis facts do not name them all).
    pub(super) consts: HashMap<String, Vec<i64>>,
    /// Initializers written so far.
    pub(super) inits: Vec<proto::TensorProto>,
    /// The last fresh number used.
    pub(super) counter: usize,
}

/// One axis of a Slice being built: `(axis, start, end, step)`.
pub(super) type SliceAxis = (i64, i64, i64, i64);

impl Lowering<'_> {
    pub(super) fn fresh(&mut self, node: &NodeProto, what: &str) -> String {
        self.counter += 1;
        format!("{}__lower_{what}_{}", node_name(node), self.counter)
    }

    pub(super) fn init_i64(&mut self, node: &NodeProto, what: &str, values: &[i64]) -> anyhow::Result<String> {
        self.init(node, what, &tract_ndarray::arr1(values).into_tensor())
    }

    /// A new initializer holding `tensor`, named after `node` and `what`.
    pub(super) fn init(&mut self, node: &NodeProto, what: &str, tensor: &Tensor) -> anyhow::Result<String> {
        let name = self.fresh(node, what);
        self.inits.push(tensor_to_proto(&name, tensor)?);
        Ok(name)
    }

    pub(super) fn new_node(
        &mut self,
        like: &NodeProto,
        op: &str,
        inputs: Vec<String>,
        output: Option<String>,
        attrs: Vec<proto::AttributeProto>,
    ) -> (NodeProto, String) {
        let out = output.unwrap_or_else(|| self.fresh(like, op));
        let name = self.fresh(like, &format!("{op}_node"));
        let node = NodeProto {
            name: Some(name),
            op_type: Some(op.into()),
            domain: Some(String::new()),
            input: inputs,
            output: vec![out.clone()],
            attribute: attrs,
            doc_string: like.doc_string.clone(),
            ..Default::default()
        };
        (node, out)
    }

    /// A known constant input of the node (initializer, Constant, or a value analysis computed).
    pub(super) fn const_ints(&self, name: &str) -> Option<Vec<i64>> {
        if let Some(v) = self.consts.get(name) {
            return Some(v.clone());
        }
        let t = self.facts.get(name)?.value.concretize()?;
        let t = t.cast_to::<i64>().ok()?;
        Some(t.try_as_plain_ram().ok()?.as_slice::<i64>().ok()?.to_vec())
    }

    pub(super) fn shape_of(&self, name: &str) -> Option<Vec<TDim>> {
        self.facts.get(name)?.shape.concretize().map(|s| s.to_vec())
    }

    /// Initializers holding the starts, ends, axes and steps of a Slice over `axes` (none if empty).
    pub(super) fn slice_inits(&mut self, node: &NodeProto, axes: &[SliceAxis]) -> anyhow::Result<Option<[String; 4]>> {
        if axes.is_empty() {
            return Ok(None);
        }
        let column = |k: fn(&SliceAxis) -> i64| axes.iter().map(k).collect::<Vec<_>>();
        Ok(Some([
            self.init_i64(node, "starts", &column(|a| a.1))?,
            self.init_i64(node, "ends", &column(|a| a.2))?,
            self.init_i64(node, "axes", &column(|a| a.0))?,
            self.init_i64(node, "steps", &column(|a| a.3))?,
        ]))
    }

    /// After `nodes` (which compute its inputs), a Slice of `data` by `slice` (the names of its starts,
    /// ends, axes and steps), then Squeeze, then Unsqueeze; the last node writes the node's output.
    pub(super) fn emit_slice_chain(
        &mut self,
        node: &NodeProto,
        data: &str,
        mut nodes: Vec<NodeProto>,
        slice: Option<[String; 4]>,
        squeeze: Vec<i64>,
        unsqueeze: Vec<i64>,
    ) -> anyhow::Result<Vec<NodeProto>> {
        let output = node.output.first().cloned().context("the node has no output")?;
        let steps = [slice.is_some(), !squeeze.is_empty(), !unsqueeze.is_empty()];
        let last = steps.iter().rposition(|s| *s);
        let mut wire = data.to_string();
        let out_for = |ix: usize| if Some(ix) == last { Some(output.clone()) } else { None };
        if let Some([starts, ends, axes, steps]) = slice {
            let (n, w) = self.new_node(node, "Slice", vec![wire, starts, ends, axes, steps], out_for(0), vec![]);
            nodes.push(n);
            wire = w;
        }
        for (ix, (op, list)) in [(1, ("Squeeze", squeeze)), (2, ("Unsqueeze", unsqueeze))] {
            if !list.is_empty() {
                let axes = self.init_i64(node, "axes", &list)?;
                let (n, w) = self.new_node(node, op, vec![wire, axes], out_for(ix), vec![]);
                nodes.push(n);
                wire = w;
            }
        }
        if last.is_none() {
            let (n, _) = self.new_node(node, "Identity", vec![wire], Some(output), vec![]);
            nodes.push(n);
        }
        Ok(nodes)
    }
}
