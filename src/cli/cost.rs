//! `sliceops cost`.

use super::inputs::configure;
use super::table::print_table;
use super::Format;
use crate::cost::{Cost, Macs, Poly, Size, Totals};
use crate::report::{figure_text, Sizes};
use crate::Model;
use anyhow::Context;
use std::path::Path;

/// Candidate peaks the table lists when the sizes do not decide between them.
const SHOWN_PEAKS: usize = 4;

/// Parses `--at` arguments (`NAME=VALUE`, several joined by commas) into sizes.
fn parse_sizes(args: &[String]) -> anyhow::Result<Sizes> {
    let mut sizes = Sizes::new();
    for arg in args {
        for pair in arg.split(',').filter(|p| !p.trim().is_empty()) {
            let (name, value) = pair.split_once('=').with_context(|| format!("--at '{pair}' is not NAME=VALUE"))?;
            let name = name.trim();
            let value: i64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v| *v >= 0)
                .with_context(|| format!("--at '{pair}': the value must be a size (an integer 0 or more)"))?;
            if sizes.insert(name.to_string(), value).is_some_and(|old| old != value) {
                anyhow::bail!("--at gives {name} twice, with different values");
            }
        }
    }
    Ok(sizes)
}

/// Prints the cost of every node, the totals per op type and for the model, and the peak memory.
pub(super) fn cost(
    model: &Path,
    input_shapes: &[String],
    assumptions: &[String],
    at: &[String],
    format: Format,
) -> anyhow::Result<()> {
    let sizes = parse_sizes(at)?;
    let mut m = Model::load_path(model)?;
    configure(&mut m, input_shapes, assumptions)?;
    let cost = crate::cost::cost(&m)?;
    cost.check_sizes(&sizes)?;
    let at = (!sizes.is_empty()).then_some(&sizes);
    match format {
        Format::Json => {
            outln!("{}", serde_json::to_string_pretty(&crate::report::cost_json(&cost, at)?)?)?;
        }
        Format::Table => table(&cost, at)?,
    }
    Ok(())
}

fn shown(p: &Poly, at: Option<&Sizes>) -> anyhow::Result<String> {
    match at {
        Some(sizes) => Ok(figure_text(&p.at(sizes)?)),
        None => Ok(figure_text(p)),
    }
}

fn shown_size(s: &Size, at: Option<&Sizes>) -> anyhow::Result<String> {
    match s {
        Size::Known(p) => shown(p, at),
        Size::Unknown(_) => Ok("?".into()),
    }
}

fn totals_row(t: &Totals, name: &str, at: Option<&Sizes>) -> anyhow::Result<[String; 6]> {
    let left_out = |n: usize| if n == 0 { String::new() } else { format!(" (+{n} not counted)") };
    Ok([
        name.to_string(),
        t.nodes.to_string(),
        format!("{}{}", shown(&t.macs, at)?, left_out(t.macs_left_out)),
        shown(&t.params, at)?,
        format!("{}{}", shown(&t.bytes_read, at)?, left_out(t.bytes_left_out)),
        shown(&t.bytes_written, at)?,
    ])
}

fn table(cost: &Cost, at: Option<&Sizes>) -> anyhow::Result<()> {
    let mut rows = vec![["node", "op", "macs", "params", "bytes read", "bytes written"].map(String::from)];
    for n in &cost.nodes {
        let macs = match &n.macs {
            Macs::Counted(p) => shown(p, at)?,
            Macs::NoRule(_) => "no rule".into(),
            Macs::Unknown(_) => "?".into(),
        };
        let op = if n.folded { format!("{} (folded)", n.op) } else { n.op.clone() };
        rows.push([
            n.name.clone(),
            op,
            macs,
            shown(&n.params, at)?,
            shown_size(&n.bytes_read, at)?,
            shown_size(&n.bytes_written, at)?,
        ]);
    }
    print_table(&rows)?;
    outln!()?;
    let mut rows = vec![["op type", "nodes", "macs", "params", "bytes read", "bytes written"].map(String::from)];
    for t in &cost.op_types {
        rows.push(totals_row(t, &t.op, at)?);
    }
    rows.push(totals_row(&cost.total, "total", at)?);
    print_table(&rows)?;
    outln!()?;
    let peak = match at {
        Some(sizes) => cost.peak.at(sizes)?,
        None => cost.peak.clone(),
    };
    match peak.candidates.as_slice() {
        [(bytes, node)] => outln!("peak of intermediate values: {} bytes, after node '{node}'", figure_text(bytes))?,
        many => {
            let list: Vec<String> =
                many.iter().take(SHOWN_PEAKS).map(|(b, node)| format!("{} (after '{node}')", figure_text(b))).collect();
            let more = match many.len().saturating_sub(SHOWN_PEAKS) {
                0 => String::new(),
                n => format!(", and {n} more (all in --format json; --at sizes decide between them)"),
            };
            outln!("peak of intermediate values: the largest of {} bytes{more}", list.join(", "))?;
        }
    }
    if !peak.left_out.is_empty() {
        outln!("  not counted in it (sizes unknown): {}", peak.left_out.join(", "))?;
    }
    outln!(
        "graph inputs: {} bytes; initializers: {} bytes; constants computed before running: {} bytes",
        shown_size(&cost.input_bytes, at)?,
        shown(&cost.initializer_bytes, at)?,
        shown(&cost.constant_bytes, at)?
    )?;
    for n in &cost.nodes {
        match &n.macs {
            Macs::NoRule(why) => outln!("not counted: node '{}' ({}): {why}", n.name, n.op)?,
            Macs::Unknown(what) => outln!("not counted: node '{}' ({}): {what} is unknown", n.name, n.op)?,
            Macs::Counted(_) => {}
        }
    }
    Ok(())
}
