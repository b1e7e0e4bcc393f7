//! Lowering a StridedSlice whose begin, end or strides are only known at run time.
//!
//! The masks are attributes, so the shape of the index expression (which entries are ranges, indices,
//! new axes, the ellipsis, and which input axis each one reads) is known when lowering; only the numbers
//! are computed in the graph, with standard ops, as vectors over all range entries at once (one Slice)
//! and per index entry (one Gather each):
//!
//! - range entry: `start = begin_mask ? (stride < 0 ? INT64_MAX : 0) : begin` and
//!   `end = end_mask ? (stride < 0 ? INT64_MIN : INT64_MAX) : end`, step `stride`. ONNX clamps exactly as
//!   Python does except for a negative stride whose begin is below `-dim`: Python selects nothing, ONNX
//!   clamps the start to 0 and selects element 0. There the end becomes `INT64_MAX`, which ONNX clamps
//!   to `dim - 1` for a negative step: nothing is selected either. Last, `end = min(end, dim)`, which
//!   changes nothing under ONNX's rules but keeps `INT64_MAX` with a negative step, which onnxruntime
//!   reads wrongly, out of the graph.
//! - index entry: a Gather of the index on its axis (after the Slice of the ranges), which removes the
//!   axis and refuses an index out of range at run time, as numpy does. A negative stride (an error in
//!   sliceops) replaces the index with `dim`, out of range, so that it fails too. (Slice + Squeeze would
//!   leave a dim only known at run time for the Squeeze, which tract cannot translate.)
//! - new axes: Unsqueeze, as with constant parameters.
//!
//! Without masks and with constant positive strides the two clamping rules agree everywhere, and the
//! node becomes one Slice of the same begin and end.

use super::emit::Lowering;
use crate::onnx::node::int_attr;
use crate::schema::proto::NodeProto;
use crate::semantics::{place_spec, Placed, SpecEntry, StridedSlice};
use anyhow::{bail, Context};
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

/// `Cast(to = INT64)`.
const TO_INT64: i64 = 7;

