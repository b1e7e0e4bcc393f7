//! `ai.onnx.ml` ops: tree ensembles, binarizer, TF-IDF.

pub(crate) mod binarizer;
pub(crate) mod tfidf;
pub(crate) mod tree_ensemble;
