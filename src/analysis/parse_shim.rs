//! Reading symbolic dim text, bounded before tract's parser sees it (tract's parser recurses once per
//! nesting level and per operator).

use tract_onnx::prelude::*;

const MAX_LEN: usize = 4096;
const MAX_DEPTH: usize = 64;

/// Parses a dim expression such as `N`, `8*height` or `(H+15)/16` into `scope`.
pub fn parse_dim(scope: &SymbolScope, text: &str) -> anyhow::Result<TDim> {
    check_bounded(text)?;
    scope.parse_tdim(text.trim())
}

/// Refuses text longer than 4096 characters or nested deeper than 64 levels.
pub fn check_bounded(text: &str) -> anyhow::Result<()> {
    anyhow::ensure!(text.len() <= MAX_LEN, "the expression is longer than {MAX_LEN} characters");
    let (mut depth, mut max, mut ops) = (0usize, 0usize, 0usize);
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' => depth = depth.saturating_sub(1),
            '+' | '-' | '*' | '/' => ops += 1,
            _ => {}
        }
    }
    anyhow::ensure!(max <= MAX_DEPTH, "the expression nests deeper than {MAX_DEPTH} parentheses");
    anyhow::ensure!(ops <= 256, "the expression has more than 256 operators");
    Ok(())
}
