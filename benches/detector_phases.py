#!/usr/bin/env python3
"""Where the time of a two-stage detector goes, sliceops next to onnxruntime: analysis, fold, plan, runs.

    python3 benches/detector_phases.py [--sliceops PATH] [--repeat 3] [--runs 10]
    python3 benches/detector_phases.py --model other.onnx --input image=a.npy [--input ...]
    python3 benches/detector_phases.py --chain 10,20,40,80

By default the model is models/real/faster_rcnn_torch_legacy (torchvision's FasterRCNN, small config:
RPN, MultiScaleRoIAlign, NMS inside `If` branches, data-dependent box counts), at both committed input
sizes. For each size, in one run of this script, on the same machine:

- sliceops, each command a fresh process, the median wall time of `--repeat` processes:
  `infer MODEL` (load and analyse with the input dims symbolic), `fold MODEL -o TMP`, `run MODEL` (load,
  analyse with the shapes bound, plan, one run, write the outputs);
- sliceops `bench MODEL --runs N --format json` (one process): `load_s`, `plan_s` (the analysis with the
  input shapes bound, optimization and planning), `first_run_s` (the warm-up run), `median_s` of the N
  runs after it;
- onnxruntime (CPU provider, default options): session creation (median of `--repeat`), its first run
  and the median of N runs after it.

The table gives seconds; the last column is sliceops over onnxruntime for the rows that have both
(session creation against load + plan, first run against first run, warm run against warm run).

With `--chain 10,20,40,80` it times instead chains of that many rounds of detection-style selection
over `scores: [N]` (N = 5000): per round `Greater(0.1)` -> `NonZero` -> `Gather` -> `TopK` of
`min(count, 1000)` -> `Mul`, ten nodes and two sizes known only at run time, each round reading the
previous one: how the time grows with the number of data-dependent sizes in flight.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - environment problem, not a result
    sys.exit(f"error: {e}; install the pinned tools: pip install -r benches/requirements.txt")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "models", "real", "faster_rcnn_torch_legacy")


def escape(name):
    return name.replace("%", "%25").replace("/", "%2F")


def wall(cmd, repeat):
    """Median wall time of `repeat` runs of `cmd`, each a fresh process (it must succeed)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        times.append(time.perf_counter() - start)
        if p.returncode != 0:
            sys.exit(f"error: {' '.join(cmd)} failed: {p.stderr.strip()}")
    return statistics.median(times)


def onnxruntime_phases(model, feeds, repeat, runs):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    creations = []
    for _ in range(repeat):
        start = time.perf_counter()
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        creations.append(time.perf_counter() - start)
    start = time.perf_counter()
    session.run(None, feeds)
    first = time.perf_counter() - start
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(creations), first, statistics.median(times)


