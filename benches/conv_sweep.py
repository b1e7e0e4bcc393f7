#!/usr/bin/env python3
"""Sweep one-`Conv` models over the convolution parameter space: sliceops, tract's own path, onnxruntime.

Each shape of the sweep (batch, channels in and out, map size, kernel, stride, dilation, padding,
groups) is written as a one-node ONNX model (`onnx.helper`, random weights and bias, float32) and timed
three ways in the same run, shape after shape:

- `ours`: `sliceops bench MODEL --threads T --format json`, the plan with our rewrites (the direct
  convolution kernel where the choice rule in `src/plan/passes/conv_rule.rs` takes the node);
- `tract`: the same command with `SLICEOPS_NO_REWRITES=1`: the plan tract's own optimizer makes, with
  none of our rewrites (its `im2col` and matrix product, its depthwise kernel);
- `ort`: onnxruntime, `intra_op_num_threads = T`, default graph optimizations, CPU provider.

It prints one row per shape with the times (ms: the minimum over the timed runs on each side, the
figure a loaded machine disturbs least; the runs fill `--budget` seconds, at least 3) and the ratios `ours/ort` and `ours/tract` (below 1.0
ours is faster), and `path`: which op ran the convolution in our plan (`DirectConv` or tract's `Conv`
kernels), read from `bench --profile`. With `--json FILE` it also writes the rows.

The shapes are a subsample of the space (dilation 1..36; groups 1, a few, depthwise; kernels 1, 3, 5,
7; strides 1 and 2; same, valid and asymmetric padding; maps 3x3..224x224; channels 3..1024; batch 1
and 8), chosen so the whole sweep runs in a few minutes on two cores; `--quick` takes every third.

Usage:
    python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install -r benches/requirements.txt
    cargo build --release
    /tmp/benchvenv/bin/python benches/conv_sweep.py [--threads 1] [--budget 0.4] [--json sweep.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
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
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
DEFAULT_BIN = TARGET / "release" / "sliceops"

# (label, batch, c_in, c_out, (h, w), k, stride, dilation, group, pads [top, left, bottom, right])
# pads None: "same" for stride 1 (dilation·(k-1)/2 each side), k//2 otherwise.
SHAPES = [
    # Dilated 3x3 of a segmentation head (DeepLabV3 ASPP on a MobileNetV3 backbone), 10x12 map.
    ("aspp d1", 1, 960, 256, (10, 12), 3, 1, 1, 1, None),
    ("aspp d6", 1, 960, 256, (10, 12), 3, 1, 6, 1, None),
    ("aspp d12", 1, 960, 256, (10, 12), 3, 1, 12, 1, None),
    ("aspp d36", 1, 960, 256, (10, 12), 3, 1, 36, 1, None),
    ("aspp d12 b8", 8, 960, 256, (10, 12), 3, 1, 12, 1, None),
    ("dilated d2", 1, 64, 64, (28, 28), 3, 1, 2, 1, None),
    ("dilated d6", 1, 64, 64, (28, 28), 3, 1, 6, 1, None),
    ("dilated d12", 1, 128, 128, (28, 28), 3, 1, 12, 1, None),
    ("dilated d36", 1, 64, 64, (28, 28), 3, 1, 36, 1, None),
    ("dilated d2 14", 1, 256, 256, (14, 14), 3, 1, 2, 1, None),
    ("dilated d6 k5", 1, 32, 32, (20, 20), 5, 1, 6, 1, None),
    # Grouped 3x3 (RegNetY-400MF's, ResNeXt's).
    ("regnet g8", 1, 104, 104, (28, 28), 3, 1, 1, 8, None),
    ("regnet g26", 1, 208, 208, (28, 28), 3, 1, 1, 26, None),
    ("regnet g55", 1, 440, 440, (28, 28), 3, 1, 1, 55, None),
    ("regnet g8 s2", 1, 104, 104, (56, 56), 3, 2, 1, 8, None),
    ("regnet g26 14", 1, 208, 208, (14, 14), 3, 1, 1, 26, None),
    ("resnext g32", 1, 128, 128, (56, 56), 3, 1, 1, 32, None),
    ("grouped g2", 1, 64, 64, (28, 28), 3, 1, 1, 2, None),
    ("regnet g8 b8", 8, 104, 104, (28, 28), 3, 1, 1, 8, None),
    # Depthwise.
    ("dw 32 112", 1, 32, 32, (112, 112), 3, 1, 1, 32, None),
    ("dw 96 s2", 1, 96, 96, (112, 112), 3, 2, 1, 96, None),
    ("dw 144 56", 1, 144, 144, (56, 56), 3, 1, 1, 144, None),
    ("dw 240 k5", 1, 240, 240, (28, 28), 5, 1, 1, 240, None),
    ("dw 672 k5 s2", 1, 672, 672, (14, 14), 5, 2, 1, 672, None),
    ("dw 960 7", 1, 960, 960, (7, 7), 3, 1, 1, 960, None),
    ("dw 96 k7", 1, 96, 96, (56, 56), 7, 1, 1, 96, None),
    ("dw 384 d2", 1, 384, 384, (14, 14), 3, 1, 2, 384, None),
    ("dw 144 b8", 8, 144, 144, (56, 56), 3, 1, 1, 144, None),
    # Ordinary 3x3, 5x5, 7x7 over the channel and map range.
    ("stem 3-32 s2", 1, 3, 32, (224, 224), 3, 2, 1, 1, None),
    ("3-16 112", 1, 3, 16, (112, 112), 3, 1, 1, 1, None),
    ("16-16 112", 1, 16, 16, (112, 112), 3, 1, 1, 1, None),
    ("ocr 8-16", 1, 8, 16, (48, 160), 3, 1, 1, 1, None),
    ("64-64 56", 1, 64, 64, (56, 56), 3, 1, 1, 1, None),
    ("64-128 s2", 1, 64, 128, (56, 56), 3, 2, 1, 1, None),
    ("128-128 28", 1, 128, 128, (28, 28), 3, 1, 1, 1, None),
    ("256-256 14", 1, 256, 256, (14, 14), 3, 1, 1, 1, None),
    ("512-512 7", 1, 512, 512, (7, 7), 3, 1, 1, 1, None),
    ("1024-1024 3", 1, 1024, 1024, (3, 3), 3, 1, 1, 1, None),
    ("64-64 valid", 1, 64, 64, (56, 56), 3, 1, 1, 1, [0, 0, 0, 0]),
    ("32-64 s2 tf", 1, 32, 64, (112, 112), 3, 2, 1, 1, [0, 0, 1, 1]),
    ("k5 32-32 56", 1, 32, 32, (56, 56), 5, 1, 1, 1, None),
    ("k5 64-64 28", 1, 64, 64, (28, 28), 5, 1, 1, 1, None),
    ("k7 stem s2", 1, 3, 64, (224, 224), 7, 2, 1, 1, None),
    ("k7 64-64 28", 1, 64, 64, (28, 28), 7, 1, 1, 1, None),
    ("k1 256-64 56", 1, 256, 64, (56, 56), 1, 1, 1, 1, None),
    ("k1 64-256 s2", 1, 64, 256, (56, 56), 1, 2, 1, 1, None),
    ("64-64 56 b8", 8, 64, 64, (56, 56), 3, 1, 1, 1, None),
    ("stem s2 b8", 8, 3, 32, (224, 224), 3, 2, 1, 1, None),
    ("256-256 14 b8", 8, 256, 256, (14, 14), 3, 1, 1, 1, None),
]

# 1x1 convolutions (`--set k1`): MobileNetV2's pointwise layers (expansions and projections, channels
# 16-1280, maps 7-112), each at batch 1 and 8: a matrix product per image, which `SmallMatMul` takes
# where one image's product is small enough (`src/plan/passes/small_matmul.rs`, `MAX_WORK`).
K1_LAYERS = [
    (32, 16, 112), (16, 96, 112), (96, 24, 56), (24, 144, 56), (144, 24, 56), (144, 32, 28), (32, 192, 28),
    (192, 32, 28), (192, 64, 14), (64, 384, 14), (384, 64, 14), (384, 96, 14), (96, 576, 14), (576, 96, 14),
    (576, 160, 7), (160, 960, 7), (960, 160, 7), (960, 320, 7), (320, 1280, 7),
]
K1_SHAPES = [
    (f"k1 {ci}-{co} {hw}" + (f" b{n}" if n > 1 else ""), n, ci, co, (hw, hw), 1, 1, 1, 1, None)
    for n in (1, 8)
    for ci, co, hw in K1_LAYERS
]
# Few input channels (`--set few`): a network's first layer (RGB, grey, RGBA, stacked frames) over
# strides, kernels, dilations and paddings, batch 1 and 8: the rows path of the direct kernel
# (`src/kernel/conv/rows.rs`) and the rule that gives it these shapes.
FEW_SHAPES = [
    ("stem 3-32 s2", 1, 3, 32, (224, 224), 3, 2, 1, 1, None),
    ("stem s2 b8", 8, 3, 32, (224, 224), 3, 2, 1, 1, None),
    ("stem 3-16 s2", 1, 3, 16, (224, 224), 3, 2, 1, 1, None),
    ("stem 3-32 s2 tf", 1, 3, 32, (224, 224), 3, 2, 1, 1, [0, 0, 1, 1]),
    ("stem 3-24 s2 320", 1, 3, 24, (320, 320), 3, 2, 1, 1, None),
    ("3-16 112", 1, 3, 16, (112, 112), 3, 1, 1, 1, None),
    ("3-32 k5 s2", 1, 3, 32, (224, 224), 5, 2, 1, 1, None),
    ("k7 stem s2", 1, 3, 64, (224, 224), 7, 2, 1, 1, None),
    ("1-32 28", 1, 1, 32, (28, 28), 3, 1, 1, 1, None),
    ("1-16 ocr", 1, 1, 16, (48, 160), 3, 1, 1, 1, None),
    ("1-8 k5 64", 1, 1, 8, (64, 64), 5, 1, 1, 1, None),
    ("2-16 d2 64", 1, 2, 16, (64, 64), 3, 1, 2, 1, None),
    ("4-32 s2 112", 1, 4, 32, (112, 112), 3, 2, 1, 1, None),
    ("4-64 k3 56", 1, 4, 64, (56, 56), 3, 1, 1, 1, None),
    ("3-8 s2 odd", 1, 3, 8, (37, 53), 3, 2, 1, 1, None),
    ("3-32 s2 b8 112", 8, 3, 32, (112, 112), 3, 2, 1, 1, None),
    ("1-16 b8 28", 8, 1, 16, (28, 28), 3, 1, 1, 1, None),
]
SETS = {"main": SHAPES, "k1": K1_SHAPES, "few": FEW_SHAPES}


def pads_of(k: int, stride: int, dilation: int, pads) -> list[int]:
    if pads is not None:
        return pads
    p = dilation * (k - 1) // 2 if stride == 1 else k // 2
    return [p, p, p, p]


def write_model(path: Path, shape) -> dict[str, np.ndarray]:
    _, n, c_in, c_out, (h, w), k, stride, dilation, group, pads = shape
    rng = np.random.default_rng(abs(hash(shape[0])) % (1 << 32))
    weights = (rng.standard_normal((c_out, c_in // group, k, k)) / np.sqrt(c_in // group * k * k)).astype(np.float32)
    bias = rng.standard_normal(c_out).astype(np.float32)
    node = helper.make_node(
        "Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[stride, stride],
        dilations=[dilation, dilation], group=group, pads=pads_of(k, stride, dilation, pads),
    )
    graph = helper.make_graph(
        [node], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c_in, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return {"x": rng.standard_normal((n, c_in, h, w)).astype(np.float32)}


def time_ort(model: Path, feeds: dict, threads: int, budget: float) -> float | str:
    if ort is None:
        return "no onnxruntime"
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    try:
        sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        sess.run(None, feeds)
        t0 = time.perf_counter()
        sess.run(None, feeds)
        once = time.perf_counter() - t0
        times = []
        for _ in range(runs_for(once, budget)):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            times.append(time.perf_counter() - t0)
        return min(times)
    except Exception as e:  # noqa: BLE001 - reported in the table
        return "error: " + str(e).strip().splitlines()[0][:80]


def runs_for(once: float, budget: float) -> int:
    return max(3, min(200, int(budget / max(once, 1e-6))))


def time_sliceops(binary: Path, model: Path, x: Path, threads: int, runs: int, plain: bool) -> tuple[float | str, str]:
    env = dict(os.environ)
    if plain:
        env["SLICEOPS_NO_REWRITES"] = "1"
    else:
        env.pop("SLICEOPS_NO_REWRITES", None)
    args = [str(binary), "bench", str(model), "--input", f"x={x}", "--runs", str(runs), "--format", "json",
            "--threads", str(threads), "--profile", "--top", "0"]
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        return "timeout", "-"
    if res.returncode != 0:
        return (res.stderr.strip().splitlines() or ["failed"])[-1][:80], "-"
    report = json.loads(res.stdout)
    return float(report["min_s"]), conv_op(report)


def conv_op(report: dict) -> str:
    """The op type that took most of the time in the profile (the convolution's)."""
    ops = report.get("profile", {}).get("op_types") or []
    best = max(ops, key=lambda o: o.get("total_s", 0.0), default=None)
    return (best or {}).get("op_type", "?")


def ratio(a, b) -> str:
    return f"{a / b:.2f}" if isinstance(a, float) and isinstance(b, float) and b > 0 else "-"


def ms(v) -> str:
    return f"{v * 1e3:.3f}" if isinstance(v, float) else str(v)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", type=Path, default=DEFAULT_BIN)
    p.add_argument("--threads", type=int, default=1, help="threads on every side (sliceops --threads, ort intra-op)")
    p.add_argument("--budget", type=float, default=0.4, help="seconds of timed runs per measurement (at least 3 runs)")
    p.add_argument("--only", default="", help="comma-separated substrings of shape labels to run")
    p.add_argument("--quick", action="store_true", help="every third shape only")
    p.add_argument("--set", choices=sorted(SETS), default="main",
                   help="main: the whole parameter space (default); k1: 1x1 convolutions at batch 1 and 8; "
                        "few: 1-4 input channels")
    p.add_argument("--baseline", type=Path,
                   help="an earlier sliceops binary, timed in the same run (columns `before ms`, `ours/before`)")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if not args.bin.exists():
        sys.exit(f"error: {args.bin} not found; run `cargo build --release` first")
    shapes = SETS[args.set][::3] if args.quick else SETS[args.set]
    if args.only:
        keys = args.only.split(",")
        shapes = [s for s in shapes if any(key in s[0] for key in keys)]
    print(f"# conv sweep: {len(shapes)} shapes, {args.threads} thread(s), {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}; ort {ort.__version__ if ort else '-'}")
    header = ["shape", "N", "Cin", "Cout", "HxW", "k", "s", "d", "g", "ort ms", "tract ms", "ours ms",
              "ours/ort", "ours/tract", "tract/ort", "path"]
    if args.baseline:
        header[12:12] = ["before ms", "before/ort", "ours/before"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            label, n, c_in, c_out, (h, w), k, stride, dilation, group, _ = shape
            model, xfile = Path(tmp) / "conv.onnx", Path(tmp) / "x.npy"
            feeds = write_model(model, shape)
            np.save(xfile, feeds["x"])
            t_ort = time_ort(model, feeds, args.threads, args.budget)
            once = t_ort if isinstance(t_ort, float) else 0.01
            runs = runs_for(once, args.budget)
            t_tract, _ = time_sliceops(args.bin, model, xfile, args.threads, runs, plain=True)
            t_ours, path = time_sliceops(args.bin, model, xfile, args.threads, runs, plain=False)
            g = "dw" if group == c_in and group > 1 else str(group)
            row = [label, n, c_in, c_out, f"{h}x{w}", k, stride, dilation, g, ms(t_ort), ms(t_tract), ms(t_ours),
                   ratio(t_ours, t_ort), ratio(t_ours, t_tract), ratio(t_tract, t_ort), path]
            if args.baseline:
                t_before, _ = time_sliceops(args.baseline, model, xfile, args.threads, runs, plain=False)
                row[12:12] = [ms(t_before), ratio(t_before, t_ort), ratio(t_ours, t_before)]
            print("| " + " | ".join(str(v) for v in row) + " |", flush=True)
            rows.append(dict(zip(header, row)))
    ours_ort = [float(r["ours/ort"]) for r in rows if r["ours/ort"] != "-"]
    ours_tract = [float(r["ours/tract"]) for r in rows if r["ours/tract"] != "-"]
    if ours_ort:
        gm = lambda v: float(np.exp(np.mean(np.log(v))))  # noqa: E731
        print(f"\ngeometric mean ours/ort {gm(ours_ort):.2f} (worst {max(ours_ort):.2f}); "
              f"ours/tract {gm(ours_tract):.2f} (worst {max(ours_tract):.2f})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
