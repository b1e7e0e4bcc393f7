//! `--input NAME=FILE.npy`: reading input tensors and checking them against the model's inputs.

use anyhow::{bail, Context};
use sliceops::analysis::DeclaredDim;
use sliceops::npy::{numpy_name, read_npy};
use sliceops::Model;
use std::path::Path;
use tract_onnx::prelude::*;

/// Splits `NAME=VALUE` at its last `=` (names may contain `=`; paths rarely do).
pub fn split_pair<'a>(arg: &'a str, what: &str) -> anyhow::Result<(&'a str, &'a str)> {
    arg.rsplit_once('=').with_context(|| format!("{what} '{arg}' is not NAME=VALUE"))
}

/// How a model input is declared, for messages: `x (float32 [N,3])`.
fn describe_input(model: &Model, ix: usize, name: &str) -> String {
    let decl = &model.declared_inputs()[ix];
    let dt = sliceops::analysis::bind_datum_type(decl).map(numpy_name).unwrap_or_else(|_| "?".into());
    let shape = decl.dims.as_ref().map(|dims| {
        dims.iter()
            .map(|d| match d {
                DeclaredDim::Value(v) => v.to_string(),
                DeclaredDim::Param(p) => p.clone(),
                DeclaredDim::Unnamed(_) => "?".to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")
    });
    format!("{name} ({dt} [{}])", shape.unwrap_or_else(|| "?".into()))
}

/// Loads the `--input` tensors in the model's input order, checking names, dtypes and shapes.
pub fn load_inputs(model: &Model, args: &[String]) -> anyhow::Result<Vec<Tensor>> {
    let names = model.input_names();
    let mut given: Vec<Option<Tensor>> = vec![None; names.len()];
    for arg in args {
        let (name, file) = split_pair(arg, "--input")?;
        let ix = names
            .iter()
            .position(|n| n == name)
            .with_context(|| format!("the model has no input named '{name}' (its inputs: {})", names.join(", ")))?;
        given[ix] = Some(read_npy(Path::new(file)).with_context(|| format!("input '{name}'"))?);
    }
    let missing: Vec<String> = names
        .iter()
        .enumerate()
        .filter(|(i, _)| given[*i].is_none())
        .map(|(i, n)| describe_input(model, i, n))
        .collect();
    if !missing.is_empty() {
        bail!("the model needs inputs: {}; pass each as --input NAME=FILE.npy", missing.join(", "));
    }
    let inputs: Vec<Tensor> = given.into_iter().flatten().collect();
    model.check_inputs(&inputs)?;
    Ok(inputs)
}
