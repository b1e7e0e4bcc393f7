#!/usr/bin/env python3
"""Runs what `sliceops fold` writes of every model of tests/data_dependent/ on onnxruntime: the folded
model must load (its value_info types agree with what onnxruntime computes) and give the recorded
outputs at both sizes, exactly.

    python3 tests/data_dependent/check_fold_ort.py [SLICEOPS_BIN]

The binary is the first argument, else target/release/sliceops. Prints one line per model and exits 1
if any failed.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_folder(folder):
    return {f[:-4]: np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".npy")}


def check(binary, case):
    folder = os.path.join(HERE, case)
    with tempfile.TemporaryDirectory() as tmp:
        folded = os.path.join(tmp, "folded.onnx")
        run = subprocess.run([binary, "fold", os.path.join(folder, "model.onnx"), "-o", folded],
                             capture_output=True, text=True)
        if run.returncode != 0:
            return f"fold failed: {run.stderr.strip()}"
        try:
            session = ort.InferenceSession(folded, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime refuses the model
            return f"onnxruntime refuses the folded model: {e}"
        names = [o.name for o in session.get_outputs()]
        for size in ("a", "b"):
            feeds = load_folder(os.path.join(folder, "inputs", size))
            expected = load_folder(os.path.join(folder, "expected", size))
            for name, got in zip(names, session.run(None, feeds)):
                want = expected[name]
                if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
                    return f"size {size}: output {name}: got {got.dtype} {got.shape}, want {want.dtype} {want.shape}"
    return None


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "sliceops")
    cases = sorted(d for d in os.listdir(HERE) if os.path.isdir(os.path.join(HERE, d)))
    failed = 0
    for case in cases:
        why = check(binary, case)
        print(f"{case}: {'ok' if why is None else why}")
        failed += why is not None
    print(f"{len(cases) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
