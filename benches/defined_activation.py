#!/usr/bin/env python3
"""HardSwish and tanh-form Gelu: our `DefinedActivation` (src/plan/ops/activation.rs) against
tract's kernels, and Softplus (`FusedSoftplus`, src/ops/math/softplus.rs) against tract-onnx's
`Ln(Exp(x) + 1)`, with `sliceops bench`, in the same run.

    python3 benches/defined_activation.py BASELINE_BIN [OURS_BIN] [--rounds 7] [--runs 200]

`BASELINE_BIN` is a sliceops binary built before `DefinedActivation` and `FusedSoftplus` (its plan
runs tract's `HardSwish` and `GeluApproximate` kernels and tract-onnx's Softplus expansion); `OURS_BIN` defaults to target/release/sliceops.
(`SLICEOPS_NO_REWRITES=1` does not take our kernels out of the plan, only the rewrites before
code generation, so the baseline is another binary.)

Rows:
- one-node models (generated here, float32): `HardSwish` (opset 14), `Gelu` with
  `approximate = "tanh"` (opset 20) and `Softplus` (opset 14) on [1,64,56,56] and [8,197,768], on
  inputs normal(0, 3) and on
  the same with a quarter of the values moved below -3 (uniform in [-12, -3], where tract's tanh
  saturates short of -1);
- the committed exports whose plan holds one of the two ops (models/real: `ocr_cls_rapidocr_wheel`:
  18 decomposed hard swishes, which `src/plan/passes/hard_swish.rs` makes `HardSwish`;
  `deeplabv3_torch_legacy`, `lraspp_torch_legacy`: 20 HardSwish each; `gemma_torch_dynamo`: 2
  tanh-form Gelu), on their `a` inputs.

Each round runs the two binaries one after the other (`bench --runs N --format json`) on every
row; a row's time is the minimum of `min_s` over the rounds (the figure a loaded machine disturbs
least), and `ours/tract` their ratio (below 1: ours faster).
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "models" / "real"
EXPORTS = ["ocr_cls_rapidocr_wheel", "deeplabv3_torch_legacy", "lraspp_torch_legacy", "gemma_torch_dynamo"]


def one_node(op, shape, path):
    attrs = {"approximate": "tanh"} if op == "Gelu" else {}
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20 if op == "Gelu" else 14)])
    m.ir_version = 8
    onnx.save(m, str(path))


def inputs(shape, negative, path):
    rng = np.random.default_rng(7)
    x = rng.normal(0.0, 3.0, shape).astype(np.float32)
    if negative:
        flat = x.reshape(-1)
        pick = rng.permutation(flat.size)[: flat.size // 4]
        flat[pick] = rng.uniform(-12.0, -3.0, pick.size).astype(np.float32)
    np.save(path, x)


def bench(binary, args, runs):
    r = subprocess.run([str(binary), "bench", *args, "--runs", str(runs), "--format", "json"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"error: {binary} bench {' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)["min_s"]


def export_args(name):
    folder = REAL / name / "inputs" / "a"
    args = [str(REAL / name / "model.onnx")]
    for f in sorted(folder.glob("*.npy")):
        args += ["-i", f"{f.stem}={f}"]
    return args


def main():
    p = argparse.ArgumentParser()
    p.add_argument("baseline")
    p.add_argument("ours", nargs="?", default=str(ROOT / "target" / "release" / "sliceops"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--export-runs", type=int, default=10)
    p.add_argument("--no-exports", action="store_true")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = []
        for op in ["HardSwish", "Gelu", "Softplus"]:
            for shape in [[1, 64, 56, 56], [8, 197, 768]]:
                model = tmp / f"{op}_{'x'.join(map(str, shape))}.onnx"
                one_node(op, shape, model)
                for negative in [False, True]:
                    x = tmp / f"{model.stem}_{int(negative)}.npy"
                    inputs(shape, negative, x)
                    label = f"{op}{'(tanh)' if op == 'Gelu' else ''} {shape} {'quarter < -3' if negative else 'normal(0,3)'}"
                    rows.append((label, [str(model), "-i", f"x={x}"], a.runs))
        if not a.no_exports:
            rows += [(name, export_args(name), a.export_runs) for name in EXPORTS]
        best = {label: [float("inf"), float("inf")] for label, _, _ in rows}
        for _ in range(a.rounds):
            for label, args, runs in rows:
                for i, binary in enumerate([a.baseline, a.ours]):
                    best[label][i] = min(best[label][i], bench(binary, args, runs))
        print(f"| case | tract (ms) | ours (ms) | ours/tract |\n|---|---:|---:|---:|")
        for label, _, _ in rows:
            t, o = best[label]
            print(f"| {label} | {t * 1e3:.4f} | {o * 1e3:.4f} | {o / t:.2f} |")


if __name__ == "__main__":
    main()