impl Lowering<'_> {
    /// Lowers a StridedSlice some of whose begin, end or strides are not constants.
    pub(super) fn runtime_strided_slice(
        &mut self,
        node: &NodeProto,
        data: &str,
        [begin, end]: [&str; 2],
        strides: Option<&str>,
        const_strides: Option<Vec<i64>>,
        masks: [i64; 5],
    ) -> anyhow::Result<Vec<NodeProto>> {
        if masks == [0; 5] && const_strides.as_ref().is_some_and(|s| s.iter().all(|&v| v > 0)) {
            return self.runtime_plain_slice(node, data, [begin, end], const_strides.unwrap_or_default());
        }
        let len_of = |name: &str| self.shape_of(name).filter(|s| s.len() == 1).and_then(|s| s[0].as_i64());
        let n = len_of(begin).context("the length of begin must be known to lower runtime parameters")?;
        for (role, name) in [("end", Some(end)), ("strides", strides)] {
            if let Some(len) = name.and_then(len_of).filter(|&len| len != n) {
                bail!("begin has {n} entries but {role} has {len}");
            }
        }
        let n = usize::try_from(n).context("begin has a negative length")?;
        // The masks alone fix the expression's shape; placeholder numbers stand in for the runtime ones.
        let spec = StridedSlice::with_masks(vec![0; n], vec![0; n], Some(vec![1; n]), masks).spec()?;
        let input_shape = self.shape_of(data).context("the input's rank must be known to lower")?;
        let rank = input_shape.len();
        let known_dims: Option<Vec<i64>> = input_shape.iter().map(|d| d.as_i64()).collect();
        let plan = EntryPlan::new(&spec, rank)?;

        let mut g = Emit { lw: self, node, nodes: vec![] };
        let begin = g.int64(begin);
        let end = g.int64(end);
        let strides = match strides {
            Some(s) => g.int64(s),
            None => g.ints("strides", &vec![1; n])?,
        };
        // The input's dims: a constant when they are known. tract computes a Shape as dims, and casts
        // the numbers they meet to dims through i32 (`INT64_MAX` becomes -1), so with symbolic dims the
        // lowered model is exact on onnxruntime but not when tract runs it.
        let shape = match known_dims {
            Some(dims) => g.ints("shape", &dims)?,
            None => g.op("Shape", vec![data.into()], &[]),
        };
        let mut wire = data.to_string();
        // Range entries: one Slice over all of them.
        if !plan.ranges.is_empty() {
            let (pos, ax): (Vec<i64>, Vec<i64>) = plan.ranges.iter().map(|r| (r.pos, r.axis)).unzip();
            let b = g.gather(&begin, "range_pos", &pos)?;
            let e = g.gather(&end, "range_pos", &pos)?;
            let s = g.gather(&strides, "range_pos", &pos)?;
            let dim = g.gather(&shape, "range_axes", &ax)?;
            let zero = g.ints("zero", &[0])?;
            let min = g.ints("int64_min", &[i64::MIN])?;
            let max = g.ints("int64_max", &[i64::MAX])?;
            let negative = g.op("Less", vec![s.clone(), zero.clone()], &[]);
            let masked_start = g.op("Where", vec![negative.clone(), max.clone(), zero], &[]);
            let masked_end = g.op("Where", vec![negative.clone(), min, max.clone()], &[]);
            let begin_masked: Vec<bool> = plan.ranges.iter().map(|r| r.begin_masked).collect();
            let end_masked: Vec<bool> = plan.ranges.iter().map(|r| r.end_masked).collect();
            let start = g.select(&begin_masked, masked_start, b.clone())?;
            let end = g.select(&end_masked, masked_end, e)?;
            // Where Python selects nothing and ONNX one element: negative stride, begin < -dim, begin given.
            let neg_dim = g.op("Neg", vec![dim.clone()], &[]);
            let below = g.op("Less", vec![b, neg_dim], &[]);
            let mut differs = g.op("And", vec![negative, below], &[]);
            if begin_masked.iter().any(|&m| m) {
                let given: Vec<bool> = begin_masked.iter().map(|m| !m).collect();
                let given = g.bools("begin_given", &given)?;
                differs = g.op("And", vec![differs, given], &[]);
            }
            let end = g.op("Where", vec![differs, max, end], &[]);
            // An end of at least dim means dim-1 for a negative step and dim for a positive one, both in
            // ONNX and Python; onnxruntime 1.31 wrongly reads `INT64_MAX` with a negative step as "to the
            // start" (measured), so no end above dim is left in the graph.
            let end = g.op("Min", vec![end, dim], &[]);
            let axes = g.ints("axes", &ax)?;
            wire = g.op("Slice", vec![wire, start, end, axes, s], &[]);
        }
        // Index entries, last axis first so that the axes before keep their numbers: Gather removes the
        // axis and refuses an index outside [-dim, dim), as numpy does. A negative stride (an error in
        // sliceops) turns the index into `dim`, out of range.
        for entry in plan.indices.iter().rev() {
            let b = g.scalar_at(&begin, "index_pos", entry.pos)?;
            let s = g.scalar_at(&strides, "index_pos", entry.pos)?;
            let dim = g.scalar_at(&shape, "index_axis", entry.axis)?;
            let zero = g.scalar("zero", 0)?;
            let negative_stride = g.op("Less", vec![s, zero], &[]);
            let index = g.op("Where", vec![negative_stride, dim, b], &[]);
            wire = g.op("Gather", vec![wire, index], &[("axis", entry.axis)]);
        }
        let nodes = g.nodes;
        self.emit_slice_chain(node, &wire, nodes, None, vec![], plan.unsqueeze)
    }

    /// No masks, constant positive strides: one Slice of the given begin and end (as int64).
    fn runtime_plain_slice(
        &mut self,
        node: &NodeProto,
        data: &str,
        [begin, end]: [&str; 2],
        const_strides: Vec<i64>,
    ) -> anyhow::Result<Vec<NodeProto>> {
        let mut g = Emit { lw: self, node, nodes: vec![] };
        let axes = g.ints("axes", &(0..const_strides.len() as i64).collect::<Vec<_>>())?;
        let steps = g.ints("steps", &const_strides)?;
        let (begin, end) = (g.int64(begin), g.int64(end));
        let mut nodes = g.nodes;
        let output = node.output.first().cloned();
        let (n, _) = self.new_node(node, "Slice", vec![data.to_string(), begin, end, axes, steps], output, vec![]);
        nodes.push(n);
        Ok(nodes)
    }
}

