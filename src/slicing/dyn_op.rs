//! [`DynSliceOp`]: a slicing node whose parameters are only known at run time.
//!
//! Its output dims are known where the parameters cannot change them (whole axes, new axes, a constant
//! `size`) and a fresh symbol elsewhere, minted in the model's own scope and named after the node; the
//! plan binds each symbol from the produced tensor. Once declutter finds every parameter constant, the op
//! becomes a [`ViewOp`].

use super::spec::{NodeKind, NodeSpec};
use super::step::run_chain;
use super::view_op::ViewOp;
use crate::semantics::{place_spec, Placed, Slice, StridedSlice};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// One output dim of a [`DynSliceOp`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum OutDim {
    /// The input's dim on this axis.
    Input(usize),
    /// A known value (a new axis, a constant `size`).
    Fixed(TDim),
    /// Data-dependent: bound when the node runs.
    Fresh(Symbol),
}

/// A slicing node with runtime parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DynSliceOp {
    /// The node.
    pub spec: NodeSpec,
    /// Its output dims.
    pub dims: Vec<OutDim>,
}

impl Op for DynSliceOp {
    fn name(&self) -> StaticName {
        "DynSlice".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("{}: {:?}", self.spec.label, self.spec.kind)])
    }

    fn mints_runtime_symbols(&self) -> bool {
        self.dims.iter().any(|d| matches!(d, OutDim::Fresh(_)))
    }

    op_as_typed_op!();
}

impl EvalOp for DynSliceOp {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let params: Vec<Option<&Tensor>> = inputs.iter().map(|t| Some(&**t)).collect();
        let step = self.spec.step_with(&params, ctx.symbols)?;
        let data = inputs[0].clone();
        let budget = crate::threads::budget(ctx);
        let out = crate::kernel::with_threads(budget, || run_chain(&vec![(self.spec.label.clone(), step)], data))?;
        ensure!(
            out.rank() == self.dims.len(),
            "{}: the output has rank {} but the node declared rank {}",
            self.spec.label,
            out.rank(),
            self.dims.len()
        );
        Ok(tvec!(out))
    }
}

