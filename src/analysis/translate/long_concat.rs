//! A concatenation of many sizes known only at run time, its length one size of its own.
//!
//! torchvision's SSD post-processing keeps the best boxes of each class (a `NonZero` count capped by
//! a `TopK`), then concatenates the 90 classes' selections. The length is a sum of 90 such sizes;
//! tract simplifies it term by term as it types the `Concat` (each step proving inequalities between
//! the terms under every assertion), and every node after it carries the sum: the analysis of the
//! full-size SSDlite320 did not finish in ten minutes. Past [`MAX_SUMMED`] terms that are not
//! numbers, the length is a fresh size named after the node ([`LongConcat`]), bound when the node
//! runs to the length it produces (exactly the sum), and reported with the sum's largest value as its
//! bound.

use super::super::splice::Names;
use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cast::wire_cast;

/// The most sizes known only at run time a concatenation's length sums before it becomes a size of
/// its own. The committed detectors concatenate at most 12 (SSDlite's small config, 11 classes and the
/// background); the full-size one 90.
pub(crate) const MAX_SUMMED: usize = 16;

/// tract's `Concat` whose output length along `axis` is `len`, a size the node mints: bound when it
/// runs to the length it produces.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LongConcat {
    /// The axis the inputs are concatenated along.
    pub axis: usize,
    /// The output's length along it.
    pub len: TDim,
}

impl Op for LongConcat {
    fn name(&self) -> StaticName {
        "LongConcat".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("axis: {}, length {}", self.axis, self.len)])
    }

    fn mints_runtime_symbols(&self) -> bool {
        true
    }

    op_as_typed_op!();
}

impl EvalOp for LongConcat {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        Ok(tvec![Tensor::stack_tensors(self.axis, &inputs)?.into_tvalue()])
    }
}

impl TypedOp for LongConcat {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let first = inputs.first().context("a concatenation of nothing")?;
        ensure!(self.axis < first.rank(), "axis {} of a rank {} input", self.axis, first.rank());
        let mut shape: TVec<TDim> = first.shape.to_tvec();
        shape[self.axis] = self.len.clone();
        Ok(tvec![first.datum_type.fact(&*shape)])
    }
}

/// What [`wire`] made: the output, its fresh size and the sum it stands for.
pub(crate) struct Wired {
    /// The concatenation's output.
    pub outlet: OutletId,
    /// The size of its length.
    pub symbol: Symbol,
    /// The sum of the inputs' lengths (not simplified): the size's value, whose largest value is its
    /// bound.
    pub sum: TDim,
}

