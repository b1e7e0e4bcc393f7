//! The `sliceops._sliceops` extension module: a thin layer over the `sliceops` crate. Models come in
//! as bytes or a path and go out as bytes; the Python package (`python/sliceops/__init__.py`) turns
//! `onnx.ModelProto`s into bytes and back. Every error of the core becomes a `ValueError` carrying the
//! line the CLI prints; the GIL is released while the core works. A run stopped by its cancel flag or
//! timeout raises `Cancelled` (a `RuntimeError`), which the package turns into `sliceops.RunCancelled`.

mod tensors;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sliceops::fold::FoldOptions;
use sliceops::DeclaredDim;
use sliceops::Model;
use std::path::{Path, PathBuf};

/// A core error as Python sees it: a `ValueError` with the CLI's message.
fn value_error(e: anyhow::Error) -> PyErr {
    PyValueError::new_err(sliceops::describe_error(&e))
}

pyo3::create_exception!(_sliceops, Cancelled, PyRuntimeError, "A run stopped by its cancel flag or its timeout.");

/// A run's error as Python sees it: `Cancelled` for a stopped run, else a `ValueError`.
fn run_error(e: anyhow::Error) -> PyErr {
    match sliceops::Cancelled::find(&e) {
        Some(c) => Cancelled::new_err(c.to_string()),
        None => value_error(e),
    }
}

/// A flag that stops the runs given it, set from any thread (`RunOptions.terminate`).
#[pyclass(frozen, module = "sliceops._sliceops")]
#[derive(Default)]
struct CancelFlag {
    cancel: sliceops::Cancel,
}

#[pymethods]
impl CancelFlag {
    #[new]
    fn new() -> CancelFlag {
        CancelFlag::default()
    }

    /// Stops every run given this flag at its next check (before each node and `Loop` iteration),
    /// and every run started with it until `reset`.
    fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Lets runs started from now on go on.
    fn reset(&self) {
        self.cancel.reset();
    }

    /// Whether the flag is set.
    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// The longest timeout a run accepts: a year, in seconds (as the CLI's `--timeout`).
const MAX_TIMEOUT_S: f64 = 31_536_000.0;

/// A run's timeout in seconds, checked: more than 0 and at most a year.
fn timeout(seconds: Option<f64>) -> PyResult<Option<std::time::Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) if s > 0.0 && s <= MAX_TIMEOUT_S => Ok(Some(std::time::Duration::from_secs_f64(s))),
        Some(s) => Err(PyValueError::new_err(format!(
            "the timeout must be more than 0 and at most {MAX_TIMEOUT_S} seconds, got {s}"
        ))),
    }
}

/// A model given as bytes or as a path (`str` or `os.PathLike`).
enum Source {
    Bytes(Vec<u8>),
    Path(PathBuf),
}

impl Source {
    fn extract(model: &Bound<'_, PyAny>) -> PyResult<Source> {
        if let Ok(bytes) = model.cast::<PyBytes>() {
            return Ok(Source::Bytes(bytes.as_bytes().to_vec()));
        }
        match model.extract::<PathBuf>() {
            Ok(path) => Ok(Source::Path(path)),
            Err(_) => Err(PyValueError::new_err(format!(
                "a model is bytes or a path, not {}",
                model.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "this".into())
            ))),
        }
    }

    /// The model's bytes and the folder its external data is looked up in (the CLI's checks on files).
    fn read(&self) -> anyhow::Result<(std::borrow::Cow<'_, [u8]>, Option<&Path>)> {
        match self {
            Source::Bytes(b) => Ok((b.as_slice().into(), None)),
            Source::Path(p) => Ok((sliceops::read_model_file(p)?.into(), p.parent())),
        }
    }
}

/// `(name, [dims as text])` pairs and assumptions as the fold and infer options take them.
fn options(input_shapes: Vec<(String, Vec<String>)>, assume: Vec<String>, exact: bool) -> FoldOptions {
    FoldOptions { exact, input_shapes, assumptions: assume }
}

