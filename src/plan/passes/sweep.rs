//! [`Sweep`]: the pass of each of our plan rewrites (`hard_swish`, `direct_conv`, `layer_norm`,
//! `small_matmul`): the model's nodes offered in order to one rule, a patch at a time.
//!
//! Each call of `next` resumes after the last node looked at, so a sweep looks at every node once;
//! the optimizer driver sweeps again while a sweep changed the model.

use std::fmt;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::optim::{OptimizerSession, TypedPass};

/// A rewrite of one node: the patch for `node` of `model`, if the rule takes it.
pub(crate) type Rule = fn(&TypedModel, &TypedNode) -> TractResult<Option<TypedModelPatch>>;

/// A pass applying `rule` node by node (see the module docs).
#[derive(Clone)]
pub(crate) struct Sweep {
    /// The rewrite's name: the pass' `Debug`, which the driver keys its counts by.
    name: &'static str,
    rule: Rule,
    /// The first node not looked at yet in this sweep.
    next: usize,
}

impl Sweep {
    /// The pass named `name` applying `rule`.
    pub(crate) fn new(name: &'static str, rule: Rule) -> Sweep {
        Sweep { name, rule, next: 0 }
    }
}

impl fmt::Debug for Sweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl TypedPass for Sweep {
    fn reset(&mut self) -> TractResult<()> {
        self.next = 0;
        Ok(())
    }

    fn next(&mut self, _session: &mut OptimizerSession, model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        for node in model.nodes.iter().skip(self.next) {
            self.next = node.id + 1;
            if let Some(patch) = (self.rule)(model, node)? {
                return Ok(Some(patch));
            }
        }
        Ok(None)
    }
}
