#!/usr/bin/env python3
"""Writes tests/intermediate_outputs/faster_rcnn/expected/<size>/: onnxruntime's values of
intermediate values of the committed Faster R-CNN export (models/real/faster_rcnn_torch_legacy), each
made the model's only output, on that export's inputs at both sizes.

    python3 tests/intermediate_outputs/generate.py

tests/data_dependent.rs asks sliceops for each value alone (the model's outputs replaced by it) and
compares. These values need sizes bound by nodes their own computation does not read (issue 34: a plan
asked for them alone scheduled nodes whose inputs it never computed).
A value's file is its name without the leading `/`, each `/` written `__`.
"""

import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "models", "real", "faster_rcnn_torch_legacy")
VALUES = [
    "/m/roi_heads/Reshape_6_output_0",
    "/m/roi_heads/Shape_3_output_0",
    "/m/roi_heads/box_roi_pool/Cast_2_output_0",
    "/m/roi_heads/box_roi_pool/Gather_8_output_0",
]


def file_name(value):
    return value.lstrip("/").replace("/", "__") + ".npy"


def main():
    folder = os.path.join(HERE, "faster_rcnn")
    shutil.rmtree(folder, ignore_errors=True)
    for value in VALUES:
        m = onnx.load(os.path.join(MODEL, "model.onnx"))
        m.graph.ClearField("output")
        m.graph.output.append(onnx.helper.make_empty_tensor_value_info(value))
        session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        for size in ("a", "b"):
            image = np.load(os.path.join(MODEL, "inputs", size, "image.npy"))
            (got,) = session.run(None, {"image": image})
            os.makedirs(os.path.join(folder, "expected", size), exist_ok=True)
            np.save(os.path.join(folder, "expected", size, file_name(value)), got)
    print("wrote", folder)


if __name__ == "__main__":
    main()