/// Nodes and initializers being emitted for one lowered node, named after it.
struct Emit<'l, 'a> {
    lw: &'l mut Lowering<'a>,
    node: &'l NodeProto,
    nodes: Vec<NodeProto>,
}

impl Emit<'_, '_> {
    /// A standard node `op(inputs)` with integer attributes; returns its output.
    fn op(&mut self, op: &str, inputs: Vec<String>, attrs: &[(&str, i64)]) -> String {
        let attrs = attrs.iter().map(|&(name, value)| int_attr(name, value)).collect();
        let (n, out) = self.lw.new_node(self.node, op, inputs, None, attrs);
        self.nodes.push(n);
        out
    }

    /// `value` as int64: itself if it is int64 already, else cast. (tract runs a Cast of int64 to int64
    /// through i32, which turns `INT64_MIN` into 0.)
    fn int64(&mut self, value: &str) -> String {
        let dt = self.lw.facts.get(value).and_then(|f| f.datum_type.concretize());
        if dt == Some(DatumType::I64) {
            return value.into();
        }
        self.op("Cast", vec![value.into()], &[("to", TO_INT64)])
    }

    fn ints(&mut self, what: &str, values: &[i64]) -> anyhow::Result<String> {
        self.lw.init_i64(self.node, what, values)
    }

    fn bools(&mut self, what: &str, values: &[bool]) -> anyhow::Result<String> {
        self.lw.init(self.node, what, &tract_ndarray::arr1(values).into_tensor())
    }

    /// The elements of the 1-D `from` at constant indices `idx`.
    fn gather(&mut self, from: &str, what: &str, idx: &[i64]) -> anyhow::Result<String> {
        let idx = self.ints(what, idx)?;
        Ok(self.op("Gather", vec![from.into(), idx], &[]))
    }

    /// A scalar int64 initializer.
    fn scalar(&mut self, what: &str, value: i64) -> anyhow::Result<String> {
        self.lw.init(self.node, what, &tensor0(value))
    }

    /// Element `at` of the 1-D `from`, as a scalar.
    fn scalar_at(&mut self, from: &str, what: &str, at: i64) -> anyhow::Result<String> {
        let at = self.scalar(what, at)?;
        Ok(self.op("Gather", vec![from.into(), at], &[]))
    }

    /// `mask ? if_set : if_clear` element-wise for a constant `mask` (no node when it is uniform).
    fn select(&mut self, mask: &[bool], if_set: String, if_clear: String) -> anyhow::Result<String> {
        if mask.iter().all(|&m| m) {
            return Ok(if_set);
        }
        if !mask.iter().any(|&m| m) {
            return Ok(if_clear);
        }
        let mask = self.bools("mask", mask)?;
        Ok(self.op("Where", vec![mask, if_set, if_clear], &[]))
    }
}

/// One range or index entry of the expression: its position in begin/end/strides and its input axis.
struct Entry {
    pos: i64,
    axis: i64,
    begin_masked: bool,
    end_masked: bool,
}

/// Where each entry of a StridedSlice expression goes, from its masks and the input's rank.
struct EntryPlan {
    ranges: Vec<Entry>,
    indices: Vec<Entry>,
    /// Output positions of new axes, for the Unsqueeze at the end.
    unsqueeze: Vec<i64>,
}

impl EntryPlan {
    /// The plan of `spec` (placeholder numbers: only which bounds are omitted matters) over `rank`.
    fn new(spec: &[SpecEntry], rank: usize) -> anyhow::Result<EntryPlan> {
        let mut plan = EntryPlan { ranges: vec![], indices: vec![], unsqueeze: vec![] };
        let at = |entry: usize, axis: usize| Entry {
            pos: entry as i64,
            axis: axis as i64,
            begin_masked: false,
            end_masked: false,
        };
        for placed in place_spec(spec, rank)? {
            match placed {
                Placed::Whole { .. } => {}
                Placed::NewAxis { out, .. } => plan.unsqueeze.push(out as i64),
                Placed::Index { entry, axis, .. } => plan.indices.push(at(entry, axis)),
                Placed::Range { entry, axis, begin, end, .. } => plan.ranges.push(Entry {
                    begin_masked: begin.is_none(),
                    end_masked: end.is_none(),
                    ..at(entry, axis)
                }),
            }
        }
        Ok(plan)
    }
}
