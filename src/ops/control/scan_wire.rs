//! The typed form of a [`ScanInference`]: tract's [`Scan`] around the typed body.
//!
//! ONNX's body sees a scan input's slice without the scan axis, tract's a slice of length 1 along
//! it: the wrapper body removes that axis after its source and adds the scan outputs' axis back
//! before its outputs. Opset 8's batch is a [`BatchScan`], running the scan of one entry for each.

use super::scan_batch::BatchScan;
use super::scan_node::{ScanForm, ScanInference};
use std::collections::HashMap;
use std::sync::Arc;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_core::ops::scan::{InputMapping, OutputMapping, Scan, ScanInfo};

/// Where a scan's inputs and outputs are, for inputs of known facts.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The node input of the first state (1 when opset 8's `sequence_lens` is given).
    offset: usize,
    /// Whether the inputs carry a batch axis 0 (opset 8).
    batched: bool,
    /// For each scan input, its scan axis in the tensor one body run sees the slices of (without
    /// the batch axis) and its step (-1 in reverse).
    scan_axes: Vec<(usize, isize)>,
    /// The facts of the tensors one scan works through (the node's inputs, without the batch axis).
    items: Vec<TypedFact>,
    /// The number of steps (the scan inputs' length).
    length: TDim,
}

impl Layout {
    /// The layout over the node's input facts; errors name the node.
    pub(crate) fn of(op: &ScanInference, inputs: &[TypedFact]) -> TractResult<Layout> {
        let label = &op.label;
        let (offset, batched) = match op.form {
            ScanForm::Batched { sequence_lens } => (usize::from(sequence_lens), true),
            ScanForm::Plain => (0, false),
        };
        let want = offset + op.formal_inputs + op.closures;
        if inputs.len() != want {
            return Err(label.err(format!("{} inputs, expected {want}", inputs.len())));
        }
        if offset == 1 && (!inputs[0].datum_type.is_integer() || inputs[0].rank() != 1) {
            return Err(label.err(format!(
                "sequence_lens is {:?} of rank {}: integers of rank 1",
                inputs[0].datum_type,
                inputs[0].rank()
            )));
        }
        let mut items = vec![];
        let mut batch: Option<&TDim> = None;
        for (ix, f) in inputs[offset..].iter().enumerate() {
            if ix >= op.formal_inputs {
                items.push(f.clone());
                continue;
            }
            if let Some(dt) = op.declared[ix].filter(|dt| *dt != f.datum_type) {
                return Err(label.err(format!("body input {ix} is declared {dt:?}, the Scan gives {:?}", f.datum_type)));
            }
            if !batched {
                items.push(f.clone());
                continue;
            }
            let Some(b) = f.shape.iter().next() else {
                return Err(label.err(format!("input {} is a scalar: opset 8 inputs have a batch axis", ix + offset)));
            };
            match batch {
                Some(first) if first != b => {
                    return Err(label.err(format!("input {} has batch {b}, the first {first}", ix + offset)));
                }
                _ => batch = Some(b),
            }
            items.push(f.datum_type.fact(&f.shape.to_tvec()[1..]));
        }
        let mut scan_axes = vec![];
        let mut length: Option<TDim> = None;
        for j in 0..op.num_scan_inputs {
            let ix = op.states() + j;
            let rank = items[ix].rank() as i64;
            let given = op.input_axes.as_ref().map_or(0, |a| a[j]);
            if rank == 0 || given < -rank || given >= rank {
                return Err(label.err(format!("scan input {j} has rank {rank}: no scan axis {given}")));
            }
            let axis = if given < 0 { given + rank } else { given } as usize;
            let step = if op.input_directions.as_ref().is_some_and(|d| d[j] == 1) { -1 } else { 1 };
            let len = items[ix].shape[axis].clone();
            match &length {
                Some(first) if *first != len => {
                    return Err(label.err(format!("scan input {j} has length {len}, scan input 0 {first}")));
                }
                _ => length = Some(len),
            }
            scan_axes.push((axis, step));
        }
        let length = length.unwrap_or_default();
        Ok(Layout { offset, batched, scan_axes, items, length })
    }

    /// The facts of the body's inputs: a state's, a scan input's slice, an outer value's.
    pub(crate) fn body_facts(&self, op: &ScanInference, _inputs: &[TypedFact]) -> TractResult<Vec<TypedFact>> {
        let states = op.states();
        Ok(self
            .items
            .iter()
            .enumerate()
            .map(|(ix, f)| {
                if ix < states {
                    f.datum_type.fact(f.shape.clone())
                } else if ix < op.formal_inputs {
                    let mut shape = f.shape.to_tvec();
                    shape.remove(self.scan_axes[ix - states].0);
                    f.datum_type.fact(&*shape)
                } else {
                    f.clone()
                }
            })
            .collect())
    }

