//! Dims read from tensors: the values of an integer or dim tensor, exactly.

use tract_onnx::prelude::*;

/// The values of an integer or dim tensor as dims, exactly (tract's own cast of a large i64 to a dim
/// does not keep its value).
pub(crate) fn dims_of(t: &Tensor) -> TractResult<Vec<TDim>> {
    if t.datum_type().is_tdim() {
        return Ok(t.try_as_plain_ram()?.as_slice::<TDim>()?.to_vec());
    }
    anyhow::ensure!(t.datum_type().is_integer(), "expected integers, got {:?}", t.datum_type());
    Ok(t.cast_to::<i64>()?.try_as_plain_ram()?.as_slice::<i64>()?.iter().map(|&v| TDim::Val(v)).collect())
}
