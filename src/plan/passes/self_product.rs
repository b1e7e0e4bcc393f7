//! tract's declutter rules with one exception: `Mul(x, x)` and `Pow(x, 2)` of an integer or `TDim`
//! `x` become [`SelfProduct`] where tract makes its float-only `Square` (see
//! [`crate::plan::ops::self_product`]). [`Declutter`] stands for tract's `declutter` pass in both of
//! the optimizer's pass lists; it walks the nodes as tract's pass does.

use std::fmt;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::dummy::Dummy;
use tract_onnx::tract_core::optim::{OptimizerSession, TypedPass};

use crate::dims::scoped::{symbols_of_facts, ScopedAssertions};
use crate::plan::ops::SelfProduct;

/// tract's `declutter` pass (each node's own declutter rule, node by node), except that an integer
/// or `TDim` square becomes [`SelfProduct`].
#[derive(Clone, Default)]
pub(crate) struct Declutter {
    /// The node the next sweep starts at (tract's pass looks at a patched node again).
    next: usize,
    /// Each node's rule is proved against the assertions about its own symbols.
    assertions: ScopedAssertions,
}

impl fmt::Debug for Declutter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("declutter")
    }
}

impl TypedPass for Declutter {
    fn reset(&mut self) -> TractResult<()> {
        self.next = 0;
        Ok(())
    }

    fn next(&mut self, session: &mut OptimizerSession, model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        for node in model.nodes.iter().skip(self.next) {
            if node.op_is::<Dummy>() {
                continue;
            }
            let patch = match squared(model, node)? {
                Some(x) => Some(TypedModelPatch::replace_single_op(model, node, &[x], SelfProduct)?),
                None => {
                    let facts = model.node_input_facts(node.id)?;
                    let mentioned = symbols_of_facts(facts.into_iter().chain(node.outputs.iter().map(|o| &o.fact)));
                    self.assertions
                        .run(&model.symbols, &mentioned, || node.op.declutter_with_session(session, model, node))
                        .with_context(|| format!("declutter node {node}"))?
                }
            };
            if let Some(mut patch) = patch {
                patch.push_context(format!("declutter {node}"));
                self.next = node.id + usize::from(patch.dont_apply_twice.is_some());
                return Ok(Some(patch));
            }
        }
        Ok(None)
    }
}

/// The `x` of `node` if it is `Mul(x, x)` or `Pow(x, 2)` over an integer or `TDim` `x`.
fn squared(model: &TypedModel, node: &TypedNode) -> TractResult<Option<OutletId>> {
    let Some(op) = node.op_as::<TypedBinOp>() else { return Ok(None) };
    let [x, y] = node.inputs[..] else { return Ok(None) };
    if !SelfProduct::needed_for(model.outlet_fact(x)?.datum_type) {
        return Ok(None);
    }
    let square = match op.0.name() {
        "Mul" => x == y,
        "Pow" => {
            let exponent = model.outlet_fact(y)?.uniform.clone();
            exponent.is_some_and(|e| e.cast_to_scalar::<f64>().is_ok_and(|e| e == 2.0))
        }
        _ => false,
    };
    // Broadcasting against a larger exponent changes the shape: tract's own rule leaves that alone too.
    let same_shape = model.outlet_fact(x)?.shape == node.outputs[0].fact.shape;
    Ok((square && same_shape).then_some(x))
}
