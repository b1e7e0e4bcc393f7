"""onnxruntime's session API on sliceops: ``InferenceSession``, ``SessionOptions``, ``RunOptions``,
``NodeArg``-like inputs and outputs, ``ModelMetadata``, and errors of the kinds onnxruntime raises.

A script written for onnxruntime runs on sliceops with its import changed
(``import sliceops as onnxruntime``): the calls, the shapes and types it reads, and the exceptions it
catches are the same. What differs, and why:

- ``providers`` and ``provider_options`` are accepted and ignored: sliceops runs on the CPU, and
  ``get_providers()`` says ``["CPUExecutionProvider"]``.
- Of ``SessionOptions``, ``intra_op_num_threads`` is used (the thread budget of sliceops' kernels and
  tract's, 0 for the default); the others are accepted, kept and ignored (see :class:`SessionOptions`).
- Of ``RunOptions``, ``terminate`` is used (set to True from another thread, it stops the runs given
  these options, which raise :class:`RunCancelled`, a :class:`Fail`), and ``timeout`` is ours (seconds
  a run may take); the others are accepted, kept and ignored.
- Error messages start with ``[sliceops]`` where onnxruntime's start with ``[ONNXRuntimeError]``; the
  status code, its name and the text after them are onnxruntime's for a wrong input name, output name,
  element type, rank or fixed dim. Errors the model raises while running are :class:`Fail` with the
  message the ``sliceops`` command line prints.
"""

import enum
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as _np

from . import _sliceops

__all__ = [
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
]

_PROVIDERS = ["CPUExecutionProvider"]
# The longest run timeout: a year, in seconds (the command line's --timeout accepts as much).
_MAX_TIMEOUT_S = 31_536_000


class InvalidArgument(ValueError):
    """A wrong input name, output name, element type, rank or fixed dim: onnxruntime's
    ``onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument`` (status 2), as a ``ValueError``."""


class Fail(RuntimeError):
    """The model could not be loaded or run: onnxruntime's ``Fail`` (status 1), as a ``RuntimeError``."""


class NoSuchFile(FileNotFoundError):
    """The model's path names no file: onnxruntime's ``NoSuchFile`` (status 3)."""


class RunCancelled(Fail):
    """A run stopped before its end: its :class:`RunOptions` had ``terminate`` set (onnxruntime
    raises ``Fail`` then) or its timeout passed. A :class:`Fail`, so code written for onnxruntime
    catches it; the session is unharmed and runs again."""


def _message(code: int, status: str, text: str) -> str:
    return "[sliceops] : %d : %s : %s" % (code, status, text)


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's optimization levels, accepted and ignored: sliceops always optimizes fully."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """onnxruntime's execution modes, accepted and ignored."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """onnxruntime's ``SessionOptions``.

    ``intra_op_num_threads`` is used: the number of threads sliceops' kernels and tract's share (0, the
    default, is the command line's default without ``--threads``: all physical cores for a model of at
    least 2^28 multiply-adds a run, else tract single-threaded and sliceops' copies on all cores). Every other option is accepted and kept (a session's
    ``get_session_options()`` returns them) but changes nothing: ``inter_op_num_threads``,
    ``graph_optimization_level``, ``execution_mode``, ``enable_profiling``, ``enable_cpu_mem_arena``,
    ``enable_mem_pattern``, ``enable_mem_reuse``, ``log_severity_level``, ``log_verbosity_level``,
    ``logid``, ``optimized_model_filepath``, ``profile_file_prefix``, ``use_deterministic_compute``
    (sliceops is deterministic), ``use_per_session_threads``, and the config entries of
    ``add_session_config_entry``.
    """

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling = False
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.profile_file_prefix = "onnxruntime_profile_"
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self._config: Dict[str, str] = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        """Keeps a config entry (ignored)."""
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        """A config entry set with :meth:`add_session_config_entry`."""
        if key not in self._config:
            raise RuntimeError("SessionOptions does not have configuration with key: %s" % key)
        return self._config[key]

    def _threads(self) -> Optional[int]:
        n = self.intra_op_num_threads
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgument(
                _message(2, "INVALID_ARGUMENT", "intra_op_num_threads is an int >= 0, got %r" % (n,))
            )
        return n or None


class RunOptions:
    """onnxruntime's ``RunOptions``: ``terminate`` stops runs, ``timeout`` (ours) bounds them.

    ``terminate``: set to True (from any thread: the interpreter lock is released while a session
    runs) to stop every run given these options, now and until it is set back to False; a run checks
    it before each node and each ``Loop`` iteration, so a single long node (a huge matrix product)
    finishes first. The run raises :class:`RunCancelled`.

    ``timeout``: None (the default) or the seconds a run given these options may take (a fraction
    allowed; more than 0, at most a year), counted from the start of each run; past it, the run raises
    :class:`RunCancelled` at its next check. onnxruntime has no such option (there, a thread sets
    ``terminate``).

    ``log_severity_level``, ``log_verbosity_level``, ``logid``, ``only_execute_path_to_fetches`` and
    the config entries are accepted, kept and ignored.
    """

    def __init__(self) -> None:
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.only_execute_path_to_fetches = False
        self.timeout: Optional[float] = None
        self._flag = _sliceops.CancelFlag()
        self._config: Dict[str, str] = {}

    @property
    def terminate(self) -> bool:
        """Whether runs given these options are to stop (see the class)."""
        return self._flag.is_cancelled()

    @terminate.setter
    def terminate(self, value: bool) -> None:
        if value:
            self._flag.cancel()
        else:
            self._flag.reset()

    def _timeout(self) -> Optional[float]:
        t = self.timeout
        if t is None:
            return None
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise InvalidArgument(_message(2, "INVALID_ARGUMENT", "timeout is a number of seconds, got %r" % (t,)))
        if not 0 < t <= _MAX_TIMEOUT_S:
            raise InvalidArgument(
                _message(
                    2,
                    "INVALID_ARGUMENT",
                    "the timeout must be more than 0 and at most %d seconds, got %r" % (_MAX_TIMEOUT_S, t),
                )
            )
        return float(t)

    def add_run_config_entry(self, key: str, value: str) -> None:
        """Keeps a config entry (ignored)."""
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        """A config entry set with :meth:`add_run_config_entry`."""
        if key not in self._config:
            raise RuntimeError("RunOptions does not have configuration with key: %s" % key)
        return self._config[key]


class ModelMetadata:
    """The model's metadata, as onnxruntime's ``ModelMetadata``."""

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self.producer_name: str = fields["producer_name"]
        self.graph_name: str = fields["graph_name"]
        self.domain: str = fields["domain"]
        self.description: str = fields["description"]
        """The model's ``doc_string``."""
        self.graph_description: str = fields["graph_description"]
        """The graph's ``doc_string``."""
        self.version: int = fields["version"]
        """The model's ``model_version``."""
        self.custom_metadata_map: Dict[str, str] = dict(fields["custom_metadata_map"])
        """The model's ``metadata_props``."""


