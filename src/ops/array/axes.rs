//! The opening shared by the rules whose second input is a list of axes (`Reduce*` in
//! `reduce.rs`, `Squeeze` and `Unsqueeze` in `squeeze.rs`): the data and the axes, checked.

use crate::ops::params::{Inlet, Refusal};

/// The data inlet and the axes inlet (the second input) of an op that takes its axes as an input.
/// The axes must be a 1-D tensor or a scalar (one axis, as onnxruntime reads it).
pub(crate) fn data_and_axes<'a>(inputs: &[Inlet<'a>]) -> Result<(Inlet<'a>, Inlet<'a>), Refusal> {
    let data = inputs[0];
    let axes = *inputs.get(1).ok_or("the axes input is missing")?;
    if axes.rank() > 1 {
        return Err(format!("axes must be a 1-D tensor, got rank {}", axes.rank()).into());
    }
    Ok((data, axes))
}
