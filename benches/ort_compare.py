#!/usr/bin/env python3
"""Compare sliceops with onnxruntime and a plain numpy copy on the cases of benches/slicing.rs.

Every case is written as ONNX models (the standard form exporters write, plus our custom ops where they
apply) with its input as .npy, into an output directory (default `bench-out/`). Then, per case:

- plain copy: `np.copyto` of exactly the output's bytes into a preallocated array (the floor);
- onnxruntime: `InferenceSession(...).run` on the standard model (default intra-op threads), after a
  warm-up, median of N runs;
- sliceops: `target/release/sliceops bench MODEL --input x=FILE.npy --runs N --format json`
  (`{"runs", "median_s", "min_s"}`), on the same standard model and, where there is one, on the model
  using our custom op (rows marked `[custom op]`; onnxruntime cannot run those).

Standard forms: ONNX Slice (opset 13) for the slice cases; Slice + Squeeze + Unsqueeze for the
StridedSlice case (what tf2onnx writes); Reshape(x, [-1]) + Gather over a constant int64 index table for
AsStrided (what torch.onnx writes for as_strided / unfold).

Usage:
    python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install -r benches/requirements.txt
    cargo build --release
    /tmp/benchvenv/bin/python benches/ort_compare.py [--runs 20] [--out-dir bench-out] [--cases outer,tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover - environment problem, not a bench result
    sys.exit(f"error: {e}; install the pinned tools: pip install -r benches/requirements.txt")

try:
    import onnxruntime as ort
except ImportError:
    ort = None

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BIN = REPO / "target" / "release" / "sliceops"
CUSTOM_DOMAIN = "ai.sliceops"
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

NCHW = (32, 128, 56, 56)  # 51.4 MB of f32
SS_SHAPE = (32, 128, 784, 4)  # same element count, a small innermost axis to shrink
SIGNAL_LEN = 1 << 22  # 4M f32, 16 MB
WINDOWS = (16384, 512)
WINDOW_STRIDE = (64, 1)
TINY = (1, 3, 8, 8)


# ---------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------


def i64(*values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def make_model(in_shape, out_shape, nodes, initializers: dict[str, np.ndarray], custom: bool = False) -> onnx.ModelProto:
    """A model with input `x` (f32, `in_shape`) and output `y` (f32, `out_shape`)."""
    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
        initializer=[numpy_helper.from_array(v, name=k) for k, v in initializers.items()],
    )
    opsets = [helper.make_opsetid("", 13)]
    if custom:
        opsets.append(helper.make_opsetid(CUSTOM_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="sliceops-bench")
    model.ir_version = 8
    if not custom:
        onnx.checker.check_model(model)
    return model


def slice_model(in_shape, out_shape, starts, ends, axes, steps) -> onnx.ModelProto:
    inits = {"starts": i64(*starts), "ends": i64(*ends), "axes": i64(*axes), "steps": i64(*steps)}
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")
    return make_model(in_shape, out_shape, [node], inits)


def onnx_slice_ref(x: np.ndarray, starts, ends, axes, steps) -> np.ndarray:
    """numpy's x[...] for an ONNX Slice whose bounds are already in Python's form."""
    index = [slice(None)] * x.ndim
    for s, e, a, k in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, k)
    return x[tuple(index)]


@dataclass
class Variant:
    """One model of a case: `ort` says whether onnxruntime can run it."""

    label: str
    model: onnx.ModelProto
    ort: bool = True


@dataclass
class Case:
    name: str
    key: str
    input: np.ndarray
    expected: np.ndarray
    variants: list[Variant] = field(default_factory=list)


def ramp(shape) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def build_cases(keys: set[str] | None) -> list[Case]:
    cases: list[Case] = []

    def want(key: str) -> bool:
        return keys is None or key in keys

    x = ramp(NCHW) if any(want(k) for k in ("outer", "channel", "step", "reverse", "chain")) else None
    slices = [
        ("outer", "outer_slice x[8:24]", [8], [24], [0], [1], ([8], [24], [0], [1])),
        ("channel", "channel_slice x[:,16:112]", [16], [112], [1], [1], ([16], [112], [1], [1])),
        ("step", "inner_step x[...,::2]", [0], [INT64_MAX], [3], [2], ([None], [None], [3], [2])),
        ("reverse", "reverse x[...,::-1]", [-1], [INT64_MIN], [3], [-1], ([None], [None], [3], [-1])),
    ]
    for key, name, starts, ends, axes, steps, ref in slices:
        if want(key):
            expected = onnx_slice_ref(x, *ref)
            cases.append(Case(name, key, x, expected, [Variant("Slice", slice_model(NCHW, expected.shape, starts, ends, axes, steps))]))

    if want("strided"):
        xs = ramp(SS_SHAPE)
        expected = xs[1:, ..., None, ::-2, 3]
        # tf2onnx's form: one Slice over the real axes, Squeeze the shrunk one, Unsqueeze the new one.
        nodes = [
            helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"], name="slice"),
            helper.make_node("Squeeze", ["s", "sq_axes"], ["q"], name="squeeze"),
            helper.make_node("Unsqueeze", ["q", "unsq_axes"], ["y"], name="unsqueeze"),
        ]
        inits = {
            "starts": i64(1, -1, 3),
            "ends": i64(INT64_MAX, INT64_MIN, 4),
            "axes": i64(0, 2, 3),
            "steps": i64(1, -2, 1),
            "sq_axes": i64(3),
            "unsq_axes": i64(2),
        }
        standard = make_model(SS_SHAPE, expected.shape, nodes, inits)
        ss = helper.make_node(
            "StridedSlice",
            ["x", "begin", "end", "strides"],
            ["y"],
            name="strided_slice",
            domain=CUSTOM_DOMAIN,
            begin_mask=1 << 3,
            end_mask=(1 << 0) | (1 << 3),
            ellipsis_mask=1 << 1,
            new_axis_mask=1 << 2,
            shrink_axis_mask=1 << 4,
        )
        custom = make_model(
            SS_SHAPE,
            expected.shape,
            [ss],
            {"begin": i64(1, 0, 0, 0, 3), "end": i64(0, 0, 0, 0, 0), "strides": i64(1, 1, 1, -2, 1)},
            custom=True,
        )
        cases.append(
            Case(
                "strided_slice x[1:,...,None,::-2,3]",
                "strided",
                xs,
                expected,
                [Variant("Slice+Squeeze+Unsqueeze", standard), Variant("StridedSlice [custom op]", custom, ort=False)],
            )
        )

    if want("as_strided"):
        sig = ramp((SIGNAL_LEN,))
        expected = np.lib.stride_tricks.as_strided(
            sig, WINDOWS, tuple(s * sig.itemsize for s in WINDOW_STRIDE), writeable=False
        )
        # torch.onnx's form: flatten, then gather a constant table of flat indices.
        table = (np.arange(WINDOWS[0], dtype=np.int64)[:, None] * WINDOW_STRIDE[0]
                 + np.arange(WINDOWS[1], dtype=np.int64)[None, :] * WINDOW_STRIDE[1])
        nodes = [
            helper.make_node("Reshape", ["x", "flat_shape"], ["flat"], name="reshape"),
            helper.make_node("Gather", ["flat", "index"], ["y"], name="gather", axis=0),
        ]
        gather = make_model((SIGNAL_LEN,), WINDOWS, nodes, {"flat_shape": i64(-1), "index": table})
        node = helper.make_node(
            "AsStrided", ["x"], ["y"], name="as_strided", domain=CUSTOM_DOMAIN,
            size=list(WINDOWS), stride=list(WINDOW_STRIDE), offset=0,
        )
        custom = make_model((SIGNAL_LEN,), WINDOWS, [node], {}, custom=True)
        cases.append(
            Case(
                "as_strided windows[16384,512]/[64,1]",
                "as_strided",
                sig,
                expected,
                [Variant("Reshape+Gather", gather), Variant("AsStrided [custom op]", custom, ort=False)],
            )
        )

    if want("chain"):
        # Slice x[4:28] -> StridedSlice [:, 16:112] -> AsStrided (every other row of each plane) is
        # x[4:28, 16:112, ::2]: onnxruntime runs that single Slice; sliceops runs both.
        mid = (24, 96, 56, 56)
        size = [24, 96, 28, 56]
        stride = [mid[1] * mid[2] * mid[3], mid[2] * mid[3], 2 * mid[3], 1]
        nodes = [
            helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["a"], name="slice"),
            helper.make_node(
                "StridedSlice", ["a", "begin", "end", "strides"], ["b"], name="strided_slice",
                domain=CUSTOM_DOMAIN, begin_mask=1, end_mask=1,
            ),
            helper.make_node(
                "AsStrided", ["b"], ["y"], name="as_strided", domain=CUSTOM_DOMAIN,
                size=size, stride=stride, offset=0,
            ),
        ]
        inits = {
            "starts": i64(4), "ends": i64(28), "axes": i64(0),
            "begin": i64(0, 16), "end": i64(0, 112), "strides": i64(1, 1),
        }
        chained = make_model(NCHW, size, nodes, inits, custom=True)
        single = slice_model(NCHW, size, [4, 16, 0], [28, 112, INT64_MAX], [0, 1, 2], [1, 1, 2])
        cases.append(
            Case(
                "chain slice>strided_slice>as_strided",
                "chain",
                x,
                x[4:28, 16:112, ::2],
                [Variant("single Slice", single), Variant("3-op chain [custom op]", chained, ort=False)],
            )
        )

    if want("tiny"):
        xt = ramp(TINY)
        model = slice_model(TINY, (1, 3, 6, 6), [1, 1], [7, 7], [2, 3], [1, 1])
        cases.append(Case("tiny x[:,:,1:7,1:7] on [1,3,8,8]", "tiny", xt, xt[:, :, 1:7, 1:7], [Variant("Slice", model)]))

    return cases


# ---------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------


def median_time(fn, runs: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_copy(expected: np.ndarray, runs: int, warmup: int) -> float:
    src = np.ones(expected.size, dtype=expected.dtype)
    dst = np.empty(expected.size, dtype=expected.dtype)
    return median_time(lambda: np.copyto(dst, src), runs, warmup)


def time_ort(path: Path, x: np.ndarray, expected: np.ndarray, runs: int, warmup: int, check: bool) -> float:
    opts = ort.SessionOptions()
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    feeds = {"x": x}
    if check:
        (y,) = sess.run(None, feeds)
        if y.shape != expected.shape or not np.array_equal(y, expected):
            raise RuntimeError(f"onnxruntime's output differs from numpy's ({y.shape} vs {expected.shape})")
    return median_time(lambda: sess.run(None, feeds), runs, warmup)


class Sliceops:
    """Runs the sliceops CLI; disables itself (with the reason) when the binary cannot bench."""

    def __init__(self, binary: Path, runs: int, check: bool, out_dir: Path):
        self.binary, self.runs, self.check, self.out_dir = binary, runs, check, out_dir
        self.disabled: str | None = None
        if not binary.is_file():
            self.disabled = (
                f"sliceops binary not found at {binary}; build it with `cargo build --release` "
                f"(in {REPO}) or pass --sliceops PATH"
            )

    def _call(self, args: list[str], timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.binary), *args], capture_output=True, text=True, timeout=timeout)

    def bench(self, model: Path, npy: Path, expected: np.ndarray) -> float | str:
        if self.disabled:
            return "n/a"
        if self.check:
            problem = self._check(model, npy, expected)
            if problem:
                return problem
        args = ["bench", str(model), "--input", f"x={npy}", "--runs", str(self.runs), "--format", "json"]
        try:
            res = self._call(args, timeout=1800)
        except subprocess.TimeoutExpired:
            return "timeout"
        if res.returncode == 2 or (res.returncode == 0 and not res.stdout.strip()):
            # Bad usage or a binary that prints nothing: it does not know `bench` (yet).
            first = (res.stderr.strip().splitlines() or ["no output"])[0]
            self.disabled = f"`{self.binary} bench` is not supported by this build ({first}); rebuild with `cargo build --release`"
            return "n/a"
        if res.returncode != 0:
            return "error: " + (res.stderr.strip().splitlines() or ["?"])[-1][:100]
        try:
            report = json.loads(res.stdout)
            return float(report["median_s"])
        except (ValueError, KeyError, TypeError):
            self.disabled = f"unexpected `sliceops bench` output: {res.stdout.strip()[:200]!r}"
            return "n/a"

    def _check(self, model: Path, npy: Path, expected: np.ndarray) -> str | None:
        """Runs the model once with `sliceops run` and compares with numpy; a message on mismatch."""
        out = self.out_dir / "run" / model.stem
        if out.exists():
            shutil.rmtree(out)
        try:
            res = self._call(["run", str(model), "--input", f"x={npy}", "--output-dir", str(out)], timeout=1800)
        except subprocess.TimeoutExpired:
            return "timeout (run)"
        if res.returncode != 0 or not (out / "y.npy").is_file():
            if res.returncode == 2 or (res.returncode == 0 and not res.stdout.strip() and not res.stderr.strip()):
                first = (res.stderr.strip().splitlines() or ["no output"])[0]
                self.disabled = f"`{self.binary} run` is not supported by this build ({first}); rebuild with `cargo build --release`"
                return "n/a"
            return "error (run): " + (res.stderr.strip().splitlines() or ["?"])[-1][:100]
        y = np.load(out / "y.npy")
        shutil.rmtree(out)
        if y.shape != expected.shape or not np.array_equal(y, expected):
            return f"WRONG OUTPUT {y.shape}"
        return None


# ---------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------


def fmt_ms(v) -> str:
    return f"{v * 1e3:9.3f}" if isinstance(v, float) else f"{v[:9]:>9}"


def fmt_ratio(a, b) -> str:
    return f"{a / b:6.2f}x" if isinstance(a, float) and isinstance(b, float) and b > 0 else f"{'-':>7}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", type=Path, default=Path("bench-out"), help="models, inputs, results (default bench-out/)")
    p.add_argument("--runs", type=int, default=20, help="timed runs per measurement (median reported)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs first")
    p.add_argument("--sliceops", type=Path, default=DEFAULT_BIN, help=f"the sliceops binary (default {DEFAULT_BIN})")
    p.add_argument("--cases", help="comma-separated subset of: outer,channel,step,reverse,strided,as_strided,chain,tiny")
    p.add_argument("--no-check", action="store_true", help="skip comparing each runtime's output with numpy's")
    args = p.parse_args()

    keys = set(args.cases.split(",")) if args.cases else None
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    check = not args.no_check

    if ort is None:
        print("warning: onnxruntime is not installed; its column is empty (pip install -r benches/requirements.txt)",
              file=sys.stderr)
    sliceops = Sliceops(args.sliceops.resolve(), args.runs, check, out_dir)
    if sliceops.disabled:
        print(f"warning: {sliceops.disabled}", file=sys.stderr)

    print(f"numpy {np.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__ if ort else '-'}, "
          f"{os.cpu_count()} cpus; median of {args.runs} runs after {args.warmup} warm-up runs", file=sys.stderr)
    print("building models...", file=sys.stderr)
    cases = build_cases(keys)

    rows = []
    saved_inputs: dict[int, Path] = {}
    for case in cases:
        npy = saved_inputs.get(id(case.input))
        if npy is None:
            npy = out_dir / f"input_{case.key}.npy"
            np.save(npy, case.input)
            saved_inputs[id(case.input)] = npy
        print(f"case {case.name}", file=sys.stderr)
        copy_s = time_copy(case.expected, args.runs, args.warmup)
        for i, variant in enumerate(case.variants):
            path = out_dir / f"{case.key}_{i}.onnx"
            onnx.save(variant.model, path)
            ort_s: float | str = "-"
            if variant.ort and ort is not None:
                try:
                    ort_s = time_ort(path, case.input, case.expected, args.runs, args.warmup, check)
                except Exception as e:  # noqa: BLE001 - report and keep going
                    ort_s = "error"
                    print(f"  onnxruntime on {path}: {e}", file=sys.stderr)
            so_s = sliceops.bench(path, npy, case.expected)
            rows.append({
                "case": case.name,
                "model": variant.label,
                "file": str(path),
                "out_mb": case.expected.nbytes / 1e6,
                "copy_s": copy_s,
                "ort_s": ort_s,
                "sliceops_s": so_s,
            })

    header = (f"{'case':40} {'model':26} {'out MB':>7} {'copy ms':>9} {'ort ms':>9} {'/copy':>7} "
              f"{'sliceops ms':>11} {'/copy':>7} {'so/ort':>7}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['case']:40} {r['model']:26} {r['out_mb']:7.2f} {fmt_ms(r['copy_s'])} {fmt_ms(r['ort_s'])} "
              f"{fmt_ratio(r['ort_s'], r['copy_s'])} {fmt_ms(r['sliceops_s']):>11} "
              f"{fmt_ratio(r['sliceops_s'], r['copy_s'])} {fmt_ratio(r['sliceops_s'], r['ort_s'])}")
    for r in rows:
        for col in ("ort_s", "sliceops_s"):
            if isinstance(r[col], str) and len(r[col]) > 9:
                print(f"{r['case']} / {r['model']}: {col[:-2]}: {r[col]}")
    if sliceops.disabled:
        print(f"\nsliceops column empty: {sliceops.disabled}")
    shutil.rmtree(out_dir / "run", ignore_errors=True)
    (out_dir / "results.json").write_text(json.dumps(rows, indent=2))
    print(f"\nmodels, inputs and results.json in {out_dir}/", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
