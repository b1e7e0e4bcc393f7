"""sliceops from Python: shape inference, folding, lowering and running ONNX models, on tract.

Each function takes a model as an ``onnx.ModelProto``, its serialized ``bytes``, or a path (``str`` or
``os.PathLike``; external data is looked up next to it), in the conventions of the libraries it stands
in for:

=====================================================  =====================================================
sliceops                                               onnx / onnxsim / onnxruntime
=====================================================  =====================================================
``sliceops.infer_shapes(model)``                       ``onnx.shape_inference.infer_shapes(model)``
``sliceops.infer(model)``                              ``SymbolicShapeInference.infer_shapes(model)``
``sliceops.fold(model)``                               ``onnxsim.simplify(model)``
``sliceops.InferenceSession(path).run(None, feeds)``   ``onnxruntime.InferenceSession(path).run(None, feeds)``
=====================================================  =====================================================

``sliceops.InferenceSession`` is onnxruntime's session API (``get_inputs()``, ``get_outputs()``,
``get_modelmeta()``, ``run(output_names, input_feed)``, ``SessionOptions``, onnxruntime's exception
kinds): a script written for onnxruntime runs with ``import sliceops as onnxruntime`` (see
``sliceops._ort`` for what is accepted and ignored). ``sliceops.Session`` is the plain form, raising
``ValueError`` with the command line's messages. Both pickle (as the model's bytes and settings, rebuilt
on arrival), so they can be sent to worker processes.

A model-returning function returns the kind it was given: an ``onnx.ModelProto`` for a ``ModelProto``,
``bytes`` for ``bytes``; for a path, an ``onnx.ModelProto`` (this needs the ``onnx`` package).

Errors in the model or the inputs raise ``ValueError`` with the message the ``sliceops`` command line
prints. The interpreter lock is released while the Rust core works, so threads run models in parallel.
"""

import os
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import json as _json

import numpy as _np

from . import _sliceops

__all__ = [
    "infer_shapes",
    "infer",
    "Case",
    "cost",
    "fold",
    "lower",
    "tune_allocator",
    "Session",
    "InferenceSession",
    "SessionOptions",
    "RunOptions",
    "ModelMetadata",
    "GraphOptimizationLevel",
    "ExecutionMode",
    "InvalidArgument",
    "Fail",
    "NoSuchFile",
    "RunCancelled",
    "get_available_providers",
    "get_device",
    "NodeArg",
    "Value",
    "Inference",
    "FoldReport",
]

Dim = Union[int, str]
InputShapes = Optional[Mapping[str, Sequence[Dim]]]

# ONNX TensorProto.DataType -> onnxruntime's type names (`tensor(float)`).
_ORT_TYPES = {
    1: "float",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "double",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
    17: "float8e4m3fn",
    18: "float8e4m3fnuz",
    19: "float8e5m2",
    20: "float8e5m2fnuz",
    21: "uint4",
    22: "int4",
}


