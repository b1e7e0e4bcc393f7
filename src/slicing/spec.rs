//! [`NodeSpec`]: what a slicing node says, before its runtime parameters are known.
//!
//! The dialect and its attributes ([`NodeKind`]), and for each parameter that may come as an input (a
//! *role*: `begin`, `starts`, `size`...) the inlet carrying it. Given the parameter tensors, it builds
//! the [`SliceStep`]; without them, it says which output dims are still known.

use super::step::{Label, SliceStep};
use crate::dims::dims_of;
use crate::semantics::{AsStrided, DimSlice, Slice, StridedSlice};
use tract_onnx::prelude::*;

/// The dialect of a slicing node, with its attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum NodeKind {
    /// StridedSlice: roles `begin`, `end`, `strides`; the five masks are attributes.
    Strided {
        /// The masks, in the order of [`StridedSlice::MASK_NAMES`].
        masks: [i64; 5],
    },
    /// ONNX Slice opset 10+: roles `starts`, `ends`, `axes`, `steps`.
    OnnxSlice,
    /// ONNX Slice opset 1-9: attributes only.
    OnnxSliceAttrs(Slice),
    /// Paddle slice / strided_slice (domain `ai.sliceops`): attribute `axes`; `starts`, `ends`,
    /// `strides` as attributes or as inputs (roles `starts`, `ends`, `strides`), an input winning.
    Paddle {
        /// Axes (always an attribute).
        axes: Vec<i64>,
        /// Attribute values of starts, ends, strides.
        attrs: [Option<Vec<i64>>; 3],
    },
    /// AsStrided with its attributes.
    AsStrided(AsStrided),
    /// PyTorch's ATen fallback `as_strided`: roles `size`, `stride`, `storage_offset`.
    Aten,
}

impl NodeKind {
    /// The names of the parameters that may come as inputs 1, 2, ... of the node.
    pub(crate) fn roles(&self) -> &'static [&'static str] {
        match self {
            NodeKind::Strided { .. } => &["begin", "end", "strides"],
            NodeKind::OnnxSlice => &["starts", "ends", "axes", "steps"],
            NodeKind::Paddle { .. } => &["starts", "ends", "strides"],
            NodeKind::Aten => &["size", "stride", "storage_offset"],
            NodeKind::OnnxSliceAttrs(_) | NodeKind::AsStrided(_) => &[],
        }
    }

    /// Roles that must be present.
    fn required(&self) -> &'static [&'static str] {
        match self {
            NodeKind::Strided { .. } => &["begin", "end"],
            NodeKind::OnnxSlice => &["starts", "ends"],
            NodeKind::Aten => &["size", "stride"],
            _ => &[],
        }
    }
}

/// A slicing node: its label, dialect, and where each role's input is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct NodeSpec {
    /// Node name and op type, for errors.
    pub label: Label,
    /// Dialect and attributes.
    pub kind: NodeKind,
    /// For each role of `kind`, the index of the (non-empty) node input carrying it.
    pub slots: Vec<Option<usize>>,
}

/// Reads an integer parameter tensor (int32, int64 or a known dim; rank 0 or 1) as `i64`s.
pub(super) fn read_ints(label: &Label, role: &str, t: &Tensor) -> TractResult<Vec<i64>> {
    read_ints_with(label, role, t, &SymbolValues::default())
}

/// [`read_ints`], with dims evaluated under `symbols` (a running plan's symbol values).
pub(crate) fn read_ints_with(label: &Label, role: &str, t: &Tensor, symbols: &SymbolValues) -> TractResult<Vec<i64>> {
    if t.rank() > 1 {
        return Err(label.err(format!("{role} must be a 1-D tensor, got shape {:?}", t.shape())));
    }
    let plain = t.try_as_plain_ram()?;
    match t.datum_type() {
        DatumType::I64 => Ok(plain.as_slice::<i64>()?.to_vec()),
        DatumType::I32 => Ok(plain.as_slice::<i32>()?.iter().map(|&v| v as i64).collect()),
        DatumType::TDim => plain
            .as_slice::<TDim>()?
            .iter()
            .map(|d| {
                d.eval(symbols).to_i64().map_err(|_| label.not_static(format!("{role} holds the symbolic value {d}")))
            })
            .collect(),
        dt => Err(label.err(format!("{role} must be int32 or int64, got {dt:?}"))),
    }
}

impl NodeSpec {
    /// Builds the node's spec from the node's inputs as given in the model (`""` for an absent optional
    /// input): inlet indices skip the absent ones, as tract wires them.
    pub(crate) fn new(label: Label, kind: NodeKind, inputs: &[String]) -> TractResult<NodeSpec> {
        let roles = kind.roles();
        if inputs.first().is_none_or(|s| s.is_empty()) {
            return Err(label.err("the data input is missing"));
        }
        if inputs.len() > roles.len() + 1 {
            return Err(label.err(format!("expects at most {} inputs, got {}", roles.len() + 1, inputs.len())));
        }
        let mut slots = vec![None; roles.len()];
        let mut inlet = 1;
        for (role, name) in inputs.iter().skip(1).enumerate() {
            if !name.is_empty() {
                slots[role] = Some(inlet);
                inlet += 1;
            }
        }
        for required in kind.required() {
            let ix = roles.iter().position(|r| r == required).unwrap_or(0);
            if slots[ix].is_none() {
                return Err(label.err(format!("the {required} input is missing")));
            }
        }
        Ok(NodeSpec { label, kind, slots })
    }

    /// Number of inlets the node has (data plus present parameters).
    pub(crate) fn inlets(&self) -> usize {
        1 + self.slots.iter().flatten().count()
    }

