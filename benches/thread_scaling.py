#!/usr/bin/env python3
"""Where more threads pay: each runtime's time per op type on one thread against more, model by model.

For every model of the generated corpus (`models/bench/`, written by `benches/bench_corpus.py`) at
the batches asked for:

- sliceops: `sliceops bench --profile --top 0 --threads T` (the plan's nodes timed one by one,
  summed by op type: tract's op names after optimization, ours included: `DirectConv`, `SmallMatMul`,
  ...), for T = 1 and each further count;
- onnxruntime: its profiler's node events summed by op type (`ort_whole_models.ort_profile`), with
  `intra_op_num_threads = T`, in a process of its own (no session of one runtime lives beside the
  other's measurement).

It prints, per model and batch, each op type's time per run on one thread and on T threads and the
ratio (T threads over one: below 1, more threads pay; about 1, the op runs on one thread whatever the
budget), sliceops first, then onnxruntime, with the totals; op types under 1% of the one-thread time
are left out. The last table sums each runtime's op types that did not scale (ratio above 0.9) as a
share of its one-thread time: what caps the whole model's gain from more cores.

Usage:
    python3 benches/thread_scaling.py [--models resnet18,mobilenet_v2] [--batches 1,8]
        [--threads 2] [--runs 10] [--sliceops target/release/sliceops] [--bench-dir models/bench]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ort_whole_models as owm  # noqa: E402  (the sibling script's helpers)


def ours(binary: Path, model: Path, inputs: dict[str, Path], threads: int, runs: int) -> dict[str, tuple[int, float]] | str:
    """sliceops' seconds per run by op type (and its node count), or why it did not run."""
    args = ["bench", *owm.sliceops_args(model, inputs), "--runs", str(runs), "--format", "json", "--profile",
            "--top", "0", "--threads", str(threads)]
    report = owm.run_sliceops(binary, args)
    if isinstance(report, str):
        return report
    return {t["op_type"]: (int(t["nodes"]), float(t["mean_s"])) for t in report["profile"]["op_types"]}


def theirs(model: Path, inputs: dict[str, Path], threads: int, runs: int, warmup: int) -> dict[str, tuple[int, float]] | str:
    """onnxruntime's seconds per run by op type, profiled in a process of its own."""
    job = {"model": str(model), "inputs": {k: str(p) for k, p in inputs.items()}, "threads": threads,
           "runs": runs, "warmup": warmup}
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--ort-profile-worker", json.dumps(job)],
                         capture_output=True, text=True, timeout=3600)
    try:
        out = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "error: " + ((res.stderr.strip().splitlines() or ["exit status %d" % res.returncode])[-1][:120])
    return {k: (int(v[0]), float(v[1])) for k, v in out.items()}


def ort_profile_worker(spec: str) -> int:
    job = json.loads(spec)
    feeds = {k: owm.np.load(p) for k, p in job["inputs"].items()}
    prof = owm.ort_profile(Path(job["model"]), feeds, job["threads"], job["runs"], job["warmup"])
    print(json.dumps({op: [v["nodes"], v["per_run_s"]] for op, v in prof.items()}))
    return 0


def table(side: str, one: dict, more: dict, threads: int) -> float:
    """Prints one runtime's op types (one thread, `threads` threads, ratio); returns the share of its
    one-thread time in op types that did not scale (ratio above 0.9)."""
    total1 = sum(v[1] for v in one.values())
    totaln = sum(v[1] for v in more.values())
    print(f"| {side} op | nodes | 1 thread ms | {threads} threads ms | {threads}/1 |")
    print("|---|---:|---:|---:|---:|")
    flat = 0.0
    for op, (nodes, t1) in sorted(one.items(), key=lambda kv: -kv[1][1]):
        tn = more.get(op, (0, 0.0))[1]
        if t1 > 0 and tn / t1 > 0.9:
            flat += t1
        if t1 < 0.01 * total1:
            continue
        print(f"| {op} | {nodes} | {t1 * 1e3:.3f} | {tn * 1e3:.3f} | {tn / t1 if t1 else 0:.2f} |")
    print(f"| **total** | | {total1 * 1e3:.3f} | {totaln * 1e3:.3f} | {totaln / total1 if total1 else 0:.2f} |\n")
    return flat / total1 if total1 else 0.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma-separated substrings: only models whose name contains one")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--threads", type=int, default=2, help="the thread count set against one (default 2)")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--sliceops", type=Path, default=owm.DEFAULT_BIN)
    p.add_argument("--bench-dir", type=Path, default=owm.BENCH)
    p.add_argument("--ort-profile-worker", metavar="JSON", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.ort_profile_worker:
        return ort_profile_worker(args.ort_profile_worker)
    models = json.loads((args.bench_dir / "manifest.json").read_text())["models"]
    if args.models:
        wanted = [w.strip() for w in args.models.split(",") if w.strip()]
        models = [m for m in models if any(w in m["name"] for w in wanted)]
    summary = []
    print(f"load average {owm.os.getloadavg()[0]:.1f}, {args.runs} runs per profile\n")
    for info in models:
        for batch in [b.strip() for b in args.batches.split(",") if b.strip()]:
            if batch not in info["batches"]:
                continue
            folder = args.bench_dir / info["name"] / f"b{batch}"
            model, inputs = folder / "model.onnx", {"x": folder / "inputs" / "x.npy"}
            print(f"{info['name']} b{batch}...", file=sys.stderr)
            s1, sn = (ours(args.sliceops, model, inputs, t, args.runs) for t in (1, args.threads))
            o1, on = (theirs(model, inputs, t, args.runs, args.warmup) for t in (1, args.threads))
            print(f"### {info['name']}, batch {batch}\n")
            flat = []
            for side, one, more in (("sliceops", s1, sn), ("onnxruntime", o1, on)):
                if isinstance(one, str) or isinstance(more, str):
                    print(f"{side}: {one if isinstance(one, str) else more}\n")
                    flat.append(None)
                else:
                    flat.append(table(side, one, more, args.threads))
            summary.append((info["name"], batch, *flat))
    print(f"Share of the one-thread time in op types that {args.threads} threads did not speed up (ratio above 0.9)\n")
    print("| model | batch | sliceops | onnxruntime |")
    print("|---|---:|---:|---:|")
    for name, batch, s, o in summary:
        cell = lambda v: "-" if v is None else f"{v * 100:.0f}%"  # noqa: E731
        print(f"| {name} | {batch} | {cell(s)} | {cell(o)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
