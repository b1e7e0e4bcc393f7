//! The facts of the graph inputs an analysis starts from: what the model declares, what the user sets
//! (`--input-shape`), or the types and shapes of the tensors a run is given.
//!
//! Declared dims are read from the model as follows:
//! - `dim_value >= 0`: that size;
//! - `dim_param` naming a symbol or an expression over symbols (`batch`, `8*height`): that expression;
//! - anything else (no value, `dim_value < 0`, `dim_param` `?`, empty or `-1`): unnamed; each such dim
//!   gets a symbol of its own, named after its input and axis (`image_d2`), so paddle2onnx's `?` for
//!   height and `?` for width stay two dims.

use super::symbols::{Origin, SymbolTable};
use crate::symbolic::{parse_dim, symbol_name};
use anyhow::{bail, Context};
use std::collections::HashMap;
use std::sync::Arc;
use tract_onnx::pb::{self, tensor_shape_proto::dimension::Value as DimValue};
use tract_onnx::prelude::*;

/// How a graph input's dim is declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclaredDim {
    /// A size.
    Value(i64),
    /// A `dim_param` expression, as written.
    Param(String),
    /// Nothing usable: how it is written (`?`, `-1`, empty).
    Unnamed(String),
}

/// A graph input as the model declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredInput {
    /// Its name.
    pub name: String,
    /// Its ONNX element type (`TensorProto.DataType`), 0 when the model does not say.
    pub elem_type: i32,
    /// Its dims, `None` when the model declares no shape (not even a rank).
    pub dims: Option<Vec<DeclaredDim>>,
}

impl DeclaredInput {
    /// Reads the graph inputs that are not initializers.
    pub fn from_graph(graph: &pb::GraphProto) -> Vec<DeclaredInput> {
        let initializers: std::collections::HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
        graph.input.iter().filter(|i| !initializers.contains(i.name.as_str())).map(DeclaredInput::of_value).collect()
    }

    /// Reads a declared value (a graph input or output).
    pub(crate) fn of_value(i: &pb::ValueInfoProto) -> DeclaredInput {
        let tensor = match i.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(pb::type_proto::Value::TensorType(t)) => Some(t),
            _ => None,
        };
        let dims = tensor.and_then(|t| t.shape.as_ref()).map(|s| s.dim.iter().map(declared_dim).collect());
        DeclaredInput { name: i.name.clone(), elem_type: tensor.map_or(0, |t| t.elem_type), dims }
    }
}

fn declared_dim(d: &pb::tensor_shape_proto::Dimension) -> DeclaredDim {
    match &d.value {
        Some(DimValue::DimValue(v)) if *v >= 0 => DeclaredDim::Value(*v),
        Some(DimValue::DimValue(v)) => DeclaredDim::Unnamed(v.to_string()),
        Some(DimValue::DimParam(p)) => {
            let t = p.trim();
            if t.is_empty() || t == "?" || t.parse::<i64>().is_ok_and(|v| v < 0) {
                DeclaredDim::Unnamed(p.clone())
            } else if let Ok(v) = t.parse::<i64>() {
                DeclaredDim::Value(v)
            } else {
                DeclaredDim::Param(p.clone())
            }
        }
        None => DeclaredDim::Unnamed(String::new()),
    }
}

/// What an analysis binds the graph inputs to.
#[derive(Debug, Clone)]
pub(crate) enum Binding {
    /// The declared types and shapes, with the user's `--input-shape` dims (text, by input name)
    /// replacing the declared ones.
    Declared(HashMap<String, Vec<String>>),
    /// The element types and shapes of the tensors a run is given, in input order.
    Concrete(Vec<(DatumType, Vec<usize>)>),
    /// The tensors a run is given, values included, in input order: for a model whose types or
    /// ranks depend on its inputs' values (an `If` on a value, its branches of different ranks).
    Values(Vec<Arc<Tensor>>),
}

