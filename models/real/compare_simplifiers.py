#!/usr/bin/env python3
"""Node counts of models/real/ before and after ONNX graph simplifiers, as a table.

    python models/real/compare_simplifiers.py [--sliceops target/release/sliceops]
                                              [--only NAME,...] [--markdown]

Columns: the model as committed, `onnxsim.simplify(model)` (onnxsim, default options) and
`onnxslim.slim(model)` (onnxslim, default options). Both keep the symbolic input dims as they
are (no input shapes are given). With --sliceops PATH a further column runs
`PATH fold model.onnx -o OUT.onnx`. A failing tool (error, crash, timeout) shows "fail"
and does not stop the others.

Counts include the nodes of If / Loop / Scan subgraphs (the top-level count follows in
parentheses when it differs). Every output model is then run by onnxruntime on the model's
committed inputs/{a,b}; a count marked "!" gave outputs that differ from expected/{a,b}
(rtol 1e-3, atol 1e-4) or did not run. The tools' outputs go to a temporary directory.

Needs onnx, onnxruntime, numpy, onnxsim and onnxslim (models/requirements-real.txt).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import SETS, escape  # noqa: E402

TIMEOUT = 600  # seconds per tool and model


# --- the tools: each writes the simplified form of in_path to out_path ------------------

def run_onnxsim(in_path, out_path):
    import onnxsim

    model, _ = onnxsim.simplify(onnx.load(in_path))
    onnx.save(model, out_path)


def run_onnxslim(in_path, out_path):
    import onnxslim

    onnx.save(onnxslim.slim(onnx.load(in_path)), out_path)


PYTHON_TOOLS = {"onnxsim": run_onnxsim, "onnxslim": run_onnxslim}


def apply_tool(tool, in_path, out_path, sliceops=None):
    """Run one tool in a child process (a crash or hang there costs one cell only).

    Returns None on success, else a short reason."""
    if tool == "sliceops fold":
        cmd = [sliceops, "fold", in_path, "-o", out_path]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--run-tool", tool, in_path, out_path]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "timeout"
    except OSError as e:
        return str(e)
    if proc.returncode != 0 or not os.path.exists(out_path):
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return f"exit {proc.returncode}: {lines[-1] if lines else ''}"[:200]
    return None


# --- measuring ---------------------------------------------------------------------------

def count_nodes(graph):
    total = 0
    for node in graph.node:
        total += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                total += count_nodes(attr.g)
            for g in attr.graphs:
                total += count_nodes(g)
    return total


def cell_count(path):
    model = onnx.load(path)
    total, top = count_nodes(model.graph), len(model.graph.node)
    return str(total) if total == top else f"{total} ({top})"


def load_set(folder):
    return {f[:-4]: np.load(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".npy")}


def outputs_match(model_dir, path):
    """Whether onnxruntime's outputs of `path` equal the committed expected outputs."""
    import onnxruntime as ort

    try:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for s in SETS:
            inputs = load_set(os.path.join(model_dir, "inputs", s))
            expected = load_set(os.path.join(model_dir, "expected", s))
            feeds = {i.name: inputs[escape(i.name)] for i in sess.get_inputs()}
            names = [o.name for o in sess.get_outputs()]
            for name, got in zip(names, sess.run(names, feeds)):
                want = expected[escape(name)]
                if got.shape != want.shape or not np.allclose(got, want, rtol=1e-3, atol=1e-4):
                    return False
        return True
    except Exception:  # noqa: BLE001  (a model that does not run counts as a mismatch)
        return False


def model_names(root, only):
    manifest = os.path.join(root, "manifest.json")
    if os.path.exists(manifest):
        with open(manifest) as f:
            names = [m["name"] for m in json.load(f)["models"]]
    else:
        names = sorted(d for d in os.listdir(root) if os.path.exists(os.path.join(root, d, "model.onnx")))
    if only:
        names = [n for n in names if n in only.split(",")]
    return names


def print_table(header, rows, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join(" --- " for _ in header) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=HERE, help="directory of <name>/model.onnx (default: models/real)")
    ap.add_argument("--sliceops", metavar="PATH_TO_BINARY", help="add a `sliceops fold` column")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--run-tool", nargs=3, metavar=("TOOL", "IN", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.run_tool:
        tool, in_path, out_path = args.run_tool
        PYTHON_TOOLS[tool](in_path, out_path)
        return 0

    tools = list(PYTHON_TOOLS)
    if args.sliceops:
        tools.append("sliceops fold")
    header = ["model", "original"] + tools
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in model_names(args.models, args.only):
            model_dir = os.path.join(args.models, name)
            path = os.path.join(model_dir, "model.onnx")
            row = [name, cell_count(path)]
            for tool in tools:
                out = os.path.join(tmp, f"{name}.{tool.replace(' ', '_')}.onnx")
                error = apply_tool(tool, path, out, args.sliceops)
                if error:
                    row.append("fail")
                    notes.append(f"{name} / {tool}: {error}")
                    continue
                cell = cell_count(out)
                row.append(cell if outputs_match(model_dir, out) else cell + " !")
            rows.append(row)
            print(" ".join(row), file=sys.stderr, flush=True)  # progress
    print_table(header, rows, args.markdown)
    if notes:
        print("\nfailures:")
        for n in notes:
            print("  " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
