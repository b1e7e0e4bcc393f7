//! A `Scan` node as parsed ([`ScanInference`]): its body, attributes and form; the data the
//! builder ([`super::scan`]) fills in and the typed wiring ([`super::scan_wire`]) reads.

use crate::node::Label;
use std::sync::Arc;
use tract_onnx::pb;
use tract_onnx::prelude::*;

/// Which form of the operator a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanForm {
    /// Opset 8: every input and output has a batch axis 0, the scan axis is 1.
    Batched {
        /// Whether the `sequence_lens` input is given.
        sequence_lens: bool,
    },
    /// Opsets 9 and later: no batch axis, scan axes and directions per input and output.
    Plain,
}

/// A `Scan` node as parsed: its body and attributes; typed by [`ScanInference::layout`] and
/// [`ScanInference::wire_typed`] once its inputs' facts are known.
#[derive(Debug, Clone)]
pub(crate) struct ScanInference {
    /// The node, for errors.
    pub label: Label,
    /// The body as parsed; its inputs are the body graph's inputs, then the outer values it reads
    /// (in the order of the node's extra inputs).
    pub body: InferenceModel,
    /// The body graph, for the op types of its nodes.
    pub graph: Arc<pb::GraphProto>,
    /// The operator's form.
    pub form: ScanForm,
    /// `num_scan_inputs`.
    pub num_scan_inputs: usize,
    /// The number of the body graph's own inputs (states and scan inputs).
    pub formal_inputs: usize,
    /// The element types the body graph declares for its own inputs, where it declares one.
    pub declared: Vec<Option<DatumType>>,
    /// The number of outer values the body reads (the node's extra inputs, after its own).
    pub closures: usize,
    /// `scan_input_axes` (opset 9+), as given.
    pub input_axes: Option<Vec<i64>>,
    /// `scan_input_directions` (opset 9+) or `directions` (opset 8), as given.
    pub input_directions: Option<Vec<i64>>,
    /// `scan_output_axes`, as given.
    pub output_axes: Option<Vec<i64>>,
    /// `scan_output_directions`, as given.
    pub output_directions: Option<Vec<i64>>,
    /// For each body output (states, then scan outputs): whether the node has that output.
    pub present: Vec<bool>,
}

impl ScanInference {
    /// The number of states (body inputs that are not scan inputs).
    pub(crate) fn states(&self) -> usize {
        self.formal_inputs - self.num_scan_inputs
    }

    /// The number of scan outputs.
    pub(crate) fn scan_outputs(&self) -> usize {
        self.present.len().saturating_sub(self.states())
    }
}