def measure(exe, model, inputs, repeat, runs):
    """inputs: {name: .npy path}. Returns the table rows (phase, sliceops s, onnxruntime s)."""
    args = []
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    with tempfile.TemporaryDirectory() as tmp:
        infer = wall([exe, "infer", model], repeat)
        fold = wall([exe, "fold", model, "-o", os.path.join(tmp, "folded.onnx")], repeat)
        run = wall([exe, "run", model, "--output-dir", os.path.join(tmp, "out")] + args, repeat)
    p = subprocess.run([exe, "bench", model, "--runs", str(runs), "--format", "json"] + args,
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        sys.exit(f"error: sliceops bench failed: {p.stderr.strip()}")
    bench = json.loads(p.stdout)
    feeds = {name: np.load(path) for name, path in inputs.items()}
    creation, first, warm = onnxruntime_phases(model, feeds, repeat, runs)
    return [
        ("infer (load + analysis, symbolic dims)", infer, None),
        ("fold", fold, None),
        ("run command (load, analysis, plan, 1 run)", run, None),
        ("load + plan / session creation", bench["load_s"] + bench["plan_s"], creation),
        ("  of which plan (analysis with shapes bound, optimize)", bench["plan_s"], None),
        ("first run", bench["first_run_s"], first),
        (f"warm run (median of {runs})", bench["median_s"], warm),
    ]


def chain_model(rounds, path):
    """`rounds` rounds of selection (see the module doc) written to `path`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.float32(0.1), "th"), numpy_helper.from_array(np.array([-1], np.int64), "flat"),
             numpy_helper.from_array(np.int64(1), "one"), numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array([1000], np.int64), "cap")]
    nodes, cur = [], "scores"
    for i in range(rounds):
        p = f"r{i}_"
        nodes += [
            helper.make_node("Greater", [cur, "th"], [p + "mask"], name=p + "Greater"),
            helper.make_node("NonZero", [p + "mask"], [p + "nz"], name=p + "NonZero"),
            helper.make_node("Reshape", [p + "nz", "flat"], [p + "idx"], name=p + "Reshape"),
            helper.make_node("Gather", [cur, p + "idx"], [p + "kept"], name=p + "Gather", axis=0),
            helper.make_node("Shape", [p + "nz"], [p + "shape"], name=p + "Shape"),
            helper.make_node("Gather", [p + "shape", "one"], [p + "count"], name=p + "Count", axis=0),
            helper.make_node("Unsqueeze", [p + "count", "axes"], [p + "count1"], name=p + "Unsqueeze"),
            helper.make_node("Min", [p + "count1", "cap"], [p + "k"], name=p + "Min"),
            helper.make_node("TopK", [p + "kept", p + "k"], [p + "best", p + "pos"], name=p + "TopK", axis=0),
            helper.make_node("Mul", [p + "best", p + "best"], [p + "square"], name=p + "Mul"),
        ]
        cur = p + "square"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N"])],
                              [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [None])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def chains(exe, rounds_list, repeat, runs):
    print("| rounds | nodes | infer | fold | run command | plan | warm run | onnxruntime session + run |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        scores = os.path.join(tmp, "scores.npy")
        np.save(scores, np.random.default_rng(0).random(5000).astype(np.float32))
        for rounds in rounds_list:
            path = os.path.join(tmp, f"chain{rounds}.onnx")
            chain_model(rounds, path)
            rows = {phase: ours for phase, ours, _ in measure(exe, path, {"scores": scores}, repeat, runs)}
            creation, first, _ = onnxruntime_phases(path, {"scores": np.load(scores)}, repeat, runs)
            cells = [rows["infer (load + analysis, symbolic dims)"], rows["fold"],
                     rows["run command (load, analysis, plan, 1 run)"],
                     rows["  of which plan (analysis with shapes bound, optimize)"], rows[f"warm run (median of {runs})"],
                     creation + first]
            print(f"| {rounds} | {10 * rounds} | " + " | ".join(f"{c:.3f} s" for c in cells) + " |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sliceops", default=os.path.join(ROOT, "target", "release", "sliceops"))
    ap.add_argument("--model", help="another .onnx model (with --input)")
    ap.add_argument("--input", action="append", default=[], help="NAME=FILE.npy, with --model")
    ap.add_argument("--repeat", type=int, default=3, help="processes per command / sessions created")
    ap.add_argument("--runs", type=int, default=10, help="warm runs timed")
    ap.add_argument("--chain", help="comma-separated round counts: time chains of selections instead")
    args = ap.parse_args()
    if args.chain:
        return chains(args.sliceops, [int(r) for r in args.chain.split(",")], args.repeat, args.runs)
    if args.model:
        cases = [(os.path.basename(args.model), args.model, dict(i.split("=", 1) for i in args.input))]
    else:
        manifest = json.load(open(os.path.join(ROOT, "models", "real", "manifest.json")))
        entry = next(m for m in manifest["models"] if m["name"] == os.path.basename(DEFAULT))
        cases = []
        for size in ("a", "b"):
            inputs = {i: os.path.join(DEFAULT, "inputs", size, escape(i) + ".npy") for i in entry["inputs"]}
            shapes = ", ".join(f"{i} {entry['sizes'][size][i]}" for i in entry["inputs"])
            cases.append((f"{entry['name']} ({shapes})", os.path.join(DEFAULT, "model.onnx"), inputs))
    for title, model, inputs in cases:
        rows = measure(args.sliceops, model, inputs, args.repeat, args.runs)
        print(f"\n{title}\n")
        print("| phase | sliceops | onnxruntime | sliceops / onnxruntime |")
        print("|---|---|---|---|")
        for phase, ours, theirs in rows:
            other = f"{theirs:.3f} s" if theirs is not None else ""
            ratio = f"{ours / theirs:.2f}" if theirs else ""
            print(f"| {phase} | {ours:.3f} s | {other} | {ratio} |")


if __name__ == "__main__":
    main()
