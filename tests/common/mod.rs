//! Shared helpers of the integration tests.

#![allow(dead_code)]

pub mod cli;
pub mod fixtures;
pub mod onnx_build;
pub mod real;
pub mod reference;
pub mod tensors;

use sliceops::semantics::{SpecEntry, StridedSlice};
use sliceops::view::View;
use tract_onnx::prelude::*;

/// The facts `infer` gives the named values of the model `bytes`, as `dtype [dims]` with dims as
/// `infer` prints them.
pub fn inferred(bytes: &[u8], names: &[&str]) -> Vec<String> {
    // The model holds the symbols' scope: it outlives the facts.
    let model = sliceops::Model::load_bytes(bytes).unwrap();
    let facts = model.infer().unwrap();
    names
        .iter()
        .map(|n| {
            let f = facts.iter().find(|f| f.name == *n).unwrap_or_else(|| panic!("no value {n}"));
            let dims: Vec<String> = f.shape.iter().map(sliceops::format_dim).collect();
            format!("{:?} [{}]", f.dtype, dims.join(", "))
        })
        .collect()
}

/// The sizes the nodes of the model `bytes` mint, with their bounds, under the assumptions `assume`:
/// `name min..max <= at_most`.
pub fn minted_in(bytes: &[u8], assume: &[&str]) -> Vec<String> {
    let mut m = sliceops::Model::load_bytes(bytes).unwrap();
    for a in assume {
        m.assume(a).unwrap();
    }
    let a = m.analyse().unwrap();
    a.symbols
        .iter()
        .filter(|s| matches!(s.origin, sliceops::Origin::Node { .. }))
        .map(|s| {
            let at_most = s.at_most.as_ref().map(sliceops::format_dim).unwrap_or_default();
            format!("{} {:?}..{:?} <= {at_most}", s.name, s.min, s.max)
        })
        .collect()
}

/// The error loading or typing the model `bytes`, as text (panics if it is accepted).
pub fn load_error(bytes: &[u8]) -> String {
    match sliceops::Model::load_bytes(bytes).and_then(|m| m.typed()) {
        Ok(_) => panic!("the model was accepted"),
        Err(e) => format!("{e:#}"),
    }
}

/// Parses a numpy basic-indexing expression such as `1, ..., None, ::-1` into spec entries.
pub fn parse_spec(expr: &str) -> Vec<SpecEntry> {
    let expr = expr.trim();
    if expr.is_empty() {
        return vec![];
    }
    expr.split(',')
        .map(|e| {
            let e = e.trim();
            match e {
                "..." => SpecEntry::Ellipsis,
                "None" => SpecEntry::NewAxis,
                _ if !e.contains(':') => SpecEntry::Index(e.parse().unwrap()),
                _ => {
                    let parts: Vec<&str> = e.split(':').map(str::trim).collect();
                    let num = |s: &str| if s.is_empty() { None } else { Some(s.parse::<i64>().unwrap()) };
                    let step = parts.get(2).and_then(|s| num(s)).unwrap_or(1);
                    SpecEntry::Range(num(parts[0]), num(parts[1]), step)
                }
            }
        })
        .collect()
}

/// Encodes spec entries as StridedSlice parameters with masks, as TensorFlow's front end does.
pub fn to_strided_slice(spec: &[SpecEntry]) -> StridedSlice {
    StridedSlice::from_spec(spec).expect("a spec of at most 63 entries")
}

/// `np.arange(numel).reshape(shape)` as i64 data.
pub fn arange(shape: &[i64]) -> Vec<i64> {
    (0..shape.iter().product::<i64>()).collect()
}

/// Runs a concrete view over row-major `data` through the kernel, as a tract tensor of i64.
pub fn run_view(data: &[i64], shape: &[i64], view: &View<i64>) -> (Vec<usize>, Vec<i64>) {
    let ushape: Vec<usize> = shape.iter().map(|d| *d as usize).collect();
    let t = tract_ndarray::ArrayD::from_shape_vec(ushape, data.to_vec()).unwrap().into_tensor();
    let out = sliceops::kernel::execute(&t, view).unwrap();
    (out.shape().to_vec(), out.try_as_plain_ram().unwrap().as_slice::<i64>().unwrap().to_vec())
}
