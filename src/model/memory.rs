//! What a run may allocate: a plan whose values cannot fit is refused before it runs.
//!
//! Rust aborts the process when an allocation fails, so a model asking for more memory than the
//! process can have (a `ConstantOfShape` of 8 GiB under a 4 GiB address-space limit) must be stopped
//! before the allocation. Before a plan runs, every value whose shape is known is weighed against
//! [`value_limit`]; values whose size is known only while running are not checked.

use tract_onnx::prelude::*;

/// The most bytes one value may take: the physical memory, or the room left under the process's
/// address-space limit (`RLIMIT_AS`, what `ulimit -v` sets) if that is smaller.
pub fn value_limit() -> u64 {
    physical_memory().min(address_space_left())
}

/// Refuses the model if one of its values, by its concrete shape, takes more than [`value_limit`]
/// (values of sliceops' own slicing ops excepted: their kernel refuses them with its own error).
pub(crate) fn check_values(model: &TypedModel) -> anyhow::Result<()> {
    let limit = value_limit();
    for node in &model.nodes {
        // Our slicing ops check what they allocate themselves, naming the ONNX node and op.
        if node.op_is::<crate::graph::ViewOp>()
            || node.op_is::<crate::graph::PlannedView>()
            || node.op_is::<crate::graph::DynSliceOp>()
        {
            continue;
        }
        for (slot, output) in node.outputs.iter().enumerate() {
            let fact = &output.fact;
            let Some(dims) = fact.shape.as_concrete() else { continue };
            let bytes = crate::analysis::bytes_of(dims, fact.datum_type);
            if bytes.is_none_or(|b| b > limit) {
                let size = bytes.map_or_else(|| "more bytes than can be counted".to_string(), |b| format!("{b} bytes"));
                let output = if node.outputs.len() > 1 { format!("output {slot}: ") } else { String::new() };
                let message = format!(
                    "{output}a {:?} value of shape {dims:?} would take {size}, more than this process can allocate \
                     ({limit} bytes)",
                    fact.datum_type
                );
                return Err(crate::NodeError::failed(&node.name, node.op.name(), message));
            }
        }
    }
    Ok(())
}

fn physical_memory() -> u64 {
    // Safety: sysconf reads a system setting and has no memory effects; -1 (unknown) is handled.
    let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    match (u64::try_from(pages), u64::try_from(size)) {
        (Ok(p), Ok(s)) => p.saturating_mul(s),
        _ => u64::MAX,
    }
}

fn address_space_left() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // Safety: getrlimit writes one rlimit struct through a valid pointer to a local.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return u64::MAX;
    }
    let used = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    // Safety: as in physical_memory.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    limit.rlim_cur.saturating_sub(used.saturating_mul(page))
}
