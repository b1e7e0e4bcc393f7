#!/usr/bin/env python3
"""ONNX's backend node tests through `sliceops run` and `sliceops infer`, beside onnxruntime.

    python3 tests/conformance.py [--sliceops PATH] [--jobs 2] [--timeout 20] [--only REGEX]
                                 [--update] [--report FILE.json] [--work DIR]

The cases are the ones the installed `onnx` package generates (`onnx.backend.test.case.node`: one
model, its inputs and its expected outputs each); nothing of them is committed. Every case whose
graph inputs and outputs are plain numeric tensors (bool, integers, float16/32/64: what a `.npy`
file carries) is checked four ways:

- run: `sliceops run MODEL --input NAME=FILE.npy ... --output-dir DIR`, each output compared with the
  expected one: same dtype and shape, integers and booleans exact, floats within the case's own
  tolerance (`rtol`, `atol`, as onnx's backend runner: 1e-3 and 1e-7 unless the case says otherwise);
- infer: `sliceops infer BARE --format json`, where BARE is the model with the declared output shapes
  removed (element types kept); every graph output must get the expected shape exactly, all integers;
- onnxruntime runs the same model, compared in the same way;
- onnx.shape_inference (with data propagation) on BARE, judged as infer.

Cases with other types (strings, sequences, optionals, bfloat16, float8, 4-bit, complex) are skipped
and counted. A sliceops process that panics, dies of a signal or outlives the timeout fails its case
and is listed by name.

The Bernoulli cases (RANDOM_CASES) carry values drawn from numpy's global unseeded generator, which
nothing can reproduce: their `run` is checked on properties (dtype, shape, every value 0 or 1),
counted apart ("random cases checked by properties") and listed as `random:NAME`.

tests/conformance/expected_run.txt and expected_infer.txt list the cases that pass; the script exits
1 when a listed case no longer passes (or crashes), prints cases that pass but are not listed, and
with --update rewrites both lists (with --only, only the selected cases' lines change).
"""

import argparse
import concurrent.futures as futures
import importlib
import json
import multiprocessing
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import onnx.numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LISTS = os.path.join(HERE, "conformance")

# Element types a .npy file carries and sliceops reads.
PLAIN = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.DOUBLE,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BOOL,
    onnx.TensorProto.INT8,
    onnx.TensorProto.INT16,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT64,
    onnx.TensorProto.UINT8,
    onnx.TensorProto.UINT16,
    onnx.TensorProto.UINT32,
    onnx.TensorProto.UINT64,
}
# Cases whose expected values no implementation can reproduce: onnx draws them from numpy's global,
# unseeded generator (`np.random.binomial`), even for a node with a seed. `run` is checked on
# properties instead: each output of the expected dtype and shape, every value in the op's support.
# They count apart from the exact passes and are listed as `random:NAME` in expected_run.txt, so a
# case that stops meeting its properties is a regression as any other.
RANDOM_CASES = {
    f"test_bernoulli{suffix}{expanded}": {0, 1}
    for suffix in ("", "_double", "_seed")
    for expanded in ("", "_expanded")
}
RANDOM_PREFIX = "random:"

PLAIN_NUMPY = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64"}


def escape(name):
    return name.replace("%", "%25").replace("/", "%2F")


# --- generation: each worker imports a share of the case modules and writes its cases to disk


def as_array(value):
    """A case's input or output as a numpy array, or None when it is not a plain tensor."""
    if isinstance(value, onnx.TensorProto):
        if value.data_type not in PLAIN:
            return None
        value = onnx.numpy_helper.to_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        value = np.asarray(value)
        return value if value.dtype.name in PLAIN_NUMPY else None
    return None


def unsupported_type(model, data_sets):
    """Why a case cannot go through .npy files, or None."""
    graph = model.graph
    for value in list(graph.input) + list(graph.output):
        kind = value.type.WhichOneof("value")
        if kind != "tensor_type":
            return f"{kind} value '{value.name}'"
        elem = value.type.tensor_type.elem_type
        if elem not in PLAIN:
            return onnx.TensorProto.DataType.Name(elem).lower()
    for inputs, outputs in data_sets:
        for a in list(inputs) + list(outputs):
            if as_array(a) is None:
                return f"value of type {getattr(a, 'dtype', type(a).__name__)}"
    return None


