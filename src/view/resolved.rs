//! What one slicing step resolves to against a shape: a selection in index space or a flat view.

use super::{Dim, Selection, View};

/// What a step resolves to: an index-space selection (composes with anything) or a flat view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved<D> {
    /// From StridedSlice and Slice.
    Select(Selection<D>),
    /// From AsStrided.
    Flat(View<D>),
}

impl<D: Dim> Resolved<D> {
    /// The output shape.
    pub fn output_shape(&self) -> Vec<D> {
        match self {
            Resolved::Select(s) => s.output_shape(),
            Resolved::Flat(v) => v.shape(),
        }
    }
}
