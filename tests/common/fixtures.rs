//! The model fixtures in `models/`: their manifest, inputs and expected outputs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use tract_onnx::prelude::*;

/// One fixture of `models/manifest.json`.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Its folder name.
    pub name: String,
    /// Graph input names, in order.
    pub inputs: Vec<String>,
    /// Graph output names, in order.
    pub outputs: Vec<String>,
    /// Whether `lower` can rewrite it to standard ONNX.
    pub lowerable: bool,
}

/// The `models/` folder.
pub fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
}

/// Every fixture in the manifest.
pub fn fixtures() -> Vec<Fixture> {
    let text = std::fs::read_to_string(models_dir().join("manifest.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names = |v: &serde_json::Value| v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    json["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| Fixture {
            name: f["name"].as_str().unwrap().to_string(),
            inputs: names(&f["inputs"]),
            outputs: names(&f["outputs"]),
            lowerable: f["lowerable"].as_bool().unwrap_or(true),
        })
        .collect()
}

/// A value name as a file name, as the CLI writes it.
/// A value name as the file name the CLI gives it (docs/cli.md): `%` written `%25`, `/` written `%2F`.
pub fn escape(name: &str) -> String {
    name.replace('%', "%25").replace('/', "%2F")
}

impl Fixture {
    /// The fixture's folder.
    pub fn dir(&self) -> PathBuf {
        models_dir().join(&self.name)
    }

    /// The model file.
    pub fn model(&self) -> PathBuf {
        self.dir().join("model.onnx")
    }

    /// The input tensors, in graph order.
    pub fn input_tensors(&self) -> Vec<Tensor> {
        self.inputs
            .iter()
            .map(|n| sliceops::npy::read_npy(&self.dir().join("inputs").join(format!("{}.npy", escape(n)))).unwrap())
            .collect()
    }

    /// The `--input NAME=FILE` arguments for the CLI.
    pub fn input_args(&self) -> Vec<String> {
        self.inputs
            .iter()
            .flat_map(|n| {
                let file = self.dir().join("inputs").join(format!("{}.npy", escape(n)));
                ["--input".to_string(), format!("{n}={}", file.display())]
            })
            .collect()
    }

    /// The expected output tensors, in graph order.
    pub fn expected(&self) -> Vec<Tensor> {
        self.outputs
            .iter()
            .map(|n| sliceops::npy::read_npy(&self.dir().join("expected").join(format!("{}.npy", escape(n)))).unwrap())
            .collect()
    }
}

/// Whether two tensors are equal: dtype, shape and every element (bit for bit).
pub fn same(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.datum_type() != want.datum_type() || got.shape() != want.shape() {
        return Err(format!(
            "got {:?} {:?}, want {:?} {:?}",
            got.datum_type(),
            got.shape(),
            want.datum_type(),
            want.shape()
        ));
    }
    let (g, w) = (got.try_as_plain_ram().unwrap(), want.try_as_plain_ram().unwrap());
    if g.as_bytes() != w.as_bytes() {
        return Err(format!("values differ\n got {got:?}\nwant {want:?}"));
    }
    Ok(())
}

/// Asserts two tensors are equal: dtype, shape and every element (bit for bit).
pub fn assert_same(context: &str, got: &Tensor, want: &Tensor) {
    if let Err(e) = same(got, want) {
        panic!("{context}: {e}");
    }
}
