#!/usr/bin/env python3
"""sliceops' Python package against onnxruntime and onnx, in one run on the same inputs.

1. Slicing cases (the cases of benches/slicing.rs, built by benches/ort_compare.py): the standard ONNX
   model of each case through ``sliceops.Session.run`` and ``onnxruntime.InferenceSession.run``, outputs
   checked equal to numpy's, median of N runs after a warm-up.
2. Whole models (models/real/*, input size b): ``Session.run`` against ``InferenceSession.run``,
   outputs checked against models/real/<name>/expected/b.
3. Shape inference on the real exports: ``sliceops.infer_shapes`` against
   ``onnx.shape_inference.infer_shapes`` and onnxruntime's ``SymbolicShapeInference.infer_shapes``:
   time (median) and how many node outputs each gives a full shape (every dim an integer or a named
   symbol).

Usage (numpy, onnx, onnxruntime and the sliceops wheel installed):

    python benches/python_bench.py [--runs 20] [--warmup 3] [--cases outer,tiny] [--models gpt2_torch_legacy,...]
        [--skip slicing,models,shapes]

Prints markdown tables; ratios are sliceops / the other tool (below 1: sliceops is faster).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import sliceops

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "models" / "real"
CANNOT_RUN: set[str] = set()
ort.set_default_logger_severity(3)


def median_time(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fmt_ms(seconds):
    return f"{seconds * 1e3:.3f} ms"


def escape(name):
    return name.replace("%", "%25").replace("/", "%2F")


def slicing(args):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ort_compare

    keys = set(args.cases.split(",")) if args.cases else None
    print("| case | onnxruntime | sliceops.Session | sliceops / onnxruntime |")
    print("|---|---|---|---|")
    for case in ort_compare.build_cases(keys):
        for variant in case.variants:
            if not variant.ort:
                continue
            data = variant.model.SerializeToString()
            feeds = {"x": case.input}
            theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
            ours = sliceops.Session(data)
            for got in (theirs.run(None, feeds)[0], ours.run(None, feeds)[0]):
                if got.shape != case.expected.shape or not np.array_equal(got, case.expected):
                    raise SystemExit(f"{case.name}: an output differs from numpy's")
            t_ort = median_time(lambda: theirs.run(None, feeds), args.runs, args.warmup)
            t_ours = median_time(lambda: ours.run(None, feeds), args.runs, args.warmup)
            print(f"| {case.name} ({variant.label}) | {fmt_ms(t_ort)} | {fmt_ms(t_ours)} | {t_ours / t_ort:.2f} |")
            sys.stdout.flush()


def real_models(args):
    manifest = json.loads((REAL / "manifest.json").read_text())["models"]
    if args.models:
        wanted = set(args.models.split(","))
        manifest = [m for m in manifest if m["name"] in wanted]
    return manifest


def whole_models(args):
    print("| model (size b) | onnxruntime | sliceops.Session | sliceops / onnxruntime |")
    print("|---|---|---|---|")
    for m in real_models(args):
        if m["name"] in CANNOT_RUN:
            continue
        path = str(REAL / m["name"] / "model.onnx")
        inputs, expected = REAL / m["name"] / "inputs" / "b", REAL / m["name"] / "expected" / "b"
        feeds = {n: np.load(inputs / f"{escape(n)}.npy") for n in m["inputs"]}
        theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        ours = sliceops.Session(path)
        for name, got in zip(m["outputs"], ours.run(None, feeds)):
            want = np.load(expected / f"{escape(name)}.npy")
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-3, atol=1e-4):
                raise SystemExit(f"{m['name']}: output {name} differs from the expected one")
        t_ort = median_time(lambda: theirs.run(None, feeds), args.runs, args.warmup)
        t_ours = median_time(lambda: ours.run(None, feeds), args.runs, args.warmup)
        print(f"| {m['name']} | {fmt_ms(t_ort)} | {fmt_ms(t_ours)} | {t_ours / t_ort:.2f} |")
        sys.stdout.flush()


def full_shapes(model):
    """Node outputs whose every dim is an integer or a named symbol, and how many node outputs."""
    infos = {v.name: v for v in list(model.graph.value_info) + list(model.graph.output)}
    outputs = [o for n in model.graph.node for o in n.output if o]
    full = 0
    for name in outputs:
        v = infos.get(name)
        if v is None or not v.type.HasField("tensor_type") or not v.type.tensor_type.HasField("shape"):
            continue
        dims = v.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") or (d.HasField("dim_param") and d.dim_param) for d in dims):
            full += 1
    return full, len(outputs)


def shapes(args):
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    except ImportError:
        SymbolicShapeInference = None
    print("| model | values | onnx: time, full shapes | onnxruntime symbolic: time, full shapes "
          "| sliceops.infer_shapes: time, full shapes | sliceops / onnx | sliceops / ort symbolic |")
    print("|---|---|---|---|---|---|---|")
    runs = max(3, args.runs // 4)
    for m in real_models(args):
        model = onnx.load(str(REAL / m["name"] / "model.onnx"))
        cells = []
        times = []

        def measure(fn):
            try:
                out = fn()
                t = median_time(fn, runs, 1)
                full, total = full_shapes(out)
                times.append(t)
                cells.append(f"{fmt_ms(t)}, {full}")
                return total
            except Exception as e:  # noqa: BLE001 - the tool fails on this model: say so, keep going
                times.append(None)
                cells.append(f"fails ({type(e).__name__})")
                return None

        measure(lambda: onnx.shape_inference.infer_shapes(model))
        if SymbolicShapeInference is not None:
            measure(lambda: SymbolicShapeInference.infer_shapes(model, auto_merge=True))
        else:
            times.append(None)
            cells.append("-")
        total = measure(lambda: sliceops.infer_shapes(model))
        ratios = [f"{times[2] / t:.2f}" if t and times[2] else "-" for t in times[:2]]
        print(f"| {m['name']} | {total if total is not None else '?'} | " + " | ".join(cells + ratios) + " |")
        sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--cases", help="slicing cases (benches/ort_compare.py keys), default all")
    p.add_argument("--models", help="real exports by name, default all")
    p.add_argument("--skip", default="", help="comma-separated parts to skip: slicing,models,shapes")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    print(f"sliceops (python), numpy {np.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}; "
          f"median of {args.runs} runs after {args.warmup} warm-up runs\n")
    if "slicing" not in skip:
        slicing(args)
        print()
    if "models" not in skip:
        whole_models(args)
        print()
    if "shapes" not in skip:
        shapes(args)


if __name__ == "__main__":
    main()
