"""Writes the .npz files the tests read (numpy's own writer): run with the pinned numpy of
models/requirements.txt from the repository root, `python tests/npz/generate.py`.

- savez.npz: np.savez (stored entries, zip64 local headers as numpy writes them);
- compressed.npz: np.savez_compressed (deflate), the same arrays;
- inputs_runtime.npz: the five inputs of models/onnx_slice_opset13_runtime, for `run --input FILE.npz`.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

ARRAYS = {
    "x": (np.arange(6, dtype=np.float32).reshape(2, 3) / 4).astype(np.float32),
    "mask": np.array([True, False, True]),
    "a/b": np.array(-7, dtype=np.int64),
    "h\u00e9": np.asfortranarray(np.arange(6, dtype=np.float16).reshape(2, 3)),
    "empty": np.zeros((0, 4), dtype=np.uint8),
}

np.savez(HERE / "savez.npz", **ARRAYS)
np.savez_compressed(HERE / "compressed.npz", **ARRAYS)

runtime = ROOT / "models" / "onnx_slice_opset13_runtime"
inputs = {p.stem: np.load(p) for p in sorted((runtime / "inputs").glob("*.npy"))}
np.savez(HERE / "inputs_runtime.npz", **inputs)