def bare(model):
    """The model with its graph outputs' shapes removed (element types kept)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for value in out.graph.output:
        if value.type.HasField("tensor_type"):
            value.type.tensor_type.ClearField("shape")
    return out


def write_case(case, root):
    skip = unsupported_type(case.model, case.data_sets)
    meta = {"name": case.name, "skip": skip}
    if skip is None:
        d = os.path.join(root, case.name)
        os.makedirs(d, exist_ok=True)
        onnx.save(case.model, os.path.join(d, "model.onnx"))
        onnx.save(bare(case.model), os.path.join(d, "bare.onnx"))
        (inputs, outputs), = case.data_sets
        graph = case.model.graph
        meta.update(
            inputs=[v.name for v in graph.input],
            outputs=[v.name for v in graph.output],
            rtol=case.rtol,
            atol=case.atol,
        )
        for i, a in enumerate(inputs):
            np.save(os.path.join(d, f"in{i}.npy"), as_array(a))
        for i, a in enumerate(outputs):
            np.save(os.path.join(d, f"out{i}.npy"), as_array(a))
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)
    return meta


def generate_share(args):
    modules, root = args
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    import onnx.backend.test.case.node as node

    for m in modules:
        importlib.import_module(m)
    return [write_case(c, root) for c in node._NodeTestCases if len(c.data_sets) == 1]


def case_modules():
    import onnx.backend.test.case.node as node

    names = []
    for info in pkgutil.walk_packages(node.__path__, node.__name__ + "."):
        if not info.ispkg and (onnx.defs.onnx_ml_opset_version() or ".ai_onnx_ml" not in info.name):
            names.append(info.name)
    return sorted(names)


def generate(root, jobs):
    index = os.path.join(root, "cases.json")
    if os.path.exists(index):
        with open(index) as f:
            saved = json.load(f)
        if saved["onnx"] == onnx.__version__:
            return saved["cases"]
    modules = case_modules()
    shares = [(modules[i::jobs], root) for i in range(jobs)]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        metas = [m for part in pool.map(generate_share, shares) for m in part]
    metas.sort(key=lambda m: m["name"])
    with open(index, "w") as f:
        json.dump({"onnx": onnx.__version__, "cases": metas}, f)
    return metas


# --- checking


def compare_properties(got, want, support):
    """None if `got` has `want`'s dtype and shape and every value in `support`, else why not."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    outside = [v for v in np.unique(got.astype(np.float64)) if v not in support]
    return f"values outside {sorted(support)}: {outside[:5]}" if outside else None


def compare(got, want, rtol, atol):
    """None if `got` matches `want`, else why not."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype.kind in "biu":
        bad = int(np.sum(got != want))
        return f"{bad} of {want.size} values differ" if bad else None
    ok = np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    if ok.all():
        return None
    i = np.unravel_index(int(np.argmin(ok)), want.shape) if want.ndim else ()
    return f"{int(np.sum(~ok))} of {want.size} values differ (at {list(i)}: {got[i]} vs {want[i]})"


def first_line(text):
    """The first `error:` line of a message, else its first line."""
    for line in text.splitlines():
        if line.startswith("error:"):
            return line.strip()[:300]
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def sliceops(cmd, timeout):
    """(returncode or 'hang', stdout, stderr); a panic or a signal is reported as a crash."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", "", f"no answer within {timeout} s"
    if p.returncode < 0 or "panicked at" in p.stderr:
        return "crash", p.stdout, f"crash (exit {p.returncode}): {first_line(p.stderr)}"
    return p.returncode, p.stdout, p.stderr


def check_run(exe, d, meta, timeout):
    out = os.path.join(d, "sliceops_out")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [exe, "run", os.path.join(d, "model.onnx"), "--output-dir", out]
    for i, name in enumerate(meta["inputs"]):
        cmd += ["--input", f"{name}={os.path.join(d, f'in{i}.npy')}"]
    code, _, err = sliceops(cmd, timeout)
    if code in ("hang", "crash"):
        return code, err
    if code != 0:
        return "fail", first_line(err)
    for i, name in enumerate(meta["outputs"]):
        path = os.path.join(out, escape(name) + ".npy")
        if not os.path.exists(path):
            return "fail", f"no output '{name}'"
        want = np.load(os.path.join(d, f"out{i}.npy"))
        if meta["name"] in RANDOM_CASES:
            why = compare_properties(np.load(path), want, RANDOM_CASES[meta["name"]])
        else:
            why = compare(np.load(path), want, meta["rtol"], meta["atol"])
        if why:
            return "wrong", f"output '{name}': {why}"
    return ("random" if meta["name"] in RANDOM_CASES else "pass"), ""


def expected_shapes(d, meta):
    return [list(np.load(os.path.join(d, f"out{i}.npy"), mmap_mode="r").shape) for i in range(len(meta["outputs"]))]


