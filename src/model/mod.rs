//! The public API over a loaded model: load from a path or bytes, set input shapes and assumptions,
//! analyse it (every value's type and shape), run it.
//!
//! Running binds every input to the tensor it is given (its element type and concrete shape), so a
//! model runs whatever its declared dims say, as onnxruntime does; the optimized plan is kept per
//! input signature, so repeated runs with the same shapes optimize once.

mod feeds;
mod outer_refs;
mod overrides;
mod plans;
mod prepare;
mod runtime_dims;
mod types;
mod warnings;

pub(crate) use outer_refs::reads;
pub(crate) use types::Proxies;

use crate::analysis::{self, Analysis, Binding, DeclaredDim, DeclaredInput};
use crate::guard::guard;
use crate::plan::{memory, optimize};
use anyhow::{bail, Context};
use plans::PlanCache;
use prost::Message;
use std::collections::HashMap;
use std::path::Path;
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

pub(crate) use crate::analysis::ValueFact;

/// A loaded ONNX model, ready to analyse and run.
#[derive(Debug)]
pub struct Model {
    proto: pb::ModelProto,
    /// The main graph as tract parsed it: node names made unique.
    graph: pb::GraphProto,
    inference: InferenceModel,
    declared: Vec<DeclaredInput>,
    /// Element types tract lacks, replaced for analysis.
    proxies: Proxies,
    input_shapes: HashMap<String, Vec<String>>,
    assumptions: Vec<String>,
    /// The analysis under the declared shapes and assumptions, once made: symbolic dims print by
    /// name only while their scope (held by the analysis) lives.
    analysis: std::sync::Mutex<Option<Arc<Analysis>>>,
    plans: PlanCache,
    /// The thread budget of the plans made (see [`Model::set_threads`]).
    threads: Option<usize>,
}

impl Clone for Model {
    fn clone(&self) -> Model {
        Model {
            proto: self.proto.clone(),
            graph: self.graph.clone(),
            inference: self.inference.clone(),
            declared: self.declared.clone(),
            proxies: self.proxies.clone(),
            input_shapes: self.input_shapes.clone(),
            assumptions: self.assumptions.clone(),
            analysis: std::sync::Mutex::new(self.analysis.lock().unwrap_or_else(|e| e.into_inner()).clone()),
            plans: PlanCache::default(),
            threads: self.threads,
        }
    }
}