def _source(model: Any) -> Tuple[Any, str]:
    """What the core reads (bytes or a path) and the kind of model given: proto, bytes or path."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), "bytes"
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model), "path"
    serialize = getattr(model, "SerializeToString", None)
    if callable(serialize):
        return serialize(), "proto"
    raise TypeError(
        "a model is an onnx.ModelProto, bytes or a path, not %s" % type(model).__name__
    )


def _returned(encoded: bytes, given: Any, kind: str) -> Any:
    """The model in the kind it was given (a path gives an onnx.ModelProto)."""
    if kind == "bytes":
        return encoded
    if kind == "proto":
        return type(given).FromString(encoded)
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "a model given as a path comes back as an onnx.ModelProto, which needs the onnx package; "
            "pass the model's bytes to get bytes back"
        ) from e
    return onnx.load_model_from_string(encoded)


def _shapes(input_shapes: InputShapes) -> List[Tuple[str, List[str]]]:
    if input_shapes is None:
        return []
    if not isinstance(input_shapes, Mapping):
        raise TypeError("input_shapes is a dict of input name -> dims, such as {'x': ['N', 3]}")
    out = []
    for name, dims in input_shapes.items():
        if isinstance(dims, (str, bytes)):
            raise TypeError("the shape of input '%s' is a sequence of dims, such as ['N', 3]" % name)
        out.append((str(name), [str(d) for d in dims]))
    return out


def _assumptions(assume: Union[str, Iterable[str]]) -> List[str]:
    if isinstance(assume, str):
        return [assume]
    return [str(a) for a in assume]


def infer_shapes(model: Any, input_shapes: InputShapes = None, assume: Union[str, Iterable[str]] = ()) -> Any:
    """The model with a ``value_info`` (element type and shape) on every value.

    Like ``onnx.shape_inference.infer_shapes(model)``; symbolic dims are written as ``dim_param``
    expressions (``N*3``, ``sequence+1``), as ``sliceops infer`` prints them. Nothing else changes.

    Args:
        model: an ``onnx.ModelProto``, its bytes, or a path.
        input_shapes: dims to set for inputs, such as ``{"x": ["N", 3]}`` (ints or symbol expressions).
        assume: assumptions about symbols used to simplify shapes, such as ``["N>=2"]``.

    Returns:
        The annotated model, of the kind given (a path gives an ``onnx.ModelProto``).

    Raises:
        ValueError: the model cannot be read or analysed, or an input shape or assumption is bad.
    """
    source, kind = _source(model)
    encoded, _unshaped = _sliceops.infer_shapes(source, _shapes(input_shapes), _assumptions(assume))
    return _returned(encoded, model, kind)


class Value(NamedTuple):
    """One value of the graph: its name, numpy dtype name and shape.

    ``dtype`` and ``shape`` are None when the value's type cannot be known (``Inference.unknown`` says
    why); a dim is an ``int`` or a symbolic expression as a ``str`` (``"N"``, ``"sequence+1"``).
    """

    name: str
    dtype: Optional[str]
    shape: Optional[List[Dim]]


class Case(NamedTuple):
    """A value under one outcome of the ``If`` conditions the analysis cannot decide.

    ``when`` is the outcome's conditions joined with ``and`` (``"sr == 16000 and N != 1"``);
    ``dtype`` and ``shape`` are None when the value cannot be known in that outcome.
    """

    when: str
    dtype: Optional[str]
    shape: Optional[List[Dim]]


class Inference(List[Value]):
    """What ``sliceops infer`` reports: a list of :class:`Value` (graph inputs, every node output,
    graph outputs, in graph order), with:

    - ``requirements``: what the model requires of its inputs (``"sequence <= 64"``), as text;
    - ``unknown``: value name -> why its type or shape cannot be known;
    - ``notes``: the warnings and notes the command line prints on stderr;
    - ``cases``: value name -> list of :class:`Case`, for the values whose shape depends on an ``If``
      condition the analysis cannot decide (an axis squeezed only when it is 1, a branch chosen by an
      input's value): what the value is under each outcome;
    - ``report``: the whole JSON report of ``sliceops infer --format json`` (symbols and their origins,
      assumptions, the structure of each dim, the values of shape tensors).
    """

    requirements: List[str]
    unknown: Dict[str, str]
    cases: Dict[str, List[Case]]
    notes: List[str]
    report: Dict[str, Any]

    def shape_of(self, name: str) -> Optional[List[Dim]]:
        """The shape of the value ``name`` (KeyError if the graph has no such value)."""
        for v in self:
            if v.name == name:
                return v.shape
        raise KeyError(name)


def infer(model: Any, input_shapes: InputShapes = None, assume: Union[str, Iterable[str]] = ()) -> Inference:
    """The element type and shape of every value, symbolic dims as strings, and the model's requirements.

    The library form of ``sliceops infer`` (its JSON report is ``.report``); a list of
    ``(name, dtype, shape)``.

    Args:
        model: an ``onnx.ModelProto``, its bytes, or a path.
        input_shapes: dims to set for inputs, such as ``{"x": ["N", 3]}``.
        assume: assumptions about symbols, such as ``["N>=2"]``.

    Raises:
        ValueError: the model cannot be read or analysed, or an input shape or assumption is bad.
    """
    source, _kind = _source(model)
    text, notes = _sliceops.infer_json(source, _shapes(input_shapes), _assumptions(assume))
    report = _json.loads(text)
    result = Inference()
    result.unknown = {}
    result.cases = {}
    for v in report["values"]:
        if "unknown" in v:
            result.append(Value(v["name"], None, None))
            result.unknown[v["name"]] = v["unknown"]
        else:
            result.append(Value(v["name"], v["dtype"], list(v["shape"])))
        if "cases" in v:
            result.cases[v["name"]] = [
                Case(c["when"], c.get("dtype"), list(c["shape"]) if "shape" in c else None) for c in v["cases"]
            ]
    result.requirements = [r["requires"] for r in report["requirements"]]
    result.notes = list(notes)
    result.report = report
    return result


def cost(
    model: Any,
    input_shapes: InputShapes = None,
    assume: Union[str, Iterable[str]] = (),
    at: Optional[Mapping[str, int]] = None,
) -> Dict[str, Any]:
    """Multiply-adds, parameters, bytes read and written per node, totals per op type and for the
    model, and the peak memory of intermediate values, each an exact expression of the model's dims.

    The library form of ``sliceops cost --format json``: each figure is a dict with ``"expr"`` (an int,
    or the expression as a string such as ``"18*batch"``), ``"tree"`` (the expression as nested dicts:
    ``{"add": [...]}``, ``{"mul": [...]}``, ``{"sym": name}``, ``{"div": [x, k]}``...) and, when ``at``
    is given, ``"at"`` (its value at those sizes). Keys: ``nodes`` (in the order the plan runs them),
    ``op_types``, ``total``, ``peak``, ``input_bytes``, ``initializer_bytes``, ``constant_bytes``,
    ``symbols``, ``at``.

    Args:
        model: an ``onnx.ModelProto``, its bytes, or a path.
        input_shapes: dims to set for inputs, such as ``{"x": ["N", 3]}``.
        assume: assumptions about symbols, such as ``["N>=2"]``.
        at: sizes to evaluate every figure at, by symbol name, such as ``{"batch": 8}``.

    Raises:
        ValueError: the model cannot be read or analysed, an input shape or assumption is bad, or a
            size in ``at`` names no symbol of the model or lies outside its bounds.
    """
    source, _kind = _source(model)
    sizes = [(str(k), int(v)) for k, v in (at or {}).items()]
    return _json.loads(_sliceops.cost_json(source, _shapes(input_shapes), _assumptions(assume), sizes))


class FoldReport(NamedTuple):
    """What :func:`fold` did."""

    nodes_before: int
    nodes_after: int
    changes: Dict[str, int]
    """How many of each kind of change (``"constants folded"``...)."""
    unshaped: List[str]
    """Values left without a type and shape (``"node/branch: value"`` inside an ``If`` branch)."""
    all_nodes_before: int
    """Nodes before, those of subgraphs (``If`` branches, ``Loop`` and ``Scan`` bodies) included."""
    all_nodes_after: int
    """Nodes after, those of subgraphs included."""
    kept_subgraphs: List[str]
    """``If`` branches left as they were, and why (``"node/branch: reason"``)."""

    @property
    def every_value_shaped(self) -> bool:
        """True when every value got a type and shape (``onnxsim.simplify``'s ``check`` analogue)."""
        return not self.unshaped


def fold(
    model: Any,
    exact: bool = False,
    input_shapes: InputShapes = None,
    assume: Union[str, Iterable[str]] = (),
) -> Tuple[Any, FoldReport]:
    """Folds constants, removes dead and no-op nodes, merges repeats, and annotates every value.

    Like ``onnxsim.simplify(model)``, which returns ``(model, check)``: this returns
    ``(model, report)``.

    Args:
        model: an ``onnx.ModelProto``, its bytes, or a path.
        exact: keep results bit-exact (no fusion that changes floating-point rounding).
        input_shapes: specialize inputs' shapes, such as ``{"x": [1, 3, 224, 224]}``.
        assume: assumptions about symbols, such as ``["N>=2"]``.

    Raises:
        ValueError: the model cannot be read or analysed.
    """
    source, kind = _source(model)
    encoded, report = _sliceops.fold(source, bool(exact), _shapes(input_shapes), _assumptions(assume))
    return _returned(encoded, model, kind), FoldReport(
        report["nodes_before"],
        report["nodes_after"],
        dict(report["changes"]),
        list(report["unshaped"]),
        report["all_nodes_before"],
        report["all_nodes_after"],
        list(report["kept_subgraphs"]),
    )


def lower(model: Any) -> Any:
    """Rewrites StridedSlice, AsStrided and Paddle-form Slice into standard ONNX, for any runtime.

    Raises:
        ValueError: the model cannot be read, or a node cannot be lowered.
    """
    source, kind = _source(model)
    return _returned(_sliceops.lower(source), model, kind)


def tune_allocator() -> None:
    """Keeps freed large buffers in the process's heap for reuse, as the ``sliceops`` command line does.

    Without it, every ``Session.run`` on large tensors maps fresh memory for the input copies and the
    outputs and pays a page fault per 4 KB of them (on a 128 MB input, most of the run's time). It
    changes glibc's malloc settings for the whole process (freed memory is kept, not returned to the
    system), so it is opt-in; it does nothing where the C library is not glibc.
    """
    _sliceops.tune_allocator()


class NodeArg(NamedTuple):
    """A graph input or output, as ``onnxruntime.NodeArg``: ``name``, ``type`` (``"tensor(float)"``)
    and ``shape`` (ints, symbol names, None for unknown dims; None when no shape is declared)."""

    name: str
    type: str
    shape: Optional[List[Optional[Dim]]]

    @property
    def dtype(self) -> Optional[str]:
        """The numpy dtype name (``"float32"``), None for types numpy has none for."""
        return _NUMPY_NAMES.get(self.type)


_NUMPY_NAMES = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(bool)": "bool",
    "tensor(int8)": "int8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(uint8)": "uint8",
    "tensor(uint16)": "uint16",
    "tensor(uint32)": "uint32",
    "tensor(uint64)": "uint64",
}


def _node_args(declared: Sequence[Tuple[str, int, Optional[List[Optional[Dim]]]]]) -> List[NodeArg]:
    return [
        NodeArg(name, "tensor(%s)" % _ORT_TYPES.get(elem, "undefined"), None if dims is None else list(dims))
        for name, elem, dims in declared
    ]


class Session:
    """Runs a model on numpy arrays, like ``onnxruntime.InferenceSession``.

    The model is loaded once; each distinct set of input shapes is optimized once and kept. One session
    can be run from many threads at once (the interpreter lock is released while it runs).

    A session pickles as its model's bytes (external data inlined) and its thread budget, and is
    rebuilt on unpickling, so it can be sent to worker processes (``multiprocessing``, Dask, Ray).

    Args:
        model: an ``onnx.ModelProto``, its bytes, or a path.
        threads: the thread budget of sliceops' kernels and tract's together (None: all
            physical cores for a model of at least 2^28 multiply-adds a run, else tract
            single-threaded and sliceops' copies over all cores; the command line's ``--threads``).

    Raises:
        ValueError: the model cannot be read, or the thread budget is 0 or too large.
    """

    def __init__(self, model: Any, threads: Optional[int] = None) -> None:
        source, _kind = _source(model)
        self._session = _sliceops.Session(source, threads)

    def __reduce__(self) -> Any:
        return (_rebuild_session, (self._session.model_bytes(), self._session.threads()))

    @property
    def threads(self) -> Optional[int]:
        """The thread budget the session was made with (None: the default)."""
        return self._session.threads()

    def inputs(self) -> List[NodeArg]:
        """The inputs to feed, as declared (initializers excluded); ``get_inputs()`` in onnxruntime."""
        return _node_args(self._session.inputs())

    def outputs(self) -> List[NodeArg]:
        """The graph outputs, as declared; ``get_outputs()`` in onnxruntime."""
        return _node_args(self._session.outputs())

    get_inputs = inputs
    get_outputs = outputs

    def run(
        self,
        output_names: Optional[Sequence[str]],
        feeds: Mapping[str, Any],
        timeout: Optional[float] = None,
        run_options: Any = None,
    ) -> List[_np.ndarray]:
        """Runs the model; returns the outputs named in ``output_names`` (all when None), in that order.

        Args:
            output_names: graph output names, or None for every output.
            feeds: input name -> array (``numpy.asarray`` is applied; the dtype must be the input's).
            timeout: seconds the run may take (more than 0, at most a year); None for no limit.
            run_options: a :class:`RunOptions`: setting its ``terminate`` from another thread stops
                the run; its ``timeout`` applies where ``timeout`` is None.

        Returns:
            numpy arrays over the outputs' buffers (not copied).

        Raises:
            ValueError: an input is missing, unknown, or of the wrong dtype or shape; an output name is
                unknown; the timeout is out of range; or the model fails on these inputs. The message
                is the command line's.
            RunCancelled: the run was stopped by ``run_options.terminate`` or its timeout (checked
                before each node and each ``Loop`` iteration); the session runs again unharmed.
        """
        if not isinstance(feeds, Mapping):
            raise TypeError("feeds is a dict of input name -> numpy array")
        arrays = {name: _np.asarray(value) for name, value in feeds.items()}
        names = None if output_names is None else [str(n) for n in output_names]
        flag = None
        if run_options is not None:
            flag = run_options._flag
            if timeout is None:
                timeout = run_options._timeout()
        try:
            return self._session.run(names, arrays, flag, None if timeout is None else float(timeout))
        except _sliceops.Cancelled as e:
            raise RunCancelled(str(e)) from None


def _rebuild_session(model_bytes: bytes, threads: Optional[int]) -> Session:
    """An unpickled :class:`Session`."""
    return Session(model_bytes, threads)


from ._ort import (  # noqa: E402  (the onnxruntime-shaped API builds on the definitions above)
    ExecutionMode,
    Fail,
    GraphOptimizationLevel,
    InferenceSession,
    InvalidArgument,
    ModelMetadata,
    NoSuchFile,
    RunCancelled,
    RunOptions,
    SessionOptions,
    get_available_providers,
    get_device,
)
