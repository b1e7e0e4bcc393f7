//! `sliceops infer`.

use super::inputs::split_pair;
use super::run::print_table;
use super::Format;
use sliceops::dims::format_dim;
use sliceops::npy::numpy_name;
use sliceops::Model;
use std::path::Path;

/// Prints the inferred dtype and shape of every value.
pub fn infer(model: &Path, input_shapes: &[String], assumptions: &[String], format: Format) -> anyhow::Result<()> {
    let mut m = Model::load_path(model)?;
    for arg in input_shapes {
        let (name, dims) = split_pair(arg, "--input-shape")?;
        let dims: Vec<&str> = if dims.trim().is_empty() { vec![] } else { dims.split(',').collect() };
        m.set_input_shape(name, &dims)?;
    }
    for a in assumptions {
        m.assume(a)?;
    }
    let facts = m.infer()?;
    for w in m.shape_warnings(&facts)? {
        eprintln!("warning: {w}");
    }
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&sliceops::report::facts_json(&facts))?),
        Format::Table => {
            let mut rows = vec![["name".to_string(), "dtype".to_string(), "shape".to_string()]];
            for f in &facts {
                let shape = f.shape.iter().map(format_dim).collect::<Vec<_>>().join(", ");
                rows.push([f.name.clone(), numpy_name(f.dtype), format!("[{shape}]")]);
            }
            print_table(&rows);
        }
    }
    Ok(())
}
