//! The typed error of the pure layers (views, front ends, kernel).
//!
//! Every variant names what was wrong and the numbers involved (the spec entry or axis, the offending
//! value, the dim it was checked against), so that the graph layer only has to add the node name and op.

mod describe;

pub use describe::describe_error;
#[cfg(test)]
pub(crate) use describe::tract_node;

use thiserror::Error;

/// Why a slicing specification could not be turned into a view, or a view could not be executed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SliceError {
    /// More than one ellipsis bit set among the spec's entries.
    #[error("ellipsis_mask {mask} sets more than one ellipsis among the spec's entries (at most one is allowed)")]
    MultipleEllipsis {
        /// The ellipsis mask as given.
        mask: i64,
    },
    /// A mask attribute is negative.
    #[error("{name} is {value}: masks must be >= 0")]
    NegativeMask {
        /// Which mask (`begin_mask`, ...).
        name: &'static str,
        /// Its value.
        value: i64,
    },
    /// A stride or step of zero where a range needs one.
    #[error("{what} {index} is 0: a step must be non-zero")]
    ZeroStep {
        /// `"spec entry"` or `"axis"`.
        what: &'static str,
        /// Entry or axis number.
        index: usize,
    },
    /// A shrink (integer) index outside `[-dim, dim)`.
    #[error("shrink index {value} at spec entry {entry} is out of range for axis {axis} of size {dim}")]
    IndexOutOfRange {
        /// Spec entry.
        entry: usize,
        /// Input axis it applies to.
        axis: usize,
        /// The index.
        value: i64,
        /// Size of that axis.
        dim: String,
    },
    /// A negative stride on a shrunk entry (TensorFlow and MindSpore reject it).
    #[error("spec entry {entry} shrinks an axis but has stride {stride}: a shrunk entry needs a positive stride")]
    NegativeShrinkStride {
        /// Spec entry.
        entry: usize,
        /// The stride.
        stride: i64,
    },
    /// The spec names more real (non-newaxis, non-ellipsis) entries than the input has dims.
    #[error("the spec indexes {entries} dims but the input has rank {rank}")]
    TooManyEntries {
        /// Number of entries that consume an input dim.
        entries: usize,
        /// Input rank.
        rank: usize,
    },
    /// Parameter lists of different lengths.
    #[error("{what} have different lengths: {lens}")]
    LengthMismatch {
        /// Which lists (`"begin, end and strides"`).
        what: &'static str,
        /// Their lengths, formatted (`"3, 3, 2"`).
        lens: String,
    },
    /// An axis outside `[-rank, rank)`.
    #[error("axis {axis} is out of range for rank {rank}")]
    AxisOutOfRange {
        /// The axis as given.
        axis: i64,
        /// Input rank.
        rank: usize,
    },
    /// The same axis named twice.
    #[error("axis {axis} appears more than once in axes")]
    RepeatedAxis {
        /// The (normalized) axis.
        axis: usize,
    },
    /// A rank-0 input where the op needs at least one axis.
    #[error("input is a scalar (rank 0): there is no axis to slice")]
    ScalarInput,
    /// A negative size, stride or offset where only non-negative values are allowed.
    #[error("{what} {value} is negative{at}")]
    Negative {
        /// `"size"`, `"stride"`, `"offset"`.
        what: &'static str,
        /// The value.
        value: i64,
        /// Where (`" at index 2"`), or empty.
        at: String,
    },
    /// The view reads past the end of the input buffer.
    #[error("view reads element {max_index} but the input has {numel} elements")]
    OutOfBounds {
        /// Largest flat index the view reads.
        max_index: String,
        /// Number of input elements.
        numel: String,
    },
    /// An intermediate value overflowed 64 bits.
    #[error("{what} overflows a 64-bit integer")]
    Overflow {
        /// What was being computed.
        what: &'static str,
    },
    /// The output would not fit in memory (or its shape cannot be represented).
    #[error("output of {numel} elements of {elem_size} bytes cannot be allocated")]
    TooLarge {
        /// Element count.
        numel: String,
        /// Bytes per element.
        elem_size: usize,
    },
    /// More spec entries than masks have bits for.
    #[error("{what} with {entries} entries: at most 63 are supported")]
    TooManyMaskedEntries {
        /// What has them (`"MXNet slice"`).
        what: &'static str,
        /// How many.
        entries: usize,
    },
    /// An axis change removes an axis whose size is not 1.
    #[error("cannot remove axis {axis} of size {dim}")]
    RemovedAxisNotUnit {
        /// The axis.
        axis: usize,
        /// Its size, formatted.
        dim: String,
    },
    /// A reshape of dims whose element count is not known.
    #[error("reshape of unknown dims")]
    ReshapeUnknownCount,
    /// A reshape whose one symbolic target dim cannot keep the element count.
    #[error("cannot reshape {elements} elements to {to}")]
    ReshapeCount {
        /// The input's element count.
        elements: i64,
        /// The target dims, formatted.
        to: String,
    },
    /// An axis change that does not apply to the input's rank.
    #[error("{change} does not apply to a tensor of rank {rank}")]
    ChangeOutOfRank {
        /// The change, formatted.
        change: String,
        /// The input's rank.
        rank: usize,
    },
    /// A selection composed with a view of another rank.
    #[error("selection over rank {selection} applied to a view of rank {view}")]
    SelectionRank {
        /// The rank the selection indexes.
        selection: usize,
        /// The view's output rank.
        view: usize,
    },
    /// A destination buffer whose length is not the view's element count.
    #[error("destination holds {dst} elements, the view has {view}")]
    DestinationLength {
        /// The destination's length.
        dst: usize,
        /// The view's element count.
        view: usize,
    },
    /// The output tensor could not be allocated.
    #[error("cannot allocate the output: {reason}")]
    Allocation {
        /// tract's reason.
        reason: String,
    },
    /// tract or ndarray refused to read or build a tensor's data.
    #[error("{reason}")]
    TensorData {
        /// Their reason.
        reason: String,
    },
    /// A plain-data element size the kernel has no copy for.
    #[error("element size of {bytes} bytes")]
    ElementSize {
        /// The size.
        bytes: usize,
    },
    /// An element type the kernel cannot slice.
    #[error("slicing tensors of {dtype}")]
    UnsupportedType {
        /// The type, formatted.
        dtype: String,
    },
}