fn configured(source: &Source, options: &FoldOptions) -> anyhow::Result<Model> {
    let (bytes, dir) = source.read()?;
    let mut m = Model::load_bytes_in(&bytes, dir)?;
    for (name, dims) in &options.input_shapes {
        let dims: Vec<&str> = dims.iter().map(String::as_str).collect();
        m.set_input_shape(name, &dims)?;
    }
    for a in &options.assumptions {
        m.assume(a)?;
    }
    Ok(m)
}

/// `sliceops infer --format json` as a string, and the warnings and notes it prints on stderr.
#[pyfunction]
#[pyo3(signature = (model, input_shapes, assume))]
fn infer_json(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    input_shapes: Vec<(String, Vec<String>)>,
    assume: Vec<String>,
) -> PyResult<(String, Vec<String>)> {
    let source = Source::extract(model)?;
    let options = options(input_shapes, assume, false);
    py.detach(|| -> anyhow::Result<(String, Vec<String>)> {
        let m = configured(&source, &options)?;
        let analysis = m.analyse()?;
        let facts = analysis.value_facts(m.graph())?;
        let notes = sliceops::report::infer_notes(&m, &analysis, &facts)?;
        let cases = m.cases()?;
        let json = sliceops::report::analysis_json(&analysis, &cases, m.graph(), m.assumptions())?;
        Ok((serde_json::to_string(&json)?, notes))
    })
    .map_err(value_error)
}

/// `sliceops cost --format json` as a string: every figure as an expression of the model's dims, and
/// its value at the sizes `at` (by symbol name) when given.
#[pyfunction]
#[pyo3(signature = (model, input_shapes, assume, at))]
fn cost_json(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    input_shapes: Vec<(String, Vec<String>)>,
    assume: Vec<String>,
    at: Vec<(String, i64)>,
) -> PyResult<String> {
    let source = Source::extract(model)?;
    let options = options(input_shapes, assume, false);
    py.detach(|| -> anyhow::Result<String> {
        let m = configured(&source, &options)?;
        let cost = sliceops::cost::cost(&m)?;
        let sizes: sliceops::report::Sizes = at.into_iter().collect();
        cost.check_sizes(&sizes)?;
        let json = sliceops::report::cost_json(&cost, (!sizes.is_empty()).then_some(&sizes))?;
        Ok(serde_json::to_string(&json)?)
    })
    .map_err(value_error)
}

/// The model with a type and shape on every value, encoded, and the values left without one.
#[pyfunction]
#[pyo3(signature = (model, input_shapes, assume))]
fn infer_shapes<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    input_shapes: Vec<(String, Vec<String>)>,
    assume: Vec<String>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<String>)> {
    let source = Source::extract(model)?;
    let options = options(input_shapes, assume, false);
    let (bytes, unshaped) = py
        .detach(|| -> anyhow::Result<(Vec<u8>, Vec<String>)> {
            let (bytes, dir) = source.read()?;
            let (annotated, unshaped) = sliceops::fold::annotate_only(&bytes, dir, &options)?;
            Ok((prost::Message::encode_to_vec(&annotated), unshaped))
        })
        .map_err(value_error)?;
    Ok((PyBytes::new(py, &bytes), unshaped))
}

/// The folded model, encoded, and `fold`'s report as a dict.
#[pyfunction]
#[pyo3(signature = (model, exact, input_shapes, assume))]
fn fold<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    exact: bool,
    input_shapes: Vec<(String, Vec<String>)>,
    assume: Vec<String>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyDict>)> {
    let source = Source::extract(model)?;
    let options = options(input_shapes, assume, exact);
    let (bytes, report) = py
        .detach(|| -> anyhow::Result<_> {
            let (bytes, dir) = source.read()?;
            let (folded, report) = sliceops::fold::fold(&bytes, dir, &options)?;
            Ok((prost::Message::encode_to_vec(&folded), report))
        })
        .map_err(value_error)?;
    let dict = PyDict::new(py);
    dict.set_item("nodes_before", report.nodes_before)?;
    dict.set_item("nodes_after", report.nodes_after)?;
    let changes = PyDict::new(py);
    for (kind, n) in &report.changes {
        changes.set_item(*kind, *n)?;
    }
    dict.set_item("changes", changes)?;
    dict.set_item("unshaped", report.unshaped)?;
    dict.set_item("all_nodes_before", report.all_nodes_before)?;
    dict.set_item("all_nodes_after", report.all_nodes_after)?;
    dict.set_item("kept_subgraphs", report.kept_subgraphs)?;
    Ok((PyBytes::new(py, &bytes), dict))
}

