#!/usr/bin/env python3
"""Checks `sliceops infer` and `sliceops run` on the real exports in models/real/ against onnxruntime.

    python3 tests/real_models.py [--sliceops PATH] [--only NAME,...] [--markdown]

For every model of models/real/manifest.json:

1. `sliceops infer MODEL --format json` once, with the symbolic dims the model declares.
2. For each input size (a, b): onnxruntime runs the model with every intermediate value exposed as an
   output, which gives the real shape and element type of every value; every inferred element type is
   compared with it. The symbols of the infer report are bound from
   the input shapes (and, for symbols a node mints, from the first value whose dim is that symbol
   alone), every inferred dim is evaluated, and compared with onnxruntime's shape.
3. `sliceops run` at each size, outputs compared with models/real/<name>/expected/<size>/ (exact for
   integers and booleans, rtol 1e-3 / atol 1e-4 for floats: the same model on two runtimes).

A value counts as *known* when every dim of it is an expression over the model's input symbols (no
symbol a node minted), and as *correct* when those expressions give onnxruntime's shape at both sizes.
The script fails (exit 1) if any inferred dim is wrong, if a graph output has a dim a node mints
with no bound (neither the op's bound nor a `min` with a number), if a model fails to infer or run,
or if an output differs; it prints the coverage per model (values known and correct / all values), next to
onnx.shape_inference and onnxruntime's symbolic_shape_infer on the same model (values given a full
shape, each dim an integer or a named symbol).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ort.set_default_logger_severity(3)

# Models that do not run yet, and the op that stops them (tests/real_models.rs lists the same).
CANNOT_RUN: dict[str, str] = {}

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = os.path.join(ROOT, "models", "real")


def escape(name):
    return name.replace("%", "%25").replace("/", "%2F")


# --- dims as sliceops prints them: integers, symbols, + - *, / (floor division by an integer),
# --- min(a,b), max(a,b), and a#b (numpy broadcasting of two dims).

TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_.]*)|(.))")


def tokens(text):
    out = []
    for num, name, op in TOKEN.findall(text):
        if num:
            out.append(("num", int(num)))
        elif name:
            out.append(("name", name))
        elif op.strip():
            out.append(("op", op))
    return out


def evaluate(text, values):
    """Evaluates a dim expression; raises KeyError for an unbound symbol."""
    toks = tokens(text)
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else (None, None)

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def expr():
        v = term()
        while peek() in (("op", "+"), ("op", "-"), ("op", "#")):
            op = take()[1]
            r = term()
            if op == "+":
                v = v + r
            elif op == "-":
                v = v - r
            else:
                v = r if v == 1 else v
        return v

    def term():
        v = unary()
        while peek() in (("op", "*"), ("op", "/")):
            op = take()[1]
            r = unary()
            v = v * r if op == "*" else v // r
        return v

    def unary():
        if peek() == ("op", "-"):
            take()
            return -unary()
        return atom()

    def atom():
        kind, val = take()
        if kind == "num":
            return val
        if kind == "name" and val in ("min", "max") and peek() == ("op", "("):
            take()
            args = [expr()]
            while peek() == ("op", ","):
                take()
                args.append(expr())
            assert take() == ("op", ")")
            return min(args) if val == "min" else max(args)
        if kind == "name":
            return values[val]
        if (kind, val) == ("op", "("):
            v = expr()
            assert take() == ("op", ")")
            return v
        raise ValueError(f"cannot read dim {text!r}")

    v = expr()
    if pos != len(toks):
        raise ValueError(f"cannot read dim {text!r}")
    return v


def symbols_in(text):
    return {val for kind, val in tokens(text) if kind == "name" and val not in ("min", "max")}


def bind_input(dim, actual, values):
    """Binds the one unbound symbol of an input dim expression so that it evaluates to `actual`."""
    if isinstance(dim, int):
        return
    free = [s for s in symbols_in(dim) if s not in values]
    if not free:
        return
    if len(free) > 1:
        raise ValueError(f"input dim {dim} has several unbound symbols")
    for guess in range(0, actual + 1):
        trial = dict(values, **{free[0]: guess})
        if evaluate(dim, trial) == actual:
            values[free[0]] = guess
            return
    raise ValueError(f"no value of {free[0]} gives {dim} = {actual}")


def ort_values(model_path, feeds):
    """Every value of the main graph as onnxruntime computes it, with all of them exposed as outputs."""
    model = onnx.load(model_path)
    have = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for out in node.output:
            if out and out not in have:
                model.graph.output.append(onnx.ValueInfoProto(name=out))
                have.add(out)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return {n: np.asarray(o) for n, o in zip(names, session.run(names, feeds))}


def ort_shapes(model_path, feeds):
    """Every named value's shape and dtype, from onnxruntime (see ort_values)."""
    values = ort_values(model_path, feeds)
    shapes = {n: (list(o.shape), o.dtype) for n, o in values.items()}
    for name, value in feeds.items():
        shapes[name] = (list(value.shape), value.dtype)
    return shapes


