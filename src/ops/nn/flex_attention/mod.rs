//! `FlexAttention` (domain `ai.onnx.preview`, version 1): scaled dot-product attention over rank-4
//! inputs with two optional modifier graphs.
//!
//! `Y = prob_mod(Softmax(score_mod((Q Kᵀ) * scale))) V`, with
//! - Q `(B, Hq, L, E)`, K `(B, Hkv, S, E)`, V `(B, Hkv, S, Ev)`, Y `(B, Hq, L, Ev)`; query head `h`
//!   reads key/value head `h / (Hq / Hkv)`;
//! - `scale` (default `1/sqrt(E)`) applied as its square root (taken in float32, as onnx's reference
//!   does) to Q and to K, in their type; the default over a symbolic `E` is computed when run, from
//!   Q's shape ([`scale::RootScale`]);
//! - the scores cast to the softmax precision (`softmax_precision`, by default float32 for float16 and
//!   float inputs and double for double ones), `score_mod`, the softmax, `prob_mod` and the product
//!   with V all in that precision, the result cast back to V's type;
//! - `score_mod` and `prob_mod` graphs of one input and one output of the scores' shape and type,
//!   which may read values of the enclosing graph by name (the node's inputs after Q, K and V).
//!
//! This op only holds the parsed node: the analysis (`analysis::translate`, `flex_node.rs`) wires it
//! as tract's ops ([`wire`]) with the modifier graphs translated and spliced in between, so the whole
//! attention is one typed graph (optimized, folded and typed symbolically as any other).

pub(crate) mod scale;
pub(crate) mod wire;

use crate::node::Label;
use tract_onnx::model::{ParseResult, ParsingContext};
use tract_onnx::pb;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// One modifier graph (`score_mod` or `prob_mod`), parsed.
#[derive(Debug, Clone)]
pub(crate) struct Modifier {
    /// The attribute's name, for errors.
    pub name: &'static str,
    /// The graph as parsed: its first input takes the scores (or probabilities), the others are the
    /// outer values it reads.
    pub body: Arc<InferenceModel>,
    /// The graph, for its nodes' attributes.
    pub graph: Arc<pb::GraphProto>,
    /// For each input of the body after the first, the node input feeding it.
    pub outer: Vec<usize>,
}

/// A parsed `FlexAttention` node.
#[derive(Debug, Clone)]
pub(crate) struct FlexAttention {
    /// The node, for errors.
    pub label: Label,
    /// `scale`, when given.
    pub scale: Option<f32>,
    /// `softmax_precision`, when given.
    pub precision: Option<DatumType>,
    /// `score_mod`, when given.
    pub score_mod: Option<Modifier>,
    /// `prob_mod`, when given.
    pub prob_mod: Option<Modifier>,
    /// The number of inputs: Q, K, V, then the outer values the modifiers read.
    pub inputs: usize,
}

/// The FlexAttention builder.
pub(crate) fn flex_attention(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 3 || node.input.iter().any(String::is_empty) {
        return Err(label.err(format!("FlexAttention takes the three inputs Q, K and V, got {:?}", node.input)));
    }
    if node.output.len() != 1 || node.output[0].is_empty() {
        return Err(label.err(format!("FlexAttention has the one output Y, got {:?}", node.output)));
    }
    let scale = crate::node::attrs::float(&label, node, "scale")?;
    if let Some(s) = scale {
        if !(s.is_finite() && s >= 0.0) {
            return Err(label.err(format!(
                "attribute scale is {s}: it must be a finite number, at least 0 (Q and K are each scaled by its \
                 square root)"
            )));
        }
    }
    let precision = match crate::node::attrs::int(&label, node, "softmax_precision")? {
        None => None,
        Some(code) => Some(precision_of(&label, code)?),
    };
    // The outer values both graphs read, each once, in the order first read: the node's inputs 3...
    let mut outer: Vec<String> = vec![];
    let mut modifier = |name: &'static str| -> TractResult<Option<Modifier>> {
        let Some(graph) = graph_attribute(&label, node, name)? else { return Ok(None) };
        let m = parse_modifier(ctx, &label, name, graph, &mut outer)?;
        Ok(Some(m))
    };
    let score_mod = modifier("score_mod")?;
    let prob_mod = modifier("prob_mod")?;
    let inputs = 3 + outer.len();
    let op = FlexAttention { label, scale, precision, score_mod, prob_mod, inputs };
    Ok((Box::new(op), outer))
}