/// The lowered model, encoded.
#[pyfunction]
fn lower<'py>(py: Python<'py>, model: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let source = Source::extract(model)?;
    let bytes = py
        .detach(|| -> anyhow::Result<Vec<u8>> {
            let (bytes, dir) = source.read()?;
            sliceops::onnx::lower(&bytes, dir)
        })
        .map_err(value_error)?;
    Ok(PyBytes::new(py, &bytes))
}

/// A declared dim as Python sees it: an int, a symbol's name, or None.
fn dim_object(py: Python<'_>, d: &DeclaredDim) -> PyResult<Py<PyAny>> {
    Ok(match d {
        DeclaredDim::Value(v) => v.into_pyobject(py)?.into_any().unbind(),
        DeclaredDim::Param(p) => p.into_pyobject(py)?.into_any().unbind(),
        DeclaredDim::Unnamed(_) => py.None(),
    })
}

/// A declared dim as onnxruntime's `NodeArg.shape` shows it: a `dim_param` as written (`"?"` too),
/// None for a negative size or a dim that says nothing.
fn ort_dim_object(py: Python<'_>, d: &DeclaredDim) -> PyResult<Py<PyAny>> {
    match d {
        DeclaredDim::Unnamed(text) if text.is_empty() || text.trim().parse::<i64>().is_ok() => Ok(py.None()),
        DeclaredDim::Unnamed(text) => Ok(text.into_pyobject(py)?.into_any().unbind()),
        other => dim_object(py, other),
    }
}

/// `(name, ONNX elem_type, dims or None)` of declared values.
type Declared = Vec<(String, i32, Option<Vec<Py<PyAny>>>)>;

fn declared(py: Python<'_>, values: &[sliceops::DeclaredInput], ort: bool) -> PyResult<Declared> {
    let dim = if ort { ort_dim_object } else { dim_object };
    values
        .iter()
        .map(|v| {
            let dims = match &v.dims {
                Some(dims) => Some(dims.iter().map(|d| dim(py, d)).collect::<PyResult<Vec<_>>>()?),
                None => None,
            };
            Ok((v.name.clone(), v.elem_type, dims))
        })
        .collect()
}

/// A loaded model that runs on numpy arrays; safe to share between threads.
#[pyclass(frozen, module = "sliceops._sliceops")]
struct Session {
    model: Model,
    metadata: Metadata,
}

/// The fields of `ModelProto` that onnxruntime's `ModelMetadata` shows, decoded alone (prost skips the
/// others, the graph's nodes and weights included): proto2's presence is kept, so that an unset
/// `model_version` reads as onnxruntime reads it.
#[derive(Clone, PartialEq, prost::Message)]
struct Metadata {
    #[prost(string, optional, tag = "2")]
    producer_name: Option<String>,
    #[prost(string, optional, tag = "4")]
    domain: Option<String>,
    #[prost(int64, optional, tag = "5")]
    model_version: Option<i64>,
    #[prost(string, optional, tag = "6")]
    doc_string: Option<String>,
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphMetadata>,
    #[prost(message, repeated, tag = "14")]
    metadata_props: Vec<Property>,
}

/// `GraphProto`'s name and doc string, decoded alone.
#[derive(Clone, PartialEq, prost::Message)]
struct GraphMetadata {
    #[prost(string, optional, tag = "2")]
    name: Option<String>,
    #[prost(string, optional, tag = "10")]
    doc_string: Option<String>,
}

/// A `StringStringEntryProto`.
#[derive(Clone, PartialEq, prost::Message)]
struct Property {
    #[prost(string, optional, tag = "1")]
    key: Option<String>,
    #[prost(string, optional, tag = "2")]
    value: Option<String>,
}

