//! `sliceops fold` and `sliceops lower`: rewrite a model, write it, print what changed.

use super::inputs::split_pair;
use crate::fold::FoldOptions;
use prost::Message;
use std::path::Path;

/// Folds the model, writes it, and prints what it did.
pub(super) fn fold(
    model: &Path,
    output: &Path,
    exact: bool,
    input_shapes: &[String],
    assumptions: &[String],
) -> anyhow::Result<()> {
    let mut options = FoldOptions { exact, assumptions: assumptions.to_vec(), ..Default::default() };
    for arg in input_shapes {
        let (name, dims) = split_pair(arg, "--input-shape")?;
        let dims: Vec<String> =
            if dims.trim().is_empty() { vec![] } else { dims.split(',').map(str::to_string).collect() };
        options.input_shapes.push((name.to_string(), dims));
    }
    let report = std::cell::RefCell::new(None);
    super::write_back(model, output, &|bytes, dir| {
        let (folded, r) = crate::fold::fold(bytes, dir, &options)?;
        *report.borrow_mut() = Some(r);
        Ok(folded.encode_to_vec())
    })?;
    if let Some(r) = report.into_inner() {
        print_report(r.nodes_before, r.nodes_after, &r.changes, &r.unshaped, "every value has a type and shape")?;
        if r.all_nodes_before != r.nodes_before || r.all_nodes_after != r.nodes_after {
            outln!("nodes with those of subgraphs: {} -> {}", r.all_nodes_before, r.all_nodes_after)?;
        }
        for kept in &r.kept_subgraphs {
            outln!("subgraph left as it was: {kept}")?;
        }
    }
    Ok(())
}

/// Lowers the model, writes it, and prints what it rewrote.
pub(super) fn lower(model: &Path, output: &Path) -> anyhow::Result<()> {
    let report = std::cell::RefCell::new(None);
    super::write_back(model, output, &|bytes, dir| {
        let (lowered, r) = crate::onnx::lower_model(bytes, dir)?;
        *report.borrow_mut() = Some(r);
        Ok(lowered.encode_to_vec())
    })?;
    if let Some(r) = report.into_inner() {
        if r.changes.is_empty() {
            outln!("nothing to rewrite: the model is standard ONNX already")?;
        }
        print_report(r.nodes_before, r.nodes_after, &r.changes, &r.unshaped, "every new value has a type and shape")?;
    }
    Ok(())
}

fn print_report(
    before: usize,
    after: usize,
    changes: &std::collections::BTreeMap<&'static str, usize>,
    unshaped: &[String],
    all_shaped: &str,
) -> anyhow::Result<()> {
    outln!("nodes: {before} -> {after}")?;
    for (kind, n) in changes {
        outln!("  {kind}: {n}")?;
    }
    if unshaped.is_empty() {
        outln!("{all_shaped}")?;
    } else {
        outln!("values without a type and shape: {}", unshaped.join(", "))?;
    }
    Ok(())
}
