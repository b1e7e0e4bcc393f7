//! Control flow: `Loop` and `Scan` bodies, optionals.

pub(crate) mod loop_body;
pub(crate) mod optional;
pub(crate) mod scan;
pub(crate) mod scan_batch;
pub(crate) mod scan_node;
pub(crate) mod scan_wire;
