//! StridedSlice, Paddle-form Slice and standard Slice nodes lowered to ONNX Slice chains.

use super::bounds::{index_axis, off_sentinel, range_axis, resolved_axis};
use super::emit::{Lowering, SliceAxis};
use crate::onnx::node::{attr_i, attr_ints_or_int, int_attr, is_onnx, op_type};
use crate::schema::proto::NodeProto;
use crate::semantics::{place_spec, AsStrided, Placed, StridedSlice};
use anyhow::{bail, Context};
use tract_onnx::prelude::*;

impl Lowering<'_> {
    /// One of our nodes (see `walk::is_ours`) as standard nodes.
    pub(super) fn lower_node(&mut self, node: &NodeProto) -> anyhow::Result<Vec<NodeProto>> {
        match op_type(node) {
            "StridedSlice" => self.strided_slice(node),
            "Slice" => self.paddle_slice(node),
            "AsStrided" => {
                let size = attr_ints_or_int(node, "size").context("attribute size is missing")?;
                let stride = attr_ints_or_int(node, "stride").context("attribute stride is missing")?;
                let offset = attr_ints_or_int(node, "offset").and_then(|v| v.first().copied()).unwrap_or(0);
                self.as_strided(node, AsStrided { size, stride, offset })
            }
            _ => {
                let get = |i: usize| node.input.get(i).filter(|s| !s.is_empty()).and_then(|n| self.const_ints(n));
                let (Some(size), Some(stride)) = (get(1), get(2)) else {
                    bail!("size and stride must be constants to lower as_strided");
                };
                let offset = match node.input.get(3).filter(|s| !s.is_empty()) {
                    None => 0,
                    Some(_) => *get(3).context("storage_offset must be a constant")?.first().unwrap_or(&0),
                };
                self.as_strided(node, AsStrided { size, stride, offset })
            }
        }
    }

    fn strided_slice(&mut self, node: &NodeProto) -> anyhow::Result<Vec<NodeProto>> {
        let input = |i: usize| node.input.get(i).filter(|s| !s.is_empty()).cloned();
        let data = input(0).context("the data input is missing")?;
        let masks = StridedSlice::MASK_NAMES.map(|m| attr_i(node, m).unwrap_or(0));
        let (begin, end) = (input(1).context("begin is missing")?, input(2).context("end is missing")?);
        let strides = input(3);
        let (cb, ce) = (self.const_ints(&begin), self.const_ints(&end));
        let cs = match &strides {
            Some(s) => self.const_ints(s),
            None => cb.as_ref().map(|b| vec![1; b.len()]),
        };
        let (Some(b), Some(e), Some(s)) = (cb, ce, cs.clone()) else {
            return self.runtime_strided_slice(node, &data, [&begin, &end], strides.as_deref(), cs, masks);
        };
        let spec = StridedSlice::with_masks(b, e, Some(s), masks).spec()?;
        let shape = self.shape_of(&data).context("the input's rank must be known to lower")?;
        let (mut axes, mut squeeze, mut unsqueeze) = (vec![], vec![], vec![]);
        for placed in place_spec(&spec, shape.len())? {
            match placed {
                Placed::Whole { .. } => {}
                Placed::NewAxis { out, .. } => unsqueeze.push(out as i64),
                Placed::Index { axis, value, .. } => {
                    axes.push(index_axis(axis, value, &shape[axis])?);
                    squeeze.push(axis as i64);
                }
                Placed::Range { axis, begin, end, step, .. } => {
                    axes.extend(range_axis(axis, begin, end, step, &shape[axis])?);
                }
            }
        }
        let slice = self.slice_inits(node, &axes)?;
        self.emit_slice_chain(node, &data, vec![], slice, squeeze, unsqueeze)
    }

    fn paddle_slice(&mut self, node: &NodeProto) -> anyhow::Result<Vec<NodeProto>> {
        let input = |i: usize| node.input.get(i).filter(|s| !s.is_empty()).cloned();
        let data = input(0).context("the data input is missing")?;
        let axes = attr_ints_or_int(node, "axes").context("attribute axes is missing")?;
        // Paddle's slice clamps as ONNX's does: with constant parameters over known dims, the bounds are
        // written resolved, as for a standard Slice.
        let constant = |slot: usize, role: &str| match input(slot) {
            Some(t) => self.const_ints(&t),
            None => attr_ints_or_int(node, role),
        };
        let steps = match (input(3), attr_ints_or_int(node, "strides")) {
            (None, None) => Some(None),
            _ => constant(3, "strides").map(Some),
        };
        if let (Some(starts), Some(ends), Some(steps)) = (constant(1, "starts"), constant(2, "ends"), steps) {
            let slice = crate::semantics::Slice { starts, ends, axes: Some(axes.clone()), steps };
            if let Some(nodes) = self.resolved_slice(node, &data, slice)? {
                return Ok(nodes);
            }
        }
        let mut nodes = vec![];
        let mut args = vec![data];
        for (slot, role) in [(1, "starts"), (2, "ends")] {
            let name = match (input(slot), attr_ints_or_int(node, role)) {
                (Some(t), _) => {
                    let (n, mut w) = self.new_node(node, "Cast", vec![t], None, vec![int_attr("to", 7)]);
                    nodes.push(n);
                    if role == "ends" {
                        w = self.off_sentinels(node, w, &mut nodes)?;
                    }
                    w
                }
                (None, Some(v)) if role == "ends" => {
                    let v: Vec<i64> = v.into_iter().map(off_sentinel).collect();
                    self.init_i64(node, role, &v)?
                }
                (None, Some(v)) => self.init_i64(node, role, &v)?,
                (None, None) => bail!("{role} is missing"),
            };
            args.push(name);
        }
        args.push(self.init_i64(node, "axes", &axes)?);
        let steps = match (input(3), attr_ints_or_int(node, "strides")) {
            (Some(t), _) => {
                let (n, w) = self.new_node(node, "Cast", vec![t], None, vec![int_attr("to", 7)]);
                nodes.push(n);
                w
            }
            (None, Some(v)) => self.init_i64(node, "steps", &v)?,
            (None, None) => self.init_i64(node, "steps", &vec![1; axes.len()])?,
        };
        args.push(steps);
        let (n, _) = self.new_node(node, "Slice", args, node.output.first().cloned(), vec![]);
        nodes.push(n);
        Ok(nodes)
    }

    /// Runtime int64 ends, with the two values some runtimes special-case moved off (see
    /// [`off_sentinel`]): `e' = min(e, 2^62)`, then `e' + (e' == INT32_MAX)`.
    fn off_sentinels(&mut self, node: &NodeProto, ends: String, nodes: &mut Vec<NodeProto>) -> anyhow::Result<String> {
        let cap = self.init(node, "cap", &tensor0(1i64 << 62))?;
        let (n, capped) = self.new_node(node, "Min", vec![ends, cap], None, vec![]);
        nodes.push(n);
        let int32_max = self.init(node, "int32_max", &tensor0(i64::from(i32::MAX)))?;
        let (n, is_max) = self.new_node(node, "Equal", vec![capped.clone(), int32_max], None, vec![]);
        nodes.push(n);
        let (n, one_if_max) = self.new_node(node, "Cast", vec![is_max], None, vec![int_attr("to", 7)]);
        nodes.push(n);
        let (n, moved) = self.new_node(node, "Add", vec![capped, one_if_max], None, vec![]);
        nodes.push(n);
        Ok(moved)
    }

    /// A standard Slice with constant parameters over known dims, with its bounds written resolved (the
    /// same elements under every runtime: some special-case INT64_MAX and get reversed ranges wrong).
    pub(super) fn resolve_standard_slice(
        &mut self,
        node: &NodeProto,
        opset: i64,
    ) -> anyhow::Result<Option<Vec<NodeProto>>> {
        if op_type(node) != "Slice" || !is_onnx(node) {
            return Ok(None);
        }
        let input = |i: usize| node.input.get(i).filter(|s| !s.is_empty());
        let params = if opset < 10 {
            let starts = attr_ints_or_int(node, "starts");
            let ends = attr_ints_or_int(node, "ends");
            (starts, ends, attr_ints_or_int(node, "axes"), None)
        } else {
            let get = |i: usize| input(i).and_then(|n| self.const_ints(n));
            if (1..5).any(|i| input(i).is_some() && get(i).is_none()) {
                return Ok(None);
            }
            (get(1), get(2), get(3), get(4))
        };
        let (Some(starts), Some(ends), axes, steps) = params else { return Ok(None) };
        let Some(data) = input(0) else { return Ok(None) };
        let data = data.clone();
        let written: Vec<SliceAxis> = starts
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let a = axes.as_ref().and_then(|a| a.get(i).copied()).unwrap_or(i as i64);
                let k = steps.as_ref().and_then(|k| k.get(i).copied()).unwrap_or(1);
                (a, s, ends.get(i).copied().unwrap_or(0), k)
            })
            .collect();
        let slice = crate::semantics::Slice { starts, ends, axes, steps };
        let Some(resolved) = self.resolved_axes(&data, slice)? else { return Ok(None) };
        if resolved == written {
            // Written resolved already (a lowered model lowered again).
            return Ok(None);
        }
        let slice = self.slice_inits(node, &resolved)?;
        self.emit_slice_chain(node, &data, vec![], slice, vec![], vec![]).map(Some)
    }

    /// `slice` (ONNX clamping) of `data` with its bounds written resolved, when `data`'s dims are known.
    fn resolved_slice(
        &mut self,
        node: &NodeProto,
        data: &str,
        slice: crate::semantics::Slice,
    ) -> anyhow::Result<Option<Vec<NodeProto>>> {
        let Some(axes) = self.resolved_axes(data, slice)? else { return Ok(None) };
        let slice = self.slice_inits(node, &axes)?;
        self.emit_slice_chain(node, data, vec![], slice, vec![], vec![]).map(Some)
    }

    /// The resolved Slice axes of `slice` over `data`, when `data`'s dims are known.
    fn resolved_axes(&self, data: &str, slice: crate::semantics::Slice) -> anyhow::Result<Option<Vec<SliceAxis>>> {
        let Some(dims) = self.shape_of(data).and_then(|s| s.iter().map(|d| d.as_i64()).collect::<Option<Vec<i64>>>())
        else {
            return Ok(None);
        };
        let sel = slice.resolve(&dims)?;
        let mut axes = vec![];
        for out in &sel.out {
            if let crate::view::OutAxis::Range { axis, start, step, len } = out {
                axes.extend(resolved_axis(*axis as i64, *start, *len, *step, dims[*axis]));
            }
        }
        Ok(Some(axes))
    }
}
