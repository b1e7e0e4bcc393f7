//! `fold` on bytes, as the CLI and the tests call it: see [`crate::fold`] for what it does.

use prost::Message;
use std::path::Path;

/// Folds a model (its bytes) with the default options; `dir` is where its external data lives.
pub fn fold(bytes: &[u8], dir: Option<&Path>) -> anyhow::Result<Vec<u8>> {
    let (model, _) = crate::fold::fold(bytes, dir, &crate::fold::FoldOptions::default())?;
    Ok(model.encode_to_vec())
}
