//! `--input NAME=FILE.npy`: reading input tensors and checking them against the model's inputs.

use anyhow::Context;
use sliceops::npy::read_npy;
use sliceops::Model;
use std::path::Path;
use tract_onnx::prelude::*;

/// Splits `NAME=VALUE` at its last `=` (names may contain `=`; paths rarely do).
pub fn split_pair<'a>(arg: &'a str, what: &str) -> anyhow::Result<(&'a str, &'a str)> {
    arg.rsplit_once('=').with_context(|| format!("{what} '{arg}' is not NAME=VALUE"))
}

/// Loads the `--input` tensors in the model's input order, checking names, dtypes and shapes.
pub fn load_inputs(model: &Model, args: &[String]) -> anyhow::Result<Vec<Tensor>> {
    let mut given = Vec::with_capacity(args.len());
    for arg in args {
        let (name, file) = split_pair(arg, "--input")?;
        // The name is checked before its file is read.
        model.input_position(name)?;
        given.push((name.to_string(), read_npy(Path::new(file)).with_context(|| format!("input '{name}'"))?));
    }
    model.order_inputs(given, "pass each as --input NAME=FILE.npy")
}
