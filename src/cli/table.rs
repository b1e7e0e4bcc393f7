//! Rows printed as left-aligned columns, as every command's table is.

/// Prints rows as left-aligned columns.
pub(super) fn print_table<const N: usize>(rows: &[[String; N]]) -> anyhow::Result<()> {
    let widths: Vec<usize> = (0..N).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        outln!("{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}