# numpy's names for the element types sliceops reports, where they differ.
DTYPE_NAMES = {"bool": "bool", "string": "object"}


def same_dtype(reported, actual):
    """Whether the element type `infer` reports (`float32`, `int64`, `bool`, ...) is numpy's `actual`."""
    return DTYPE_NAMES.get(reported, reported) == np.dtype(actual).name


def input_symbols(model_proto):
    """The names the model's own input dims use (what a full shape may be written with)."""
    names = set()
    for i in model_proto.graph.input:
        if i.type.HasField("tensor_type") and i.type.tensor_type.HasField("shape"):
            for d in i.type.tensor_type.shape.dim:
                if d.HasField("dim_param"):
                    names |= symbols_in(d.dim_param)
    return names


def full_shape_count(model_proto, allowed):
    """Values (inputs, node outputs) whose value_info gives every dim as a number or an expression over
    the model's input dims (`allowed`): not a fresh name for an unknown (`unk__3`, `Gather_dim_0`)."""
    infos = {}
    for v in list(model_proto.graph.input) + list(model_proto.graph.value_info) + list(model_proto.graph.output):
        infos[v.name] = v
    count = 0
    for name in value_names(model_proto.graph):
        v = infos.get(name)
        if v is None or not v.type.HasField("tensor_type") or not v.type.tensor_type.HasField("shape"):
            continue
        dims = v.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") or (d.HasField("dim_param") and d.dim_param and symbols_in(d.dim_param) <= allowed) for d in dims):
            count += 1
    return count


def stripped(model_path):
    """The model without the shapes its exporter annotated: value_info gone, outputs untyped."""
    model = onnx.load(model_path)
    del model.graph.value_info[:]
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    return model


def value_names(graph):
    inits = {t.name for t in graph.initializer}
    names = [i.name for i in graph.input if i.name not in inits]
    names += [o for n in graph.node for o in n.output if o]
    names += [o.name for o in graph.output]
    seen, out = set(), []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def other_tools(model_path):
    """Values with a full shape after onnx.shape_inference and after onnxruntime's symbolic inference,
    each run on the model without its exporter's annotations."""
    allowed = input_symbols(onnx.load(model_path))
    try:
        onnx_count = full_shape_count(onnx.shape_inference.infer_shapes(stripped(model_path)), allowed)
    except Exception as e:  # noqa: BLE001 - a tool failing is a result
        onnx_count = f"fails ({type(e).__name__})"
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        ort_count = full_shape_count(SymbolicShapeInference.infer_shapes(stripped(model_path), auto_merge=True), allowed)
    except Exception as e:  # noqa: BLE001
        ort_count = f"fails ({type(e).__name__})"
    return onnx_count, ort_count


def run_cli(exe, args, timeout=900):
    return subprocess.run([exe] + args, capture_output=True, text=True, timeout=timeout)


def capped(dim):
    """Whether the dim text is `min(...)` with a number among its arguments (`min(If_1818_0_0,12)`)."""
    if not (dim.startswith("min(") and dim.endswith(")")):
        return False
    depth, args, current = 0, [], ""
    for c in dim[4:-1]:
        if c == "," and depth == 0:
            args.append(current)
            current = ""
            continue
        depth += (c == "(") - (c == ")")
        current += c
    args.append(current)
    return any(a.strip().lstrip("-").isdigit() for a in args)


