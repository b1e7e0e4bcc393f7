//! ONNX `TfIdfVectorizer` (opset 9): counts of the n-grams of a pool in each row of integer tokens,
//! weighted by term frequency (`TF`), presence (`IDF`) or both (`TFIDF`).
//!
//! The pool (`pool_int64s`) lists every 1-gram, then every 2-gram, and so on: `ngram_counts[k]` is
//! where the (k+1)-grams start. The grams are numbered in pool order; gram `g` is counted in output
//! column `ngram_indexes[g]`, and the output has `max(ngram_indexes) + 1` columns. Only grams of
//! `min_gram_length..=max_gram_length` tokens are looked for; their tokens may be `skip` apart for
//! every `skip` in `1..=max_skip_count + 1` (1-grams once). A gram listed twice counts in the column
//! of its last listing. Input `[C]` gives `[columns]`, input `[N, C]` gives `[N, columns]`
//! (an empty batch an empty output); the output is float32.
//!
//! Every attribute is checked when the node is built (lengths, order, ranges; weights by column);
//! string pools (`pool_strings`) are refused: strings are not carried here.

use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use crate::ops::array::elements::check_output;
use std::collections::HashMap;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The TfIdfVectorizer builder.
pub(crate) fn tfidf(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 1 || node.input[0].is_empty() {
        return Err(label.err("TfIdfVectorizer takes one input, X"));
    }
    let op = TfIdf::from_node(label, node)?;
    Expanded::new("TfIdfVectorizer", op, 1, rules, as_is).built()
}

/// How counts become output values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Weighting {
    /// The count.
    Tf,
    /// 1 (or the column's weight) where the count is not zero.
    Idf,
    /// The count (times the column's weight).
    TfIdf,
}

/// A node of the pool's n-gram tree: the next tokens, and the gram ending here if one does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct GramNode {
    next: HashMap<i64, usize>,
    /// The output column of the gram of this path, when it is a gram looked for.
    column: Option<usize>,
}

/// `TfIdfVectorizer` with its attributes checked and its pool as a tree.
#[derive(Debug, Clone)]
pub(crate) struct TfIdf {
    /// The node, for errors.
    pub label: Label,
    /// The attribute `mode`.
    pub weighting: Weighting,
    /// The shortest gram looked for (at least 1).
    pub min_gram: usize,
    /// The longest gram looked for (at least `min_gram`).
    pub max_gram: usize,
    /// The largest number of tokens skipped between a gram's tokens.
    pub max_skip: u64,
    /// The output's columns: `max(ngram_indexes) + 1`.
    pub columns: usize,
    /// The weight of each output column, when given.
    pub weights: Option<Vec<f32>>,
    /// The grams looked for, as a tree from the root (node 0).
    tree: Vec<GramNode>,
}

