//! ONNX `Scan`, opset 8 (batched, with `sequence_lens`) and opsets 9 and later (scan axes and
//! directions), replacing tract-onnx's builder.
//!
//! tract-onnx's builder needs every body input typed in the body graph (the function-expanded
//! models ONNX ships leave them untyped: ONNX gives them the type of the Scan input they read),
//! reads opset 8's inputs as opset 9's, and its op is typed only after tract analysed the whole
//! model. Here the builder keeps the body as parsed with its inputs untyped; [`ScanInference`]
//! gives the body its input facts from the Scan's inputs (a state its input's, a scan input a slice
//! without the scan axis, a value the body reads from outside its own), and wires tract's own
//! `Scan` around the typed body: scan slices taken and put back by axis ops in the body, opset 8's
//! batch entries one scan each ([`super::scan_batch`]). Analysis types the body with its own translation
//! (`analysis::translate`); [`ScanInference::to_typed`] types it with tract's rules.

use super::scan_node::{ScanForm, ScanInference};
use super::scan_wire::Layout;
use std::sync::Arc;
use tract_onnx::model::{ParseResult, ParsingContext};
use tract_onnx::pb::{self, NodeProto};
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The Scan builder.
pub(crate) fn scan(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let attrs = crate::node::attrs::ints;
    let body = node
        .attribute
        .iter()
        .find(|a| a.name == "body")
        .and_then(|a| a.g.as_ref())
        .ok_or_else(|| label.err("the body graph attribute is missing"))?;
    let n = crate::node::attrs::int(&label, node, "num_scan_inputs")?
        .ok_or_else(|| label.err("the num_scan_inputs attribute is missing"))?;
    let formal_inputs = body.input.len();
    let num_scan_inputs = usize::try_from(n).ok().filter(|&n| n >= 1 && n <= formal_inputs).ok_or_else(|| {
        label.err(format!("num_scan_inputs is {n}: it must be 1 to the body's {formal_inputs} inputs"))
    })?;
    let form = if ctx.onnx_operator_set_version < 9 {
        ScanForm::Batched { sequence_lens: node.input.first().is_some_and(|i| !i.is_empty()) }
    } else {
        ScanForm::Plain
    };
    let own = match form {
        ScanForm::Batched { .. } => node.input.get(1..).unwrap_or_default(),
        ScanForm::Plain => &node.input[..],
    };
    if own.len() != formal_inputs || own.iter().any(|i| i.is_empty()) {
        return Err(label.err(format!(
            "the node has {} state and scan inputs, its body {formal_inputs} (none may be omitted)",
            own.len()
        )));
    }
    if node.output.len() > body.output.len() {
        return Err(label.err(format!("the node has {} outputs, its body {}", node.output.len(), body.output.len())));
    }
    let present = (0..body.output.len()).map(|i| node.output.get(i).is_some_and(|o| !o.is_empty())).collect();
    let (input_axes, input_directions, output_axes, output_directions) = match form {
        ScanForm::Batched { .. } => (None, attrs(&label, node, "directions")?, None, None),
        ScanForm::Plain => (
            attrs(&label, node, "scan_input_axes")?,
            attrs(&label, node, "scan_input_directions")?,
            attrs(&label, node, "scan_output_axes")?,
            attrs(&label, node, "scan_output_directions")?,
        ),
    };
    // Body inputs without a type take the Scan input's: parsed with a stand-in, their facts cleared.
    let mut graph = body.clone();
    let mut declared = vec![];
    let mut untyped = vec![];
    for (ix, input) in graph.input.iter_mut().enumerate() {
        let elem = match input.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(pb::type_proto::Value::TensorType(t)) if t.elem_type != 0 => Some(t.elem_type),
            _ => None,
        };
        match elem {
            Some(code) => declared.push(Some(crate::node::attrs::elem_type(&label, "a body input", code.into())?)),
            None => {
                declared.push(None);
                untyped.push(ix);
                let tensor =
                    pb::type_proto::Tensor { elem_type: pb::tensor_proto::DataType::Float as i32, shape: None };
                input.r#type = Some(pb::TypeProto {
                    value: Some(pb::type_proto::Value::TensorType(tensor)),
                    ..Default::default()
                });
            }
        }
    }
    if graph.initializer.iter().any(|t| graph.input.iter().any(|i| i.name == t.name)) {
        return Err(label.err("a body input has an initializer: the body's inputs are the Scan's"));
    }
    let ParseResult { mut model, unresolved_inputs, .. } =
        ctx.parse_graph(&graph).map_err(|e| label.err(format!("the body: {e:#}")))?;
    let sources = model.input_outlets()?.to_vec();
    if sources.len() != formal_inputs + unresolved_inputs.len() {
        return Err(label.err("the body's inputs do not match its graph's"));
    }
    for ix in untyped {
        model.set_outlet_fact(sources[ix], InferenceFact::default())?;
    }
    let op = ScanInference {
        label,
        body: model,
        graph: Arc::new(body.clone()),
        form,
        num_scan_inputs,
        formal_inputs,
        declared,
        closures: unresolved_inputs.len(),
        input_axes,
        input_directions,
        output_axes,
        output_directions,
        present,
    };
    op.check_attributes()?;
    Ok((Box::new(op), unresolved_inputs))
}