#[pymethods]
impl Session {
    #[new]
    #[pyo3(signature = (model, threads=None))]
    fn new(py: Python<'_>, model: &Bound<'_, PyAny>, threads: Option<usize>) -> PyResult<Session> {
        let source = Source::extract(model)?;
        let loaded = py
            .detach(|| -> anyhow::Result<(Model, Metadata)> {
                let (bytes, dir) = source.read()?;
                let mut m = Model::load_bytes_in(&bytes, dir)?;
                m.set_threads(threads)?;
                // The model decoded already: these fields decode too.
                let metadata = <Metadata as prost::Message>::decode(&*bytes)?;
                Ok((m, metadata))
            })
            .map_err(value_error)?;
        let (model, metadata) = loaded;
        Ok(Session { model, metadata })
    }

    /// The model as loaded, encoded, with its external data inlined: loading these bytes again (in
    /// another process) gives the same model.
    fn model_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| prost::Message::encode_to_vec(self.model.proto()));
        PyBytes::new(py, &bytes)
    }

    /// The thread budget the session was made with (None: the default).
    fn threads(&self) -> Option<usize> {
        self.model.threads()
    }

    /// Graph inputs that have an initializer: a default a feed may replace.
    fn overridable_inputs(&self) -> Vec<String> {
        self.model.overridable_inputs()
    }

    /// The inferred `(name, dims)` of each graph output, a dim an int or a symbolic expression; empty
    /// when the model cannot be analysed without inputs.
    fn inferred_outputs(&self, py: Python<'_>) -> PyResult<Vec<(String, Vec<Py<PyAny>>)>> {
        let model = &self.model;
        let facts = py.detach(|| -> Option<Vec<sliceops::ValueFact>> {
            let analysis = model.analyse().ok()?;
            analysis.value_facts(model.graph()).ok()
        });
        let outputs = model.output_names();
        let mut shapes = vec![];
        for f in facts.unwrap_or_default().into_iter().filter(|f| outputs.contains(&f.name)) {
            let dims = f
                .shape
                .iter()
                .map(|d| match d.to_i64() {
                    Ok(v) => Ok(v.into_pyobject(py)?.into_any().unbind()),
                    Err(_) => Ok(sliceops::format_dim(d).into_pyobject(py)?.into_any().unbind()),
                })
                .collect::<PyResult<Vec<_>>>()?;
            shapes.push((f.name, dims));
        }
        Ok(shapes)
    }

    /// The model's metadata as onnxruntime's `ModelMetadata` gives it: producer_name, graph_name,
    /// domain, description, graph_description, version, custom_metadata_map.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = &self.metadata;
        let text = |s: &Option<String>| s.clone().unwrap_or_default();
        let graph = m.graph.clone().unwrap_or_default();
        let dict = PyDict::new(py);
        dict.set_item("producer_name", text(&m.producer_name))?;
        dict.set_item("graph_name", text(&graph.name))?;
        dict.set_item("domain", text(&m.domain))?;
        dict.set_item("description", text(&m.doc_string))?;
        dict.set_item("graph_description", text(&graph.doc_string))?;
        // onnxruntime's value for a model that sets no version.
        dict.set_item("version", m.model_version.unwrap_or(i64::MAX))?;
        let custom = PyDict::new(py);
        for p in &m.metadata_props {
            custom.set_item(text(&p.key), text(&p.value))?;
        }
        dict.set_item("custom_metadata_map", custom)?;
        Ok(dict)
    }

    /// The inputs to feed: `(name, elem_type, dims)`; with `ort`, dims as onnxruntime shows them.
    #[pyo3(signature = (ort=false))]
    fn inputs(&self, py: Python<'_>, ort: bool) -> PyResult<Declared> {
        declared(py, self.model.declared_inputs(), ort)
    }

    /// The graph outputs: `(name, elem_type, dims)`; with `ort`, dims as onnxruntime shows them.
    #[pyo3(signature = (ort=false))]
    fn outputs(&self, py: Python<'_>, ort: bool) -> PyResult<Declared> {
        declared(py, &self.model.declared_outputs(), ort)
    }

    /// Runs the model on `feeds` (name -> numpy array); returns the outputs named (all when None or
    /// empty) as numpy arrays over the output buffers. The run stops, raising `Cancelled`, once
    /// `cancel` is set (from another thread: the GIL is released while it runs) or `timeout` seconds
    /// have passed, checked before each node and each `Loop` iteration.
    #[pyo3(signature = (output_names, feeds, cancel=None, timeout=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        output_names: Option<Vec<String>>,
        feeds: &Bound<'py, PyDict>,
        cancel: Option<PyRef<'py, CancelFlag>>,
        timeout: Option<f64>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let limit = self::timeout(timeout)?;
        let handle = match (&cancel, limit) {
            (None, None) => None,
            (Some(flag), t) => Some(flag.cancel.with_shared_flag(t)),
            (None, t) => Some(sliceops::Cancel::new().with_shared_flag(t)),
        };
        let all = self.model.output_names();
        let wanted: Vec<usize> = match output_names {
            Some(names) if !names.is_empty() => names
                .iter()
                .map(|n| {
                    all.iter().position(|o| o == n).ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "the model has no output named '{n}' (its outputs: {})",
                            all.join(", ")
                        ))
                    })
                })
                .collect::<PyResult<_>>()?,
            _ => (0..all.len()).collect(),
        };
        let mut given = Vec::with_capacity(feeds.len());
        for (name, value) in feeds.iter() {
            let name: String =
                name.extract().map_err(|_| PyValueError::new_err("feeds are keyed by input name (str)".to_string()))?;
            let tensor = tensors::to_tensor(&name, &value)?;
            given.push((name, tensor));
        }
        let model = &self.model;
        let mut outputs = py
            .detach(|| -> anyhow::Result<_> {
                // Feeds for initializers listed as graph inputs replace their default values.
                let names: Vec<String> = given.iter().map(|(n, _)| n.clone()).collect();
                let fed = model.feeding(&names)?;
                let model = fed.as_ref().unwrap_or(model);
                let inputs = model.order_inputs(given, "pass each in feeds")?;
                match &handle {
                    Some(handle) => model.run_with(inputs, handle),
                    None => model.run(inputs),
                }
            })
            .map_err(run_error)?;
        let mut taken: Vec<Option<(String, sliceops::tract_onnx::prelude::Tensor)>> =
            outputs.drain(..).map(Some).collect();
        let mut arrays = Vec::with_capacity(wanted.len());
        for (k, &ix) in wanted.iter().enumerate() {
            // An output named twice: every use but the last gets its own copy.
            let again = wanted[k + 1..].contains(&ix);
            let slot = taken.get_mut(ix).filter(|s| s.is_some());
            let slot = slot.ok_or_else(|| PyValueError::new_err("the model returned too few outputs"))?;
            let entry = if again { slot.clone() } else { slot.take() };
            let Some((name, tensor)) = entry else { continue };
            arrays.push(tensors::to_numpy(py, &name, tensor)?);
        }
        Ok(arrays)
    }
}

/// Keeps freed large buffers in the process's heap for reuse (glibc only; elsewhere it does nothing):
/// runs on large tensors then stop paying a page fault per 4 KB of every input copy and output.
/// Process-wide, as it changes glibc's malloc settings: opt-in.
#[pyfunction]
fn tune_allocator() {
    sliceops::kernel::tune_allocator();
}

/// The Rust core of the `sliceops` package; use the functions of `sliceops` itself.
#[pymodule]
fn _sliceops(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(infer_json, m)?)?;
    m.add_function(wrap_pyfunction!(infer_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(cost_json, m)?)?;
    m.add_function(wrap_pyfunction!(fold, m)?)?;
    m.add_function(wrap_pyfunction!(lower, m)?)?;
    m.add_function(wrap_pyfunction!(tune_allocator, m)?)?;
    m.add_class::<Session>()?;
    m.add_class::<CancelFlag>()?;
    m.add("Cancelled", m.py().get_type::<Cancelled>())?;
    m.add_class::<tensors::Buffer>()?;
    Ok(())
}
