//! `sliceops infer`.

use super::inputs::configure;
use super::table::print_table;
use super::Format;
use crate::dims::format_dim;
use crate::Model;
use std::path::Path;

/// Prints the inferred dtype and shape of every value, the requirements the model puts on its
/// inputs, and (JSON) the symbols with their origins.
pub(super) fn infer(
    model: &Path,
    input_shapes: &[String],
    assumptions: &[String],
    format: Format,
) -> anyhow::Result<()> {
    let mut m = Model::load_path(model)?;
    configure(&mut m, input_shapes, assumptions)?;
    let analysis = m.analyse()?;
    let facts = analysis.value_facts(m.graph())?;
    for note in crate::report::infer_notes(&m, &analysis, &facts)? {
        eprintln!("{note}");
    }
    match format {
        Format::Json => {
            let json = crate::report::analysis_json(&analysis, m.graph(), m.assumptions())?;
            outln!("{}", serde_json::to_string_pretty(&json)?)?;
        }
        Format::Table => {
            let mut rows = vec![["name".to_string(), "dtype".to_string(), "shape".to_string()]];
            let mut seen = std::collections::HashSet::new();
            let by_name: std::collections::HashMap<&str, _> = facts.iter().map(|f| (f.name.as_str(), f)).collect();
            for name in crate::analysis::graph_value_names(m.graph()) {
                if !seen.insert(name) {
                    continue;
                }
                if let Some(f) = by_name.get(name) {
                    let shape = f.shape.iter().map(format_dim).collect::<Vec<_>>().join(", ");
                    rows.push([f.name.clone(), f.dtype_name.clone(), format!("[{shape}]")]);
                } else if analysis.unknown.contains_key(name) {
                    rows.push([name.to_string(), "?".into(), "?".into()]);
                }
            }
            print_table(&rows)?;
            for r in &analysis.requirements {
                outln!("requires {r}  (node '{}' ({}))", r.node, r.op)?;
            }
        }
    }
    Ok(())
}
