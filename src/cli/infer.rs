//! `sliceops infer`.

use super::inputs::configure;
use super::table::print_table;
use super::Format;
use crate::report::shape_text;
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
    let cases = m.cases()?;
    match format {
        Format::Json => {
            let json = crate::report::analysis_json(&analysis, &cases, m.graph(), m.assumptions())?;
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
                    rows.push([f.name.clone(), f.dtype_name.clone(), shape_text(&f.shape)]);
                } else if analysis.unknown.contains_key(name) {
                    rows.push([name.to_string(), "?".into(), "?".into()]);
                } else {
                    continue;
                }
                // Under each outcome of the conditions analysis cannot decide, one line each.
                for case in crate::report::value_cases(name, &analysis, &cases).unwrap_or_default() {
                    let (dtype, shape) = match &case.fact {
                        Ok((dtype, shape)) => (dtype.clone(), shape_text(shape)),
                        Err(_) => ("?".into(), "?".into()),
                    };
                    rows.push([format!("  when {}", case.when), dtype, shape]);
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
