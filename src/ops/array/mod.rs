//! Array ops: shapes, gathers, pads, reshapes, splits, casts and element moves.

pub(crate) mod axes;
pub(crate) mod bitcast;
pub(crate) mod cast;
pub(crate) mod center_crop_pad;
pub(crate) mod col2im;
pub(crate) mod constant_of_shape;
pub(crate) mod elements;
pub(crate) mod expand;
pub(crate) mod fill;
pub(crate) mod flatten;
pub(crate) mod gather;
pub(crate) mod one_hot;
pub(crate) mod pad;
pub(crate) mod range;
pub(crate) mod reshape;
pub(crate) mod reshape_params;
pub(crate) mod reshape_target;
pub(crate) mod reverse_sequence;
pub(crate) mod space_to_depth;
pub(crate) mod split;
pub(crate) mod squeeze;
pub(crate) mod tensor_scatter;
pub(crate) mod tile;
pub(crate) mod unique;
