//! Running tract's code with its panics turned into errors.

/// Runs tract's part of the work, turning a panic inside it into an error: tract's own ops can panic on
/// hostile models (an Unsqueeze axis of 10^16, found by fuzzing), and a model from a stranger must never
/// bring the process down. The panic message is kept in the error.
pub(crate) fn guard<T>(what: &str, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(crate::error::Panicked { what: what.to_string(), message }.into())
        }
    }
}
