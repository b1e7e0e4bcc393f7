//! How many threads the copy kernel may use on this thread, and on which: all cores on threads of
//! its own, unless a plan's thread budget is in force ([`with_threads`], set by the slicing ops from
//! their evaluation context); then at most the budget, on the plan's pool.

use std::cell::Cell;

thread_local! {
    static BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runs `f` with the copy kernel limited to `threads` threads on this thread (`None`: all cores); the
/// previous limit is restored afterwards, also on unwinding.
pub(crate) fn with_threads<R>(threads: Option<usize>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(BUDGET.with(|b| b.replace(threads.map(|n| n.max(1)))));
    f()
}

/// The most threads a copy started now may use.
pub(crate) fn max_threads() -> usize {
    BUDGET.with(Cell::get).unwrap_or_else(crate::threads::available)
}

/// The budget in force on this thread, if any (`None`: all cores, on threads of the copy's own).
pub(crate) fn budget() -> Option<usize> {
    BUDGET.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_holds_inside_its_scope_only() {
        let all = crate::threads::available();
        assert_eq!(max_threads(), all);
        with_threads(Some(3), || {
            assert_eq!(max_threads(), 3);
            with_threads(Some(1), || assert_eq!(max_threads(), 1));
            with_threads(None, || assert_eq!(max_threads(), all));
            assert_eq!(max_threads(), 3);
        });
        assert_eq!(max_threads(), all);
        let caught = std::panic::catch_unwind(|| with_threads(Some(2), || panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(max_threads(), all);
        with_threads(Some(0), || assert_eq!(max_threads(), 1));
    }
}
