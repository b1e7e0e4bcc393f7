//! The optimized plan: tract's declutter and codegen passes driven in tract's order (`optimize`),
//! our passes that place our ops before codegen (`passes`), our ops in the plan ([`ops`]), and the
//! memory check of a plan before it runs (`memory`).
//!
//! May import: the base layer, the pure layers, [`crate::node`], [`crate::slicing`], [`crate::ops`].
//! Not the analysis, the model or anything above.

pub(crate) mod fuse_chain;
pub(crate) mod memory;
pub(crate) mod names;
pub(crate) mod ops;
pub(crate) mod optimize;
pub(crate) mod passes;
pub(crate) mod work;

pub(crate) use ops::use_our_kernels;
pub(crate) use ops::{DirectConv, ExactDiv, RowLayerNorm, SmallMatMul};

#[cfg(test)]
mod tests;