    /// Wires the scan after `inputs` (the node's), its body typed as `body`.
    pub(crate) fn wire(
        &self,
        op: &ScanInference,
        target: &mut TypedModel,
        name: &str,
        inputs: &[OutletId],
        body: TypedModel,
    ) -> TractResult<TVec<OutletId>> {
        let inner = self.inner_scan(op, &target.symbols, body)?;
        if self.batched {
            return self.batch_scan(op, target, name, inputs, inner);
        }
        let inputs = &inputs[self.offset..];
        if self.length == TDim::Val(0) {
            if let Some(outlets) = self.no_step(op, target, name, inputs, &inner)? {
                return Ok(outlets);
            }
        }
        target.wire_node(name, inner, inputs)
    }

    /// A scan of no step: the initial states and empty scan outputs (tract's Scan returns neither),
    /// when their shapes are known.
    fn no_step(
        &self,
        op: &ScanInference,
        target: &mut TypedModel,
        name: &str,
        inputs: &[OutletId],
        inner: &Scan,
    ) -> TractResult<Option<TVec<OutletId>>> {
        let facts: Vec<TypedFact> =
            inputs.iter().map(|o| target.outlet_fact(*o).cloned()).collect::<TractResult<_>>()?;
        let refs: Vec<&TypedFact> = facts.iter().collect();
        let out_facts = inner.output_facts(&refs)?;
        let mut outlets = tvec![];
        let mut slot = 0;
        for (ix, present) in op.present.iter().enumerate() {
            if !present {
                continue;
            }
            if ix < op.states() {
                outlets.push(inputs[ix]);
            } else {
                let fact = &out_facts[slot];
                let Some(shape) = fact.shape.as_concrete() else { return Ok(None) };
                let empty = Tensor::zero_dt(fact.datum_type, shape)?;
                outlets.push(target.add_const(target.unique_name(format!("{name}.empty{ix}")), empty)?);
            }
            slot += 1;
        }
        Ok(Some(outlets))
    }

    /// Opset 8: a [`BatchScan`] running `inner` over each batch entry (`inputs`: all the node's).
    fn batch_scan(
        &self,
        op: &ScanInference,
        target: &mut TypedModel,
        name: &str,
        inputs: &[OutletId],
        inner: Scan,
    ) -> TractResult<TVec<OutletId>> {
        let states = op.states();
        let steps = TDim::Sym(target.symbols.new_with_prefix("scan_steps"));
        let mut item = TypedModel { symbols: target.symbols.clone(), ..TypedModel::default() };
        let mut wires = tvec![];
        for (ix, f) in self.items.iter().enumerate() {
            let fact = if ix < states {
                f.datum_type.fact(f.shape.clone())
            } else if ix < op.formal_inputs {
                let mut shape = f.shape.to_tvec();
                shape[0] = steps.clone();
                f.datum_type.fact(&*shape)
            } else {
                f.clone()
            };
            wires.push(item.add_source(format!("{}.entry{ix}", op.label.node), fact)?);
        }
        let outs = item.wire_node(format!("{}.scan", op.label.node), inner, &wires)?;
        item.select_output_outlets(&outs)?;
        let batch = target.outlet_fact(inputs[self.offset])?.shape[0].clone();
        let mut facts = tvec![];
        let mut outputs = vec![];
        for (ix, present) in op.present.iter().enumerate() {
            if !present {
                continue;
            }
            let slot = facts.len();
            let fact = item.outlet_fact(outs[slot])?;
            let mut shape: TVec<TDim> = tvec![batch.clone()];
            if ix < states {
                shape.extend(fact.shape.iter().cloned());
                outputs.push(Some(ix));
            } else {
                shape.push(self.length.clone());
                shape.extend(fact.shape.iter().skip(1).cloned());
                outputs.push(None);
            }
            facts.push(fact.datum_type.fact(&*shape));
        }
        let op = BatchScan {
            label: op.label.clone(),
            item: Arc::new(item),
            plan: Default::default(),
            sequence_lens: self.offset == 1,
            states,
            scans: op.num_scan_inputs,
            outputs,
            facts,
        };
        target.wire_node(name, op, inputs)
    }

