//! ONNX `Loop` (opsets 1-27), as parsed: the body graph and how the node's inputs feed it.
//!
//! The node's inputs are the optional trip count `M` and condition `cond` (an empty name skips
//! one), the `N` initial loop-carried values, then (appended by the parser) the outer values the body
//! reads by name. Its body takes `(iteration_num, cond_in, carried...)` and returns
//! `(cond_out, carried..., scan_outputs...)`. This op only holds the parsed body: the analysis
//! (`analysis::translate`, `loops.rs`) types it and builds the op that runs it.

use crate::node::Label;
use tract_onnx::model::{ParseResult, ParsingContext};
use tract_onnx::pb;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The Loop builder.
pub(crate) fn loop_(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() < 2 {
        return Err(label.err(format!(
            "Loop takes at least two inputs (M and cond, either an empty name), got {}",
            node.input.len()
        )));
    }
    let carried = node.input.len() - 2;
    if let Some(i) = node.input[2..].iter().position(String::is_empty) {
        return Err(label.err(format!("loop-carried input {i} has an empty name: its initial value is required")));
    }
    let mut graph = match node.attribute.iter().find(|a| a.name == "body").and_then(|a| a.g.as_ref()) {
        Some(g) => g.clone(),
        None => return Err(label.err("Loop has no 'body' graph attribute")),
    };
    // Initializers listed among the inputs (IR < 4) are not the Loop's to give.
    let initializers: std::collections::HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let declared = graph.input.iter().filter(|i| !initializers.contains(i.name.as_str())).count();
    if declared != carried + 2 {
        return Err(label.err(format!(
            "the body takes {declared} inputs; a Loop with {carried} loop-carried values gives it {} (iteration \
             number, condition, the values)",
            carried + 2
        )));
    }
    let scans = match graph.output.len().checked_sub(carried + 1) {
        Some(k) => k,
        None => {
            return Err(label.err(format!(
                "the body returns {} outputs; it must return the condition and the {carried} loop-carried values, \
                 then its scan outputs",
                graph.output.len()
            )))
        }
    };
    if node.output.len() > carried + scans {
        return Err(label.err(format!(
            "{} outputs, but the body gives {carried} loop-carried values and {scans} scan outputs",
            node.output.len()
        )));
    }
    if let Some(i) = node.output.iter().position(String::is_empty) {
        return Err(label.err(format!("output {i} has an empty name")));
    }
    // Body inputs may leave their types to the Loop (functions expanded by onnx do, such as Range's);
    // the facts they are translated with are the values the Loop gives them, so an untyped input is
    // parsed as if typed.
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
        ctx.parse_graph(&graph).map_err(|e| label.err(format!("its body: {e:#}")))?;
    if body.inputs.len() != carried + 2 + unresolved_inputs.len() {
        return Err(label.err("the body's inputs are not the values the Loop gives it"));
    }
    let op = LoopBody {
        label,
        body: Arc::new(body),
        graph: Arc::new(graph),
        has_m: !node.input[0].is_empty(),
        has_cond: !node.input[1].is_empty(),
        carried,
        scans,
        outputs: node.output.len(),
    };
    Ok((Box::new(op), unresolved_inputs))
}

/// A parsed `Loop`: its body and the shape of its inputs and outputs.
#[derive(Debug, Clone)]
pub(crate) struct LoopBody {
    /// The node, for errors.
    pub label: Label,
    /// The body as parsed; its inputs are the iteration number, the condition, the loop-carried
    /// values, then the outer values it reads (the node's last inputs, in the same order).
    pub body: Arc<InferenceModel>,
    /// The body graph (its untyped inputs given a placeholder type), for its nodes' attributes.
    pub graph: Arc<pb::GraphProto>,
    /// Whether `M` is given (then the node's first input).
    pub has_m: bool,
    /// Whether `cond` is given (then the node's next input).
    pub has_cond: bool,
    /// The number of loop-carried values.
    pub carried: usize,
    /// The number of scan outputs.
    pub scans: usize,
    /// The number of outputs the node names (the first of the carried values, then scan outputs).
    pub outputs: usize,
}

impl LoopBody {
    /// The index of the first loop-carried input among the node's inputs.
    pub(crate) fn first_carried(&self) -> usize {
        usize::from(self.has_m) + usize::from(self.has_cond)
    }
}

impl PartialEq for LoopBody {
    fn eq(&self, _: &Self) -> bool {
        false
    }
}

impl Eq for LoopBody {}

impl Op for LoopBody {
    fn name(&self) -> StaticName {
        "Loop".into()
    }

    not_a_typed_op!();
}

impl EvalOp for LoopBody {
    op_out_of_plan!();

    fn eval(&self, _: &EvalContext, _: TVec<TValue>) -> TractResult<TVec<TValue>> {
        Err(self.label.err("a Loop runs only once analysed"))
    }
}

impl InferenceOp for LoopBody {
    /// The carried values keep their element types; the rest is the analysis's (it translates the
    /// body with the facts of the values given).
    fn infer_facts(
        &mut self,
        inputs: TVec<&InferenceFact>,
        outputs: TVec<&InferenceFact>,
        observed: TVec<&InferenceFact>,
    ) -> TractResult<(TVec<InferenceFact>, TVec<InferenceFact>, TVec<InferenceFact>)> {
        let inputs: TVec<InferenceFact> = inputs.into_iter().cloned().collect();
        let mut outputs: TVec<InferenceFact> = outputs.into_iter().cloned().collect();
        let first = self.first_carried();
        for (i, out) in outputs.iter_mut().enumerate().take(self.carried) {
            if let Some(input) = inputs.get(first + i) {
                out.datum_type.unify_with_mut(&mut input.datum_type.clone())?;
            }
        }
        Ok((inputs, outputs, observed.into_iter().cloned().collect()))
    }

    fn nboutputs(&self) -> TractResult<usize> {
        Ok(self.outputs)
    }

    fn to_typed(
        &self,
        _source: &InferenceModel,
        _node: &InferenceNode,
        _target: &mut TypedModel,
        _mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        Err(self.label.err("a Loop is translated by the analysis"))
    }

    as_op!();
}
