//! The opening every `to_typed` of ours shares: the node's inputs as outlets of the typed model being
//! built, and their typed facts.

use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The node's inputs, mapped into the typed model being built.
pub(crate) fn mapped_inputs(node: &InferenceNode, mapping: &HashMap<OutletId, OutletId>) -> TVec<OutletId> {
    node.inputs.iter().map(|o| mapping[o]).collect()
}

/// The node's inputs, mapped into the typed model being built, and their facts there.
pub(crate) fn typed_inputs(
    node: &InferenceNode,
    target: &TypedModel,
    mapping: &HashMap<OutletId, OutletId>,
) -> TractResult<(TVec<OutletId>, Vec<TypedFact>)> {
    let inputs = mapped_inputs(node, mapping);
    let facts = inputs.iter().map(|o| target.outlet_fact(*o).cloned()).collect::<TractResult<_>>()?;
    Ok((inputs, facts))
}
