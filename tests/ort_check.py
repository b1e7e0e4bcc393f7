#!/usr/bin/env python3
"""Cross-check `sliceops lower` against onnxruntime on every model fixture.

    python3 tests/ort_check.py [SLICEOPS_BIN]

The binary is the first argument, else $SLICEOPS_BIN, else target/release/sliceops (relative
paths are taken from the current directory). Needs numpy, onnx and onnxruntime
(models/requirements.txt).

For every fixture of models/manifest.json:
- lowerable=true: `sliceops lower` succeeds; the lowered model passes onnx.checker with
  full_check=True and holds only standard-domain nodes; onnxruntime (CPUExecutionProvider) runs it
  on the fixture's inputs and every output equals the expected .npy exactly: same dtype, same shape,
  np.array_equal(equal_nan=True), and the same bytes (bit for bit: -0.0 and NaN payloads included).
- lowerable=false: `sliceops lower` is refused: exit status 1, a stderr line starting
  "error: node '", and no output file written.

Prints one line per fixture, then "N passed, M failed" alone on the last line; exits 1 if any
fixture failed (2 for bad usage or missing tools).
"""

import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
TIMEOUT_S = 300


def escape(name):
    """A value name as a file name: '%' is '%25', '/' is '%2F'; nothing else changes."""
    return name.replace("%", "%25").replace("/", "%2F")


