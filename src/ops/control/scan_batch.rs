//! Opset 8's batched `Scan`: one scan per batch entry, over that entry's `sequence_lens` first
//! steps.
//!
//! Each entry runs `item`, a model holding tract's `Scan` over one entry whose scan inputs have a
//! symbolic length; the states it returns are the entry's final states, its scan outputs fill the
//! entry's first `len` positions and the rest stay zeros (the specification pads to the longest
//! sequence; zeros are onnxruntime's padding). An entry of length 0 returns its initial states, as
//! a loop that never runs. (A `Scan` nested in tract's `Scan` body would do the same, but tract's
//! declutter of such a pair fails.)

use crate::error::NodeError;
use crate::node::Label;
use std::sync::{Arc, Mutex};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// Opset 8's `Scan`, batch entry by batch entry.
#[derive(Debug, Clone)]
pub(crate) struct BatchScan {
    /// The node, for errors.
    pub label: Label,
    /// The scan of one entry: inputs the states, the scan inputs (scan axis 0) and the outer
    /// values, outputs the node's (without the batch axis).
    pub item: Arc<TypedModel>,
    /// Its plan, made on first use.
    pub plan: Arc<Mutex<Option<Arc<TypedRunnableModel>>>>,
    /// Whether the first input is `sequence_lens`.
    pub sequence_lens: bool,
    /// The number of states and of scan inputs.
    pub states: usize,
    /// The number of scan inputs.
    pub scans: usize,
    /// For each output, the index of the state it returns, or `None` for a scan output.
    pub outputs: Vec<Option<usize>>,
    /// The output facts.
    pub facts: TVec<TypedFact>,
}

impl PartialEq for BatchScan {
    fn eq(&self, other: &Self) -> bool {
        self.label == other.label && self.facts == other.facts
    }
}

impl Eq for BatchScan {}

impl Op for BatchScan {
    fn name(&self) -> StaticName {
        "BatchScan".into()
    }

    op_as_typed_op!();
}

impl TypedOp for BatchScan {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(self.facts.clone())
    }
}

impl EvalOp for BatchScan {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let failed = |m: String| NodeError::failed(&self.label.node, "Scan", m);
        let offset = usize::from(self.sequence_lens);
        let formal = self.states + self.scans;
        let batch = inputs[offset].shape()[0];
        let length = inputs[offset + self.states].shape()[1];
        for (ix, t) in inputs[offset..offset + formal].iter().enumerate() {
            if t.shape().first() != Some(&batch) || (ix >= self.states && t.shape()[1] != length) {
                return Err(failed(format!(
                    "input {} has shape {:?}: batch {batch}, length {length}",
                    ix + offset,
                    t.shape()
                )));
            }
        }
        let lens: Vec<usize> = if self.sequence_lens {
            let lens = inputs[0].cast_to::<i64>()?;
            let lens = lens.try_as_plain_ram()?.as_slice::<i64>()?.to_vec();
            if lens.len() != batch {
                return Err(failed(format!("sequence_lens has {} values for a batch of {batch}", lens.len())));
            }
            lens.iter()
                .map(|&l| usize::try_from(l).ok().filter(|&l| l <= length))
                .collect::<Option<_>>()
                .ok_or_else(|| failed(format!("sequence_lens is {lens:?}: each length is 0 to {length}")))?
        } else {
            vec![length; batch]
        };
        let plan = {
            let mut cached = self.plan.lock().unwrap_or_else(|e| e.into_inner());
            match cached.as_ref() {
                Some(p) => p.clone(),
                None => {
                    let p = (*self.item).clone().into_runnable()?;
                    *cached = Some(p.clone());
                    p
                }
            }
        };
        // Each output entry: a state's shape, or `[length, ..]` of the item's scan output.
        let entry_shape = |slot: usize| -> TractResult<TVec<usize>> {
            match self.outputs[slot] {
                Some(state) => Ok(inputs[offset + state].shape()[1..].into()),
                None => {
                    let fact = self.item.output_fact(slot)?;
                    let mut shape: TVec<usize> = tvec![length];
                    for d in fact.shape.iter().skip(1) {
                        shape
                            .push(d.to_usize().map_err(|_| {
                                failed(format!("output {slot} has a dim {d} known only while running"))
                            })?);
                    }
                    Ok(shape)
                }
            }
        };
        let mut entries: Vec<Vec<Tensor>> = vec![vec![]; self.outputs.len()];
        for (b, &len) in lens.iter().enumerate() {
            let entry = |t: &TValue| -> TractResult<Tensor> {
                let mut e = t.slice(0, b, b + 1)?;
                e.remove_axis(0)?;
                Ok(e)
            };
            let results: TVec<TValue> = if len == 0 {
                tvec![]
            } else {
                let mut item_inputs: TVec<TValue> = tvec![];
                for (ix, t) in inputs[offset..].iter().enumerate() {
                    item_inputs.push(match ix {
                        ix if ix < self.states => entry(t)?.into(),
                        ix if ix < formal => entry(t)?.slice(0, 0, len)?.into(),
                        _ => t.clone(),
                    });
                }
                crate::cancel::run_plan(&plan, item_inputs)?
            };
            for (slot, out) in entries.iter_mut().enumerate() {
                let shape = entry_shape(slot)?;
                let dt = self.facts[slot].datum_type;
                let e = match (self.outputs[slot], results.get(slot)) {
                    (_, Some(r)) if r.shape() == &*shape => r.clone().into_tensor(),
                    (None, Some(r)) => {
                        let mut padded = Tensor::zero_dt(dt, &shape)?;
                        padded.assign_slice(0..len, r, 0..len, 0)?;
                        padded
                    }
                    (Some(state), None) => entry(&inputs[offset + state])?,
                    (None, None) => Tensor::zero_dt(dt, &shape)?,
                    (_, Some(r)) => {
                        return Err(failed(format!(
                            "output {slot} of entry {b} has shape {:?}, expected {shape:?}",
                            r.shape()
                        )));
                    }
                };
                out.push(e);
            }
        }
        entries
            .into_iter()
            .enumerate()
            .map(|(slot, mut e)| {
                if e.is_empty() {
                    let mut shape = entry_shape(slot)?;
                    shape.insert(0, 0);
                    return Ok(Tensor::zero_dt(self.facts[slot].datum_type, &shape)?.into_tvalue());
                }
                for t in &mut e {
                    t.insert_axis(0)?;
                }
                Ok(Tensor::stack_tensors(0, &e)?.into_tvalue())
            })
            .collect()
    }
}
