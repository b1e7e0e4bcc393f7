//! ONNX-ML `TreeEnsemble` (`ai.onnx.ml`, version 5): an ensemble of decision trees over the rows of
//! `X` (`[N, F]`), giving `Y` (`[N, n_targets]`) in `X`'s type.
//!
//! Each tree starts at one of `tree_roots` and walks interior nodes: node `i` tests feature
//! `nodes_featureids[i]` against `nodes_splits[i]` by `nodes_modes[i]` (`<=`, `<`, `>=`, `>`, `==`,
//! `!=`, or membership in its set of `membership_values`: the sets, delimited by NaN, belong to the
//! membership nodes in the order they appear), true also when the value is NaN and
//! `nodes_missing_value_tracks_true[i]` is set; it goes on to `nodes_truenodeids[i]` or
//! `nodes_falsenodeids[i]`, a leaf index where `nodes_trueleafs[i]` / `nodes_falseleafs[i]` say so.
//! A root whose two children are the same leaf is that leaf. Each leaf adds its weight to its
//! target by `aggregate_function` (as onnx's reference: `SUM` and `AVERAGE` from 0 in `X`'s type,
//! `AVERAGE` adding `weight / trees`; `MIN` from the type's largest finite value, `MAX` from its
//! lowest), then each row goes through `post_transform` (`NONE`, `SOFTMAX`, `LOGISTIC`,
//! `SOFTMAX_ZERO`: softmax over the non-zero entries, zeros kept; `PROBIT` is refused).
//!
//! Every index is checked when the node is built (children, roots, targets, modes, flags) and the
//! trees must be acyclic, so a walk takes at most as many steps as there are nodes; feature ids are
//! checked against `X`'s columns.

use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// How a node compares its feature with its split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    /// `x <= split`.
    Leq,
    /// `x < split`.
    Lt,
    /// `x >= split`.
    Gte,
    /// `x > split`.
    Gt,
    /// `x == split`.
    Eq,
    /// `x != split`.
    Neq,
    /// `x` in the node's set.
    Member,
}

/// Where a branch goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Next {
    /// An interior node.
    Node(usize),
    /// A leaf.
    Leaf(usize),
}

/// One interior node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TreeNode {
    /// The test.
    pub mode: Mode,
    /// The feature (column of `X`).
    pub feature: usize,
    /// The split value, as `f64`.
    pub split: f64,
    /// The set of a `Member` node.
    pub members: Vec<f64>,
    /// NaN goes the true way.
    pub missing_true: bool,
    /// Where a true test goes.
    pub yes: Next,
    /// Where a false test goes.
    pub no: Next,
}

/// The ensemble, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TreeEnsemble {
    /// The node, for errors.
    pub label: Label,
    /// The interior nodes.
    pub nodes: Vec<TreeNode>,
    /// Each leaf's target and weight.
    pub leaves: Vec<(usize, f64)>,
    /// Each tree's start.
    pub roots: Vec<Next>,
    /// `aggregate_function`: 0 average, 1 sum, 2 min, 3 max.
    pub aggregate: i64,
    /// `post_transform`: 0 none, 1 softmax, 2 logistic, 3 softmax-zero.
    pub post: i64,
    /// `n_targets`.
    pub targets: usize,
    /// The largest feature id (the columns `X` needs), if any node.
    pub max_feature: Option<usize>,
}

impl std::hash::Hash for TreeEnsemble {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.label.hash(state);
        self.nodes.len().hash(state);
        self.leaves.len().hash(state);
        self.roots.hash(state);
    }
}

impl Eq for TreeEnsemble {}

fn tensor_attr(ctx: &ParsingContext, label: &Label, node: &NodeProto, name: &str) -> TractResult<Option<Tensor>> {
    let Some(a) = node.attribute.iter().find(|a| a.name == name) else { return Ok(None) };
    let t = a.t.as_ref().ok_or_else(|| label.err(format!("attribute {name} must be a tensor")))?;
    let t = tract_onnx::tensor::load_tensor(&*ctx.framework.provider, t, ctx.model_dir)
        .map_err(|e| label.err(format!("attribute {name}: {e}")))?;
    Ok(Some(t))
}

fn floats_of(label: &Label, name: &str, t: &Tensor) -> TractResult<Vec<f64>> {
    if !t.datum_type().is_float() {
        return Err(label.err(format!("attribute {name} must hold floats, got {:?}", t.datum_type())));
    }
    Ok(t.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?.to_vec())
}

