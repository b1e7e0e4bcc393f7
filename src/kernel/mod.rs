//! The kernel: executes a concrete [`View`](crate::view::View), on typed slices or tract tensors.

mod activation;
mod alloc;
mod budget;
mod conv;
mod conv_parts;
mod copy;
mod depthwise;
mod exp;
mod half_softmax;
mod isa;
mod layer_norm;
mod matmul;
mod resample;
mod softmax;
mod softplus;
mod spread;
mod stream;
mod tensor;

pub(crate) use activation::{gelu_tanh, hard_swish};
pub use alloc::tune_allocator;
#[cfg(test)]
pub(crate) use budget::max_threads;
pub(crate) use budget::with_threads;
pub(crate) use conv::{conv2d, ConvGeometry, PackedConv};
pub use copy::copy_view;
pub(crate) use half_softmax::{softmax_f16, softmax_row_f16, softmax_row_f32};
#[cfg(target_arch = "x86_64")]
pub(crate) use isa::Isa;
pub(crate) use layer_norm::layer_norm_rows;
pub(crate) use matmul::{matmul_f32, Gemm, Init, COLS, ROWS};
pub(crate) use resample::{resample_axis_on, AxisTaps};
pub(crate) use softmax::{softmax_axis, SoftmaxFn};
pub(crate) use softplus::{softplus_in_place, softplus_into};
pub(crate) use spread::{spread, threads_for};
pub(crate) use tensor::check_allocation;
pub use tensor::execute;
pub(crate) use tensor::representable;