def get_available_providers() -> List[str]:
    """``["CPUExecutionProvider"]``: sliceops runs on the CPU."""
    return list(_PROVIDERS)


def get_device() -> str:
    """``"CPU"``."""
    return "CPU"


def _rebuild(model_bytes: bytes, options: SessionOptions) -> "InferenceSession":
    """An unpickled :class:`InferenceSession`."""
    return InferenceSession(model_bytes, sess_options=options)


class InferenceSession:
    """Runs a model as ``onnxruntime.InferenceSession`` does (see the module's notes on what differs).

    Args:
        path_or_bytes: the model's path (``str`` or ``os.PathLike``; external data is read from its
            folder) or its serialized bytes.
        sess_options: a :class:`SessionOptions` (``intra_op_num_threads`` used, the rest ignored).
        providers, provider_options: accepted and ignored (CPU).

    A session pickles as its model's bytes (external data inlined) and its options, and is rebuilt on
    unpickling: it can be sent to worker processes (``multiprocessing``, Dask, Ray).

    Raises:
        NoSuchFile: the path names no file.
        Fail: the model cannot be read or loaded (the command line's message).
    """

    def __init__(
        self,
        path_or_bytes: Any,
        sess_options: Optional[SessionOptions] = None,
        providers: Optional[Sequence[Any]] = None,
        provider_options: Optional[Sequence[Any]] = None,
        **kwargs: Any,
    ) -> None:
        from . import _source

        options = sess_options if sess_options is not None else SessionOptions()
        source, _kind = _source(path_or_bytes)
        if isinstance(source, str) and not os.path.exists(source):
            raise NoSuchFile(
                _message(3, "NO_SUCHFILE", "Load model from %s failed: the file does not exist" % source)
            )
        try:
            self._session = _sliceops.Session(source, options._threads())
        except ValueError as e:
            raise Fail(_message(1, "FAIL", str(e))) from None
        self._options = options
        self._inputs = _node_args(self._session.inputs(True))
        self._by_name = {i.name: i for i in self._inputs}
        self._overridable = set(self._session.overridable_inputs())
        self._output_names = [name for name, _elem, _dims in self._session.outputs(True)]
        self._outputs: Optional[List[Any]] = None

    def __reduce__(self) -> Any:
        return (_rebuild, (self._session.model_bytes(), self._options))

    def get_inputs(self) -> List[Any]:
        """The inputs to feed (initializers excluded), as declared: ``name``, ``shape`` (ints for fixed
        dims, strings for symbolic ones, None for unnamed ones) and ``type`` (``"tensor(float)"``)."""
        return list(self._inputs)

    def get_outputs(self) -> List[Any]:
        """The graph outputs: their declared shapes, completed by sliceops' shape inference where the
        model declares none (a dim it infers as an expression, such as ``"N*3"``, is that string)."""
        if self._outputs is None:
            inferred = dict(self._session.inferred_outputs())
            outputs = []
            for o in _node_args(self._session.outputs(True)):
                shape = o.shape
                guess = inferred.get(o.name)
                if guess is not None and (shape is None or len(shape) == len(guess)):
                    shape = list(guess) if shape is None else [_merged(d, g) for d, g in zip(shape, guess)]
                outputs.append(o._replace(shape=shape))
            self._outputs = outputs
        return list(self._outputs)

    def get_modelmeta(self) -> ModelMetadata:
        """The model's producer, graph name, domain, descriptions, version and custom metadata."""
        return ModelMetadata(self._session.metadata())

    def get_providers(self) -> List[str]:
        """``["CPUExecutionProvider"]``."""
        return list(_PROVIDERS)

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        """``{"CPUExecutionProvider": {}}``."""
        return {p: {} for p in _PROVIDERS}

    def get_session_options(self) -> SessionOptions:
        """The options the session was made with."""
        return self._options

    def set_providers(self, providers: Optional[Sequence[Any]] = None, provider_options: Any = None) -> None:
        """Accepted and ignored (CPU)."""

    def disable_fallback(self) -> None:
        """Accepted and ignored (there is no other provider to fall back from)."""

    def enable_fallback(self) -> None:
        """Accepted and ignored."""

    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, Any],
        run_options: Optional[RunOptions] = None,
    ) -> List[_np.ndarray]:
        """Runs the model; returns the outputs named (all for None or an empty list), in that order.

        ``run_options``: a :class:`RunOptions`; its ``terminate`` flag (settable from another thread
        while this runs) and its ``timeout`` stop the run.

        Raises:
            ValueError: a required input is missing (onnxruntime's message).
            InvalidArgument: an unknown input or output name, or an input of the wrong element type,
                rank or fixed dim (onnxruntime's messages); a timeout that is not a number of seconds
                (more than 0, at most a year).
            RunCancelled: ``run_options.terminate`` was set, or its timeout passed.
            Fail: the model fails on these inputs (the command line's message).
        """
        feed_names = list(input_feed)
        missing = [i.name for i in self._inputs if i.name not in input_feed]
        if missing:
            raise ValueError("Required inputs (%s) are missing from input feed (%s)." % (missing, feed_names))
        arrays = {}
        for name, value in input_feed.items():
            declared = self._by_name.get(name)
            if declared is None and name not in self._overridable:
                raise InvalidArgument(_message(2, "INVALID_ARGUMENT", "Invalid input name: %s" % name))
            array = _np.asarray(value)
            if declared is not None:
                _check_feed(declared, array)
            arrays[name] = array
        names = [str(n) for n in output_names] if output_names else None
        if names is not None:
            for n in names:
                if n not in self._output_names:
                    raise InvalidArgument(_message(2, "INVALID_ARGUMENT", "Invalid output name:%s" % n))
        flag, timeout = (None, None) if run_options is None else (run_options._flag, run_options._timeout())
        try:
            return self._session.run(names, arrays, flag, timeout)
        except _sliceops.Cancelled as e:
            raise RunCancelled(_message(1, "FAIL", str(e))) from None
        except ValueError as e:
            raise Fail(_message(1, "FAIL", str(e))) from None