impl ScanInference {
    /// Attribute lengths and values that do not depend on the inputs' facts.
    fn check_attributes(&self) -> TractResult<()> {
        let label = &self.label;
        if self.present.len() < self.states() {
            return Err(label.err(format!(
                "the body returns {} values, fewer than its {} states",
                self.present.len(),
                self.states()
            )));
        }
        let (din, dout) = match self.form {
            ScanForm::Batched { .. } => ("directions", ""),
            ScanForm::Plain => ("scan_input_directions", "scan_output_directions"),
        };
        let lists = [
            ("scan_input_axes", &self.input_axes, self.num_scan_inputs, false),
            (din, &self.input_directions, self.num_scan_inputs, true),
            ("scan_output_axes", &self.output_axes, self.scan_outputs(), false),
            (dout, &self.output_directions, self.scan_outputs(), true),
        ];
        for (name, list, want, direction) in lists {
            let Some(list) = list else { continue };
            if list.len() != want {
                return Err(label.err(format!("{name} has {} values, expected {want}", list.len())));
            }
            if direction && list.iter().any(|d| *d != 0 && *d != 1) {
                return Err(label.err(format!("{name} is {list:?}: each direction is 0 or 1")));
            }
        }
        Ok(())
    }

    /// The layout of the scan over inputs with these facts (the node's inputs, `sequence_lens`
    /// included when given): axes resolved, lengths checked.
    pub(crate) fn layout(&self, inputs: &[TypedFact]) -> TractResult<Layout> {
        Layout::of(self, inputs)
    }

    /// The body's input facts for these node input facts.
    pub(crate) fn body_facts(&self, inputs: &[TypedFact]) -> TractResult<Vec<TypedFact>> {
        self.layout(inputs)?.body_facts(self, inputs)
    }

    /// Wires the scan into `target` after `inputs` (the node's inputs), its body typed as `body`
    /// (from [`ScanInference::body_facts`]); the node's outputs.
    pub(crate) fn wire_typed(
        &self,
        target: &mut TypedModel,
        name: &str,
        inputs: &[OutletId],
        body: TypedModel,
    ) -> TractResult<TVec<OutletId>> {
        let facts: Vec<TypedFact> =
            inputs.iter().map(|o| target.outlet_fact(*o).cloned()).collect::<TractResult<_>>()?;
        let layout = self.layout(&facts)?;
        layout.wire(self, target, name, inputs, body)
    }

    /// The body typed by tract's rules from these input facts.
    fn body_by_tract(&self, facts: Vec<TypedFact>) -> TractResult<TypedModel> {
        let mut body = self.body.clone();
        let sources = body.input_outlets()?.to_vec();
        for (outlet, fact) in sources.iter().zip(facts) {
            body.set_outlet_fact(*outlet, InferenceFact::from(&fact))?;
        }
        body.into_typed().map_err(|e| self.label.err(format!("the body: {e:#}")))
    }

    /// The output facts for these input facts, with the body typed by tract's rules.
    fn output_facts(&self, inputs: &[TypedFact]) -> TractResult<TVec<TypedFact>> {
        let mut scratch = TypedModel::default();
        let outlets: TVec<OutletId> = inputs
            .iter()
            .enumerate()
            .map(|(ix, f)| scratch.add_source(format!("input{ix}"), f.clone()))
            .collect::<TractResult<_>>()?;
        let body = self.body_by_tract(self.body_facts(inputs)?)?;
        let outputs = self.wire_typed(&mut scratch, "scan", &outlets, body)?;
        outputs.iter().map(|o| scratch.outlet_fact(*o).cloned()).collect()
    }
}

impl PartialEq for ScanInference {
    fn eq(&self, other: &Self) -> bool {
        // Bodies are not comparable: two Scan ops are the same only if they are one node's.
        self.label == other.label
    }
}

impl Eq for ScanInference {}

impl Op for ScanInference {
    fn name(&self) -> StaticName {
        "Scan".into()
    }

    not_a_typed_op!();
}

impl EvalOp for ScanInference {
    not_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, _inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        Err(self.label.err("a Scan runs once typed"))
    }
}

impl InferenceOp for ScanInference {
    fn infer_facts(
        &mut self,
        inputs: TVec<&InferenceFact>,
        outputs: TVec<&InferenceFact>,
        _observed: TVec<&InferenceFact>,
    ) -> TractResult<(TVec<InferenceFact>, TVec<InferenceFact>, TVec<InferenceFact>)> {
        let ins: TVec<InferenceFact> = inputs.iter().map(|f| (*f).clone()).collect();
        let typed: Option<Vec<TypedFact>> = inputs.iter().map(|f| TypedFact::try_from(*f).ok()).collect();
        let outs = match typed {
            Some(typed) => self.output_facts(&typed)?.iter().map(InferenceFact::from).collect(),
            None => outputs.iter().map(|f| (*f).clone()).collect(),
        };
        Ok((ins, outs, tvec![]))
    }

    fn nboutputs(&self) -> TractResult<usize> {
        Ok(self.present.iter().filter(|p| **p).count())
    }

    fn to_typed(
        &self,
        _source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let (inputs, facts) = crate::node::typed_inputs::typed_inputs(node, target, mapping)?;
        let body = self.body_by_tract(self.body_facts(&facts)?)?;
        self.wire_typed(target, &node.name, &inputs, body)
    }

    as_op!();
}
