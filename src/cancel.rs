//! Stopping a run: a [`Cancel`] handle, holding a deadline, a flag another thread may set, or both,
//! given to [`crate::Model::run_with`].
//!
//! A run checks its handle before each node of its plan, before each node of the plan of a `Loop`
//! body or an `If` branch, and before each iteration of a `Loop`; once the deadline is past or the
//! flag is set, the run ends with a [`Cancelled`] error at the next check. A node that is running is
//! not interrupted: a run stops after the node (or loop iteration) in progress, so one long node
//! (a huge matrix product) delays the stop by its own time. The handle in force is kept per thread
//! while the run lasts (the plans of a model run on the thread that runs it), so ops reach it
//! without it being passed through tract.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tract_onnx::prelude::*;

/// A way to stop a run: a deadline, a flag, or both. Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    timeout: Option<Duration>,
}

impl Cancel {
    /// A handle with no deadline, stopped only by [`Cancel::cancel`].
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A handle whose runs stop once they have run for `timeout` (each run counts from its own start).
    pub fn with_timeout(timeout: Duration) -> Cancel {
        Cancel { flag: Arc::default(), timeout: Some(timeout) }
    }

    /// The timeout, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Asks every run using this handle (or a clone of it) to stop at its next check; from any thread.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called (and not undone by [`Cancel::reset`]).
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Undoes [`Cancel::cancel`]: runs started from now on with this handle (or a clone) go on; a run
    /// already stopped stays stopped. onnxruntime's `RunOptions.terminate = False`.
    pub fn reset(&self) {
        self.flag.store(false, Ordering::Relaxed);
    }

    /// A handle sharing this one's flag ([`Cancel::cancel`] on either stops runs of both) with its
    /// own timeout.
    pub fn with_shared_flag(&self, timeout: Option<Duration>) -> Cancel {
        Cancel { flag: Arc::clone(&self.flag), timeout }
    }
}

/// Why a run ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Its timeout passed.
    Timeout(Duration),
    /// [`Cancel::cancel`] was called.
    Requested,
}

/// The error of a run stopped by its [`Cancel`] handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancelled {
    /// How long the run had been running when it stopped.
    pub after: Duration,
    /// Why.
    pub reason: Reason,
}

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let after = self.after.as_secs_f64();
        match &self.reason {
            Reason::Timeout(t) => write!(f, "run cancelled after {after:.1} s (its timeout of {} s)", t.as_secs_f64()),
            Reason::Requested => write!(f, "run cancelled after {after:.1} s (cancel requested)"),
        }
    }
}

impl std::error::Error for Cancelled {}

impl Cancelled {
    /// The [`Cancelled`] error in `e`'s chain, if the run was stopped.
    pub fn find(e: &anyhow::Error) -> Option<&Cancelled> {
        e.chain().find_map(|c| c.downcast_ref::<Cancelled>())
    }
}

/// The handle in force on this thread and when its run began.
struct Active {
    cancel: Cancel,
    start: Instant,
}

thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// Puts `cancel` in force on this thread for the life of the value returned (the plans a run nests,
/// a `Loop` body's, an `If` branch's, are checked against it too); the handle in force before comes
/// back when it ends. [`crate::Model::run_with`] makes one per run; a caller timing many runs as one
/// (`sliceops bench --timeout`) makes one around them all and runs each plan with [`run_plan`].
pub(crate) struct Scope {
    outer: Option<Active>,
}

impl Scope {
    /// `cancel` in force from now on, its timeout counted from now.
    pub(crate) fn enter(cancel: &Cancel) -> Scope {
        let active = Active { cancel: cancel.clone(), start: Instant::now() };
        Scope { outer: ACTIVE.with(|a| a.borrow_mut().replace(active)) }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let outer = self.outer.take();
        ACTIVE.with(|a| *a.borrow_mut() = outer);
    }
}

/// An error holding [`Cancelled`] if the run on this thread is to stop: the handle in force
/// cancelled or its timeout past (never when no [`Scope`] is in force).
pub(crate) fn check() -> TractResult<()> {
    ACTIVE.with(|a| {
        let a = a.borrow();
        let Some(active) = a.as_ref() else { return Ok(()) };
        let after = active.start.elapsed();
        let reason = if active.cancel.is_cancelled() {
            Reason::Requested
        } else {
            match active.cancel.timeout {
                Some(t) if after >= t => Reason::Timeout(t),
                _ => return Ok(()),
            }
        };
        Err(anyhow::Error::new(Cancelled { after, reason }))
    })
}

/// Whether a handle is in force on this thread.
fn active() -> bool {
    ACTIVE.with(|a| a.borrow().is_some())
}

/// Runs `plan` on `inputs`, checking the handle in force before each node (tract's own run when
/// there is none).
pub(crate) fn run_plan(plan: &Arc<TypedRunnableModel>, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
    if !active() {
        return plan.run(inputs);
    }
    check()?;
    let mut state = plan.spawn()?;
    state.run_plan_with_eval(inputs, |session, op_state, node, node_inputs| {
        check()?;
        tract_onnx::tract_core::plan::eval(session, op_state, node, node_inputs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_checks_its_handle_and_restores_the_outer_one() {
        assert!(check().is_ok());
        let cancel = Cancel::new();
        {
            let _scope = Scope::enter(&cancel);
            assert!(check().is_ok());
            let timed = Cancel::with_timeout(Duration::ZERO);
            {
                let _inner = Scope::enter(&timed);
                let e = check().unwrap_err();
                let c = Cancelled::find(&e).unwrap();
                assert_eq!(c.reason, Reason::Timeout(Duration::ZERO));
            }
            assert!(check().is_ok());
            cancel.clone().cancel();
            let e = check().unwrap_err();
            assert_eq!(Cancelled::find(&e).unwrap().reason, Reason::Requested);
        }
        assert!(check().is_ok());
    }
}
