//! One line for an error chain, as the CLI and the analysis's notes show it.

/// One line describing an error: the [`NodeError`](super::NodeError) in its chain when it has one;
/// else a tract context that names a node (`Failed analyse for node #3 "x" Pad`, `Evaluating #3 "x"
/// Pad`, read by `tract_node`) rewritten in that form with the causes after it; else the whole chain.
pub fn describe_error(e: &anyhow::Error) -> String {
    // tract's advice names its own API; ours is a flag.
    let ours = |m: String| {
        m.replace(
            "Help: provide explicit input facts to your model.",
            "Set the input's shape with --input-shape NAME=D0,D1,... (library: Model::set_input_shape).",
        )
    };
    let line = if let Some(node) = super::NodeError::find(e) {
        ours(node.to_string())
    } else {
        let chain: Vec<String> = e.chain().map(|c| ours(c.to_string())).collect();
        match chain.iter().enumerate().find_map(|(i, m)| tract_node(m).map(|n| (i, n))) {
            Some((ix, (name, op))) => {
                let rest: Vec<&str> =
                    chain[ix + 1..].iter().map(String::as_str).filter(|m| tract_node(m).is_none()).collect();
                let cause = rest.last().copied().unwrap_or(chain[ix].as_str());
                format!("node '{name}' ({op}): {cause}")
            }
            None => chain.join(": "),
        }
    };
    line.lines().next().unwrap_or_default().to_string()
}

/// The `(name, op)` in a tract context such as `Failed analyse for node #3 "x" Pad`: the one place
/// sliceops reads an error's text, tract's (its format is pinned by a test).
pub(crate) fn tract_node(message: &str) -> Option<(String, String)> {
    let hash = message.find('#')?;
    let after = &message[hash + 1..];
    let digits = after.find(|c: char| !c.is_ascii_digit())?;
    let rest = after[digits..].strip_prefix(" \"")?;
    let close = rest.find('"')?;
    let name = &rest[..close];
    let op = rest[close + 1..].split_whitespace().next()?;
    Some((name.to_string(), op.trim_end_matches([':', ',']).to_string()))
}
