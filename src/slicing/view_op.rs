//! [`ViewOp`]: the typed op every slicing node with known parameters becomes.
//!
//! It holds a chain of steps (one per original node, more once consecutive views are merged) and runs
//! it as one view: one copy, or none when the chain reads its input unchanged. Declutter folds it over
//! constants, removes it when it is the identity, and absorbs a `ViewOp` feeding it. In a plan over
//! concrete shapes it becomes a [`PlannedView`], its chain composed once at code generation.

use super::step::{chain_output_shape, chain_views, compose_chain, run_chain, Chain, Label, SliceStep};
use crate::view::View;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::Downsample;

/// A chain of slicing steps over one input, executed as one view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ViewOp {
    /// The steps, first applied first.
    pub chain: Chain,
}

impl Op for ViewOp {
    fn name(&self) -> StaticName {
        "SliceView".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(self.chain.iter().map(|(label, step)| format!("{label}: {step:?}")).collect())
    }

    op_as_typed_op!();
}

impl EvalOp for ViewOp {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let budget = crate::threads::budget(ctx);
        Ok(tvec!(crate::kernel::with_threads(budget, || run_chain(&self.chain, input))?))
    }
}

impl TypedOp for ViewOp {
    as_op!();

    /// Over an input of concrete shape (a plan for given input shapes), the chain is composed once
    /// here rather than on every run: [`PlannedView`].
    fn codegen(&self, model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
        let Some(shape) = model.outlet_fact(node.inputs[0])?.shape.as_concrete() else {
            return Ok(None);
        };
        // A chain that does not compose fails when it runs, with its node's error, as before.
        let Some(op) = PlannedView::of_chain(&self.chain, shape) else { return Ok(None) };
        TypedModelPatch::replace_single_op(model, node, &node.inputs, op).map(Some)
    }

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 1, "a slicing view has one input, got {}", inputs.len());
        let shape = chain_output_shape(&self.chain, inputs[0].shape.dims())?;
        check_representable(&self.chain, &shape, inputs[0].datum_type)?;
        Ok(tvec!(inputs[0].datum_type.fact(&*shape)))
    }

    fn declutter(&self, model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
        let input_fact = model.outlet_fact(node.inputs[0])?;
        // Over a constant: the output is a constant too, whatever the size (it is a view of it).
        if let Some(konst) = &input_fact.konst {
            let value = run_chain(&self.chain, konst.clone().into_tvalue())?;
            let mut patch = TypedModelPatch::default();
            let wire = patch.wire_node(&node.name, Const::new(value.into_arc_tensor())?, &[])?[0];
            patch.shunt_outside(model, node.id.into(), wire)?;
            return Ok(Some(patch));
        }
        // The identity: the node disappears.
        let in_shape = input_fact.shape.dims();
        if let Ok(out_shape) = chain_output_shape(&self.chain, in_shape) {
            if out_shape == in_shape && self.is_identity_on(in_shape) {
                return TypedModelPatch::shunt_one_op(model, node);
            }
        }
        // A run of views (ours, or tract's axis changes and slices), each the single reader of the one
        // before: one op, one copy. The whole run is merged in one patch, from the view before this
        // one (if any) to the last view reading after it, so a run of `k` views costs `O(k)`.
        let prec = model.node(node.inputs[0].node);
        let before = match prec.op_as::<ViewOp>() {
            Some(before) => Some(before.chain.clone()),
            None => SliceStep::of_typed(prec).map(|step| vec![(Label::of_typed(prec), step)]),
        };
        let (after, last) = views_after(model, node)?;
        let (mut chain, input) = match before {
            Some(chain) if prec.inputs.len() == 1 => (chain, prec.inputs[0]),
            _ if last != node.id => (vec![], node.inputs[0]),
            _ => return Ok(None),
        };
        chain.extend(self.chain.iter().cloned());
        chain.extend(after);
        let mut patch = TypedModelPatch::default();
        let input = patch.tap_model(model, input)?;
        let wire = patch.wire_node(&model.node(last).name, ViewOp { chain }, &[input])?[0];
        patch.shunt_outside(model, last.into(), wire)?;
        Ok(Some(patch))
    }
}

/// The views reading `from` one after another, each the single reader of the one before and not a model
/// output: their steps in order, and the last of them (`from` itself when no view reads it).
fn views_after(model: &TypedModel, from: &TypedNode) -> TractResult<(Chain, usize)> {
    let outputs = model.output_outlets()?;
    let mut chain = Chain::new();
    let mut last = from.id;
    while let Some(succ) = model.single_succ(last)? {
        if succ.inputs.len() != 1 || outputs.contains(&OutletId::new(last, 0)) {
            break;
        }
        match succ.op_as::<ViewOp>() {
            Some(view) => chain.extend(view.chain.iter().cloned()),
            None => match SliceStep::of_typed(succ) {
                Some(step) => chain.push((Label::of_typed(succ), step)),
                None => break,
            },
        }
        last = succ.id;
    }
    Ok((chain, last))
}

/// Refuses a known empty output shape tract cannot hold (see [`crate::kernel::representable`]): tract
/// builds a zero constant for every empty output, and panics on such a shape. A huge shape that is not
/// empty only fails if something allocates it, which is checked there.
pub(crate) fn check_representable(chain: &Chain, shape: &[TDim], dt: DatumType) -> TractResult<()> {
    let dims: Option<Vec<usize>> = shape.iter().map(|d| d.as_i64().and_then(|v| usize::try_from(v).ok())).collect();
    match dims {
        Some(dims) if dims.contains(&0) && !crate::kernel::representable(&dims, dt.size_of()) => {
            let message = format!("an output of shape {dims:?} cannot be represented");
            match chain.last() {
                Some((label, _)) => Err(label.err(message)),
                None => bail!("{message}"),
            }
        }
        _ => Ok(()),
    }
}