/// Wires the ONNX `Concat` named `node` of `inputs` along `axis` as a [`LongConcat`] when its length
/// sums more than [`MAX_SUMMED`] sizes known only at run time (`run_time` says which); `None`
/// otherwise (lengths of input dims stay exact sums) (and when the inputs
/// do not agree on their rank, type or other dims as written: tract's own translation then decides).
///
/// Concatenations of the same lengths (SSD's boxes, scores and labels of the classes kept) share
/// one size: `sums` holds the size of each sum met, by its terms as written.
pub(crate) fn wire(
    target: &mut TypedModel,
    names: &mut Names,
    sums: &mut HashMap<String, Symbol>,
    node: &str,
    axis: i64,
    inputs: &[OutletId],
    run_time: &dyn Fn(&TDim) -> bool,
) -> TractResult<Option<Wired>> {
    let facts: Vec<TypedFact> = inputs.iter().map(|o| target.outlet_fact(*o).cloned()).collect::<TractResult<_>>()?;
    let Some(first) = facts.first() else { return Ok(None) };
    let rank = first.rank();
    let Some(axis) = usize::try_from(if axis < 0 { axis + rank as i64 } else { axis }).ok().filter(|a| *a < rank)
    else {
        return Ok(None);
    };
    if facts.iter().any(|f| f.rank() != rank) {
        return Ok(None);
    }
    let terms: Vec<TDim> = facts.iter().map(|f| f.shape[axis].clone()).collect();
    if terms.iter().filter(|d| d.as_i64().is_none() && run_time(d)).count() <= MAX_SUMMED {
        return Ok(None);
    }
    let others_agree = facts.iter().all(|f| (0..rank).filter(|&a| a != axis).all(|a| f.shape[a] == first.shape[a]));
    let Some(dt) = DatumType::super_type_for(facts.iter().map(|f| f.datum_type)) else { return Ok(None) };
    if !others_agree {
        return Ok(None);
    }
    let name = names.fresh(target, node);
    let inputs = wire_cast(&name, target, inputs, dt)?;
    let symbol = sums
        .entry(format!("{terms:?}"))
        .or_insert_with(|| target.symbols.new_with_prefix(&crate::symbolic::symbol_name(node)))
        .clone();
    let op = LongConcat { axis, len: TDim::Sym(symbol.clone()) };
    let outlet = target.wire_node(name, op, &inputs)?[0];
    Ok(Some(Wired { outlet, symbol, sum: TDim::Add(terms) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model of `n` sources `[count_i, 4]`, each count its own symbol, concatenated along axis 0.
    fn concatenated(n: usize) -> (TypedModel, Option<Wired>) {
        concatenated_twice(n).0
    }

    /// As [`concatenated`], the sources concatenated twice (as two nodes).
    fn concatenated_twice(n: usize) -> ((TypedModel, Option<Wired>), Option<Wired>) {
        let mut model = TypedModel::default();
        let sources: Vec<OutletId> = (0..n)
            .map(|i| {
                let count = model.symbols.sym(&format!("c{i}"));
                model.add_source(format!("x{i}"), f32::fact([TDim::Sym(count), 4.into()])).unwrap()
            })
            .collect();
        let (mut names, mut sums) = (Names::default(), HashMap::new());
        let wired = wire(&mut model, &mut names, &mut sums, "/m/Concat", 0, &sources, &|_| true).unwrap();
        let again = wire(&mut model, &mut names, &mut sums, "/m/Concat_1", 0, &sources, &|_| true).unwrap();
        ((model, wired), again)
    }

    #[test]
    fn the_same_sum_is_the_same_size() {
        let ((model, first), second) = concatenated_twice(MAX_SUMMED + 1);
        let (first, second) = (first.unwrap(), second.unwrap());
        assert_ne!(first.outlet, second.outlet);
        assert_eq!(model.node(second.outlet.node).name, "/m/Concat_1");
        assert_eq!(second.symbol, first.symbol);
    }

    #[test]
    fn a_few_sizes_are_summed_by_tract() {
        assert!(concatenated(MAX_SUMMED).1.is_none());
    }

    #[test]
    fn many_sizes_become_one_named_after_the_node_and_run_exactly() {
        let (mut model, wired) = concatenated(MAX_SUMMED + 1);
        let wired = wired.unwrap();
        assert_eq!(wired.symbol.to_string(), "n_m_Concat");
        assert_eq!(format!("{:?}", model.outlet_fact(wired.outlet).unwrap().shape), "n_m_Concat,4");
        let TDim::Add(terms) = &wired.sum else { panic!("{}", wired.sum) };
        assert_eq!(terms.len(), MAX_SUMMED + 1);
        model.select_output_outlets(&[wired.outlet]).unwrap();
        let plan = model.into_runnable().unwrap();
        // Input i has i rows of the value i.
        let inputs: TVec<TValue> =
            (0..=MAX_SUMMED).map(|i| tract_ndarray::Array2::from_elem((i, 4), i as f32).into_tvalue()).collect();
        let out = plan.run(inputs).unwrap().remove(0);
        let rows = (0..=MAX_SUMMED).sum::<usize>();
        assert_eq!(out.shape(), &[rows, 4]);
        let values = out.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        let expected: Vec<f32> = (0..=MAX_SUMMED).flat_map(|i| std::iter::repeat_n(i as f32, i * 4)).collect();
        assert_eq!(values, expected);
    }
}