/// Result alias of the pure layers.
pub type SliceResult<T> = Result<T, SliceError>;

/// An error at one node of a graph: which node, which op, and what is wrong with it.
///
/// The graph layer raises it for every parameter, attribute or value it refuses, keeping the pure
/// layers' [`SliceError`] as it is ([`Cause::Slice`]). Its [`kind`] tells what is wrong with the
/// model apart from what cannot be decided before running, which analysis works around (a fresh
/// symbol) instead of stopping. Callers find it in an error chain with [`NodeError::find`]; its text
/// is `node 'NAME' (OP): CAUSE`.
///
/// [`kind`]: NodeError::kind
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("node '{node}' ({op}): {cause}")]
pub struct NodeError {
    /// The node's name (its first output's when it has none).
    pub node: String,
    /// Its ONNX op type.
    pub op: String,
    /// What is wrong.
    pub cause: Cause,
    /// Whether the model is wrong, or the answer depends on values not known yet.
    pub kind: NodeErrorKind,
}

/// What is wrong at a node: a pure-layer error, typed, or a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Cause {
    /// A slicing specification refused by the pure layers.
    #[error(transparent)]
    Slice(#[from] SliceError),
    /// Anything else, in words.
    #[error("{0}")]
    Message(String),
}

impl From<String> for Cause {
    fn from(message: String) -> Cause {
        Cause::Message(message)
    }
}

impl From<&str> for Cause {
    fn from(message: &str) -> Cause {
        Cause::Message(message.to_string())
    }
}

/// What kind of [`NodeError`] it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeErrorKind {
    /// The node is invalid: a bad attribute, parameter or value.
    Invalid,
    /// The node's output cannot be decided from what is known before running (a parameter that is a
    /// runtime value or a symbolic expression a rule cannot use).
    NotStatic,
    /// The node failed while the model ran (a value too large to hold, a result other than analysis
    /// found).
    Failed,
}

/// tract panicked: caught, and kept as an error.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("tract failed while {what}: {message}")]
pub struct Panicked {
    /// What was being done.
    pub what: String,
    /// The panic's message.
    pub message: String,
}

impl NodeError {
    /// The error at `node` (`op`) of this `kind`, as an `anyhow::Error`.
    pub(crate) fn of_kind(
        node: impl Into<String>,
        op: impl Into<String>,
        kind: NodeErrorKind,
        cause: impl Into<Cause>,
    ) -> anyhow::Error {
        NodeError { node: node.into(), op: op.into(), cause: cause.into(), kind }.into()
    }

    /// The error `node 'node' (op): message` for an invalid node, as an `anyhow::Error`.
    pub fn invalid(node: impl Into<String>, op: impl Into<String>, message: impl std::fmt::Display) -> anyhow::Error {
        NodeError::of_kind(node, op, NodeErrorKind::Invalid, message.to_string())
    }

    /// The same for an output that cannot be decided before running.
    pub(crate) fn not_static(
        node: impl Into<String>,
        op: impl Into<String>,
        message: impl std::fmt::Display,
    ) -> anyhow::Error {
        NodeError::of_kind(node, op, NodeErrorKind::NotStatic, message.to_string())
    }

    /// The same for a node that failed while the model ran.
    pub fn failed(node: impl Into<String>, op: impl Into<String>, message: impl std::fmt::Display) -> anyhow::Error {
        NodeError::of_kind(node, op, NodeErrorKind::Failed, message.to_string())
    }

    /// The first `NodeError` in an error's chain, if any: an error or a context of the chain.
    pub fn find(e: &anyhow::Error) -> Option<&NodeError> {
        e.downcast_ref::<NodeError>().or_else(|| e.chain().find_map(|c| c.downcast_ref::<NodeError>()))
    }

    /// Whether an error says a value is not known before running (rather than invalid).
    pub(crate) fn is_not_static(e: &anyhow::Error) -> bool {
        NodeError::find(e).is_some_and(|n| n.kind == NodeErrorKind::NotStatic)
    }
}
