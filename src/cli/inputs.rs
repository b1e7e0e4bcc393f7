//! `--input NAME=FILE.npy` and `--input FILE.npz`: reading input tensors and checking them against the
//! model's inputs; `--input-shape` and `--assume` applied to a loaded model ([`configure`]).

use crate::npy::read_npy;
use crate::Model;
use anyhow::{bail, Context};
use std::path::Path;
use tract_onnx::prelude::*;

/// Splits `NAME=VALUE` at its last `=` (names may contain `=`; paths rarely do).
pub(super) fn split_pair<'a>(arg: &'a str, what: &str) -> anyhow::Result<(&'a str, &'a str)> {
    arg.rsplit_once('=').with_context(|| format!("{what} '{arg}' is not NAME=VALUE"))
}

/// One `--input`: a `.npy` for the input it names, or an `.npz` of inputs by name.
enum Input<'a> {
    Npy { name: &'a str, file: &'a str },
    Npz(&'a Path),
}

/// Reads an `--input` argument: a path ending in `.npz` that is a file (or has no `=`) is an `.npz`;
/// else `NAME=FILE.npy`.
fn parse(arg: &str) -> anyhow::Result<Input<'_>> {
    let npz = arg.ends_with(".npz");
    if npz && (!arg.contains('=') || Path::new(arg).is_file()) {
        return Ok(Input::Npz(Path::new(arg)));
    }
    let Some((name, file)) = arg.rsplit_once('=') else {
        bail!("--input '{arg}' is neither NAME=FILE.npy nor FILE.npz");
    };
    if file.ends_with(".npz") {
        bail!("--input '{arg}': an .npz holds arrays by name: pass it alone, as --input {file}");
    }
    Ok(Input::Npy { name, file })
}

/// The input names the arguments give, as far as they can be read (a malformed argument or `.npz` is
/// reported by [`load_inputs`]).
pub(super) fn given_names(args: &[String]) -> Vec<String> {
    let mut names = vec![];
    for arg in args {
        match parse(arg) {
            Ok(Input::Npy { name, .. }) => names.push(name.to_string()),
            Ok(Input::Npz(path)) => names.extend(crate::npz::list_npz(path).unwrap_or_default()),
            Err(_) => {}
        }
    }
    names
}

/// Loads the `--input` tensors in the model's input order, checking names, dtypes and shapes.
pub(super) fn load_inputs(model: &Model, args: &[String]) -> anyhow::Result<Vec<Tensor>> {
    let mut given = Vec::with_capacity(args.len());
    for arg in args {
        match parse(arg)? {
            Input::Npy { name, file } => {
                // The name is checked before its file is read.
                model.input_position(name)?;
                given.push((name.to_string(), read_npy(Path::new(file)).with_context(|| format!("input '{name}'"))?));
            }
            Input::Npz(path) => {
                for (name, tensor) in crate::npz::read_npz(path)? {
                    model.input_position(&name).with_context(|| format!("array '{name}' of {}", path.display()))?;
                    given.push((name, tensor));
                }
            }
        }
    }
    model.order_inputs(given, "pass each as --input NAME=FILE.npy, or in an --input FILE.npz")
}

/// Applies `--input-shape` and `--assume` to a loaded model.
pub(super) fn configure(m: &mut Model, input_shapes: &[String], assumptions: &[String]) -> anyhow::Result<()> {
    for arg in input_shapes {
        let (name, dims) = split_pair(arg, "--input-shape")?;
        let dims: Vec<&str> = if dims.trim().is_empty() { vec![] } else { dims.split(',').collect() };
        m.set_input_shape(name, &dims)?;
    }
    for a in assumptions {
        m.assume(a)?;
    }
    Ok(())
}