def check_infer(exe, d, meta, timeout):
    code, out, err = sliceops([exe, "infer", os.path.join(d, "bare.onnx"), "--format", "json"], timeout)
    if code in ("hang", "crash"):
        return code, err
    if code != 0:
        return "fail", first_line(err)
    report = json.loads(out)
    values = {}
    for v in report["values"]:
        values.setdefault(v["name"], v)
    for name, want in zip(meta["outputs"], expected_shapes(d, meta)):
        v = values.get(name)
        if v is None or "dims" not in v:
            return "fail", f"no shape for '{name}'" + (f": {v['unknown']}" if v and "unknown" in v else "")
        if any(not isinstance(d, int) for d in v["dims"]):
            # A dim only a run can tell (a parameter given as a graph input): not wrong, not exact.
            ops = sorted({s["origin"].get("op", "?") for s in report.get("symbols", [])
                          if s["origin"].get("kind") == "node" and s["name"] in json.dumps(v["dims"])})
            return "symbolic", f"dims known only at run time ({', '.join(ops) or 'input symbols'}): '{name}': {v['shape']}"
        if v["dims"] != want:
            return "wrong", f"'{name}': {v.get('shape')}, expected {want}"
    return "pass", ""


def check_ort(d, meta):
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 4
        sess = ort.InferenceSession(os.path.join(d, "model.onnx"), options, providers=["CPUExecutionProvider"])
        feeds = {name: np.load(os.path.join(d, f"in{i}.npy")) for i, name in enumerate(meta["inputs"])}
        got = sess.run(meta["outputs"], feeds)
    except Exception as e:
        return "fail", first_line(str(e))
    for i, (name, g) in enumerate(zip(meta["outputs"], got)):
        why = compare(np.asarray(g), np.load(os.path.join(d, f"out{i}.npy")), meta["rtol"], meta["atol"])
        if why:
            return "wrong", f"output '{name}': {why}"
    return "pass", ""


def check_shape_inference(d, meta):
    try:
        model = onnx.shape_inference.infer_shapes(onnx.load(os.path.join(d, "bare.onnx")), data_prop=True)
    except Exception as e:
        return "fail", first_line(str(e))
    outputs = {v.name: v for v in model.graph.output}
    for name, want in zip(meta["outputs"], expected_shapes(d, meta)):
        t = outputs[name].type.tensor_type
        if not t.HasField("shape") or [x.dim_value if x.HasField("dim_value") else None for x in t.shape.dim] != want:
            return "fail", f"'{name}'"
    return "pass", ""


def check_case(exe, root, meta, timeout, with_reference):
    d = os.path.join(root, meta["name"])
    result = {"name": meta["name"]}
    result["run"], result["run_why"] = check_run(exe, d, meta, timeout)
    result["infer"], result["infer_why"] = check_infer(exe, d, meta, timeout)
    if with_reference:
        result["ort"], result["ort_why"] = check_ort(d, meta)
        result["shape_inference"], _ = check_shape_inference(d, meta)
    shutil.rmtree(os.path.join(d, "sliceops_out"), ignore_errors=True)
    return result


# --- expected lists


def read_list(name):
    path = os.path.join(LISTS, name)
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


HEADERS = {
    "expected_run.txt": "# Backend node cases `sliceops run` passes (tests/conformance.py --update rewrites this list).",
    "expected_infer.txt": "# Backend node cases whose output shapes `sliceops infer` gets exactly (tests/conformance.py --update).",
}


def write_list(name, names):
    os.makedirs(LISTS, exist_ok=True)
    with open(os.path.join(LISTS, name), "w") as f:
        f.write(HEADERS[name] + "\n")
        for n in sorted(names):
            f.write(n + "\n")


# --- causes


