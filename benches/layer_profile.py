#!/usr/bin/env python3
"""Where the time goes, layer by layer: `sliceops bench --profile` against onnxruntime's own profiler.

Both runtimes fuse nodes differently (onnxruntime a `Conv` with its `Clip` into one NCHWc `Conv`,
sliceops a `Conv` with its batch normalization and clamp into `DirectConv`, a 1x1 one into
`SmallMatMul`), so the time of each runtime's timed node is given to a *layer* of the ONNX graph: the
node whose value the timed node writes (onnxruntime names a fused node's event after its last output,
sliceops gives the ONNX node it ends at), walked back through the activations and per-channel
affine nodes after a `Conv`/`Gemm`/`MatMul` to that node. Each layer gets a *kind* from its op, its
attributes and its shapes (`dw k5 s2 7x7` for a depthwise 5x5 stride-2 convolution with a 7x7 output,
`pw 1x1 map` for a 1x1 convolution on a 1x1 map: a squeeze-excitation block's, `conv k3` ...).

It prints, one thread by default (`--threads`), per run (each node's fastest of `--runs` runs,
`--stat min`, or its mean, `--stat mean`; onnxruntime's from its profiler's kernel events of the
timed runs):

- time per kind on each side, the difference and the ratio, largest difference first;
- the `--top` layers with the largest difference.

onnxruntime's layout nodes (`ReorderInput`, `ReorderOutput`) and nodes it adds are their own kinds.

Usage:
    python3 benches/layer_profile.py MODEL.onnx --input x=FILE.npy [--threads 1] [--runs 20] [--top 15]
        [--binary target/release/sliceops]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - environment problem, not a bench result
    sys.exit(f"error: {e}; install the pinned tools: pip install -r benches/requirements.txt")

REPO = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))

# Nodes folded into the layer before them when they read its value alone.
FOLLOWERS = {"Clip", "Relu", "BatchNormalization", "HardSwish", "Sigmoid", "HardSigmoid", "LeakyRelu"}
# Nodes that are a layer of their own even after a convolution (a residual Add reads two values).
ANCHORS = {"Conv", "Gemm", "MatMul"}


class Graph:
    """The ONNX graph's producers, attributes and value shapes (after onnx's shape inference)."""

    def __init__(self, path: Path):
        model = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
        g = model.graph
        self.consts = {t.name for t in g.initializer}
        self.consts |= {o for n in g.node if n.op_type == "Constant" for o in n.output}
        self.nodes = {n.name: n for n in g.node}
        self.producer = {o: n for n in g.node for o in n.output}
        self.readers: dict[str, int] = defaultdict(int)
        for n in g.node:
            for i in n.input:
                self.readers[i] += 1
        self.shapes = {}
        for v in list(g.value_info) + list(g.output) + list(g.input):
            dims = v.type.tensor_type.shape.dim
            self.shapes[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        for t in g.initializer:
            self.shapes[t.name] = list(t.dims)

    def layer(self, node) -> onnx.NodeProto:
        """The layer a node belongs to: walked back through activations and constant affine nodes."""
        seen = 0
        if node.op_type == "Add":
            # A residual sum: both runtimes fuse it into the convolution whose value it alone reads.
            for i in node.input:
                prev = self.producer.get(i)
                if prev is not None and prev.op_type == "Conv" and self.readers[i] == 1:
                    return prev
        while node.op_type not in ANCHORS and seen < 8:
            dynamic = [i for i in node.input if i and i not in self.consts]
            affine = node.op_type in ("Mul", "Add", "Div", "Sub") and len(dynamic) == 1
            if not (node.op_type in FOLLOWERS or affine) or len(dynamic) != 1 or dynamic[0] not in self.producer:
                break
            prev = self.producer[dynamic[0]]
            if prev.op_type not in ANCHORS and prev.op_type not in FOLLOWERS and not affine:
                break
            node, seen = prev, seen + 1
            if node.op_type in ANCHORS:
                break
        return node

    def kind(self, node) -> str:
        op = node.op_type
        if op != "Conv":
            return op
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        w = self.shapes.get(node.input[1], [])
        out = self.shapes.get(node.output[0], [])
        x = self.shapes.get(node.input[0], [])
        group = attrs.get("group", 1)
        k = w[2] if len(w) == 4 else "?"
        s = attrs.get("strides", [1, 1])[0]
        d = attrs.get("dilations", [1, 1])[0]
        hw = f"{out[2]}x{out[3]}" if len(out) == 4 else "?"
        extra = (f" s{s}" if s != 1 else "") + (f" d{d}" if d != 1 else "")
        if len(x) == 4 and group > 1 and group == x[1]:
            return f"dw k{k}{extra} {hw}"
        if group > 1:
            return f"grouped k{k}{extra}"
        if k == 1:
            return "pw 1x1 map" if hw == "1x1" else "pw"
        return f"conv k{k}{extra}"


def ours_profile(binary: Path, model: Path, inputs: list[str], threads: int, runs: int, stat: str) -> dict[str, float]:
    """sliceops' seconds per run by ONNX node name ('-' for plan nodes of no ONNX node): each node's
    fastest run (`min`) or its mean."""
    args = [str(binary), "bench", str(model), "--runs", str(runs), "--threads", str(threads),
            "--profile", "--top", "0", "--format", "json"]
    for i in inputs:
        args += ["--input", i]
    res = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        sys.exit(f"error: sliceops bench: {res.stderr.strip()[-400:]}")
    times: dict[str, float] = defaultdict(float)
    for n in json.loads(res.stdout)["profile"]["nodes"]:
        times[n.get("onnx_node") or "-"] += float(n[f"{stat}_s"])
    return times


def ort_profile(model: Path, inputs: list[str], threads: int, runs: int, stat: str) -> dict[str, float]:
    """onnxruntime's seconds per run by event name (the fused node's output or node name): each
    node's fastest run (`min`) or its mean."""
    feeds = {}
    for i in inputs:
        name, path = i.split("=", 1)
        feeds[name] = np.load(path)
    with tempfile.TemporaryDirectory() as tmp:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.enable_profiling = True
        opts.profile_file_prefix = str(Path(tmp) / "ort")
        sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        for _ in range(3):
            sess.run(None, feeds)
        for _ in range(runs):
            sess.run(None, feeds)
        trace = json.loads(Path(sess.end_profiling()).read_text())
    run_events = sorted((e for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run"),
                        key=lambda e: e["ts"])
    start = run_events[-runs]["ts"]
    durations: dict[str, list[float]] = defaultdict(list)
    for e in trace:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time") or e["ts"] < start:
            continue
        key = name.removesuffix("_kernel_time")
        op = e.get("args", {}).get("op_name", "?")
        durations[f"{key}\0{op}"].append(float(e["dur"]) * 1e-6)
    if stat == "min":
        # A node runs once a run: its events, in order, are one per run.
        return {k: min(v) * len(v) / runs for k, v in durations.items()}
    return {k: sum(v) / runs for k, v in durations.items()}


def layer_of_ort(graph: Graph, key: str):
    """The ONNX node of an onnxruntime event (by its output value or node name), or its own op."""
    name, op = key.split("\0")
    for cand in (name, name.removesuffix("_nchwc")):
        if cand in graph.producer:
            return graph.producer[cand]
        if cand in graph.nodes:
            return graph.nodes[cand]
    return op


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path)
    p.add_argument("--input", action="append", default=[], help="NAME=FILE.npy (repeatable)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--stat", choices=["min", "mean"], default="min",
                   help="each node's fastest run (the figure a loaded machine disturbs least) or its mean")
    p.add_argument("--binary", type=Path, default=TARGET / "release" / "sliceops")
    args = p.parse_args()
    graph = Graph(args.model)
    ours = ours_profile(args.binary, args.model, args.input, args.threads, args.runs, args.stat)
    theirs = ort_profile(args.model, args.input, args.threads, args.runs, args.stat)
    per_layer: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    kinds: dict[str, str] = {}
    for name, t in ours.items():
        node = graph.nodes.get(name)
        if node is None:
            layer, kind = "(plan node)", "(plan node)"
        else:
            anchor = graph.layer(node)
            layer, kind = anchor.name, graph.kind(anchor)
        per_layer[layer][0] += t
        kinds[layer] = kind
    for key, t in theirs.items():
        node = layer_of_ort(graph, key)
        if isinstance(node, str):
            layer, kind = f"({node})", f"{node} (ort)"
        else:
            anchor = graph.layer(node)
            layer, kind = anchor.name, graph.kind(anchor)
        per_layer[layer][1] += t
        kinds[layer] = kind
    per_kind: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for layer, (a, b) in per_layer.items():
        row = per_kind[kinds[layer]]
        row[0] += a
        row[1] += b
        row[2] += 1
    total = [sum(v[0] for v in per_kind.values()), sum(v[1] for v in per_kind.values())]
    print(f"### {args.model} ({args.threads} thread(s), {args.runs} runs, {args.stat} per node): "
          "time per run by layer kind\n")
    print("| kind | layers | sliceops ms | onnxruntime ms | difference ms | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    ratio = lambda a, b: f"{a / b:.2f}" if b > 0 else "-"  # noqa: E731
    for kind, (a, b, n) in sorted(per_kind.items(), key=lambda kv: -(kv[1][0] - kv[1][1])):
        print(f"| {kind} | {n} | {a * 1e3:.3f} | {b * 1e3:.3f} | {(a - b) * 1e3:+.3f} | {ratio(a, b)} |")
    print(f"| **total** | | {total[0] * 1e3:.3f} | {total[1] * 1e3:.3f} | {(total[0] - total[1]) * 1e3:+.3f} | "
          f"{ratio(*total)} |\n")
    print(f"Top {args.top} layers by difference:\n")
    print("| layer | kind | sliceops ms | onnxruntime ms | difference ms | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for layer, (a, b) in sorted(per_layer.items(), key=lambda kv: -(kv[1][0] - kv[1][1]))[: args.top]:
        print(f"| {layer} | {kinds[layer]} | {a * 1e3:.3f} | {b * 1e3:.3f} | {(a - b) * 1e3:+.3f} | {ratio(a, b)} |")


if __name__ == "__main__":
    main()
