#!/usr/bin/env python3
"""Times onnx.shape_inference.infer_shapes on the 10,000-node model of benches/scale.rs.

    SLICEOPS_SCALE_MODEL=/tmp/scale.onnx cargo bench --bench scale
    python3 benches/shape_inference.py /tmp/scale.onnx

Prints the median of several runs, next to which `cargo bench --bench scale` reports sliceops' load +
infer + fold of the same model. Requirements: benches/requirements.txt.
"""
import statistics
import sys
import time

import onnx


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    model = onnx.load(sys.argv[1])
    runs = []
    for _ in range(7):
        start = time.perf_counter()
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        runs.append(time.perf_counter() - start)
    last = inferred.graph.output[-1].type.tensor_type.shape.dim[0]
    print(f"onnx.shape_inference.infer_shapes: {len(model.graph.node)} nodes, "
          f"median {statistics.median(runs) * 1e3:.1f} ms, min {min(runs) * 1e3:.1f} ms; "
          f"last output dim 0: {last.dim_param or last.dim_value or '?'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