def cause(why):
    """A short label for a failure message, to count failures by cause."""
    runtime = re.match(r"dims known only at run time \(([^)]*)\)", why)
    if runtime:
        return f"dims known only at run time (made by {runtime.group(1)})"
    missing = re.search(r"operator (\w+) of (?:opset|domain)", why)
    if missing:
        return f"op not supported: {missing.group(1)}"
    rules = [
        (r"expected axes as a constant|axes.*(constant|runtime)", "runtime axes"),
        (r"Expect padding to be constant|Impossible to unify 1 with 0", "runtime pads"),
        (r"shape input is variable", "runtime shape"),
        (r"[Uu]nsupported op|[Uu]nimplemented op|not implemented|Unknown op|unsupported operator", "unsupported op"),
        (r"crash", "crash"),
        (r"no answer within", "hang"),
        (r"values differ|dtype |shape \[", "wrong result"),
    ]
    for pattern, label in rules:
        if re.search(pattern, why):
            return label
    return re.sub(r"'[^']*'", "'…'", why)[:120]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_exe = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "sliceops")
    ap.add_argument("--sliceops", default=default_exe)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--only", help="a regular expression: check only the cases whose name it finds")
    ap.add_argument("--update", action="store_true", help="rewrite the expected lists")
    ap.add_argument("--no-reference", action="store_true", help="skip onnxruntime and onnx.shape_inference")
    ap.add_argument("--report", help="write every case's result to this JSON file")
    ap.add_argument("--work", help="keep the generated cases here, and reuse them when this directory has them "
                    "(else a temporary directory)")
    ap.add_argument("--causes", type=int, default=25, help="print this many failure causes")
    args = ap.parse_args()
    exe = os.path.abspath(args.sliceops)
    if not os.access(exe, os.X_OK):
        sys.exit(f"error: no sliceops binary at {exe} (build it with cargo build --release, or pass --sliceops)")

    started = time.time()
    root = args.work or tempfile.mkdtemp(prefix="sliceops-conformance.")
    try:
        metas = generate(root, max(1, args.jobs))
        generated = time.time() - started
        if args.only:
            metas = [m for m in metas if re.search(args.only, m["name"])]
        skipped = [m for m in metas if m["skip"]]
        plain = [m for m in metas if not m["skip"]]
        with futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            jobs = [pool.submit(check_case, exe, root, m, args.timeout, not args.no_reference) for m in plain]
            results = sorted((j.result() for j in jobs), key=lambda r: r["name"])
    finally:
        if not args.work:
            shutil.rmtree(root, ignore_errors=True)
    elapsed = time.time() - started

    if args.report:
        with open(args.report, "w") as f:
            json.dump({"skipped": skipped, "results": results}, f, indent=1)

    def passing(kind):
        """The cases passing exactly, and (as `random:NAME`) the random ones meeting their properties."""
        exact = {r["name"] for r in results if r.get(kind) == "pass"}
        return exact | {RANDOM_PREFIX + r["name"] for r in results if r.get(kind) == "random"}

    def exact(names):
        return {n for n in names if not n.startswith(RANDOM_PREFIX)}

    print(f"{len(metas)} backend node cases (onnx {onnx.__version__}); {len(skipped)} skipped "
          f"(types a .npy file cannot carry), {len(plain)} checked "
          f"in {elapsed:.0f} s ({generated:.0f} s generating them)")
    skip_causes = {}
    for m in skipped:
        key = re.sub(r"'[^']*'", "", m["skip"]).strip()
        skip_causes[key] = skip_causes.get(key, 0) + 1
    by_count = sorted(skip_causes.items(), key=lambda kv: -kv[1])
    print("  skipped: " + (", ".join(f"{k} {v}" for k, v in by_count) or "none"))
    random_run = len(passing("run")) - len(exact(passing("run")))
    print(f"  run:   sliceops {len(exact(passing('run')))}" + (
        "" if args.no_reference else f", onnxruntime {len(exact(passing('ort')))}")
        + f"; random cases checked by properties: {random_run} of {sum(m['name'] in RANDOM_CASES for m in plain)}")
    print(f"  infer: sliceops {len(passing('infer'))}" + (
        "" if args.no_reference else f", onnx.shape_inference {len(passing('shape_inference'))}"))
    for kind in ("run", "infer"):
        counts = {}
        for r in results:
            if r[kind] not in ("pass", "random"):
                c = cause(r[kind + "_why"]) if r[kind] not in ("hang", "crash") else r[kind]
                counts[c] = counts.get(c, 0) + 1
        print(f"  {kind} failures by cause:")
        for c, n in sorted(counts.items(), key=lambda kv: -kv[1])[: args.causes]:
            print(f"    {n:5d}  {c}")

    broken = [r for r in results if "crash" in (r["run"], r["infer"]) or "hang" in (r["run"], r["infer"])]
    for r in broken:
        kind = "run" if r["run"] in ("crash", "hang") else "infer"
        print(f"CRASH/HANG {r['name']} ({kind}): {r[kind + '_why']}")

    status = 0
    selected = {m["name"] for m in metas}
    for kind, list_name in (("run", "expected_run.txt"), ("infer", "expected_infer.txt")):
        listed = {n for n in read_list(list_name) if n.removeprefix(RANDOM_PREFIX) in selected}
        now = passing(kind)
        lost = sorted(listed - now)
        new = sorted(now - listed)
        for name in lost:
            r = next((r for r in results if r["name"] == name.removeprefix(RANDOM_PREFIX)), None)
            why = r[kind + "_why"] if r else "no longer generated"
            print(f"REGRESSION {kind} {name}: {why}")
        for name in new:
            print(f"newly passing {kind}: {name}")
        if args.update:
            kept = {n for n in read_list(list_name) if n.removeprefix(RANDOM_PREFIX) not in selected}
            write_list(list_name, kept | now)
        elif lost:
            status = 1
    if args.update:
        print(f"updated {os.path.relpath(LISTS, ROOT)}/expected_run.txt and expected_infer.txt")
    return status


if __name__ == "__main__":
    sys.exit(main())
