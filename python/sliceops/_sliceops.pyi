"""The Rust core of the sliceops package (use the functions of ``sliceops`` itself)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

_Source = Union[bytes, str, PathLike]
_Dim = Union[int, str, None]
_Declared = List[Tuple[str, int, Optional[List[_Dim]]]]

def infer_json(
    model: _Source, input_shapes: Sequence[Tuple[str, Sequence[str]]], assume: Sequence[str]
) -> Tuple[str, List[str]]:
    """``sliceops infer --format json`` as a string, and the warnings and notes it prints."""

def cost_json(
    model: _Source,
    input_shapes: Sequence[Tuple[str, Sequence[str]]],
    assume: Sequence[str],
    at: Sequence[Tuple[str, int]],
) -> str:
    """``sliceops cost --format json`` as a string (figures evaluated at ``at`` when given)."""

def infer_shapes(
    model: _Source, input_shapes: Sequence[Tuple[str, Sequence[str]]], assume: Sequence[str]
) -> Tuple[bytes, List[str]]:
    """The model with a type and shape on every value, and the values left without one."""

def fold(
    model: _Source, exact: bool, input_shapes: Sequence[Tuple[str, Sequence[str]]], assume: Sequence[str]
) -> Tuple[bytes, Dict[str, Any]]:
    """The folded model and fold's report."""

def lower(model: _Source) -> bytes:
    """The lowered model."""

def tune_allocator() -> None:
    """Keeps freed large buffers in the heap for reuse (glibc's malloc settings, process-wide)."""

class Cancelled(RuntimeError):
    """A run stopped by its cancel flag or its timeout."""

class CancelFlag:
    """A flag that stops the runs given it, settable from any thread."""

    def __init__(self) -> None: ...
    def cancel(self) -> None:
        """Stops the runs given this flag (until ``reset``)."""
    def reset(self) -> None:
        """Lets runs started from now on go on."""
    def is_cancelled(self) -> bool:
        """Whether the flag is set."""

class Buffer:
    """Owns an output tensor whose buffer numpy arrays view (their ``base``)."""

class Session:
    """A loaded model that runs on numpy arrays; safe to share between threads."""

    def __init__(self, model: _Source, threads: Optional[int] = None) -> None: ...
    def model_bytes(self) -> bytes:
        """The model as loaded, encoded, external data inlined."""
    def threads(self) -> Optional[int]:
        """The thread budget the session was made with."""
    def overridable_inputs(self) -> List[str]:
        """Graph inputs that have an initializer."""
    def inferred_outputs(self) -> List[Tuple[str, List[Union[int, str]]]]:
        """The inferred dims of each graph output (empty when the model cannot be analysed)."""
    def metadata(self) -> Dict[str, Any]:
        """The model's metadata, as onnxruntime's ModelMetadata fields."""
    def inputs(self, ort: bool = False) -> _Declared:
        """The inputs to feed: ``(name, elem_type, dims)``."""
    def outputs(self, ort: bool = False) -> _Declared:
        """The graph outputs: ``(name, elem_type, dims)``."""
    def run(
        self,
        output_names: Optional[Sequence[str]],
        feeds: Dict[str, np.ndarray],
        cancel: Optional[CancelFlag] = None,
        timeout: Optional[float] = None,
    ) -> List[np.ndarray]:
        """Runs the model; returns the outputs named (all when None or empty). Raises ``Cancelled``
        once ``cancel`` is set or ``timeout`` seconds have passed."""