/// The TreeEnsemble builder.
pub(crate) fn tree_ensemble(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.domain != "ai.onnx.ml" {
        return Err(label.err(format!("TreeEnsemble is an ai.onnx.ml operator, found in domain {:?}", node.domain)));
    }
    if node.input.len() != 1 || node.input[0].is_empty() || node.output.len() != 1 {
        return Err(label.err("TreeEnsemble takes one input, X, and gives one output, Y"));
    }
    let required_ints = |name: &str| -> TractResult<Vec<i64>> {
        attrs::ints(&label, node, name)?.ok_or_else(|| label.err(format!("attribute {name} is required")))
    };
    let required_tensor = |name: &str| -> TractResult<Tensor> {
        tensor_attr(ctx, &label, node, name)?.ok_or_else(|| label.err(format!("attribute {name} is required")))
    };
    let features = required_ints("nodes_featureids")?;
    let true_ids = required_ints("nodes_truenodeids")?;
    let false_ids = required_ints("nodes_falsenodeids")?;
    let true_leafs = required_ints("nodes_trueleafs")?;
    let false_leafs = required_ints("nodes_falseleafs")?;
    let target_ids = required_ints("leaf_targetids")?;
    let roots = required_ints("tree_roots")?;
    let splits = floats_of(&label, "nodes_splits", &required_tensor("nodes_splits")?)?;
    let weights = floats_of(&label, "leaf_weights", &required_tensor("leaf_weights")?)?;
    let modes = required_tensor("nodes_modes")?;
    if modes.datum_type() != DatumType::U8 {
        return Err(label.err(format!("nodes_modes must be a uint8 tensor, got {:?}", modes.datum_type())));
    }
    let modes = modes.try_as_plain_ram()?.as_slice::<u8>()?.to_vec();
    let missing = attrs::ints(&label, node, "nodes_missing_value_tracks_true")?;
    let membership = match tensor_attr(ctx, &label, node, "membership_values")? {
        Some(t) => Some(floats_of(&label, "membership_values", &t)?),
        None => None,
    };
    let aggregate = attrs::int(&label, node, "aggregate_function")?.unwrap_or(1);
    if !(0..=3).contains(&aggregate) {
        return Err(label.err(format!("aggregate_function is {aggregate}: it must be 0 to 3")));
    }
    let post = attrs::int(&label, node, "post_transform")?.unwrap_or(0);
    match post {
        0..=3 => {}
        4 => return Err(label.err("post_transform PROBIT is not supported")),
        p => return Err(label.err(format!("post_transform is {p}: it must be 0 to 4"))),
    }
    let n = features.len();
    for (name, len) in [
        ("nodes_splits", splits.len()),
        ("nodes_modes", modes.len()),
        ("nodes_truenodeids", true_ids.len()),
        ("nodes_falsenodeids", false_ids.len()),
        ("nodes_trueleafs", true_leafs.len()),
        ("nodes_falseleafs", false_leafs.len()),
        ("nodes_missing_value_tracks_true", missing.as_ref().map_or(n, Vec::len)),
    ] {
        if len != n {
            return Err(label.err(format!("{name} has {len} entries, nodes_featureids {n}")));
        }
    }
    if weights.len() != target_ids.len() {
        return Err(label.err(format!(
            "leaf_weights has {} entries, leaf_targetids {}",
            weights.len(),
            target_ids.len()
        )));
    }
    let targets = match attrs::int(&label, node, "n_targets")? {
        Some(t) if t >= 1 && t <= i32::MAX as i64 => t as usize,
        Some(t) => return Err(label.err(format!("n_targets is {t}: it must be positive"))),
        None => target_ids.iter().copied().max().map_or(0, |m| m.max(-1) + 1) as usize,
    };
    let mut leaves = Vec::with_capacity(target_ids.len());
    for (i, (&t, &w)) in target_ids.iter().zip(&weights).enumerate() {
        if t < 0 || t as u64 >= targets as u64 {
            return Err(label.err(format!("leaf {i} has target {t}, out of range for {targets} targets")));
        }
        leaves.push((t as usize, w));
    }
    let next = |what: &str, i: usize, id: i64, leaf: i64| -> TractResult<Next> {
        let (limit, kind) = match leaf {
            0 => (n, "node"),
            1 => (leaves.len(), "leaf"),
            f => return Err(label.err(format!("node {i}: {what}leafs is {f}: it must be 0 or 1"))),
        };
        if id < 0 || id as u64 >= limit as u64 {
            return Err(label.err(format!("node {i}: {what} {kind} {id} is out of range ({limit} {kind}s)")));
        }
        Ok(if leaf == 1 { Next::Leaf(id as usize) } else { Next::Node(id as usize) })
    };
    // The sets of the membership nodes, in the order the nodes appear.
    let mut sets = membership.unwrap_or_default().into_iter();
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let mode = match modes[i] {
            0 => Mode::Leq,
            1 => Mode::Lt,
            2 => Mode::Gte,
            3 => Mode::Gt,
            4 => Mode::Eq,
            5 => Mode::Neq,
            6 => Mode::Member,
            m => return Err(label.err(format!("node {i} has mode {m}: it must be 0 to 6"))),
        };
        let mut members = vec![];
        if mode == Mode::Member {
            loop {
                match sets.next() {
                    Some(v) if v.is_nan() => break,
                    Some(v) => members.push(v),
                    None => return Err(label.err(format!("membership_values has no NaN-ended set for node {i}"))),
                }
            }
        }
        let feature = usize::try_from(features[i])
            .map_err(|_| label.err(format!("node {i} has feature id {}: it must not be negative", features[i])))?;
        let missing_true = match missing.as_ref().map_or(0, |m| m[i]) {
            0 => false,
            1 => true,
            f => return Err(label.err(format!("node {i}: nodes_missing_value_tracks_true is {f}: it must be 0 or 1"))),
        };
        nodes.push(TreeNode {
            mode,
            feature,
            split: splits[i],
            members,
            missing_true,
            yes: next("true", i, true_ids[i], true_leafs[i])?,
            no: next("false", i, false_ids[i], false_leafs[i])?,
        });
    }
    if sets.next().is_some() {
        return Err(label.err("membership_values has more sets than there are membership nodes"));
    }
    let roots = roots
        .iter()
        .map(|&r| {
            let i = usize::try_from(r).ok().filter(|&i| i < n);
            let i = i.ok_or_else(|| label.err(format!("tree root {r} is out of range ({n} nodes)")))?;
            let t = &nodes[i];
            // A root whose two branches are the same leaf is that leaf.
            Ok(match (t.yes, t.no) {
                (Next::Leaf(a), Next::Leaf(b)) if a == b => Next::Leaf(a),
                _ => Next::Node(i),
            })
        })
        .collect::<TractResult<Vec<Next>>>()?;
    check_acyclic(&label, &nodes)?;
    let max_feature = nodes.iter().map(|t| t.feature).max();
    let op = TreeEnsemble { label, nodes, leaves, roots, aggregate, post, targets, max_feature };
    Expanded::new("TreeEnsemble", op, 1, rules, as_is).built()
}

