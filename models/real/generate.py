#!/usr/bin/env python3
"""Generate models/real/: small real exported ONNX networks with symbolic (dynamic) dims.

    python3 -m venv /tmp/realvenv
    /tmp/realvenv/bin/pip install -r models/requirements-real.txt
    /tmp/realvenv/bin/pip install --no-deps paddle2onnx==2.1.0   # see requirements-real.txt
    /tmp/realvenv/bin/python models/real/generate.py [--only NAME,NAME...] [--list]

Each model is a real network from a real exporter: transformers models with tiny random
configs through torch.onnx (TorchScript and dynamo exporters), an ultralytics YOLOv8
detector, a timm ViT, Keras models through tf2onnx, PaddlePaddle OCR-style models through
paddle2onnx, and ONNX files shipped in PyPI wheels (silero-vad, rapidocr-onnxruntime).
Nothing is downloaded from a model hub; seeds are fixed, so reruns with the same package
versions give the same bytes.

Per model, models/real/<name>/ holds

    model.onnx                     as the exporter wrote it, minus run-to-run-varying text
                                   (doc strings, metadata_props); weights inside the file
    inputs/{a,b}/<input>.npy       two input sets with different sizes of the dynamic dims
    expected/{a,b}/<output>.npy    onnxruntime's outputs (CPUExecutionProvider) on them

and manifest.json gets its entry (name, family, exporter, description, opset, checker,
inputs, outputs, sizes, symbolic_dims: each input's dims as declared in the file, a
dim_param string, a dim_value int, or null when the dim has neither). Value names are
escaped in file names: '%' -> '%25', '/' -> '%2F'.

Every model is made in a fresh worker process (`generate.py --worker FAMILY --name NAME`):
TensorFlow, PaddlePaddle and torch crash when loaded into one process, and process-wide
counters (Keras layer names, tf2onnx's "unk__N" dims) then do not depend on which other
models were generated before. The script deletes and rewrites only the directories of the
models it generates, and keeps the manifest entries of models it was not asked to
regenerate.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in models/real/
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
MANIFEST = os.path.join(HERE, "manifest.json")

# (model name, worker family); the manifest keeps this order.
MODELS = [
    ("gpt2_torch_legacy", "torch"),
    ("gpt2_torch_dynamo", "torch"),
    ("bert_torch_legacy", "torch"),
    ("bert_torch_dynamo", "torch"),
    ("llama_torch_legacy", "torch"),
    ("llama_torch_dynamo", "torch"),
    ("llama_torch_dynamo_opset23", "torch"),
    ("swin_torch_legacy", "torch"),
    ("vit_torch_dynamo", "torch"),
    ("speech2text_torch_legacy", "torch"),
    ("yolov8_ultralytics", "torch"),
    ("yolov8_nms_ultralytics", "torch"),
    ("timm_vit_dynamo", "torch"),
    ("timm_efficientnet_same_legacy", "torch"),
    ("faster_rcnn_torch_legacy", "torch"),
    ("ssdlite_torch_legacy", "torch"),
    ("retinanet_torch_legacy", "torch"),
    ("deeplabv3_torch_legacy", "torch"),
    ("lraspp_torch_legacy", "torch"),
    ("segformer_torch_legacy", "torch"),
    ("segformer_torch_dynamo", "torch"),
    ("mask_rcnn_torch_legacy", "torch"),
    ("keypoint_rcnn_torch_legacy", "torch"),
    ("yolos_torch_legacy", "torch"),
    ("t5_torch_legacy", "torch_lang"),
    ("t5_torch_dynamo", "torch_lang"),
    ("bart_torch_legacy", "torch_lang"),
    ("bart_torch_dynamo", "torch_lang"),
    ("wav2vec2_torch_legacy", "torch_lang"),
    ("wav2vec2_torch_dynamo", "torch_lang"),
    ("qwen2_torch_legacy", "torch_lang"),
    ("qwen2_torch_dynamo", "torch_lang"),
    ("gemma_torch_legacy", "torch_lang"),
    ("gemma_torch_dynamo", "torch_lang"),
    ("phi3_torch_legacy", "torch_lang"),
    ("phi3_torch_dynamo", "torch_lang"),
    ("keras_gpt_tf2onnx", "tf"),
    ("keras_convnet_tf2onnx", "tf"),
    ("ocr_det_paddle2onnx", "paddle"),
    ("ocr_rec_paddle2onnx", "paddle"),
    ("ocr_cls_rapidocr_wheel", "wheel"),
    ("silero_vad_wheel", "wheel"),
]

WORKER_MODULES = {
    "torch": "_torch_models",
    "torch_lang": "_torch_lang_models",
    "tf": "_tf_models",
    "paddle": "_paddle_models",
    "wheel": "_wheel_models",
}

WORKER_ENV = {
    "PYTHONHASHSEED": "0",
    "CUDA_VISIBLE_DEVICES": "",
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "TF_USE_LEGACY_KERAS": "1",  # tf.keras is tf-keras (Keras 2), which tf2onnx converts
    "YOLO_AUTOINSTALL": "false",  # ultralytics must not pip-install anything
    "YOLO_OFFLINE": "true",
    "YOLO_VERBOSE": "false",
}


def to_json(value, indent=""):
    """JSON with one key per line, but lists of plain values (shapes, dims) on one line."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {to_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + to_json(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value)


def summary(exc):
    """One line about an exception (torch.export errors carry theirs under a heading)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if "## Exception summary" in lines:
        lines = lines[lines.index("## Exception summary") + 1:]
    return f"{type(exc).__name__}: {lines[0][:400] if lines else ''}"


def run_worker(family, name, out_json):
    """In the worker process: build one model, write its manifest entry or its failure."""
    module = __import__(WORKER_MODULES[family])
    print(f"[{family}] {name}", flush=True)
    try:
        result = {"entry": module.BUILDERS[name]()}
    except Exception as e:  # noqa: BLE001  (reported by the driver; the others go on)
        traceback.print_exc()
        result = {"failure": summary(e)}
        shutil.rmtree(os.path.join(HERE, name), ignore_errors=True)
    with open(out_json, "w") as f:
        json.dump(result, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated model names (default: all)")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        return run_worker(args.worker, args.name, args.json)
    if args.list:
        for name, family in MODELS:
            print(f"{name:28} {family}")
        return 0

    wanted = [n for n, _ in MODELS]
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - {n for n, _ in MODELS})
        if unknown:
            sys.exit(f"unknown model(s): {', '.join(unknown)} (see --list)")

    entries, failures = {}, {}
    env = dict(os.environ, **WORKER_ENV)
    for name, family in MODELS:
        if name not in wanted:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out_json = os.path.join(tmp, "entries.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", family,
                   "--name", name, "--json", out_json]
            rc = subprocess.run(cmd, env=env, cwd=tmp).returncode
            if rc != 0 or not os.path.exists(out_json):
                failures[name] = f"worker process exited with {rc}"
                shutil.rmtree(os.path.join(HERE, name), ignore_errors=True)
                continue
            with open(out_json) as f:
                result = json.load(f)
        if "entry" in result:
            entries[name] = result["entry"]
        else:
            failures[name] = result["failure"]

    old = {}
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            old = {e["name"]: e for e in json.load(f)["models"]}
    merged = []
    for name, _ in MODELS:
        if name in entries:
            merged.append(entries[name])
        elif name not in wanted and name in old:
            merged.append(old[name])
    with open(MANIFEST, "w") as f:
        f.write(to_json({"models": merged}) + "\n")

    for name in wanted:
        status = "FAILED: " + failures[name] if name in failures else "ok"
        print(f"{name:28} {status}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
