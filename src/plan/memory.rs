//! What a run may allocate: a plan whose values cannot fit is refused before it runs.
//!
//! Rust aborts the process when an allocation fails, so a model asking for more memory than the
//! process can have (a `ConstantOfShape` of 8 GiB under a 4 GiB address-space limit) must be stopped
//! before the allocation. Before a plan runs, every value whose shape is known is weighed against
//! [`crate::memory::value_limit`]; values whose size is known only while running are not checked.

use crate::memory::{bytes_of, value_limit};
use tract_onnx::prelude::*;

/// Refuses the model if one of its values, by its concrete shape, takes more than [`value_limit`]
/// (values of sliceops' own slicing ops excepted: their kernel refuses them with its own error).
pub(crate) fn check_values(model: &TypedModel) -> anyhow::Result<()> {
    let limit = value_limit();
    for node in &model.nodes {
        // Our slicing ops check what they allocate themselves, naming the ONNX node and op.
        if node.op_is::<crate::slicing::ViewOp>()
            || node.op_is::<crate::slicing::PlannedView>()
            || node.op_is::<crate::slicing::DynSliceOp>()
        {
            continue;
        }
        for (slot, output) in node.outputs.iter().enumerate() {
            let fact = &output.fact;
            let Some(dims) = fact.shape.as_concrete() else { continue };
            let bytes = bytes_of(dims, fact.datum_type);
            if bytes.is_none_or(|b| b > limit) {
                let size = bytes.map_or_else(|| "more bytes than can be counted".to_string(), |b| format!("{b} bytes"));
                let output = if node.outputs.len() > 1 { format!("output {slot}: ") } else { String::new() };
                let message = format!(
                    "{output}a {:?} value of shape {dims:?} would take {size}, more than this process can allocate \
                     ({limit} bytes)",
                    fact.datum_type
                );
                return Err(crate::NodeError::failed(&node.name, node.op.name(), message));
            }
        }
    }
    Ok(())
}
