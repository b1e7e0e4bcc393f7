//! The real exports of `models/real/` (see its README): their manifest, inputs at two sizes, and
//! onnxruntime's outputs.

#![allow(dead_code)]

use super::fixtures::{escape, models_dir};
use std::path::PathBuf;
use tract_onnx::prelude::*;

/// One model of `models/real/manifest.json`.
#[derive(Debug, Clone)]
pub struct RealModel {
    /// Its folder name.
    pub name: String,
    /// Graph input names, in order.
    pub inputs: Vec<String>,
    /// Graph output names, in order.
    pub outputs: Vec<String>,
}

/// Every real model.
pub fn real_models() -> Vec<RealModel> {
    let text = std::fs::read_to_string(models_dir().join("real/manifest.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names = |v: &serde_json::Value| v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    json["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| RealModel {
            name: m["name"].as_str().unwrap().into(),
            inputs: names(&m["inputs"]),
            outputs: names(&m["outputs"]),
        })
        .collect()
}

impl RealModel {
    /// Its folder.
    pub fn dir(&self) -> PathBuf {
        models_dir().join("real").join(&self.name)
    }

    /// The model file.
    pub fn model(&self) -> PathBuf {
        self.dir().join("model.onnx")
    }

    /// The inputs at size `size` (`a` or `b`), in graph order.
    pub fn inputs_at(&self, size: &str) -> Vec<Tensor> {
        self.inputs
            .iter()
            .map(|n| {
                sliceops::npy::read_npy(&self.dir().join("inputs").join(size).join(format!("{}.npy", escape(n))))
                    .unwrap()
            })
            .collect()
    }

    /// onnxruntime's outputs at size `size`, in graph order.
    pub fn expected_at(&self, size: &str) -> Vec<Tensor> {
        self.outputs
            .iter()
            .map(|n| {
                sliceops::npy::read_npy(&self.dir().join("expected").join(size).join(format!("{}.npy", escape(n))))
                    .unwrap()
            })
            .collect()
    }
}
