//! tract's node-by-node passes with each node's work proved against the assertions about its own
//! symbols ([`ScopedAssertions`]): tract proves every inequality against every assertion of the
//! scope, re-deriving each one per proof, so on a model holding many sizes known only at run time
//! (each with two or three assertions) every node paid for every size.
//!
//! [`ScopedRule`] stands for one of tract's per-node rule passes (`codegen`), walking the nodes as
//! tract's does; [`UniformTdim`] for its `PropagateUniformTdim`, which recomputes every node's facts
//! until nothing changes. Fewer assertions never prove anything false: a rewrite may only be missed.

use std::fmt;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::dummy::Dummy;
use tract_onnx::tract_core::optim::{OptimizerSession, TypedPass};

use crate::dims::scoped::{symbols_of_facts, ScopedAssertions};

/// One node's rule: a patch, or nothing to do.
type Rule = fn(&dyn TypedOp, &TypedModel, &TypedNode) -> TractResult<Option<TypedModelPatch>>;

/// A pass offering every node (in order, from where the last patch was found) to `rule`, named
/// `name` as tract's pass it stands for.
#[derive(Clone)]
pub(crate) struct ScopedRule {
    name: &'static str,
    rule: Rule,
    /// The node the next sweep starts at (tract's pass looks at a patched node again).
    next: usize,
    assertions: ScopedAssertions,
}

impl ScopedRule {
    /// tract's `codegen` pass.
    pub(crate) fn codegen() -> ScopedRule {
        ScopedRule::new("codegen", |op, model, node| op.codegen(model, node))
    }

    /// A pass named `name` applying `rule`.
    pub(crate) fn new(name: &'static str, rule: Rule) -> ScopedRule {
        ScopedRule { name, rule, next: 0, assertions: ScopedAssertions::default() }
    }
}

impl fmt::Debug for ScopedRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl TypedPass for ScopedRule {
    fn reset(&mut self) -> TractResult<()> {
        self.next = 0;
        Ok(())
    }

    fn next(&mut self, _session: &mut OptimizerSession, model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        for node in model.nodes.iter().skip(self.next) {
            if node.op_is::<Dummy>() {
                continue;
            }
            let facts = model.node_input_facts(node.id)?;
            let mentioned = symbols_of_facts(facts.into_iter().chain(node.outputs.iter().map(|o| &o.fact)));
            let patch = self
                .assertions
                .run(&model.symbols, &mentioned, || (self.rule)(node.op.as_ref(), model, node))
                .with_context(|| format!("{} node {node}", self.name))?;
            if let Some(mut patch) = patch {
                patch.push_context(format!("{} {node}", self.name));
                self.next = node.id + usize::from(patch.dont_apply_twice.is_some());
                return Ok(Some(patch));
            }
        }
        Ok(None)
    }
}

/// tract's `PropagateUniformTdim`: every node's `uniform_tdim` facts recomputed from its inputs' facts
/// (in evaluation order, until a sweep changes nothing), each node's against its own assertions.
#[derive(Clone, Default)]
pub(crate) struct UniformTdim {
    assertions: ScopedAssertions,
}

impl fmt::Debug for UniformTdim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PropagateUniformTdim")
    }
}

impl TypedPass for UniformTdim {
    fn reset(&mut self) -> TractResult<()> {
        Ok(())
    }

    fn next(&mut self, _session: &mut OptimizerSession, _model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        Ok(None)
    }

    fn run_direct(&mut self, model: &mut TypedModel) -> TractResult<bool> {
        let order = model.eval_order()?;
        let mut any = false;
        loop {
            let mut changed = false;
            for &id in &order {
                let Some(op) = model.nodes[id].op.as_typed() else { continue };
                let inputs: TVec<TypedFact> = model.node_input_facts(id)?.into_iter().cloned().collect();
                let refs: TVec<&TypedFact> = inputs.iter().collect();
                let mentioned = symbols_of_facts(inputs.iter().chain(model.nodes[id].outputs.iter().map(|o| &o.fact)));
                let Ok(facts) = self.assertions.run(&model.symbols, &mentioned, || op.output_facts(&refs)) else {
                    continue;
                };
                for (slot, fact) in facts.into_iter().enumerate() {
                    let Some(output) = model.nodes[id].outputs.get_mut(slot) else { break };
                    if output.fact.uniform_tdim != fact.uniform_tdim {
                        output.fact.uniform_tdim = fact.uniform_tdim;
                        changed = true;
                    }
                }
            }
            if !changed {
                return Ok(any);
            }
            any = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::optim::Optimizer;

    #[test]
    fn they_stand_for_the_passes_they_replace() {
        let names = |o: Optimizer| o.passes.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>();
        assert!(names(Optimizer::codegen()).contains(&format!("{:?}", ScopedRule::codegen())));
        assert!(names(Optimizer::declutter()).contains(&format!("{:?}", UniformTdim::default())));
    }
}
