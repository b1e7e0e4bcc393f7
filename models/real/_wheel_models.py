"""ONNX models shipped inside PyPI wheels, copied as they are (generate.py's "wheel" worker).

* silero-vad's silero_vad.onnx (written by spox): voice activity detection on one audio
  chunk. The whole network sits in the branches of a top-level If on `sr == 16000`, with
  more If nodes nested inside; its input dims are declared without dim_param or dim_value.
* rapidocr-onnxruntime's PP-OCR text-direction classifier ch_ppocr_mobile_v2.0_cls_infer.onnx
  (an older paddle2onnx): batch dim declared as dim_value -1, height and width as "?".

Both files have no text for write_model to clear, so they are byte-exact copies.
"""

import importlib.metadata
import importlib.util
import os

import numpy as np

from _common import write_model


def package_file(package, *parts):
    spec = importlib.util.find_spec(package)
    return os.path.join(os.path.dirname(spec.origin), *parts)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def wheel_name(dist, file):
    return f"wheel {dist} {importlib.metadata.version(dist)} ({file})"


def silero_vad():
    rng = np.random.default_rng(0)
    path = package_file("silero_vad", "data", "silero_vad.onnx")
    inputs = {}
    # 16 kHz chunks as silero-vad's own wrapper feeds them: 64 context + 512 new samples;
    # set b is a bare 512-sample chunk with a state carried over from an earlier call.
    for s, (batch, samples) in {"a": (1, 576), "b": (2, 512)}.items():
        state = np.zeros((2, batch, 128), np.float32) if s == "a" else \
            (0.1 * rng.standard_normal((2, batch, 128))).astype(np.float32)
        inputs[s] = {
            "input": rng.uniform(-1, 1, (batch, samples)).astype(np.float32),
            "state": state,
            "sr": np.array(16000, dtype=np.int64),
        }
    what = ("Silero VAD v5 voice activity detector as shipped: STFT as a Conv, conv encoder, LSTM decoder; "
            "the network lives in the branches of a top-level If on sr == 16000 (8 kHz in the else branch), "
            "with nested If nodes; input dims are declared but have neither dim_param nor dim_value "
            "(batch, samples; state [2, batch, 128]); sr is a scalar int64")
    return write_model("silero_vad_wheel", "silero_vad", wheel_name("silero-vad", "silero_vad/data/silero_vad.onnx"),
                       what, read(path), inputs)


def ocr_cls():
    rng = np.random.default_rng(0)
    rel = ("models", "ch_ppocr_mobile_v2.0_cls_infer.onnx")
    path = package_file("rapidocr_onnxruntime", *rel)
    inputs = {s: {"x": rng.random((b, 3, h, w), dtype=np.float32)}
              for s, (b, h, w) in {"a": (1, 48, 192), "b": (2, 48, 160)}.items()}
    what = ("PP-OCR v2.0 mobile text-direction classifier (0 or 180 degrees) as shipped in rapidocr-onnxruntime: "
            "MobileNetV3-style convs with hard-swish / squeeze-excite; batch declared as dim_value -1, "
            "height and width as dim_param '?'")
    return write_model("ocr_cls_rapidocr_wheel", "ocr_cls",
                       wheel_name("rapidocr-onnxruntime", "rapidocr_onnxruntime/" + "/".join(rel)),
                       what, read(path), inputs)


BUILDERS = {
    "silero_vad_wheel": silero_vad,
    "ocr_cls_rapidocr_wheel": ocr_cls,
}