/// The fact of each input under `binding`, symbols recorded in `table` (and created in `scope`).
pub(super) fn input_facts(
    inputs: &[DeclaredInput],
    binding: &Binding,
    scope: &SymbolScope,
    table: &mut SymbolTable,
) -> anyhow::Result<Vec<TypedFact>> {
    let mut facts = Vec::with_capacity(inputs.len());
    if let Binding::Concrete(given) = binding {
        if given.len() != inputs.len() {
            bail!("the model takes {} inputs, got {}", inputs.len(), given.len());
        }
        for (dt, shape) in given {
            facts.push(dt.fact(shape));
        }
        return Ok(facts);
    }
    if let Binding::Values(given) = binding {
        if given.len() != inputs.len() {
            bail!("the model takes {} inputs, got {}", inputs.len(), given.len());
        }
        return given.iter().map(TypedFact::try_from).collect::<TractResult<_>>();
    }
    let Binding::Declared(overrides) = binding else { unreachable!("handled above") };
    for input in inputs {
        let dt = datum_type_of(input)?;
        let dims = match (overrides.get(&input.name), &input.dims) {
            (Some(given), declared) => {
                if let Some(declared) = declared {
                    if declared.len() != given.len() {
                        bail!(
                            "--input-shape for '{}' has {} dims but the model declares rank {}",
                            input.name,
                            given.len(),
                            declared.len()
                        );
                    }
                }
                let mut dims = Vec::with_capacity(given.len());
                for (axis, text) in given.iter().enumerate() {
                    let dim = parse_dim(scope, text).with_context(|| {
                        format!("bad dim '{}' for input '{}'", crate::symbolic::excerpt(text), input.name)
                    })?;
                    for sym in dim.symbols() {
                        table.record(scope, &sym, Origin::Given { input: input.name.clone(), axis })?;
                    }
                    dims.push(dim);
                }
                dims
            }
            (None, Some(declared)) => {
                let mut dims = Vec::with_capacity(declared.len());
                for (axis, d) in declared.iter().enumerate() {
                    dims.push(declared_to_dim(&input.name, axis, d, scope, table)?);
                }
                dims
            }
            (None, None) => bail!(
                "input '{}' has no declared shape, not even a rank; set it with --input-shape {}=D0,D1,...",
                input.name,
                input.name
            ),
        };
        facts.push(dt.fact(&*dims));
    }
    Ok(facts)
}

fn declared_to_dim(
    input: &str,
    axis: usize,
    d: &DeclaredDim,
    scope: &SymbolScope,
    table: &mut SymbolTable,
) -> anyhow::Result<TDim> {
    Ok(match d {
        DeclaredDim::Value(v) => TDim::Val(*v),
        DeclaredDim::Param(text) => match parse_dim(scope, text) {
            Ok(dim) => {
                for sym in dim.symbols() {
                    let origin = Origin::Declared { input: input.to_string(), axis, text: text.clone() };
                    table.record(scope, &sym, origin)?;
                }
                dim
            }
            // An expression we cannot read (a function we do not know) is a dim of its own.
            Err(_) => unnamed(input, axis, text, scope, table)?,
        },
        DeclaredDim::Unnamed(text) => unnamed(input, axis, text, scope, table)?,
    })
}

fn unnamed(input: &str, axis: usize, text: &str, scope: &SymbolScope, table: &mut SymbolTable) -> anyhow::Result<TDim> {
    // The name is stable (`input_d0`), so that an assumption can name it: a symbol of that name that
    // only an assumption has made so far is this dim; one another input already owns is not.
    let name = format!("{}_d{axis}", symbol_name(input));
    let sym = if table.contains(&name) { scope.new_with_prefix(&name) } else { scope.sym(&name) };
    let origin = Origin::Unnamed { input: input.to_string(), axis, declared: text.to_string() };
    table.record(scope, &sym, origin)?;
    Ok(TDim::Sym(sym))
}

/// The tract element type of an input, or an error naming the input.
pub(crate) fn datum_type_of(input: &DeclaredInput) -> anyhow::Result<DatumType> {
    crate::schema::datum_type_of_elem(input.elem_type).with_context(|| format!("input '{}'", input.name))
}