    /// Builds the step from the parameter tensors, given by inlet index (`params[0]` is unused: data).
    pub(crate) fn step(&self, params: &[Option<&Tensor>]) -> TractResult<SliceStep> {
        self.step_with(params, &SymbolValues::default())
    }

    /// [`NodeSpec::step`], with symbolic parameter values evaluated under `symbols`.
    pub(crate) fn step_with(&self, params: &[Option<&Tensor>], symbols: &SymbolValues) -> TractResult<SliceStep> {
        let roles = self.kind.roles();
        let get = |role: &str| -> TractResult<Option<Vec<i64>>> {
            let ix = roles.iter().position(|r| *r == role).expect("known role");
            match self.slots[ix] {
                None => Ok(None),
                Some(inlet) => {
                    let t = params
                        .get(inlet)
                        .copied()
                        .flatten()
                        .ok_or_else(|| self.label.not_static(format!("{role} is not known yet")))?;
                    read_ints_with(&self.label, role, t, symbols).map(Some)
                }
            }
        };
        let step = match &self.kind {
            NodeKind::Strided { masks } => SliceStep::Strided(StridedSlice::with_masks(
                get("begin")?.unwrap_or_default(),
                get("end")?.unwrap_or_default(),
                get("strides")?,
                *masks,
            )),
            NodeKind::OnnxSlice => SliceStep::Slice(Slice {
                starts: get("starts")?.unwrap_or_default(),
                ends: get("ends")?.unwrap_or_default(),
                axes: get("axes")?,
                steps: get("steps")?,
            }),
            NodeKind::OnnxSliceAttrs(s) => SliceStep::Slice(s.clone()),
            NodeKind::Paddle { axes, attrs } => {
                let pick = |role: &str, attr: &Option<Vec<i64>>| -> TractResult<Option<Vec<i64>>> {
                    Ok(get(role)?.or_else(|| attr.clone()))
                };
                let starts = pick("starts", &attrs[0])?.ok_or_else(|| self.label.err("starts is missing"))?;
                let ends = pick("ends", &attrs[1])?.ok_or_else(|| self.label.err("ends is missing"))?;
                SliceStep::Slice(Slice { starts, ends, axes: Some(axes.clone()), steps: pick("strides", &attrs[2])? })
            }
            NodeKind::AsStrided(a) => SliceStep::AsStrided(a.clone()),
            NodeKind::Aten => {
                let offset = match get("storage_offset")? {
                    None => 0,
                    Some(v) if v.len() == 1 => v[0],
                    Some(v) => {
                        return Err(self.label.err(format!("storage_offset must hold one value, got {}", v.len())))
                    }
                };
                SliceStep::AsStrided(AsStrided {
                    size: get("size")?.unwrap_or_default(),
                    stride: get("stride")?.unwrap_or_default(),
                    offset,
                })
            }
        };
        Ok(step)
    }

    /// The exact output shape over `input_shape` when some parameters are symbolic expressions (a
    /// Slice whose `ends` come from a `Shape`): `None` where that shape cannot be written (symbolic
    /// axes or steps, another dialect, a bound whose sign is unknown).
    pub(crate) fn dim_shape(&self, input_shape: &[TDim], params: &[Option<&Tensor>]) -> TractResult<Option<Vec<TDim>>> {
        let get = |role: &str| -> TractResult<Option<Vec<TDim>>> {
            let Some(inlet) = self.slot(role) else { return Ok(None) };
            let Some(t) = params.get(inlet).copied().flatten() else {
                return Err(self.label.not_static(format!("{role} is not known yet")));
            };
            if t.rank() > 1 {
                return Err(self.label.err(format!("{role} must be a 1-D tensor, got shape {:?}", t.shape())));
            }
            dims_of(t).map(Some).map_err(|e| self.label.err(format!("{role}: {e}")))
        };
        let ints = |v: Option<Vec<TDim>>| -> Option<Option<Vec<i64>>> {
            match v {
                None => Some(None),
                Some(v) => v.iter().map(TDim::as_i64).collect::<Option<Vec<i64>>>().map(Some),
            }
        };
        let slice = match &self.kind {
            NodeKind::OnnxSlice => {
                let (Some(axes), Some(steps)) = (ints(get("axes")?), ints(get("steps")?)) else { return Ok(None) };
                DimSlice {
                    starts: get("starts")?.unwrap_or_default(),
                    ends: get("ends")?.unwrap_or_default(),
                    axes,
                    steps,
                }
            }
            NodeKind::Paddle { axes, attrs } => {
                let pick = |role: &str, attr: &Option<Vec<i64>>| -> TractResult<Option<Vec<TDim>>> {
                    Ok(get(role)?.or_else(|| attr.as_ref().map(|a| a.iter().map(|&v| TDim::Val(v)).collect())))
                };
                let Some(steps) = ints(pick("strides", &attrs[2])?) else { return Ok(None) };
                let starts = pick("starts", &attrs[0])?.ok_or_else(|| self.label.err("starts is missing"))?;
                let ends = pick("ends", &attrs[1])?.ok_or_else(|| self.label.err("ends is missing"))?;
                DimSlice { starts, ends, axes: Some(axes.clone()), steps }
            }
            _ => return Ok(None),
        };
        slice.output_shape(input_shape).map_err(|e| self.label.err(e))
    }

    /// The inlet index of a role, if present.
    pub(crate) fn slot(&self, role: &str) -> Option<usize> {
        let ix = self.kind.roles().iter().position(|r| *r == role)?;
        self.slots[ix]
    }
}
