//! Training ops (`ai.onnx.preview.training`): optimizer steps.

pub(crate) mod optimizers;
