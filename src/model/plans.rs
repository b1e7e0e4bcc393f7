//! The optimized plans of a model, one per input signature (element types and shapes), so that
//! running a model again with the same shapes does not analyse and optimize it again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tract_onnx::prelude::*;

/// How many plans are kept; the least recently used goes first.
const KEPT: usize = 16;

/// The element types and shapes of a run's inputs, in input order.
pub(crate) type Signature = Vec<(DatumType, Vec<usize>)>;

/// Plans by input signature.
#[derive(Debug, Default)]
pub(crate) struct PlanCache {
    /// Most recently used last.
    plans: Mutex<Vec<(Signature, Arc<TypedRunnableModel>)>>,
    made: AtomicUsize,
}

impl PlanCache {
    /// The plan for `signature`, made by `make` if there is none yet. Two threads asking for a missing
    /// plan at once may both make it; one is kept.
    pub(crate) fn get_or_make(
        &self,
        signature: &Signature,
        make: impl FnOnce() -> anyhow::Result<Arc<TypedRunnableModel>>,
    ) -> anyhow::Result<Arc<TypedRunnableModel>> {
        {
            let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(ix) = plans.iter().position(|(s, _)| s == signature) {
                let entry = plans.remove(ix);
                let plan = entry.1.clone();
                plans.push(entry);
                return Ok(plan);
            }
        }
        let plan = make()?;
        self.made.fetch_add(1, Ordering::Relaxed);
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        if plans.len() >= KEPT {
            plans.remove(0);
        }
        plans.push((signature.clone(), plan.clone()));
        Ok(plan)
    }

    /// Forgets every plan (input shapes or assumptions changed).
    pub(super) fn clear(&self) {
        self.plans.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// How many plans were made so far.
    pub(super) fn made(&self) -> usize {
        self.made.load(Ordering::Relaxed)
    }
}