// Weights compare by their bits, so an op equals itself even with NaN weights.
impl PartialEq for TfIdf {
    fn eq(&self, other: &TfIdf) -> bool {
        let bits = |w: &Option<Vec<f32>>| w.as_ref().map(|w| w.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        (self.label == other.label)
            && (self.weighting, self.min_gram, self.max_gram, self.max_skip, self.columns)
                == (other.weighting, other.min_gram, other.max_gram, other.max_skip, other.columns)
            && bits(&self.weights) == bits(&other.weights)
            && self.tree == other.tree
    }
}

impl Eq for TfIdf {}

/// A required `ints` attribute.
fn required_ints(label: &Label, node: &NodeProto, name: &str) -> TractResult<Vec<i64>> {
    attrs::ints(label, node, name)?.ok_or_else(|| label.err(format!("the attribute {name} is required")))
}

/// A required `int` attribute of at least `min`, as `u64`.
fn required_count(label: &Label, node: &NodeProto, name: &str, min: i64) -> TractResult<u64> {
    let v = attrs::int(label, node, name)?.ok_or_else(|| label.err(format!("the attribute {name} is required")))?;
    if v < min {
        return Err(label.err(format!("attribute {name} is {v}: it must be at least {min}")));
    }
    Ok(v as u64)
}

impl TfIdf {
    fn from_node(label: Label, node: &NodeProto) -> TractResult<TfIdf> {
        let weighting = match attrs::string(&label, node, "mode")?.as_deref() {
            Some("TF") => Weighting::Tf,
            Some("IDF") => Weighting::Idf,
            Some("TFIDF") => Weighting::TfIdf,
            Some(other) => return Err(label.err(format!("mode is {other:?}: it must be TF, IDF or TFIDF"))),
            None => return Err(label.err("the attribute mode is required")),
        };
        let min_gram = required_count(&label, node, "min_gram_length", 1)?;
        let max_gram = required_count(&label, node, "max_gram_length", 1)?;
        if max_gram < min_gram {
            return Err(label.err(format!("max_gram_length {max_gram} is below min_gram_length {min_gram}")));
        }
        let max_skip = required_count(&label, node, "max_skip_count", 0)?;
        if node.attribute.iter().any(|a| a.name == "pool_strings") {
            return Err(label.err("pool_strings is not supported: only integer pools (pool_int64s)"));
        }
        let pool = attrs::ints(&label, node, "pool_int64s")?
            .ok_or_else(|| label.err("the attribute pool_int64s is required (pool_strings is not supported)"))?;
        let starts = required_ints(&label, node, "ngram_counts")?;
        let indexes = required_ints(&label, node, "ngram_indexes")?;
        let weights = attrs::floats(&label, node, "weights")?;

        // Segment k (k+1 tokens a gram) is pool[starts[k]..starts[k+1]] (the last one to the end).
        let mut segments = Vec::with_capacity(starts.len());
        for (k, &start) in starts.iter().enumerate() {
            let end = starts.get(k + 1).copied().unwrap_or(pool.len() as i64);
            if start < 0 || start > end || end > pool.len() as i64 {
                return Err(label.err(format!(
                    "ngram_counts {starts:?} must be non-decreasing offsets into the {} values of pool_int64s",
                    pool.len()
                )));
            }
            let (start, end, size) = (start as usize, end as usize, k + 1);
            if (end - start) % size != 0 {
                return Err(label.err(format!(
                    "pool_int64s[{start}..{end}] holds {} values: not a whole number of {size}-grams",
                    end - start
                )));
            }
            segments.push((start, end, size));
        }
        let grams: usize = segments.iter().map(|(s, e, n)| (e - s) / n).sum();
        if indexes.len() != grams {
            return Err(
                label.err(format!("ngram_indexes has {} values for the {grams} n-grams of pool_int64s", indexes.len()))
            );
        }
        if let Some((g, v)) = indexes.iter().enumerate().find(|(_, &v)| v < 0) {
            return Err(label.err(format!("ngram_indexes[{g}] is {v}: output columns are not negative")));
        }
        let columns = indexes
            .iter()
            .max()
            .and_then(|&m| m.checked_add(1))
            .and_then(|c| usize::try_from(c).ok())
            .ok_or_else(|| label.err("ngram_indexes is empty or holds a column too large"))?;
        if let Some(w) = &weights {
            if w.len() != indexes.len() || w.len() < columns {
                return Err(label.err(format!(
                    "weights has {} values: one per n-gram ({}) and per output column ({columns}) expected",
                    w.len(),
                    indexes.len()
                )));
            }
        }

        let mut tree = vec![GramNode::default()];
        let mut gram = 0usize;
        for (start, end, size) in segments {
            let wanted = (min_gram..=max_gram).contains(&(size as u64));
            for tokens in pool[start..end].chunks_exact(size) {
                if wanted {
                    let mut at = 0;
                    for &t in tokens {
                        at = match tree[at].next.get(&t) {
                            Some(&n) => n,
                            None => {
                                tree.push(GramNode::default());
                                let n = tree.len() - 1;
                                tree[at].next.insert(t, n);
                                n
                            }
                        };
                    }
                    tree[at].column = Some(indexes[gram] as usize);
                }
                gram += 1;
            }
        }
        let weights = weights.map(|mut w| {
            w.truncate(columns);
            w
        });
        Ok(TfIdf {
            label,
            weighting,
            min_gram: min_gram as usize,
            max_gram: usize::try_from(max_gram).unwrap_or(usize::MAX),
            max_skip,
            columns,
            weights,
            tree,
        })
    }

