//! Quantization ops: `QuantizeLinear`, `DequantizeLinear`.

pub(crate) mod linear;