def one_line(text, limit=400):
    text = " | ".join(line.strip() for line in str(text).strip().splitlines() if line.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Failure(Exception):
    pass


def run_lower(binary, model, out):
    try:
        return subprocess.run(
            [str(binary), "lower", str(model), "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise Failure(f"sliceops lower did not finish within {TIMEOUT_S} s")


def describe(a):
    return f"{a.dtype} {list(a.shape)}"


def compare(name, got, want):
    """None if equal (dtype, shape, values bit for bit), else what differs."""
    got = np.asarray(got)
    if got.dtype != want.dtype:
        return f"output '{name}': dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"output '{name}': shape {list(got.shape)}, expected {list(want.shape)}"
    try:
        equal = np.array_equal(got, want, equal_nan=True)
    except TypeError:  # dtypes without NaN support in isnan (e.g. object)
        equal = np.array_equal(got, want)
    if not equal:
        flat_g, flat_w = got.reshape(-1), want.reshape(-1)
        diff = [i for i in range(flat_g.size) if not (flat_g[i] == flat_w[i] or (flat_g[i] != flat_g[i] and flat_w[i] != flat_w[i]))]
        first = diff[0] if diff else 0
        idx = np.unravel_index(first, got.shape) if got.ndim else ()
        return (
            f"output '{name}' ({describe(want)}): {len(diff)} value(s) differ, first at {list(map(int, idx))}: "
            f"got {flat_g[first]!r}, expected {flat_w[first]!r}"
        )
    if np.ascontiguousarray(got).tobytes() != np.ascontiguousarray(want).tobytes():
        return f"output '{name}' ({describe(want)}): values compare equal but their bits differ (-0.0 or NaN payloads)"
    return None


def check_lowerable(binary, fixture, tmp):
    name = fixture["name"]
    model = MODELS / name / "model.onnx"
    out = Path(tmp) / f"{name}.lowered.onnx"
    proc = run_lower(binary, model, out)
    if proc.returncode != 0:
        raise Failure(f"sliceops lower exited {proc.returncode}: {one_line(proc.stderr)}")
    if not out.is_file():
        raise Failure("sliceops lower exited 0 but wrote no model")

    lowered = onnx.load(str(out))
    try:
        onnx.checker.check_model(lowered, full_check=True)
    except Exception as e:  # onnx.checker.ValidationError, shape inference errors
        raise Failure(f"onnx.checker (full_check): {type(e).__name__}: {one_line(e)}")
    foreign = sorted(
        {f"{n.op_type} ({n.domain})" for n in lowered.graph.node if n.domain not in ("", "ai.onnx")}
    )
    if foreign:
        raise Failure(f"non-standard nodes remain: {', '.join(foreign)}")

    feeds = {}
    for input_name in fixture["inputs"]:
        feeds[input_name] = np.load(MODELS / name / "inputs" / f"{escape(input_name)}.npy", allow_pickle=False)
    ort.set_default_logger_severity(3)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(out), sess_options=options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        results = session.run(None, feeds)
    except Exception as e:
        raise Failure(f"onnxruntime: {type(e).__name__}: {one_line(e)}")
    if names != fixture["outputs"]:
        raise Failure(f"graph outputs {names}, manifest says {fixture['outputs']}")
    problems = []
    for output_name, got in zip(names, results):
        want = np.load(MODELS / name / "expected" / f"{escape(output_name)}.npy", allow_pickle=False)
        problem = compare(output_name, got, want)
        if problem:
            problems.append(problem)
    if problems:
        raise Failure("; ".join(problems) + reference_opinion(out, feeds, fixture))
    return f"lowered, checked, onnxruntime output{'s' if len(names) != 1 else ''} identical"


def reference_opinion(model_path, feeds, fixture):
    """On a mismatch, what onnx's own reference evaluator gives: tells a sliceops bug from a runtime one."""
    try:
        from onnx.reference import ReferenceEvaluator

        results = ReferenceEvaluator(str(model_path)).run(None, feeds)
    except Exception as e:
        return f" [onnx.reference could not run it: {type(e).__name__}: {one_line(e, 150)}]"
    name = fixture["name"]
    wrong = [
        output_name
        for output_name, got in zip(fixture["outputs"], results)
        if compare(output_name, got, np.load(MODELS / name / "expected" / f"{escape(output_name)}.npy")) is not None
    ]
    if wrong:
        return f" [onnx.reference also differs on {', '.join(wrong)}: the lowered model is wrong]"
    return " [onnx.reference gives the expected outputs on the lowered model: onnxruntime deviates from the ONNX spec here]"


def check_refused(binary, fixture, tmp):
    name = fixture["name"]
    out = Path(tmp) / f"{name}.lowered.onnx"
    proc = run_lower(binary, MODELS / name / "model.onnx", out)
    if proc.returncode != 1:
        detail = f": {one_line(proc.stderr)}" if proc.stderr.strip() else ""
        raise Failure(f"expected lower to refuse it with exit status 1, got {proc.returncode}{detail}")
    lines = proc.stderr.splitlines()
    refusal = next((line for line in lines if line.startswith("error: node '")), None)
    if refusal is None:
        raise Failure(f"no stderr line starts with \"error: node '\": {one_line(proc.stderr)}")
    if out.exists():
        raise Failure(f"refused, but wrote {out.name} anyway")
    return f"refused as expected: {one_line(refusal, 200)}"


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    binary = Path(argv[1] if len(argv) == 2 else os.environ.get("SLICEOPS_BIN", "target/release/sliceops"))
    if not binary.is_file() or not os.access(binary, os.X_OK):
        print(f"error: {binary} is not an executable file (build it: cargo build --release)", file=sys.stderr)
        return 2
    binary = binary.resolve()
    fixtures = json.loads((MODELS / "manifest.json").read_text())["fixtures"]
    print(f"sliceops: {binary}; onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}")

    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="sliceops-ort-") as tmp:
        for fixture in fixtures:
            name = fixture["name"]
            lowerable = fixture.get("lowerable", True)
            try:
                note = (check_lowerable if lowerable else check_refused)(binary, fixture, tmp)
                passed += 1
                print(f"PASS {name}: {note}", flush=True)
            except Failure as e:
                failed += 1
                print(f"FAIL {name}: {e}", flush=True)
            except Exception as e:  # a bug in this script or an unreadable fixture: still one line
                failed += 1
                where = traceback.extract_tb(e.__traceback__)[-1]
                print(f"FAIL {name}: {type(e).__name__}: {one_line(e)} (ort_check.py:{where.lineno})", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        import numpy as np
        import onnx
        import onnx.checker
        import onnxruntime as ort
    except ImportError as e:
        print(f"error: {e} (pip install -r models/requirements.txt)", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv))
