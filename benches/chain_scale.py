#!/usr/bin/env python3
"""Long chains of ordinary nodes: how `sliceops run` scales with the node count, next to onnxruntime.

For each kind and node count it writes a model (a chain of `--nodes` nodes over `x: [4, 8]` float32)
and its input into `--out-dir`, then times in the same run:

- sliceops: the wall time of one `sliceops run MODEL --input x=x.npy` process (load, analyse,
  optimize, run, write the outputs);
- onnxruntime: `InferenceSession(MODEL)` creation plus one `run`, inside this process (no interpreter
  start-up counted: it favours onnxruntime).

Kinds: `slice` (ONNX Slice `x[::-1]` on axis 0, then axis 1, alternately: every node is a real view,
a chain of views composes into one), `relu` (Relu after Relu), `mixed` (Slice `x[::-1]`, then Relu,
alternately: views that cannot compose through the Relus). Both outputs are compared with numpy.

    python3 benches/chain_scale.py [--nodes 1000,10000] [--kinds slice,relu,mixed]
        [--sliceops target/release/sliceops] [--out-dir bench-out/chains] [--timeout 600]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper


def chain_model(kind, nodes):
    """The model: `nodes` nodes in one chain from `x` to `y`."""
    inits = [] if kind == "relu" else [
        helper.make_tensor("st", TensorProto.INT64, [1], [-1]),
        helper.make_tensor("en", TensorProto.INT64, [1], [-(2**63)]),
        helper.make_tensor("ax0", TensorProto.INT64, [1], [0]),
        helper.make_tensor("ax1", TensorProto.INT64, [1], [1]),
        helper.make_tensor("step", TensorProto.INT64, [1], [-1]),
    ]
    graph_nodes = []
    slices = 0
    for i in range(nodes):
        src = "x" if i == 0 else f"v{i - 1}"
        dst = "y" if i == nodes - 1 else f"v{i}"
        if kind == "relu" or (kind == "mixed" and i % 2 == 1):
            graph_nodes.append(helper.make_node("Relu", [src], [dst], name=f"n{i}"))
        else:
            axes = "ax0" if slices % 2 == 0 else "ax1"
            slices += 1
            graph_nodes.append(helper.make_node("Slice", [src, "st", "en", axes, "step"], [dst], name=f"n{i}"))
    graph = helper.make_graph(
        graph_nodes,
        f"{kind}_{nodes}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, slices


def expected(kind, nodes, slices, x):
    """What the chain computes, with numpy."""
    rev0 = (slices + 1) // 2
    rev1 = slices // 2
    y = x[::-1] if rev0 % 2 else x
    y = y[:, ::-1] if rev1 % 2 else y
    if kind == "relu" or (kind == "mixed" and nodes > 1):
        y = np.maximum(y, 0)
    return np.ascontiguousarray(y)


def time_sliceops(binary, model_path, x_path, out_dir, timeout):
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [binary, "run", model_path, "--input", f"x={x_path}", "--output-dir", out_dir],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None, f"over {timeout} s"
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    return elapsed, np.load(os.path.join(out_dir, "y.npy"))


def time_onnxruntime(model_path, x):
    import onnxruntime as ort

    start = time.perf_counter()
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    (y,) = session.run(["y"], {"x": x})
    return time.perf_counter() - start, y


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="1000,10000,50000,200000")
    ap.add_argument("--kinds", default="slice,relu,mixed")
    ap.add_argument("--sliceops", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "sliceops"))
    ap.add_argument("--out-dir", default=os.path.join("bench-out", "chains"))
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    x_path = os.path.join(args.out_dir, "x.npy")
    np.save(x_path, x)
    rows = []
    print(f"{'kind':6} {'nodes':>7} {'sliceops s':>11} {'onnxruntime s':>14} {'ratio':>7}")
    for kind in args.kinds.split(","):
        for nodes in (int(n) for n in args.nodes.split(",")):
            model, slices = chain_model(kind, nodes)
            model_path = os.path.join(args.out_dir, f"{kind}_{nodes}.onnx")
            onnx.save(model, model_path)
            want = expected(kind, nodes, slices, x)
            ort_s, ort_y = time_onnxruntime(model_path, x)
            if not np.array_equal(ort_y, want):
                sys.exit(f"{kind} {nodes}: onnxruntime's output differs from numpy's")
            with tempfile.TemporaryDirectory() as out:
                ours_s, ours = time_sliceops(args.sliceops, model_path, x_path, out, args.timeout)
            if ours_s is None:
                print(f"{kind:6} {nodes:>7} {ours:>11} {ort_s:>14.3f}", flush=True)
                rows.append({"kind": kind, "nodes": nodes, "sliceops_s": None, "error": ours, "onnxruntime_s": ort_s})
                continue
            if not np.array_equal(ours, want):
                sys.exit(f"{kind} {nodes}: sliceops' output differs from numpy's")
            print(f"{kind:6} {nodes:>7} {ours_s:>11.3f} {ort_s:>14.3f} {ours_s / ort_s:>6.2f}x", flush=True)
            rows.append({"kind": kind, "nodes": nodes, "sliceops_s": ours_s, "onnxruntime_s": ort_s})
    with open(os.path.join(args.out_dir, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
