//! The public API over a loaded model: load from a path or bytes, set input shapes and assumptions, get
//! the inferred facts of every value, get the optimized plan, run it.

use crate::graph;
use anyhow::{bail, Context};
use prost::Message;
use std::path::Path;
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The inferred type and shape of one value of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueFact {
    /// The value's name in the ONNX graph.
    pub name: String,
    /// Element type.
    pub dtype: DatumType,
    /// Shape, symbolic dims as expressions.
    pub shape: Vec<TDim>,
}

/// A loaded ONNX model, ready to infer, optimize and run.
#[derive(Debug, Clone)]
pub struct Model {
    proto: pb::ModelProto,
    inference: InferenceModel,
}

/// Decodes model bytes, with a clear error for what is not a model.
pub fn decode_proto(bytes: &[u8]) -> anyhow::Result<pb::ModelProto> {
    if bytes.is_empty() {
        bail!("the file is empty, not an ONNX model");
    }
    let proto = pb::ModelProto::decode(bytes).map_err(|e| anyhow::anyhow!("not a valid ONNX model: {e}"))?;
    if proto.graph.is_none() {
        bail!("not a valid ONNX model: it has no graph");
    }
    Ok(proto)
}

impl Model {
    /// Loads a model file (a regular file of at most 2 GiB; external data is looked up next to it).
    pub fn load_path(path: impl AsRef<Path>) -> anyhow::Result<Model> {
        let path = path.as_ref();
        let bytes = crate::load::read_model_file(path)?;
        Self::load_proto(decode_proto(&bytes)?, path.parent().and_then(|p| p.to_str()))
    }

    /// Loads a model from its bytes.
    pub fn load_bytes(bytes: &[u8]) -> anyhow::Result<Model> {
        Self::load_proto(decode_proto(bytes)?, None)
    }

    /// Loads a model from its bytes, looking up external data in `dir`.
    pub fn load_bytes_in(bytes: &[u8], dir: Option<&Path>) -> anyhow::Result<Model> {
        Self::load_proto(decode_proto(bytes)?, dir.and_then(|d| d.to_str()))
    }

    fn load_proto(mut proto: pb::ModelProto, dir: Option<&str>) -> anyhow::Result<Model> {
        if let Some(g) = &proto.graph {
            check_structure(g)?;
        }
        // External data checked and read by us (tract never opens a file); uint64_data made readable.
        crate::load::prepare_for_tract(&mut proto, dir.map(Path::new))?;
        let named = unique_node_names(&proto);
        let parsed = guard("parsing the model", || graph::onnx().parse(named.as_ref().unwrap_or(&proto), dir))?;
        if !parsed.unresolved_inputs.is_empty() {
            bail!("the graph uses values nothing defines: {}", parsed.unresolved_inputs.join(", "));
        }
        Ok(Model { proto, inference: parsed.model })
    }