/// The type `softmax_precision` names: float, float16 or double (tract has no bfloat16).
fn precision_of(label: &Label, code: i64) -> TractResult<DatumType> {
    match code {
        1 => Ok(DatumType::F32),
        10 => Ok(DatumType::F16),
        11 => Ok(DatumType::F64),
        16 => Err(label.err("attribute softmax_precision is 16 (bfloat16), which is not run (tract has no bfloat16)")),
        v => Err(label.err(format!(
            "attribute softmax_precision is {v}: it must be 1 (float), 10 (float16), 11 (double) or 16 (bfloat16)"
        ))),
    }
}

/// The graph attribute `name`, if present.
fn graph_attribute<'a>(label: &Label, node: &'a NodeProto, name: &str) -> TractResult<Option<&'a pb::GraphProto>> {
    use pb::attribute_proto::AttributeType;
    let Some(a) = node.attribute.iter().find(|a| a.name == name) else { return Ok(None) };
    let kind = AttributeType::try_from(a.r#type).unwrap_or(AttributeType::Undefined);
    match (&a.g, kind) {
        (Some(g), AttributeType::Graph | AttributeType::Undefined) => Ok(Some(g)),
        _ => Err(label.err(format!("attribute {name} must be a graph, got {kind:?}"))),
    }
}

/// Parses a modifier graph: one input (initializers listed among the inputs aside), one output; the
/// outer values it reads are appended to `outer` (each once).
fn parse_modifier(
    ctx: &ParsingContext,
    label: &Label,
    name: &'static str,
    graph: &pb::GraphProto,
    outer: &mut Vec<String>,
) -> TractResult<Modifier> {
    let mut graph = graph.clone();
    let initializers: std::collections::HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let declared = graph.input.iter().filter(|i| !initializers.contains(i.name.as_str())).count();
    if declared != 1 {
        return Err(label.err(format!("the {name} graph takes {declared} inputs: it must take exactly one")));
    }
    if graph.output.len() != 1 {
        return Err(
            label.err(format!("the {name} graph returns {} outputs: it must return exactly one", graph.output.len()))
        );
    }
    // The input's type is the softmax precision whatever it declares (checked when typed): an
    // untyped one is parsed as if typed.
    for input in &mut graph.input {
        let typed = matches!(
            input.r#type.as_ref().and_then(|t| t.value.as_ref()),
            Some(pb::type_proto::Value::TensorType(t)) if t.elem_type != 0
        );
        if !typed {
            let tensor = pb::type_proto::Tensor { elem_type: pb::tensor_proto::DataType::Float as i32, shape: None };
            input.r#type =
                Some(pb::TypeProto { value: Some(pb::type_proto::Value::TensorType(tensor)), ..Default::default() });
        }
    }
    let ParseResult { model: body, unresolved_inputs, .. } =
        ctx.parse_graph(&graph).map_err(|e| label.err(format!("the {name} graph: {e:#}")))?;
    if body.inputs.len() != 1 + unresolved_inputs.len() {
        return Err(label.err(format!("the {name} graph's inputs are not its input and the values it reads")));
    }
    let mut reads = vec![];
    for value in unresolved_inputs {
        let at = match outer.iter().position(|n| *n == value) {
            Some(p) => p,
            None => {
                outer.push(value);
                outer.len() - 1
            }
        };
        reads.push(3 + at);
    }
    Ok(Modifier { name, body: Arc::new(body), graph: Arc::new(graph), outer: reads })
}

impl PartialEq for FlexAttention {
    fn eq(&self, _: &Self) -> bool {
        false
    }
}

impl Eq for FlexAttention {}

impl Op for FlexAttention {
    fn name(&self) -> StaticName {
        "FlexAttention".into()
    }

    not_a_typed_op!();
}

impl EvalOp for FlexAttention {
    op_out_of_plan!();

    fn eval(&self, _: &EvalContext, _: TVec<TValue>) -> TractResult<TVec<TValue>> {
        Err(self.label.err("a FlexAttention runs only once analysed"))
    }
}

impl InferenceRulesOp for FlexAttention {
    /// Y has Q's type and the dims `(B, Hq, L, Ev)`; Q, K and V have rank 4.
    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, self.inputs)?;
        check_output_arity(outputs, 1)?;
        let (q, k, v, y) = (&inputs[0], &inputs[1], &inputs[2], &outputs[0]);
        s.equals(&y.datum_type, &q.datum_type)?;
        for t in [q, k, v, y] {
            s.equals(&t.rank, 4)?;
        }
        for axis in 0..3 {
            s.equals(&y.shape[axis], &q.shape[axis])?;
        }
        s.equals(&y.shape[3], &v.shape[3])?;
        Ok(())
    }

    fn to_typed(
        &self,
        _source: &InferenceModel,
        _node: &InferenceNode,
        _target: &mut TypedModel,
        _mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        Err(self.label.err("a FlexAttention is translated by the analysis"))
    }

    as_op!();
}
