//! Neural-network ops: convolutions, normalizations, attention, pooling, resampling, losses.

pub(crate) mod affine_grid;
pub(crate) mod attention;
pub(crate) mod batch_norm;
pub(crate) mod causal_conv;
pub(crate) mod conv;
pub(crate) mod deform_conv;
pub(crate) mod flex_attention;
pub(crate) mod layer_norm;
pub(crate) mod linear_attention;
pub(crate) mod loss;
pub(crate) mod lp_pool;
pub(crate) mod max_unpool;
pub(crate) mod resize;
pub(crate) mod roi_align;
pub(crate) mod rotary;
pub(crate) mod row_layer_norm;
pub(crate) mod upsample;