/// Fails when a node can reach itself (a walk would not end).
fn check_acyclic(label: &Label, nodes: &[TreeNode]) -> TractResult<()> {
    // 0 unvisited, 1 on the current path, 2 done; an explicit stack, no recursion.
    let mut state = vec![0u8; nodes.len()];
    for start in 0..nodes.len() {
        if state[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, u8)> = vec![(start, 0)];
        state[start] = 1;
        while let Some((i, branch)) = stack.pop() {
            if branch == 2 {
                state[i] = 2;
                continue;
            }
            stack.push((i, branch + 1));
            let to = if branch == 0 { nodes[i].yes } else { nodes[i].no };
            if let Next::Node(j) = to {
                match state[j] {
                    0 => {
                        state[j] = 1;
                        stack.push((j, 0));
                    }
                    1 => return Err(label.err(format!("the trees have a cycle through node {j}"))),
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

fn rules<'r>(op: &'r TreeEnsemble, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&inputs[0].rank, 2)?;
    s.equals(&outputs[0].rank, 2)?;
    s.equals(&outputs[0].shape[0], &inputs[0].shape[0])?;
    s.equals(&outputs[0].shape[1], op.targets.to_dim())
}

impl TreeEnsemble {
    fn check(&self, dt: DatumType, shape: &[TDim]) -> TractResult<()> {
        if !matches!(dt, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("X must be float, double or float16, got {dt:?}")));
        }
        if shape.len() != 2 {
            return Err(self.label.err(format!("X must have rank 2 ([N, features]), got rank {}", shape.len())));
        }
        if let (Some(f), Ok(cols)) = (self.max_feature, shape[1].to_usize()) {
            if f >= cols {
                return Err(self.label.err(format!("feature id {f} is out of range for X's {cols} columns")));
            }
        }
        Ok(())
    }

    /// The leaf a tree ends at for `row`.
    fn walk(&self, root: Next, row: &[f64]) -> usize {
        let mut at = root;
        // Acyclic (checked): at most one step per node.
        for _ in 0..=self.nodes.len() {
            match at {
                Next::Leaf(l) => return l,
                Next::Node(i) => {
                    let t = &self.nodes[i];
                    let x = row[t.feature];
                    let pass = (t.missing_true && x.is_nan())
                        || match t.mode {
                            Mode::Leq => x <= t.split,
                            Mode::Lt => x < t.split,
                            Mode::Gte => x >= t.split,
                            Mode::Gt => x > t.split,
                            Mode::Eq => x == t.split,
                            Mode::Neq => x != t.split,
                            Mode::Member => t.members.contains(&x),
                        };
                    at = if pass { t.yes } else { t.no };
                }
            }
        }
        unreachable!("the trees are acyclic")
    }

    /// Aggregates and transforms in `T`, `X`'s type.
    fn predict<T: Datum + Float>(&self, x: &Tensor) -> TractResult<Tensor> {
        let (rows, cols) = (x.shape()[0], x.shape()[1]);
        let values = x.cast_to::<f64>()?;
        let values = values.try_as_plain_ram()?.as_slice::<f64>()?.to_vec();
        let len = rows.checked_mul(self.targets).ok_or_else(|| self.label.err("Y's size overflows"))?;
        crate::kernel::check_allocation(len as u64, T::datum_type().size_of()).map_err(|e| self.label.err(e))?;
        let start = match self.aggregate {
            2 => T::max_value(),
            3 => T::min_value(),
            _ => T::zero(),
        };
        let trees = T::from(self.roots.len()).unwrap_or_else(T::one);
        let mut y = vec![start; len];
        for r in 0..rows {
            let row = &values[r * cols..][..cols];
            let out = &mut y[r * self.targets..][..self.targets];
            for &root in &self.roots {
                let (target, weight) = self.leaves[self.walk(root, row)];
                let w = T::from(weight).unwrap_or_else(T::nan);
                let acc = &mut out[target];
                *acc = match self.aggregate {
                    0 => *acc + w / trees,
                    1 => *acc + w,
                    2 => acc.min(w),
                    _ => acc.max(w),
                };
            }
            post_transform(self.post, out);
        }
        Ok(tract_ndarray::ArrayD::from_shape_vec(vec![rows, self.targets], y)?.into_tensor())
    }
}

/// `post_transform` on one row.
fn post_transform<T: Float>(post: i64, row: &mut [T]) {
    match post {
        1 | 3 => {
            let zero_kept = post == 3;
            let live = |v: T| !(zero_kept && v == T::zero());
            let max = row.iter().copied().filter(|&v| live(v)).fold(T::neg_infinity(), T::max);
            let mut sum = T::zero();
            for v in row.iter_mut().filter(|v| live(**v)) {
                *v = (*v - max).exp();
                sum = sum + *v;
            }
            for v in row.iter_mut() {
                if live(*v) || !zero_kept {
                    *v = *v / sum;
                }
            }
        }
        2 => {
            for v in row.iter_mut() {
                *v = T::one() / (T::one() + (-*v).exp());
            }
        }
        _ => {}
    }
}

use tract_onnx::tract_core::num_traits::Float;

impl Op for TreeEnsemble {
    fn name(&self) -> StaticName {
        "TreeEnsemble".into()
    }

    op_as_typed_op!();
}

impl TypedOp for TreeEnsemble {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs[0];
        self.check(x.datum_type, &x.shape)?;
        Ok(tvec![x.datum_type.fact([x.shape[0].clone(), self.targets.to_dim()])])
    }
}

impl EvalOp for TreeEnsemble {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let shape: TVec<TDim> = x.shape().iter().map(|&d| d.to_dim()).collect();
        self.check(x.datum_type(), &shape)?;
        let y = match x.datum_type() {
            DatumType::F16 => self.predict::<f16>(&x)?,
            DatumType::F32 => self.predict::<f32>(&x)?,
            _ => self.predict::<f64>(&x)?,
        };
        Ok(tvec![y.into_tvalue()])
    }
}