    /// Adds the counts of the grams of `row` to `counts` (one per column).
    fn count_row(&self, row: &[i64], counts: &mut [u64]) {
        let len = row.len();
        // Skips of `len` tokens or more leave no room for a second token.
        let distances = self.max_skip.saturating_add(1).min(len.max(1) as u64) as usize;
        let mut shortest = self.min_gram;
        for distance in 1..=distances {
            for start in 0..len {
                // The shortest gram from `start` must end inside the row.
                let last = (shortest - 1).checked_mul(distance).and_then(|v| v.checked_add(start));
                if last.is_none_or(|l| l >= len) {
                    break;
                }
                let (mut at, mut size, mut i) = (0usize, 1usize, start);
                while !self.tree[at].next.is_empty() && size <= self.max_gram && i < len {
                    let Some(&n) = self.tree[at].next.get(&row[i]) else { break };
                    if size >= shortest {
                        if let Some(c) = self.tree[n].column {
                            counts[c] += 1;
                        }
                    }
                    at = n;
                    size += 1;
                    i += distance;
                }
            }
            // 1-grams do not depend on the distance: counted in the first pass only.
            if shortest == 1 {
                shortest = 2;
                if shortest > self.max_gram {
                    break;
                }
            }
        }
    }

    /// The output value of column `c` counted `n` times.
    fn value(&self, c: usize, n: u64) -> f32 {
        let w = self.weights.as_ref().map(|w| w[c] as f64);
        let v = match (self.weighting, w) {
            (Weighting::Tf, _) => n as f64,
            (Weighting::Idf, None) => f64::from(u8::from(n > 0)),
            (Weighting::Idf, Some(w)) => {
                if n > 0 {
                    w
                } else {
                    0.0
                }
            }
            (Weighting::TfIdf, None) => n as f64,
            (Weighting::TfIdf, Some(w)) => w * n as f64,
        };
        v as f32
    }

    fn check_input(&self, dt: DatumType, rank: usize) -> TractResult<()> {
        if !matches!(dt, DatumType::I32 | DatumType::I64) {
            return Err(self.label.err(format!("X must be int32 or int64, got {dt:?}")));
        }
        if !(1..=2).contains(&rank) {
            return Err(self.label.err(format!("X must have rank 1 ([C]) or 2 ([N, C]), got rank {rank}")));
        }
        Ok(())
    }
}

fn rules<'r>(op: &'r TfIdf, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, DatumType::F32)?;
    s.equals(&outputs[0].rank, &inputs[0].rank)?;
    s.given(&inputs[0].rank, move |s, rank| {
        if !(1..=2).contains(&rank) {
            return Err(op.label.err(format!("X must have rank 1 ([C]) or 2 ([N, C]), got rank {rank}")));
        }
        if rank == 2 {
            s.equals(&outputs[0].shape[0], &inputs[0].shape[0])?;
        }
        s.equals(&outputs[0].shape[rank as usize - 1], op.columns.to_dim())
    })
}

impl Op for TfIdf {
    fn name(&self) -> StaticName {
        "TfIdfVectorizer".into()
    }

    op_as_typed_op!();
}

impl TypedOp for TfIdf {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs[0];
        self.check_input(x.datum_type, x.rank())?;
        let mut shape: TVec<TDim> = x.shape.iter().cloned().collect();
        *shape.last_mut().expect("rank 1 or 2") = self.columns.to_dim();
        Ok(tvec![f32::fact(&*shape)])
    }
}

impl EvalOp for TfIdf {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        self.check_input(x.datum_type(), x.rank())?;
        let mut shape = x.shape().to_vec();
        let tokens = *shape.last().expect("rank 1 or 2");
        *shape.last_mut().expect("rank 1 or 2") = self.columns;
        let len = check_output(&self.label, &shape, 4)?;
        let x = x.cast_to::<i64>()?;
        let x = x.try_as_plain_ram()?.as_slice::<i64>()?;
        let mut counts = vec![0u64; len];
        if tokens > 0 {
            for (row, out) in x.chunks_exact(tokens).zip(counts.chunks_exact_mut(self.columns)) {
                self.count_row(row, out);
            }
        }
        let values: Vec<f32> = counts.iter().enumerate().map(|(i, &n)| self.value(i % self.columns, n)).collect();
        Ok(tvec![tract_ndarray::ArrayD::from_shape_vec(shape, values)?.into_tensor().into_tvalue()])
    }
}
