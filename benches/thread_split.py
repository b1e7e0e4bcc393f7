#!/usr/bin/env python3
"""One thread against several on single-node models: where splitting our kernels over threads pays.

Writes one-node ONNX models (`MatMul` with constant weights, which the plan runs as `SmallMatMul`,
`Conv`, run as `DirectConv` or its depthwise kernel, bilinear `Resize`, run as `RowResize`, and
`HardSwish`, run as `DefinedHardSwish`) over a
range of work sizes and times each with `sliceops bench --threads 1` and `--threads T` (default 2),
alternating, several rounds; each side's figure is its minimum over the rounds' minima (the figure a
loaded machine disturbs least). Prints one row per model: its multiply-adds (for a resize and a
HardSwish: output values), both times and their ratio (below 1.0 the threads pay), and with `--baseline` an earlier
build's time on T threads. The thresholds next to the kernels (`MACS_PER_THREAD` in
src/kernel/conv/mod.rs, src/kernel/depthwise.rs and src/plan/ops/matmul.rs, `VALUES_PER_THREAD` in
src/kernel/resample.rs and src/plan/ops/activation.rs) come from this table.

Usage:
    cargo test --release --no-run   # builds target/release/sliceops
    python3 benches/thread_split.py [--threads 2] [--rounds 3] [--budget 0.3] [--only conv]
        [--baseline OLD_BINARY]   # also the earlier build on the same threads
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BIN = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "sliceops"

# ("matmul", batch, m, k, n), ("conv", batch, c_in, c_out, hw, k, stride, group) or
# ("resize", batch, channels, hw, scale): bilinear (half_pixel) upsampling of [batch, channels, hw, hw];
# ("hardswish", batch, channels, hw): HardSwish of [batch, channels, hw, hw].
CASES = [
    ("matmul", 1, 32, 64, 64),
    ("matmul", 1, 64, 64, 64),
    ("matmul", 1, 64, 128, 128),
    ("matmul", 1, 128, 128, 128),
    ("matmul", 1, 196, 192, 192),
    ("matmul", 1, 256, 256, 256),
    ("matmul", 4, 128, 256, 128),
    ("conv", 1, 16, 16, 16, 3, 1, 1),
    ("conv", 1, 16, 16, 32, 3, 1, 1),
    ("conv", 1, 32, 32, 32, 3, 1, 1),
    ("conv", 1, 32, 32, 56, 3, 1, 1),
    ("conv", 1, 64, 64, 56, 3, 1, 1),
    ("conv", 1, 144, 144, 56, 3, 1, 144),
    ("conv", 1, 96, 96, 112, 3, 2, 96),
    ("conv", 1, 32, 32, 112, 3, 1, 32),
    ("conv", 1, 192, 192, 28, 3, 1, 192),
    ("conv", 1, 384, 384, 14, 3, 1, 384),
    ("conv", 1, 960, 960, 7, 3, 1, 960),
    ("conv", 1, 576, 576, 14, 3, 2, 576),
    ("conv", 2, 16, 16, 32, 3, 1, 1),
    ("conv", 8, 16, 16, 32, 3, 1, 1),
    ("conv", 8, 64, 64, 56, 3, 1, 1),
    ("conv", 8, 3, 32, 224, 3, 2, 1),
    ("resize", 1, 21, 14, 2),
    ("resize", 1, 21, 28, 2),
    ("resize", 1, 21, 28, 8),
    ("resize", 1, 64, 56, 2),
    ("resize", 8, 21, 28, 8),
    ("hardswish", 1, 16, 112),
    ("hardswish", 1, 72, 56),
    ("hardswish", 1, 240, 28),
    ("hardswish", 8, 16, 112),
    ("hardswish", 8, 240, 28),
]


def label(case) -> str:
    if case[0] == "hardswish":
        _, b, c, hw = case
        return f"hardswish b{b} {c}x{hw}x{hw}"
    if case[0] == "resize":
        _, b, c, hw, scale = case
        return f"resize b{b} {c}x{hw}x{hw} x{scale}"
    if case[0] == "matmul":
        _, b, m, k, n = case
        return f"matmul {b}x{m}x{k}x{n}"
    _, b, ci, co, hw, k, s, g = case
    return f"conv b{b} {ci}-{co} {hw}x{hw} k{k} s{s}" + (" dw" if g > 1 else "")


def macs(case) -> int:
    if case[0] == "hardswish":  # values
        _, b, c, hw = case
        return b * c * hw * hw
    if case[0] == "resize":  # output values (two taps per axis)
        _, b, c, hw, scale = case
        return b * c * (hw * scale) ** 2
    if case[0] == "matmul":
        _, b, m, k, n = case
        return b * m * k * n
    _, b, ci, co, hw, k, s, g = case
    o = (hw + 2 * (k // 2) - k) // s + 1
    return b * co * o * o * (ci // g) * k * k


def write(case, path: Path) -> np.ndarray:
    rng = np.random.default_rng(0)
    if case[0] == "hardswish":
        _, b, c, hw = case
        shape = [b, c, hw, hw]
        node = helper.make_node("HardSwish", ["x"], ["y"])
        inits = []
    elif case[0] == "resize":
        _, b, c, hw, scale = case
        shape = [b, c, hw, hw]
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")
        inits = [numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "scales")]
    elif case[0] == "matmul":
        _, b, m, k, n = case
        shape = [b, m, k]
        w = rng.standard_normal((k, n)).astype(np.float32)
        node = helper.make_node("MatMul", ["x", "w"], ["y"])
        inits = [numpy_helper.from_array(w, "w")]
    else:
        _, b, ci, co, hw, k, s, g = case
        shape = [b, ci, hw, hw]
        w = rng.standard_normal((co, ci // g, k, k)).astype(np.float32)
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[s, s], group=g,
                                pads=[k // 2] * 4)
        inits = [numpy_helper.from_array(w, "w")]
    graph = helper.make_graph([node], "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return rng.standard_normal(shape).astype(np.float32)


def bench(binary: Path, model: Path, x: Path, threads: int, runs: int) -> float:
    args = [str(binary), "bench", str(model), "--input", f"x={x}", "--runs", str(runs), "--format", "json",
            "--threads", str(threads)]
    res = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True)
    return float(json.loads(res.stdout)["min_s"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", type=Path, default=DEFAULT_BIN)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--budget", type=float, default=0.3, help="seconds of timed runs per measurement")
    p.add_argument("--only", default="")
    p.add_argument("--baseline", type=Path, help="also time this binary (an earlier build) on the same threads")
    args = p.parse_args()
    cases = [c for c in CASES if not args.only or any(k in label(c) for k in args.only.split(","))]
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; 1 thread against {args.threads}")
    base = f" | baseline {args.threads} threads ms | baseline {args.threads}t/1t" if args.baseline else ""
    print(f"| model | MACs | 1 thread ms | {args.threads} threads ms | {args.threads}t/1t{base} |")
    print("|---|---:|---:|---:|---:|" + ("---:|---:|" if args.baseline else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            model, xfile = Path(tmp) / "m.onnx", Path(tmp) / "x.npy"
            np.save(xfile, write(case, model))
            once = bench(args.bin, model, xfile, 1, 3)
            runs = max(5, min(300, int(args.budget / max(once, 1e-6))))
            one, many, old = float("inf"), float("inf"), float("inf")
            for _ in range(args.rounds):
                one = min(one, bench(args.bin, model, xfile, 1, runs))
                many = min(many, bench(args.bin, model, xfile, args.threads, runs))
                if args.baseline:
                    old = min(old, bench(args.baseline, model, xfile, args.threads, runs))
            tail = f" {old * 1e3:.3f} | {old / one:.2f} |" if args.baseline else ""
            print(f"| {label(case)} | {macs(case):,} | {one * 1e3:.3f} | {many * 1e3:.3f} | {many / one:.2f} |{tail}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