    /// tract's Scan over one item (opset 9's whole scan; one batch entry of opset 8's).
    fn inner_scan(&self, op: &ScanInference, symbols: &SymbolScope, body: TypedModel) -> TractResult<Scan> {
        let label = &op.label;
        let (states, formal) = (op.states(), op.formal_inputs);
        if body.inputs.len() != formal + op.closures || body.outputs.len() != op.present.len() {
            return Err(label.err("the typed body does not match the node's inputs and outputs"));
        }
        let mut w = TypedModel { symbols: symbols.clone(), ..TypedModel::default() };
        let mut wires = tvec![];
        let mut state_facts = vec![];
        let mut input_mapping = vec![];
        for (ix, outlet) in body.inputs.iter().enumerate() {
            let fact = body.outlet_fact(*outlet)?.clone();
            let source = format!("{}.input{ix}", label.node);
            if ix < states {
                let fact = fact.without_value();
                wires.push(w.add_source(source, fact.clone())?);
                state_facts.push(fact);
                input_mapping.push(InputMapping::State);
            } else if ix < formal {
                let (axis, chunk) = self.scan_axes[ix - states];
                let mut shape = fact.shape.to_tvec();
                shape.insert(axis, TDim::Val(1));
                let slice = w.add_source(source, fact.datum_type.fact(&*shape))?;
                wires.push(w.wire_node(format!("{}.slice{ix}", label.node), AxisOp::Rm(axis), &[slice])?[0]);
                input_mapping.push(InputMapping::Scan(ScanInfo { axis, chunk }));
            } else {
                wires.push(w.add_source(source, fact)?);
                input_mapping.push(InputMapping::Full);
            }
        }
        let outs = inline(&mut w, &body, &wires, &label.node)?;
        let mut outputs = vec![];
        let mut output_mapping = vec![];
        let mut slot = 0;
        for (ix, outlet) in outs.iter().enumerate() {
            let present = op.present[ix];
            let fact = w.outlet_fact(*outlet)?.clone();
            if ix < states {
                let want = &state_facts[ix];
                if fact.datum_type != want.datum_type || fact.shape != want.shape {
                    return Err(label.err(format!(
                        "state {ix}: the body takes {:?} [{}] and returns {:?} [{}]",
                        want.datum_type,
                        dims(&want.shape),
                        fact.datum_type,
                        dims(&fact.shape)
                    )));
                }
                // A state the body computes from constants: the same fact, without the value.
                if fact != *want {
                    w.set_outlet_fact(*outlet, want.clone())?;
                }
                outputs.push(*outlet);
                output_mapping.push(OutputMapping {
                    state: true,
                    last_value_slot: present.then_some(slot),
                    scan: None,
                    full_dim_hint: None,
                });
            } else {
                let k = ix - states;
                let rank = fact.rank() as i64;
                let given = op.output_axes.as_ref().map_or(0, |a| a[k]);
                if given < -(rank + 1) || given > rank {
                    return Err(label.err(format!("scan output {k} has rank {}: no scan axis {given}", rank + 1)));
                }
                let axis = if given < 0 { given + rank + 1 } else { given } as usize;
                let chunk = if op.output_directions.as_ref().is_some_and(|d| d[k] == 1) { -1 } else { 1 };
                let added = w.wire_node(format!("{}.output{ix}", label.node), AxisOp::Add(axis), &[*outlet])?[0];
                outputs.push(added);
                output_mapping.push(OutputMapping {
                    state: false,
                    last_value_slot: None,
                    scan: present.then_some((slot, ScanInfo { axis, chunk })),
                    full_dim_hint: None,
                });
            }
            if present {
                slot += 1;
            }
        }
        w.select_output_outlets(&outputs)?;
        Scan::new(w, input_mapping, output_mapping, 0)
    }
}

/// Copies the nodes of `body` into `target` after `inputs` (the values its inputs read), names
/// prefixed with `prefix`; the outlets of its outputs.
fn inline(
    target: &mut TypedModel,
    body: &TypedModel,
    inputs: &[OutletId],
    prefix: &str,
) -> TractResult<TVec<OutletId>> {
    let mut map: HashMap<OutletId, OutletId> = body.inputs.iter().copied().zip(inputs.iter().copied()).collect();
    for id in body.eval_order()? {
        if body.inputs.iter().any(|i| i.node == id) {
            continue;
        }
        let node = body.node(id);
        let ins: TVec<OutletId> = node.inputs.iter().map(|o| map[o]).collect();
        let name = target.unique_name(format!("{prefix}.{}", node.name));
        for (slot, o) in target.wire_node(name, node.op.clone(), &ins)?.into_iter().enumerate() {
            map.insert(OutletId::new(id, slot), o);
        }
    }
    body.outputs.iter().map(|o| map.get(o).copied().context("a body output is not computed")).collect()
}

/// A shape as `infer` prints it, without the brackets.
fn dims(shape: &ShapeFact) -> String {
    shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
}
