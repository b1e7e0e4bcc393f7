//! Math ops: element-wise functions, reductions, matrix products, transforms.

pub(crate) mod bit_shift;
pub(crate) mod celu;
pub(crate) mod cumprod;
pub(crate) mod det;
pub(crate) mod dft;
pub(crate) mod extremum;
pub(crate) mod gemm;
pub(crate) mod log_softmax;
pub(crate) mod matmul;
pub(crate) mod mean;
pub(crate) mod reduce;
pub(crate) mod selu;
pub(crate) mod sized_generators;
pub(crate) mod softmax;
pub(crate) mod softplus;
pub(crate) mod swiglu;
pub(crate) mod swish;
