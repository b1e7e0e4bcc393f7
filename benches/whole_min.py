#!/usr/bin/env python3
"""Whole models of the generated corpus at one batch, timed in interleaved rounds, minimum of each side.

On a machine other engineers' builds load (this 2-core one at a load average of 5-9), one run of each
side measures the load more than the runtimes: the same model's time moved 3x between runs a minute
apart. Here each round times, one after the other, onnxruntime (`intra_op_num_threads` = `--threads`),
each `--binary` given (`sliceops bench --runs R`: its minimum) and, with `--tract`, the first binary
with `SLICEOPS_NO_REWRITES=1` (tract's own plan); the figure kept for each side is its minimum over
the rounds, and the ratios are of those minima. `benches/ort_whole_models.py` is the four-column
table (batch 1 and 8, one thread and all cores, medians) for a quiet machine.

Usage:
    python3 benches/whole_min.py [--batch 1] [--threads 1] [--rounds 3] [--runs 15] [--tract]
        [--models mobilenet_v2,lraspp] --binary target/release/sliceops [--binary OTHER ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - environment problem, not a bench result
    sys.exit(f"error: {e}; install the pinned tools: pip install -r benches/requirements.txt")

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "models" / "bench"


def ort_min(model: Path, feeds: dict, threads: int, runs: int) -> float:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    for _ in range(3):
        sess.run(None, feeds)
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        best = min(best, time.perf_counter() - t0)
    return best


def sliceops_min(binary: Path, model: Path, inputs: dict[str, Path], threads: int, runs: int, tract: bool) -> float:
    args = [str(binary), "bench", str(model), "--runs", str(runs), "--threads", str(threads), "--format", "json"]
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    env = dict(os.environ)
    env.pop("SLICEOPS_NO_REWRITES", None)
    if tract:
        env["SLICEOPS_NO_REWRITES"] = "1"
    res = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    if res.returncode != 0:
        sys.exit(f"error: {binary} on {model}: {res.stderr.strip()[-300:]}")
    return float(json.loads(res.stdout)["min_s"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", default="1")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--models", default="", help="comma-separated substrings of model names")
    p.add_argument("--binary", type=Path, action="append", required=True)
    p.add_argument("--tract", action="store_true", help="also the first binary with SLICEOPS_NO_REWRITES=1")
    p.add_argument("--corpus", type=Path, default=CORPUS)
    args = p.parse_args()
    manifest = json.loads((args.corpus / "manifest.json").read_text())
    wanted = [w for w in args.models.split(",") if w]
    # SSDlite320's post-processing does not plan in minutes (docs/performance.md): left out.
    models = [m["name"] for m in manifest["models"] if m.get("kind") == "vision" and not m["name"].startswith("ssdlite")
              and args.batch in m.get("batches", {}) and (not wanted or any(w in m["name"] for w in wanted))]
    sides = ["onnxruntime"] + [str(b) for b in args.binary] + (["tract"] if args.tract else [])
    best: dict[str, dict[str, float]] = {m: {s: float("inf") for s in sides} for m in models}
    for _ in range(args.rounds):
        for m in models:
            folder = args.corpus / m / f"b{args.batch}"
            model = folder / "model.onnx"
            inputs = {f.stem: f for f in sorted((folder / "inputs").glob("*.npy"))}
            feeds = {k: np.load(v) for k, v in inputs.items()}
            row = best[m]
            row["onnxruntime"] = min(row["onnxruntime"], ort_min(model, feeds, args.threads, args.runs))
            for b in args.binary:
                row[str(b)] = min(row[str(b)], sliceops_min(b, model, inputs, args.threads, args.runs, False))
            if args.tract:
                tract = sliceops_min(args.binary[0], model, inputs, args.threads, max(args.runs // 3, 3), True)
                row["tract"] = min(row["tract"], tract)
    names = [Path(b).name for b in args.binary]
    print(f"batch {args.batch}, {args.threads} thread(s), minimum over {args.rounds} rounds of {args.runs} runs; "
          f"load average {os.getloadavg()[0]:.1f} at the end\n")
    head = ["model", "onnxruntime ms"] + [f"{n} ms" for n in names] + (["tract ms"] if args.tract else [])
    head += [f"{n}/ort" for n in names] + ([f"{names[0]}/tract"] if args.tract else [])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for m in models:
        row = best[m]
        cells = [m, f"{row['onnxruntime'] * 1e3:.3f}"] + [f"{row[str(b)] * 1e3:.3f}" for b in args.binary]
        if args.tract:
            cells.append(f"{row['tract'] * 1e3:.3f}")
        cells += [f"{row[str(b)] / row['onnxruntime']:.2f}" for b in args.binary]
        if args.tract:
            cells.append(f"{row[str(args.binary[0])] / row['tract']:.2f}")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
