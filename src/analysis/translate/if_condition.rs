//! What an `If` tests, read back from the nodes that compute its condition: a comparison of two
//! values (each a dim expression where the analysis knows it, else the value's name), through
//! `Not`, `Cast` and `Identity`, and `And`/`Or` of such.

use super::super::condition::{Cmp, Condition, Operand};
use super::Translator;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The most nodes followed back from the condition.
const MAX_STEPS: usize = 16;

impl Translator<'_> {
    /// The condition of the `If` node (its first input), when it is not a size only a run knows.
    pub(super) fn if_condition(&self, node: &InferenceNode) -> Option<Condition> {
        let condition = self.condition_at(*node.inputs.first()?, &mut 0)?;
        (!condition.on_symbols(&|s| self.table.minted(s))).then_some(condition)
    }

    /// The condition a boolean value holds, following at most [`MAX_STEPS`] nodes in all (`steps`
    /// counts them across the parts of an `And` or `Or`).
    fn condition_at(&self, mut outlet: OutletId, steps: &mut usize) -> Option<Condition> {
        let mut negated = false;
        while *steps < MAX_STEPS {
            *steps += 1;
            let producer = self.source.node(outlet.node);
            let is_input = self.source.inputs.contains(&outlet);
            let op_type = if is_input { String::new() } else { self.op_type(producer) };
            let condition = match op_type.as_str() {
                "Identity" | "Cast" if producer.inputs.len() == 1 => {
                    let input = producer.inputs[0];
                    if self.fact_of(input).is_some_and(|f| f.datum_type == bool::datum_type()) {
                        outlet = input;
                        continue;
                    }
                    // A number cast to a boolean: whether it is not zero.
                    Condition::Compare(self.operand(input), Cmp::Ne, Operand::Dim(TDim::Val(0)))
                }
                "Not" if producer.inputs.len() == 1 => {
                    negated = !negated;
                    outlet = producer.inputs[0];
                    continue;
                }
                "And" | "Or" if producer.inputs.len() == 2 => {
                    let scalar = |o: &OutletId| self.fact_of(*o).is_some_and(|f| f.shape.volume().as_i64() == Some(1));
                    let parts: Option<Vec<Condition>> = if producer.inputs.iter().all(scalar) {
                        producer.inputs.iter().map(|&i| self.condition_at(i, steps)).collect()
                    } else {
                        None
                    };
                    match parts {
                        Some(parts) if op_type == "And" => Condition::All(parts),
                        Some(parts) => Condition::Any(parts),
                        None => Condition::Flag { name: self.value_name(outlet), negated: false },
                    }
                }
                op => match Cmp::of_op(op) {
                    Some(cmp) if producer.inputs.len() == 2 => {
                        Condition::Compare(self.operand(producer.inputs[0]), cmp, self.operand(producer.inputs[1]))
                    }
                    _ => Condition::Flag { name: self.value_name(outlet), negated: false },
                },
            };
            return Some(if negated { condition.negated() } else { condition });
        }
        None
    }

    /// The typed fact of a value of the graph being translated, once translated.
    pub(super) fn fact_of(&self, outlet: OutletId) -> Option<&TypedFact> {
        self.target.outlet_fact(*self.mapping.get(&outlet)?).ok()
    }

    /// One side of a comparison: its single value as a dim when known, else its name.
    fn operand(&self, outlet: OutletId) -> Operand {
        let known = self.fact_of(outlet).and_then(|f| f.konst.as_ref()).and_then(|k| crate::dims::dims_of(k).ok());
        match known.as_deref() {
            Some([dim]) => Operand::Dim(dim.clone()),
            _ => Operand::Named(self.value_name(outlet)),
        }
    }

    /// A value's name: the graph input's, else its label, else its node's.
    fn value_name(&self, outlet: OutletId) -> String {
        let node = self.source.node(outlet.node);
        if self.source.inputs.contains(&outlet) {
            return node.name.clone();
        }
        self.source.outlet_label(outlet).map_or_else(|| node.name.clone(), str::to_string)
    }
}