impl TypedOp for DynSliceOp {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let in_shape = inputs[0].shape.dims();
        let shape: TVec<TDim> = self
            .dims
            .iter()
            .map(|d| match d {
                OutDim::Input(axis) => in_shape.get(*axis).cloned().ok_or_else(|| {
                    self.spec.label.err(format!("axis {axis} is out of range for rank {}", in_shape.len()))
                }),
                OutDim::Fixed(v) => Ok(v.clone()),
                OutDim::Fresh(s) => Ok(TDim::Sym(s.clone())),
            })
            .collect::<TractResult<_>>()?;
        Ok(tvec!(inputs[0].datum_type.fact(&*shape)))
    }

    fn declutter(&self, model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
        let facts = model.node_input_facts(node.id)?;
        if facts[1..].iter().any(|f| f.konst.is_none()) {
            return Ok(None);
        }
        let params: Vec<Option<&Tensor>> = facts.iter().map(|f| f.konst.as_deref()).collect();
        let step = match self.spec.step(&params) {
            Ok(step) => step,
            // Symbolic parameters stay runtime ones.
            Err(e) if crate::NodeError::is_not_static(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let op = ViewOp { chain: vec![(self.spec.label.clone(), step)] };
        TypedModelPatch::replace_single_op(model, node, &node.inputs[..1], op).map(Some)
    }
}

/// The output dims of a node whose parameters are not all known, from what is known: the input rank,
/// and per inlet its constant value, its length and its shape. `mint` makes a fresh symbol for output axis `k`.
pub(crate) fn runtime_dims(
    spec: &NodeSpec,
    input_rank: usize,
    konst: &[Option<Arc<Tensor>>],
    lens: &[Option<usize>],
    shapes: &[Option<Vec<TDim>>],
    mint: &mut dyn FnMut(usize) -> Symbol,
) -> TractResult<Vec<OutDim>> {
    let label = &spec.label;
    let known = |role: &str| -> TractResult<Option<Vec<i64>>> {
        match spec.slot(role).and_then(|i| konst.get(i).cloned().flatten()) {
            Some(t) => match super::spec::read_ints(label, role, &t) {
                Ok(v) => Ok(Some(v)),
                // A symbolic value is not known either.
                Err(e) if crate::NodeError::is_not_static(&e) => Ok(None),
                Err(e) => Err(e),
            },
            None => Ok(None),
        }
    };
    let len_of = |role: &str| spec.slot(role).and_then(|i| lens.get(i).copied().flatten());
    for (role, slot) in spec.kind.roles().iter().zip(&spec.slots) {
        if let Some(shape) = slot.and_then(|i| shapes.get(i).cloned().flatten()) {
            let scalar_ok = *role == "storage_offset";
            if shape.len() > 1 || (shape.is_empty() && !scalar_ok) {
                let dims: Vec<String> = shape.iter().map(crate::dims::format_dim).collect();
                return Err(label.err(format!("{role} must be a 1-D tensor, got shape [{}]", dims.join(", "))));
            }
        }
    }
    let mut dims = vec![];
    match &spec.kind {
        NodeKind::Strided { masks } => {
            let n = len_of("begin")
                .ok_or_else(|| label.not_static("the length of begin must be known to infer the output rank"))?;
            // The masks alone place every entry: walk them with placeholder numbers. The ranges'
            // lengths depend on the numbers, so they are fresh dims.
            let placeholder = StridedSlice::with_masks(vec![0; n], vec![0; n], Some(vec![1; n]), *masks);
            let spec = placeholder.spec().map_err(|e| label.err(e))?;
            for placed in place_spec(&spec, input_rank).map_err(|e| label.err(e))? {
                match placed {
                    Placed::Whole { axis, .. } => dims.push(OutDim::Input(axis)),
                    Placed::NewAxis { .. } => dims.push(OutDim::Fixed(1.into())),
                    Placed::Index { .. } => {}
                    Placed::Range { out, .. } => dims.push(OutDim::Fresh(mint(out))),
                }
            }
        }
        NodeKind::OnnxSlice | NodeKind::Paddle { .. } => {
            let axes = match &spec.kind {
                NodeKind::Paddle { axes, .. } => Some(axes.clone()),
                _ => match spec.slot("axes") {
                    None => len_of("starts").map(|n| (0..n as i64).collect()),
                    Some(_) => known("axes")?,
                },
            };
            // Known axes are checked now (range, repeats), with the same rules as when the node runs.
            let axes = match axes {
                Some(axes) => {
                    let n = axes.len();
                    let check = Slice { starts: vec![0; n], ends: vec![0; n], axes: Some(axes), steps: None };
                    Some(check.normalized_axes(input_rank).map_err(|e| label.err(e))?)
                }
                None => None,
            };
            for k in 0..input_rank {
                let sliced = axes.as_ref().is_none_or(|axes| axes.contains(&k));
                dims.push(if sliced { OutDim::Fresh(mint(k)) } else { OutDim::Input(k) });
            }
        }
        NodeKind::Aten => match known("size")? {
            Some(size) => {
                if let Some((i, &v)) = size.iter().enumerate().find(|(_, v)| **v < 0) {
                    return Err(label.err(format!("size {v} is negative at index {i}")));
                }
                dims.extend(size.into_iter().map(|s| OutDim::Fixed(s.into())))
            }
            None => {
                let n = len_of("size")
                    .ok_or_else(|| label.not_static("the length of size must be known to infer the output rank"))?;
                for k in 0..n {
                    dims.push(OutDim::Fresh(mint(k)));
                }
            }
        },
        NodeKind::OnnxSliceAttrs(_) | NodeKind::AsStrided(_) => {
            return Err(label.err("has no runtime parameters"));
        }
    }
    Ok(dims)
}