    /// Checks inputs against the model's declared inputs: count, dtype, rank, known dims, and symbols
    /// bound consistently across inputs (a dim `K` must be the same everywhere it appears).
    pub fn check_inputs(&self, inputs: &[Tensor]) -> anyhow::Result<()> {
        let names = self.input_names();
        if inputs.len() != names.len() {
            bail!("the model takes {} inputs ({}), got {}", names.len(), names.join(", "), inputs.len());
        }
        let mut bound: std::collections::HashMap<String, (i64, String)> = std::collections::HashMap::new();
        for (ix, (name, tensor)) in names.iter().zip(inputs).enumerate() {
            let fact = self.inference.input_fact(ix)?;
            let numpy = crate::npy::numpy_name;
            if let Some(dt) = fact.datum_type.concretize() {
                if dt != tensor.datum_type() {
                    bail!("input '{name}' is {} but the model expects {}", numpy(tensor.datum_type()), numpy(dt));
                }
            }
            let Some(shape) = fact.shape.concretize() else { continue };
            let declared = || shape.iter().map(crate::dims::format_dim).collect::<Vec<_>>().join(",");
            if shape.len() != tensor.rank() {
                bail!("input '{name}' has shape {:?} but the model expects [{}]", tensor.shape(), declared());
            }
            for (d, &n) in shape.iter().zip(tensor.shape()) {
                match d {
                    TDim::Val(v) if *v != n as i64 => {
                        bail!("input '{name}' has shape {:?} but the model expects [{}]", tensor.shape(), declared())
                    }
                    TDim::Sym(sym) => {
                        let key = sym.to_string();
                        match bound.get(&key) {
                            Some((v, from)) if *v != n as i64 => bail!(
                                "input '{name}' has shape {:?}: its dim {key} is {n} but input '{from}' made it {v}",
                                tensor.shape()
                            ),
                            Some(_) => {}
                            None => {
                                bound.insert(key, (n as i64, name.clone()));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The decoded ONNX model.
    pub fn proto(&self) -> &pb::ModelProto {
        &self.proto
    }

    /// The inference model (as parsed, with any input shapes set).
    pub fn inference_model(&self) -> &InferenceModel {
        &self.inference
    }

    /// The names of the graph inputs that must be fed (initializers excluded).
    pub fn input_names(&self) -> Vec<String> {
        self.inference.inputs.iter().map(|o| self.inference.node(o.node).name.clone()).collect()
    }

    /// The names of the graph outputs.
    pub fn output_names(&self) -> Vec<String> {
        self.proto.graph.as_ref().map(|g| g.output.iter().map(|o| o.name.clone()).collect()).unwrap_or_default()
    }

    fn input_index(&self, name: &str) -> anyhow::Result<usize> {
        self.input_names().iter().position(|n| n == name).with_context(|| {
            format!("the graph has no input named '{name}' (inputs: {})", self.input_names().join(", "))
        })
    }

    /// Sets an input's shape from dims such as `["N", "3"]` (integers or symbol expressions); the element
    /// type stays what the model declares.
    pub fn set_input_shape(&mut self, name: &str, dims: &[&str]) -> anyhow::Result<()> {
        let ix = self.input_index(name)?;
        let shape: TVec<TDim> = dims
            .iter()
            .map(|d| {
                crate::symbolic::parse_dim(&self.inference.symbols, d)
                    .with_context(|| format!("bad dim '{}' for input '{name}'", crate::symbolic::excerpt(d)))
            })
            .collect::<anyhow::Result<_>>()?;
        let mut fact = self.inference.input_fact(ix)?.clone();
        fact = fact.with_shape(ShapeFactoid::from(shape));
        self.inference.set_input_fact(ix, fact)?;
        Ok(())
    }

    /// Adds an assumption about symbols, such as `N>=2` (or several joined with `&&`), used to simplify
    /// shapes.
    pub fn assume(&mut self, expr: &str) -> anyhow::Result<()> {
        let context = || format!("bad assumption '{}'", crate::symbolic::excerpt(expr));
        // tract's own parser is recursive: it only ever reads our canonical, depth-bounded text.
        for a in crate::symbolic::parse_assumption(&self.inference.symbols, expr).with_context(context)? {
            self.inference.symbols.add_assertion(a.tract_text()).with_context(context)?;
        }
        Ok(())
    }

    /// The typed model: every value's fact is exact (not yet decluttered).
    pub fn typed(&self) -> anyhow::Result<TypedModel> {
        guard("typing the model", || self.inference.clone().into_typed())
    }

    /// The inferred facts of the graph inputs, every node output and the graph outputs, in graph order.
    pub fn infer(&self) -> anyhow::Result<Vec<ValueFact>> {
        let typed = self.typed()?;
        let graph = self.proto.graph.as_ref().context("the model has no graph")?;
        let mut by_label = std::collections::HashMap::new();
        for node in typed.nodes() {
            for (slot, _) in node.outputs.iter().enumerate() {
                let outlet = OutletId::new(node.id, slot);
                if let Some(label) = typed.outlet_label(outlet) {
                    by_label.insert(label.to_string(), outlet);
                }
            }
            by_label.entry(node.name.clone()).or_insert(OutletId::new(node.id, 0));
        }
        let initializers: std::collections::HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
        let mut names: Vec<&str> =
            graph.input.iter().map(|i| i.name.as_str()).filter(|n| !initializers.contains(n)).collect();
        names.extend(graph.node.iter().flat_map(|n| n.output.iter().map(String::as_str)).filter(|n| !n.is_empty()));
        names.extend(graph.output.iter().map(|o| o.name.as_str()));
        let mut seen = std::collections::HashSet::new();
        let mut facts = vec![];
        let mut analysed: Option<std::collections::HashMap<String, InferenceFact>> = None;
        for name in names {
            if !seen.insert(name) {
                continue;
            }
            if let Some(outlet) = by_label.get(name) {
                let fact = typed.outlet_fact(*outlet)?;
                // Simplified here, once, under the model's assumptions (construction only reduces).
                let shape = fact.shape.iter().map(|d| d.clone().simplify()).collect();
                facts.push(ValueFact { name: name.to_string(), dtype: fact.datum_type, shape });
                continue;
            }
            // Typing folds some values into constants without their names (a Shape of a Shape);
            // analysis still knows them.
            if analysed.is_none() {
                analysed = Some(self.value_facts()?);
            }
            let fact = analysed.as_ref().and_then(|a| a.get(name));
            let known = fact.and_then(|f| Some((f.datum_type.concretize()?, f.shape.concretize()?)));
            let (dtype, shape) = known.with_context(|| format!("no inferred fact for value '{name}'"))?;
            facts.push(ValueFact {
                name: name.to_string(),
                dtype,
                shape: shape.iter().map(|d| d.clone().simplify()).collect(),
            });
        }
        Ok(facts)
    }

    /// What analysis knows of every named value (graph inputs, node outputs), even where some node
    /// stops the analysis short (an op of an unknown domain): type, shape and value when known.
    pub fn value_facts(&self) -> anyhow::Result<std::collections::HashMap<String, InferenceFact>> {
        let mut model = self.inference.clone();
        // Not obstinate: what cannot be inferred stays unknown. A rule that fails (an invalid node) is an
        // error, except at an op tract does not know (an unknown domain's node): analysis stops there and
        // what it found so far is kept.
        if let Err(e) = guard("analysing the model", || model.analyse(false).map(|_| ())) {
            let culprit = e.chain().find_map(|c| crate::report::tract_node(&c.to_string()));
            let unknown_op = culprit
                .and_then(|(name, _)| model.nodes().iter().find(|n| n.name == name))
                .is_some_and(|n| n.op.name().starts_with("Unimplemented"));
            if !unknown_op {
                return Err(e);
            }
        }
        let mut facts = std::collections::HashMap::new();
        for node in model.nodes() {
            for (slot, output) in node.outputs.iter().enumerate() {
                if let Some(label) = model.outlet_label(OutletId::new(node.id, slot)) {
                    facts.insert(label.to_string(), output.fact.clone());
                }
            }
            facts
                .entry(node.name.clone())
                .or_insert_with(|| node.outputs.first().map(|o| o.fact.clone()).unwrap_or_default());
        }
        Ok(facts)
    }

    /// The decluttered and optimized model.
    pub fn optimized(&self) -> anyhow::Result<TypedModel> {
        guard("optimizing the model", || self.inference.clone().into_optimized())
    }

    /// The decluttered model (folded, views composed), before codegen.
    pub fn decluttered(&self) -> anyhow::Result<TypedModel> {
        let mut typed = self.typed()?;
        guard("decluttering the model", || typed.declutter())?;
        Ok(typed)
    }

    /// A runnable plan of the optimized model.
    pub fn plan(&self) -> anyhow::Result<Arc<TypedRunnableModel>> {
        let optimized = self.optimized()?;
        guard("planning the model", || optimized.into_runnable())
    }

    /// Runs the model on its inputs, in the order of [`Model::input_names`]; returns the outputs named.
    pub fn run(&self, inputs: Vec<Tensor>) -> anyhow::Result<Vec<(String, Tensor)>> {
        self.check_inputs(&inputs)?;
        let plan = self.plan()?;
        let outputs = guard("running the model", || plan.run(inputs.into_iter().map(TValue::from).collect()))?;
        let names = self.output_names();
        names
            .into_iter()
            .zip(outputs)
            .map(|(name, t)| Ok((name.clone(), onnx_tensor(&name, t.into_tensor())?)))
            .collect()
    }

    /// Declared shapes (value_info, graph outputs) that contradict the inferred `facts` (from
    /// [`Model::infer`]): one message each. Declared shapes are hints; inference wins.
    pub fn shape_warnings(&self, facts: &[ValueFact]) -> anyhow::Result<Vec<String>> {
        let graph = self.proto.graph.as_ref().context("the model has no graph")?;
        let mut warnings = vec![];
        for info in graph.value_info.iter().chain(graph.output.iter()) {
            let Some(pb::type_proto::Value::TensorType(t)) = info.r#type.as_ref().and_then(|t| t.value.as_ref()) else {
                continue;
            };
            let Some(declared) = &t.shape else { continue };
            let Some(fact) = facts.iter().find(|f| f.name == info.name) else { continue };
            let declared_dims: Vec<String> = declared
                .dim
                .iter()
                .map(|d| match &d.value {
                    Some(pb::tensor_shape_proto::dimension::Value::DimValue(v)) => v.to_string(),
                    Some(pb::tensor_shape_proto::dimension::Value::DimParam(p)) => p.clone(),
                    None => "?".to_string(),
                })
                .collect();
            let inferred: Vec<String> = fact.shape.iter().map(|d| d.to_string()).collect();
            let contradicts = declared_dims.len() != inferred.len()
                || declared.dim.iter().zip(&fact.shape).any(|(d, f)| match &d.value {
                    Some(pb::tensor_shape_proto::dimension::Value::DimValue(v)) => f.as_i64() != Some(*v),
                    Some(pb::tensor_shape_proto::dimension::Value::DimParam(_)) => f.as_i64().is_some(),
                    _ => false,
                });
            if contradicts {
                warnings.push(format!(
                    "value '{}' is declared with shape [{}] but inference gives [{}]; using the inferred shape",
                    info.name,
                    declared_dims.join(","),
                    inferred.join(",")
                ));
            }
        }
        Ok(warnings)
    }
}

/// Structural checks of a graph before tract sees it: every node input is defined (by a graph input, an
/// initializer, or a node), and the nodes have no cycle. Errors name a node.
/// An output as ONNX types it: tract computes shapes (a `Shape` node and what follows it) as dims, which
/// ONNX declares int64; their values are converted exactly.
fn onnx_tensor(name: &str, t: Tensor) -> anyhow::Result<Tensor> {
    if !t.datum_type().is_tdim() {
        return Ok(t);
    }
    let dims = t.try_as_plain_ram()?.as_slice::<TDim>()?;
    let values: Vec<i64> = dims
        .iter()
        .map(|d| d.to_i64().with_context(|| format!("output '{name}' holds the symbolic value {d}")))
        .collect::<anyhow::Result<_>>()?;
    Ok(tract_ndarray::ArrayD::from_shape_vec(t.shape(), values)?.into_tensor())
}

/// The model with its nodes renamed where two share a name (`name`, then `name.1`, `name.2`, ..), or
/// `None` if every name is already unique. tract names a node after its name, else its first output, and
/// refuses duplicates ("Duplicate node name"), which ONNX allows: names are for diagnostics. Unique names
/// also let translation skip tract's scan of every node for a duplicate, quadratic over a large graph.
fn unique_node_names(proto: &pb::ModelProto) -> Option<pb::ModelProto> {
    use std::collections::HashSet;
    let effective =
        |n: &pb::NodeProto| if n.name.is_empty() { n.output.first().cloned() } else { Some(n.name.clone()) };
    let nodes = &proto.graph.as_ref()?.node;
    let mut seen = HashSet::new();
    if nodes.iter().filter_map(effective).all(|name| seen.insert(name)) {
        return None;
    }
    let mut renamed = proto.clone();
    let graph = renamed.graph.as_mut()?;
    let mut taken: HashSet<String> = graph.node.iter().filter_map(effective).collect();
    let mut seen = HashSet::new();
    // The next suffix to try for each name: every smaller one is taken, so the search resumes there
    // (linear overall, where restarting from 1 was quadratic for many nodes sharing a name).
    let mut next_suffix: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for node in &mut graph.node {
        let Some(name) = effective(node) else { continue };
        if !seen.insert(name.clone()) {
            let i = next_suffix.entry(name.clone()).or_insert(1);
            let mut fresh = format!("{name}.{i}");
            while taken.contains(&fresh) {
                *i += 1;
                fresh = format!("{name}.{i}");
            }
            *i += 1;
            taken.insert(fresh.clone());
            seen.insert(fresh.clone());
            node.name = fresh;
        }
    }
    Some(renamed)
}

fn check_structure(graph: &pb::GraphProto) -> anyhow::Result<()> {
    use std::collections::{HashMap, HashSet};
    let label = |n: &pb::NodeProto| {
        let name = if n.name.is_empty() { n.output.first().cloned().unwrap_or_default() } else { n.name.clone() };
        format!("node '{name}' ({})", n.op_type)
    };
    let mut defined: HashSet<&str> = graph.input.iter().map(|i| i.name.as_str()).collect();
    defined.extend(graph.initializer.iter().map(|t| t.name.as_str()));
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (ix, node) in graph.node.iter().enumerate() {
        for o in node.output.iter().filter(|o| !o.is_empty()) {
            producer.insert(o.as_str(), ix);
        }
    }
    for node in &graph.node {
        for input in node.input.iter().filter(|i| !i.is_empty()) {
            if !defined.contains(input.as_str()) && !producer.contains_key(input.as_str()) {
                bail!("{}: input '{input}' is not defined by any graph input, initializer or node", label(node));
            }
        }
    }
    for output in &graph.output {
        if !defined.contains(output.name.as_str()) && !producer.contains_key(output.name.as_str()) {
            bail!("graph output '{}' is not defined by any graph input, initializer or node", output.name);
        }
    }
    // Kahn's algorithm: whatever cannot be ordered is on or behind a cycle.
    let mut pending: Vec<usize> = graph
        .node
        .iter()
        .map(|n| n.input.iter().filter(|i| !i.is_empty() && producer.contains_key(i.as_str())).count())
        .collect();
    let mut readers: HashMap<usize, Vec<usize>> = HashMap::new();
    for (ix, node) in graph.node.iter().enumerate() {
        for input in node.input.iter().filter(|i| !i.is_empty()) {
            if let Some(&p) = producer.get(input.as_str()) {
                readers.entry(p).or_default().push(ix);
            }
        }
    }
    let mut ready: Vec<usize> = (0..graph.node.len()).filter(|&i| pending[i] == 0).collect();
    let mut ordered = 0;
    while let Some(ix) = ready.pop() {
        ordered += 1;
        for &r in readers.get(&ix).map(Vec::as_slice).unwrap_or(&[]) {
            pending[r] -= 1;
            if pending[r] == 0 {
                ready.push(r);
            }
        }
    }
    if ordered < graph.node.len() {
        let stuck = (0..graph.node.len()).find(|&i| pending[i] > 0).expect("some node is not ordered");
        bail!("{}: the graph has a cycle through this node", label(&graph.node[stuck]));
    }
    Ok(())
}

/// Runs tract's part of the work, turning a panic inside it into an error: tract's own ops can panic on
/// hostile models (an Unsqueeze axis of 10^16, found by fuzzing), and a model from a stranger must never
/// bring the process down. The panic message is kept in the error.
fn guard<T>(what: &str, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            bail!("tract failed while {what}: {message}")
        }
    }
}