def _merged(declared: Any, inferred: Any) -> Any:
    """An output dim as onnxruntime merges the declared one with the inferred one: a declared size
    stays; an inferred size replaces a declared name or nothing; else the declared name, or the
    inferred expression where nothing is declared."""
    if isinstance(declared, int):
        return declared
    if isinstance(inferred, int) or declared is None:
        return inferred
    return declared


def _ort_type(dtype: _np.dtype) -> str:
    from . import _NUMPY_NAMES

    for ort_type, numpy_name in _NUMPY_NAMES.items():
        if dtype == _np.dtype(numpy_name):
            return ort_type
    return "tensor(%s)" % dtype


def _check_feed(declared: Any, array: _np.ndarray) -> None:
    """onnxruntime's checks of a fed array against its input: element type, rank, fixed dims."""
    got = _ort_type(array.dtype)
    if got != declared.type:
        raise InvalidArgument(
            _message(
                2,
                "INVALID_ARGUMENT",
                "Unexpected input data type. Actual: (%s) , expected: (%s)" % (got, declared.type),
            )
        )
    if declared.shape is None:
        return
    if array.ndim != len(declared.shape):
        raise InvalidArgument(
            _message(
                2,
                "INVALID_ARGUMENT",
                "Invalid rank for input: %s Got: %d Expected: %d Please fix either the inputs/outputs or the model."
                % (declared.name, array.ndim, len(declared.shape)),
            )
        )
    wrong = [
        (i, got, want)
        for i, (got, want) in enumerate(zip(array.shape, declared.shape))
        if isinstance(want, int) and got != want
    ]
    if wrong:
        lines = "".join(" index: %d Got: %d Expected: %d\n" % w for w in wrong)
        raise InvalidArgument(
            _message(
                2,
                "INVALID_ARGUMENT",
                "Got invalid dimensions for input: %s for the following indices\n%s"
                " Please fix either the inputs/outputs or the model." % (declared.name, lines),
            )
        )


def _node_args(declared: Any) -> List[Any]:
    from . import _node_args as node_args

    return node_args(declared)
