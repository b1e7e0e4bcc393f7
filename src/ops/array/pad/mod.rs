//! `Pad` in the forms tract-onnx refuses: over a shape vector ([`shape_pad`]), with pads given as
//! run-time parameters ([`params`]), with pads computed from symbolic dims ([`symbolic`]), and in
//! `wrap` mode ([`wrap`]).

pub(crate) mod params;
pub(crate) mod shape_pad;
pub(crate) mod symbolic;
pub(crate) mod wrap;
