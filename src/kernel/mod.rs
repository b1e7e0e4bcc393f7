//! The kernel: executes a concrete [`View`](crate::view::View), on typed slices or tract tensors.

mod copy;
mod tensor;

pub use copy::{clone_view, copy_view, copy_view_raw};
pub use tensor::{check_allocation, execute};