def check_model(exe, entry, failures):
    name = entry["name"]
    folder = os.path.join(MODELS, name)
    model = os.path.join(folder, "model.onnx")
    p = run_cli(exe, ["infer", model, "--format", "json"])
    if p.returncode != 0:
        failures.append(f"{name}: infer failed: {p.stderr.strip()}")
        return None
    report = json.loads(p.stdout)
    values = report["values"]
    minted = {s["name"] for s in report["symbols"] if s["origin"]["kind"] == "node"}
    by_name = {v["name"]: v for v in values}
    status = {v["name"]: ("unknown" if "unknown" in v else "known") for v in values}
    for v in values:
        if "shape" in v and any(isinstance(d, str) and symbols_in(d) & minted for d in v["shape"]):
            status[v["name"]] = "partial"
    # Every graph output's dims are exact or bounded: a size a node mints has the bound its op
    # implies, or is capped by a `min` with a number; a value whose rank depends on an undecided
    # condition is given per outcome instead (`cases`).
    bounded = {s["name"] for s in report["symbols"]
               if s["origin"]["kind"] == "node" and (s.get("at_most") is not None or s["max"] < 10**9)}
    for o in entry["outputs"]:
        v = by_name.get(o, {})
        if "cases" in v:
            continue
        for dim in v.get("shape") or []:
            loose = symbols_in(dim) & (minted - bounded) if isinstance(dim, str) else set()
            if loose and not capped(dim):
                failures.append(f"{name}: output {o} has the dim {dim}, whose {sorted(loose)} has no bound")
    for size in ("a", "b"):
        feeds = {
            i: np.load(os.path.join(folder, "inputs", size, escape(i) + ".npy")) for i in entry["inputs"]
        }
        actual_typed = ort_shapes(model, feeds)
        actual = {n: shape for n, (shape, _) in actual_typed.items()}
        symbols = {}
        for i in entry["inputs"]:
            for dim, real in zip(by_name[i]["shape"], actual[i]):
                bind_input(dim, real, symbols)
        for v in values:
            if "dtype" in v and v["name"] in actual_typed and not same_dtype(v["dtype"], actual_typed[v["name"]][1]):
                failures.append(f"{name} ({size}): {v['name']} inferred {v['dtype']}, onnxruntime gives "
                                f"{np.dtype(actual_typed[v['name']][1]).name}")
                status[v["name"]] = "wrong"
            if "shape" not in v or v["name"] not in actual:
                continue
            got = actual[v["name"]]
            if len(v["shape"]) != len(got):
                failures.append(f"{name} ({size}): {v['name']} inferred rank {len(v['shape'])}, real shape {got}")
                status[v["name"]] = "wrong"
                continue
            for dim, real in zip(v["shape"], got):
                if isinstance(dim, str):
                    for s in symbols_in(dim) & minted:
                        if dim.strip() == s and s not in symbols:
                            symbols[s] = real
                try:
                    want = evaluate(dim, symbols) if isinstance(dim, str) else dim
                except KeyError:
                    continue
                if want != real:
                    failures.append(f"{name} ({size}): {v['name']} inferred {v['shape']}, real shape {got}")
                    status[v["name"]] = "wrong"
                    break
        out_dir = tempfile.mkdtemp(prefix="sliceops-real-")
        args = ["run", model, "--output-dir", out_dir]
        for i in entry["inputs"]:
            args += ["--input", f"{i}={os.path.join(folder, 'inputs', size, escape(i) + '.npy')}"]
        p = run_cli(exe, args)
        if name in CANNOT_RUN:
            if p.returncode == 0:
                failures.append(f"{name} ({size}): runs now; take it off CANNOT_RUN")
            elif CANNOT_RUN[name] not in p.stderr:
                failures.append(f"{name} ({size}): fails otherwise than expected: {p.stderr.strip()}")
            continue
        if p.returncode != 0:
            failures.append(f"{name} ({size}): run failed: {p.stderr.strip()}")
            continue
        for o in entry["outputs"]:
            got = np.load(os.path.join(out_dir, escape(o) + ".npy"))
            want = np.load(os.path.join(folder, "expected", size, escape(o) + ".npy"))
            if got.shape != want.shape or got.dtype != want.dtype:
                failures.append(f"{name} ({size}): output {o} is {got.dtype}{list(got.shape)}, onnxruntime gives {want.dtype}{list(want.shape)}")
            elif got.dtype.kind == "f":
                if not np.allclose(got, want, rtol=1e-3, atol=1e-4, equal_nan=True):
                    worst = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
                    failures.append(f"{name} ({size}): output {o} differs from onnxruntime's by up to {worst:g}")
            elif not np.array_equal(got, want):
                failures.append(f"{name} ({size}): output {o} differs from onnxruntime's")
    counts = {k: sum(1 for s in status.values() if s == k) for k in ("known", "partial", "unknown", "wrong")}
    return len(values), counts, report["requirements"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sliceops", default=os.path.join(ROOT, "target", "release", "sliceops"))
    parser.add_argument("--only", default="")
    parser.add_argument("--markdown", action="store_true", help="print the coverage table as markdown")
    parser.add_argument("--compare", action="store_true", help="also count onnx.shape_inference and symbolic_shape_infer")
    args = parser.parse_args()
    manifest = json.load(open(os.path.join(MODELS, "manifest.json")))
    only = {n for n in args.only.split(",") if n}
    failures = []
    rows = []
    for entry in manifest["models"]:
        if only and entry["name"] not in only:
            continue
        result = check_model(args.sliceops, entry, failures)
        if result is None:
            rows.append((entry["name"], "-", "-", "-", "-", []))
            continue
        total, counts, reqs = result
        others = other_tools(os.path.join(MODELS, entry["name"], "model.onnx")) if args.compare else ("", "")
        rows.append((entry["name"], total, counts, others[0], others[1], reqs))
        print(f"{entry['name']}: {counts['known']}/{total} known and correct, {counts['partial']} partly, "
              f"{counts['unknown']} unknown, {counts['wrong']} wrong", flush=True)
    if args.markdown:
        print("\n| model | values | sliceops: full shape, correct | onnx.shape_inference | symbolic_shape_infer | requirements found |")
        print("|---|---|---|---|---|---|")
        for name, total, counts, onnx_count, ort_count, reqs in rows:
            if total == "-":
                print(f"| {name} | - | fails | | | |")
                continue
            req = "; ".join(sorted({r["requires"] for r in reqs})) or "none"
            print(f"| {name} | {total} | {counts['known']} | {onnx_count} | {ort_count} | {req} |")
    if failures:
        print(f"\n{len(failures)} failures:")
        for f in failures:
            print("  " + f)
        sys.exit(1)


if __name__ == "__main__":
    main()
