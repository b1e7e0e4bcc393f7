//! [`ValueFact`]: what the analysis reports of one value.

use tract_onnx::prelude::*;

/// The inferred type and shape of one value of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueFact {
    /// The value's name in the ONNX graph.
    pub name: String,
    /// Element type.
    pub dtype: DatumType,
    /// Shape, symbolic dims as expressions.
    pub shape: Vec<TDim>,
    /// The element type's name as the model declares it (numpy's names, and `bfloat16`, `float8_*`,
    /// `int4`, `uint4` for the types tract has none for).
    pub dtype_name: String,
}
