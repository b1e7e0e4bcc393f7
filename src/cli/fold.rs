//! `sliceops fold`.

use super::inputs::split_pair;
use prost::Message;
use sliceops::fold::FoldOptions;
use std::path::Path;

/// Folds the model, writes it, and prints what it did.
pub fn fold(
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
        let (folded, r) = sliceops::fold::fold(bytes, dir, &options)?;
        *report.borrow_mut() = Some(r);
        Ok(folded.encode_to_vec())
    })?;
    if let Some(r) = report.into_inner() {
        println!("nodes: {} -> {}", r.nodes_before, r.nodes_after);
        for (kind, n) in &r.changes {
            println!("  {kind}: {n}");
        }
        if r.unshaped.is_empty() {
            println!("every value has a type and shape");
        } else {
            println!("values without a type and shape: {}", r.unshaped.join(", "));
        }
    }
    Ok(())
}