impl ViewOp {
    /// Whether the chain reads a tensor of `shape` unchanged (decided symbolically).
    pub(crate) fn is_identity_on(&self, shape: &[TDim]) -> bool {
        matches!(compose_chain(&self.chain, shape).as_deref(), Ok([view]) if view.is_identity_of(shape))
    }
}

/// A [`ViewOp`] over an input of one concrete shape, its chain composed into views at code
/// generation: running it is the copies alone (none when the chain reads its input unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PlannedView {
    /// The last step's node, for errors.
    label: Option<Label>,
    /// The input shape the views were composed for.
    input_shape: TVec<usize>,
    /// The views to apply one after the other (none: the identity).
    views: Vec<View<i64>>,
}

impl PlannedView {
    /// `chain` composed over an input of `shape`, or `None` when it does not compose.
    fn of_chain(chain: &Chain, shape: &[usize]) -> Option<PlannedView> {
        // As `run_chain` does: a view reading its input (the value so far) unchanged is skipped.
        let mut dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let mut views = vec![];
        for view in chain_views(chain, shape).ok()? {
            if !view.is_identity_of(&dims) {
                dims = view.axes.iter().map(|a| a.len).collect();
                views.push(view);
            }
        }
        let label = chain.last().map(|(l, _)| l.clone());
        Some(PlannedView { label, input_shape: shape.into(), views })
    }

    /// In an optimized plan, for tract's `MoveAxis` `node` (a transpose) over an input of concrete
    /// shape and a plain element type (numbers, booleans): the same permutation as one copy on our
    /// kernel, where tract walks the permuted ndarray
    /// view element by element (an `NHWC` to `NCHW` image of `[1, 64, 96, 3]`: 18.8 µs).
    pub(crate) fn replacing_move(node: &TypedNode, input: &TypedFact) -> Option<PlannedView> {
        let moves = node.op_as::<AxisOp>().is_some_and(|op| matches!(op, AxisOp::Move(..)));
        // Plain numbers and booleans: what the copy kernel moves as bytes.
        let plain = input.datum_type.is_copy() && !input.is_exotic();
        let step = SliceStep::of_typed(node).filter(|_| moves && plain && node.inputs.len() == 1)?;
        PlannedView::of_chain(&vec![(Label::of_typed(node), step)], input.shape.as_concrete()?)
    }

    /// In an optimized plan, for tract's `Downsample` `node` (every `stride`-th element of one axis
    /// from `modulo` on: what tract puts before a strided 1x1 convolution, RegNet's and ResNet's
    /// shortcuts) over an input of concrete shape and a plain element type: one copy on our kernel,
    /// where tract copies the strided ndarray view element by element (5-10% of RegNetY-400MF's
    /// one-thread time). Only forward strides of at least 1 with `modulo` inside the axis.
    pub(crate) fn replacing_downsample(node: &TypedNode, input: &TypedFact) -> Option<PlannedView> {
        let down = node.op_as::<Downsample>().filter(|_| node.inputs.len() == 1)?;
        let plain = input.datum_type.is_copy() && !input.is_exotic();
        let shape = input.shape.as_concrete().filter(|_| plain)?;
        let dims: Vec<i64> = shape.iter().map(|&d| i64::try_from(d).ok()).collect::<Option<_>>()?;
        let dim = *dims.get(down.axis)?;
        let (stride, modulo) = (i64::try_from(down.stride).ok().filter(|s| *s >= 1)?, i64::try_from(down.modulo).ok()?);
        if modulo >= dim {
            return None;
        }
        let mut view = View::identity(&dims).ok()?;
        let axis = &mut view.axes[down.axis];
        view.offset = modulo.checked_mul(axis.stride)?;
        axis.len = (dim - modulo).div_euclid(stride) + i64::from((dim - modulo) % stride != 0);
        axis.stride = axis.stride.checked_mul(stride)?;
        let numel = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?))?;
        view.check_bounds(numel).ok()?;
        Some(PlannedView { label: Some(Label::of_typed(node)), input_shape: shape.into(), views: vec![view] })
    }
}

impl Op for PlannedView {
    fn name(&self) -> StaticName {
        "SliceView".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(self.views.iter().map(|v| format!("{v:?}")).collect())
    }

    op_as_typed_op!();
}

impl EvalOp for PlannedView {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        if input.shape() != &*self.input_shape {
            let message =
                format!("a view planned for an input of shape {:?} got {:?}", self.input_shape, input.shape());
            return Err(match &self.label {
                Some(l) => l.err(message),
                None => anyhow!("{message}"),
            });
        }
        let budget = crate::threads::budget(ctx);
        let run = || -> TractResult<TValue> {
            let mut value = input;
            for view in &self.views {
                value = crate::kernel::execute(&value, view)
                    .map_err(|e| match &self.label {
                        Some(l) => l.err(e),
                        None => anyhow!("{e}"),
                    })?
                    .into_tvalue();
            }
            Ok(value)
        };
        Ok(tvec!(crate::kernel::with_threads(budget, run)?))
    }
}

impl TypedOp for PlannedView {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 1, "a slicing view has one input, got {}", inputs.len());
        let shape: TVec<usize> = match self.views.last() {
            Some(view) => view.axes.iter().map(|a| usize::try_from(a.len)).collect::<Result<_, _>>()?,
            None => self.input_shape.clone(),
        };
        Ok(tvec!(inputs[0].datum_type.fact(&*shape)))
    }
}