/// Decodes model bytes, with a clear error for what is not a model.
pub(crate) fn decode_proto(bytes: &[u8]) -> anyhow::Result<pb::ModelProto> {
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
        // If and Loop branches the analysis builds are planned by the plan layer.
        analysis::install_planner(analysis::Planner { check: memory::check_values, plan: plan_branch });
        let graph = proto.graph.as_ref().context("not a valid ONNX model: it has no graph")?;
        prepare::check_structure(graph)?;
        // External data checked and read by us (tract never opens a file); uint64_data made readable.
        crate::load::prepare_for_tract(&mut proto, dir.map(Path::new))?;
        let mut typed_proto = proto.clone();
        let proxies = types::replace(&mut typed_proto)?;
        let prepared = prepare::for_tract(&typed_proto);
        let graph = typed_proto.graph.as_ref().context("not a valid ONNX model: it has no graph")?;
        let parsed = crate::guard::guard("parsing the model", || crate::ops::onnx_parser().parse(&prepared, dir))?;
        if !parsed.unresolved_inputs.is_empty() {
            bail!("the graph uses values nothing defines: {}", parsed.unresolved_inputs.join(", "));
        }
        let declared = DeclaredInput::from_graph(graph);
        let graph = prepared.graph.clone().unwrap_or_default();
        ensure!(
            declared.len() == parsed.model.inputs.len(),
            "the model declares {} inputs but tract found {}",
            declared.len(),
            parsed.model.inputs.len()
        );
        Ok(Model {
            proto,
            graph,
            inference: parsed.model,
            declared,
            proxies,
            input_shapes: HashMap::new(),
            assumptions: vec![],
            analysis: std::sync::Mutex::new(None),
            plans: PlanCache::default(),
            threads: None,
        })
    }

    /// Checks inputs against the model's declared inputs: count, dtype, rank, known dims, and symbols
    /// bound consistently across inputs (a dim `K` must be the same everywhere it appears).
    pub(crate) fn check_inputs(&self, inputs: &[Tensor]) -> anyhow::Result<()> {
        let names = self.input_names();
        if inputs.len() != names.len() {
            bail!("the model takes {} inputs ({}), got {}", names.len(), names.join(", "), inputs.len());
        }
        let mut bound: HashMap<String, (i64, String)> = HashMap::new();
        let numpy = crate::npy::numpy_name;
        for (decl, tensor) in self.declared.iter().zip(inputs) {
            let name = &decl.name;
            if let Ok(dt) = analysis::bind_datum_type(decl) {
                let same = dt == tensor.datum_type() || (dt == DatumType::I64 && tensor.datum_type().is_tdim());
                if !same {
                    bail!("input '{name}' is {} but the model expects {}", numpy(tensor.datum_type()), numpy(dt));
                }
            }
            // The shape set with `set_input_shape` takes the place of the declared one.
            let given: Option<Vec<DeclaredDim>> = self.input_shapes.get(name).map(|texts| {
                texts
                    .iter()
                    .map(|t| match t.trim().parse::<i64>() {
                        Ok(v) => DeclaredDim::Value(v),
                        Err(_) => DeclaredDim::Param(t.clone()),
                    })
                    .collect()
            });
            let Some(dims) = given.as_ref().or(decl.dims.as_ref()) else { continue };
            let declared = || dims.iter().map(declared_text).collect::<Vec<_>>().join(",");
            if dims.len() != tensor.rank() {
                bail!("input '{name}' has shape {:?} but the model expects [{}]", tensor.shape(), declared());
            }
            for (d, &n) in dims.iter().zip(tensor.shape()) {
                match d {
                    DeclaredDim::Value(v) if *v != n as i64 => {
                        bail!("input '{name}' has shape {:?} but the model expects [{}]", tensor.shape(), declared())
                    }
                    DeclaredDim::Param(p) if is_identifier(p) => match bound.get(p.trim()) {
                        Some((v, from)) if *v != n as i64 => bail!(
                            "input '{name}' has shape {:?}: its dim {} is {n} but input '{from}' made it {v}",
                            tensor.shape(),
                            p.trim()
                        ),
                        Some(_) => {}
                        None => {
                            bound.insert(p.trim().to_string(), (n as i64, name.clone()));
                        }
                    },
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

    /// The model as tract-onnx parsed it, with sliceops' builders (input facts are set by analysis).
    pub fn inference_model(&self) -> &InferenceModel {
        &self.inference
    }

    /// The main graph as analysis sees it (node names made unique).
    pub fn graph(&self) -> &pb::GraphProto {
        &self.graph
    }

    /// The assumptions given with [`Model::assume`].
    pub fn assumptions(&self) -> &[String] {
        &self.assumptions
    }

    /// The graph inputs as the model declares them (initializers excluded), in order.
    pub fn declared_inputs(&self) -> &[DeclaredInput] {
        &self.declared
    }

    /// The graph outputs as the model declares them, in order.
    pub fn declared_outputs(&self) -> Vec<DeclaredInput> {
        self.proto.graph.as_ref().map(|g| g.output.iter().map(DeclaredInput::of_value).collect()).unwrap_or_default()
    }

    /// The names of the graph inputs that must be fed (initializers excluded).
    pub fn input_names(&self) -> Vec<String> {
        self.declared.iter().map(|d| d.name.clone()).collect()
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

    /// Sets an input's shape for analysis from dims such as `["N", "3"]` (integers or symbol
    /// expressions); the element type stays what the model declares. A rank other than the declared
    /// one is an error.
    pub fn set_input_shape(&mut self, name: &str, dims: &[&str]) -> anyhow::Result<()> {
        let ix = self.input_index(name)?;
        let scratch = SymbolScope::default();
        for d in dims {
            let shown = crate::symbolic::excerpt(d);
            let dim = crate::symbolic::parse_dim(&scratch, d)
                .with_context(|| format!("bad dim '{shown}' for input '{name}'"))?;
            if dim.as_i64().is_some_and(|v| v < 0) {
                bail!("bad dim '{shown}' for input '{name}': a dim is a size, never negative");
            }
        }
        if let Some(declared) = &self.declared[ix].dims {
            if declared.len() != dims.len() {
                let text = declared.iter().map(declared_text).collect::<Vec<_>>().join(",");
                bail!(
                    "input '{name}' has rank {} ([{text}]) but the shape given has {} dims",
                    declared.len(),
                    dims.len()
                );
            }
        }
        self.input_shapes.insert(name.to_string(), dims.iter().map(|d| d.trim().to_string()).collect());
        self.forget();
        Ok(())
    }

    /// Adds an assumption about symbols, such as `N>=2` (or several joined with `&&`), used to simplify
    /// shapes.
    pub fn assume(&mut self, expr: &str) -> anyhow::Result<()> {
        analysis::check_assumption(expr)?;
        self.assumptions.push(expr.trim().to_string());
        self.forget();
        Ok(())
    }

    /// Drops what was derived from the input shapes and assumptions.
    fn forget(&mut self) {
        *self.analysis.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        self.plans.clear();
    }

    fn source(&self) -> analysis::Source<'_> {
        analysis::Source {
            inference: &self.inference,
            graph: &self.graph,
            inputs: &self.declared,
            opsets: &self.proto.opset_import,
        }
    }

    /// Analyses the model with its declared input shapes (as set by [`Model::set_input_shape`]) and
    /// assumptions: every value's type and shape, the symbols and their origins, the requirements.
    /// Made once and kept until the shapes or assumptions change. Symbolic dims print by name while the
    /// analysis (or the model) lives.
    pub fn analyse(&self) -> anyhow::Result<Arc<Analysis>> {
        let mut cached = self.analysis.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = cached.as_ref() {
            return Ok(a.clone());
        }
        let mut a = analysis::analyse(
            &self.source(),
            &Binding::Declared(self.input_shapes.clone()),
            &self.assumptions,
            analysis::Options::default(),
        )?;
        a.type_names = self.proxies.names.clone();
        let a = Arc::new(a);
        *cached = Some(a.clone());
        Ok(a)
    }

    /// The model analysed once per outcome of the `If` conditions [`Model::analyse`] cannot decide
    /// and whose branches give different shapes (`sr == 16000`, `input_d0 == 1`): every value
    /// exact under each outcome's conditions. Empty when there are none; at most
    /// [`analysis::MAX_CASES`] outcomes, split in the order the conditions are met.
    pub fn cases(&self) -> anyhow::Result<Vec<analysis::Case>> {
        let base = self.analyse()?;
        let mut cases = analysis::analyse_cases(
            &self.source(),
            &Binding::Declared(self.input_shapes.clone()),
            &self.assumptions,
            analysis::Options::default(),
            &base,
        )?;
        for case in &mut cases {
            case.analysis.type_names = self.proxies.names.clone();
        }
        Ok(cases)
    }

    /// Analyses the model as [`Model::analyse`] does, with these options (not kept).
    pub(crate) fn analyse_with(&self, options: analysis::Options) -> anyhow::Result<Analysis> {
        let mut a = analysis::analyse(
            &self.source(),
            &Binding::Declared(self.input_shapes.clone()),
            &self.assumptions,
            options,
        )?;
        a.type_names = self.proxies.names.clone();
        Ok(a)
    }

    /// Analyses the model with its inputs bound to these element types and shapes.
    pub(crate) fn analyse_for(&self, inputs: &[(DatumType, Vec<usize>)]) -> anyhow::Result<Analysis> {
        analysis::analyse(
            &self.source(),
            &Binding::Concrete(inputs.to_vec()),
            &self.assumptions,
            analysis::Options::default(),
        )
    }

    /// The typed model: every value's fact is exact (not yet decluttered).
    pub fn typed(&self) -> anyhow::Result<TypedModel> {
        let analysis = self.analyse()?;
        if let Some((value, why)) = first_unknown(&self.graph, &analysis.unknown) {
            bail!("value '{value}' cannot be typed: {why}");
        }
        Ok(analysis.typed.clone())
    }

    /// The inferred facts of the graph inputs, every node output and the graph outputs, in graph order.
    /// Values whose facts cannot be known are left out (see [`Model::analyse`] for them).
    pub fn infer(&self) -> anyhow::Result<Vec<ValueFact>> {
        let analysis = self.analyse()?;
        analysis.value_facts(&self.graph)
    }

    /// What analysis knows of every named value: type, shape and value when constant.
    pub fn value_facts(&self) -> anyhow::Result<HashMap<String, InferenceFact>> {
        let analysis = self.analyse()?;
        let mut facts = HashMap::new();
        for (name, outlet) in &analysis.outlets {
            let fact = analysis.typed.outlet_fact(*outlet)?;
            let mut f = InferenceFact::dt_shape(fact.datum_type, fact.shape.iter());
            if let Some(k) = &fact.konst {
                f.value = k.clone().into();
            }
            facts.insert(name.clone(), f);
        }
        Ok(facts)
    }

    /// The decluttered and optimized model (symbolic dims as declared).
    pub fn optimized(&self) -> anyhow::Result<TypedModel> {
        let typed = self.typed()?;
        guard("optimizing the model", || optimize::optimize(typed))
    }

    /// The model optimized as tract's own optimizer would (symbolic dims as declared), without our
    /// rewrites of the plan (hard swish, small convolutions, layer norms, small matrix products): what
    /// [`Model::optimized`] is compared with, to show our optimizer driver changes nothing else.
    pub fn optimized_without_rewrites(&self) -> anyhow::Result<TypedModel> {
        let typed = self.typed()?;
        guard("optimizing the model", || optimize::optimize_with(typed, false))
    }

    /// The decluttered model (folded, views composed), before codegen.
    pub fn decluttered(&self) -> anyhow::Result<TypedModel> {
        let mut typed = self.typed()?;
        guard("decluttering the model", || optimize::declutter(&mut typed))?;
        Ok(typed)
    }

    /// A runnable plan of the optimized model (symbolic dims as declared).
    pub fn plan(&self) -> anyhow::Result<Arc<TypedRunnableModel>> {
        let optimized = self.optimized()?;
        guard("planning the model", || optimized.into_runnable())
    }

    /// The runnable plan for inputs of these types and shapes: made once, then kept.
    pub fn plan_for(&self, inputs: &[Tensor]) -> anyhow::Result<Arc<TypedRunnableModel>> {
        if !self.proxies.replaced.is_empty() {
            bail!(
                "the model uses {}, which tract cannot compute: infer, fold and lower work on it, run does not",
                self.proxies.replaced.join(", ")
            );
        }
        let signature: Vec<(DatumType, Vec<usize>)> =
            inputs.iter().map(|t| (t.datum_type(), t.shape().to_vec())).collect();
        self.plans.get_or_make(&signature, || {
            let typed = match self.kept_analysis_for(&signature) {
                Some(kept) => kept.typed.clone(),
                None => {
                    let analysis = self.analyse_for(&signature)?;
                    if let Some((value, why)) = first_unknown(&self.graph, &analysis.unknown) {
                        return Err(Unknown(format!("value '{value}' cannot be computed: {why}")).into());
                    }
                    analysis.typed
                }
            };
            self.plan_typed(typed)
        })
    }

    /// The runnable plan of an analysed model: optimized, the sizes only a run knows bound when it
    /// runs, values checked against the memory limits, with the model's thread budget (or the
    /// default for its work).
    fn plan_typed(&self, mut typed: TypedModel) -> anyhow::Result<Arc<TypedRunnableModel>> {
        let outputs = runtime_dims::keep_binders(&mut typed)?;
        let mut optimized = guard("optimizing the model", || optimize::optimize(typed))?;
        let deps = guard("binding sizes known when the model runs", || runtime_dims::bind(&mut optimized, outputs))?;
        memory::check_values(&optimized)?;
        let threads = self.threads.or_else(|| crate::threads::default_budget(crate::plan::work::macs(&optimized)));
        guard("planning the model", || crate::threads::plan_ordered(optimized, threads, &deps, true))
    }

    /// A plan for these very inputs, values included, when the one for their shapes cannot be made
    /// because a value's type or rank depends on their values (an `If` on a value whose branches
    /// return different ranks): `None` when their values do not help either. Not kept: it holds
    /// for these values only.
    fn plan_for_values(&self, inputs: &[Tensor]) -> anyhow::Result<Option<Arc<TypedRunnableModel>>> {
        if !self.proxies.replaced.is_empty() {
            return Ok(None);
        }
        let values = inputs.iter().map(|t| Arc::new(t.clone())).collect();
        let Ok(analysis) = analysis::analyse(
            &self.source(),
            &Binding::Values(values),
            &self.assumptions,
            analysis::Options::default(),
        ) else {
            return Ok(None);
        };
        if first_unknown(&self.graph, &analysis.unknown).is_some() {
            return Ok(None);
        }
        self.plan_typed(analysis.typed).map(Some)
    }

    /// Sets the thread budget of the plans [`Model::run`] and [`Model::plan_for`] make from now on
    /// (plans made before are dropped). `Some(n)`: tract's kernels run on `n` threads (its
    /// multithreaded executor, single-threaded for 1) and sliceops' copy kernel uses at most `n`.
    /// `None`, the default: a budget of all physical cores for a plan of at least
    /// 2^28 multiply-adds a run (`DEFAULT_PARALLEL_MACS`, counted by `plan::work::macs`),
    /// else tract's own default executor (single-threaded unless the process set another) and
    /// copies split over all cores (docs/performance.md, "Default threads", has the figures). The
    /// budget is shared by tract's executor, our convolution, matrix, resize and activation kernels
    /// and the copy kernel.
    ///
    /// A budget of 0 threads, or of more than 1024 (`MAX_THREADS`), is an error and leaves the
    /// setting as it was.
    pub fn set_threads(&mut self, threads: Option<usize>) -> anyhow::Result<()> {
        if let Some(n) = threads {
            if n == 0 {
                bail!("a thread budget is at least 1 thread, got 0");
            }
            if n > crate::threads::MAX_THREADS {
                bail!("a thread budget is at most {} threads, got {n}", crate::threads::MAX_THREADS);
            }
        }
        if self.threads != threads {
            self.threads = threads;
            self.plans.clear();
        }
        Ok(())
    }

    /// The thread budget set with [`Model::set_threads`].
    pub fn threads(&self) -> Option<usize> {
        self.threads
    }

    /// The kept analysis ([`Model::analyse`]), when it was made for inputs of exactly these types and
    /// shapes (every declared dim concrete) and knows every value: analysing again for them would give
    /// the same typed model.
    fn kept_analysis_for(&self, signature: &[(DatumType, Vec<usize>)]) -> Option<Arc<Analysis>> {
        let kept = self.analysis.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
        if !kept.unknown.is_empty() || kept.typed.inputs.len() != signature.len() {
            return None;
        }
        for (outlet, (dt, shape)) in kept.typed.inputs.iter().zip(signature) {
            let fact = kept.typed.outlet_fact(*outlet).ok()?;
            if fact.datum_type != *dt || fact.shape.as_concrete()? != shape.as_slice() {
                return None;
            }
        }
        Some(kept)
    }

    /// How many plans [`Model::run`] has made so far (one per input signature).
    pub fn plans_made(&self) -> usize {
        self.plans.made()
    }

    /// Runs the model on its inputs, in the order of [`Model::input_names`]; returns the outputs named.
    pub fn run(&self, inputs: Vec<Tensor>) -> anyhow::Result<Vec<(String, Tensor)>> {
        self.run_inner(inputs, None)
    }

    /// [`Model::run`], stopped by `cancel`: its timeout (counted from this call, the plan's making
    /// included) or [`Cancel::cancel`] from another thread, checked before each node and each `Loop`
    /// iteration (see [`crate::Cancel`]). A stopped run returns an error holding
    /// [`crate::cancel::Cancelled`] (find it with `Cancelled::find`).
    ///
    /// [`Cancel::cancel`]: crate::cancel::Cancel::cancel
    pub fn run_with(
        &self,
        inputs: Vec<Tensor>,
        cancel: &crate::cancel::Cancel,
    ) -> anyhow::Result<Vec<(String, Tensor)>> {
        self.run_inner(inputs, Some(cancel))
    }

    fn run_inner(
        &self,
        inputs: Vec<Tensor>,
        cancel: Option<&crate::cancel::Cancel>,
    ) -> anyhow::Result<Vec<(String, Tensor)>> {
        let _scope = cancel.map(crate::cancel::Scope::enter);
        self.check_inputs(&inputs)?;
        let plan = match self.plan_for(&inputs) {
            Ok(plan) => plan,
            Err(e) if e.downcast_ref::<Unknown>().is_some() => self.plan_for_values(&inputs)?.ok_or(e)?,
            Err(e) => return Err(e),
        };
        let inputs = inputs.into_iter().map(TValue::from).collect();
        let outputs = guard("running the model", || crate::cancel::run_plan(&plan, inputs))?;
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
        warnings::shape_warnings(&self.proto, facts)
    }
}

/// The plan of an `If` branch or a `Loop` body: optimized as a model's, sizes only the data decides
/// bound when it runs (a `Shape` of a `ConstantOfShape` of a run-time value), as [`Model::plan_for`]
/// binds them.
fn plan_branch(model: TypedModel) -> TractResult<Arc<TypedRunnableModel>> {
    let mut model = model;
    let outputs = runtime_dims::keep_binders(&mut model)?;
    let mut optimized = optimize::optimize(model)?;
    let deps = runtime_dims::bind(&mut optimized, outputs)?;
    let low_ram = deps.is_empty();
    crate::threads::plan_ordered(optimized, None, &deps, low_ram)
}

fn is_identifier(text: &str) -> bool {
    let t = text.trim();
    t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

fn declared_text(d: &DeclaredDim) -> String {
    match d {
        DeclaredDim::Value(v) => v.to_string(),
        DeclaredDim::Param(p) => p.clone(),
        DeclaredDim::Unnamed(_) => "?".into(),
    }
}

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

/// A plan that cannot be made because a value's type or shape is unknown for these input shapes.
#[derive(Debug)]
struct Unknown(String);

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unknown {}

/// The unknown value to report: the first in graph order (the one nearest the cause), else the first
/// by name (not whichever the hash map holds first).
fn first_unknown<'a>(graph: &pb::GraphProto, unknown: &'a HashMap<String, String>) -> Option<(&'a String, &'a String)> {
    let in_order = graph.node.iter().flat_map(|n| &n.output).find_map(|o| unknown.get_key_value(o));
    in_order.or_else(|| unknown.iter().min_by_key(|(name, _)| *name))
}
