#!/usr/bin/env python3
"""Write the whole-model benchmark corpus: full-size torchvision networks with random weights.

    python3 benches/bench_corpus.py [--only resnet18,...] [--list]

Needs torch, torchvision, onnx and onnxruntime (the versions used are written into the manifest).
Nothing is downloaded: every network is built with `weights=None` (and `weights_backbone=None`) and
seeded, so its weights are random but the same on every run with the same package versions.

Per model and batch size (1 and 8), `models/bench/<name>/b<N>/` holds

    model.onnx                 torch.onnx's legacy (TorchScript) export at opset 17, static shapes
    inputs/x.npy               the input (standard normal, seeded)
    expected/<output>.npy      onnxruntime's outputs on it (CPUExecutionProvider)

and `models/bench/manifest.json` lists them. The folder is git-ignored (the files are tens of MB):
this script is what is committed. `benches/ort_whole_models.py --corpus bench` times them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "models" / "bench"
BATCHES = (1, 8)

# name: (kind, what it stresses, input [C, H, W], builder)
MODELS = {
    "deeplabv3_mobilenet_v3": ("vision", "segmentation: dilated backbone and ASPP head", [3, 224, 224],
                               "deeplabv3_mobilenet_v3_large"),
    "lraspp_mobilenet_v3": ("vision", "segmentation: dilated backbone, LR-ASPP head", [3, 224, 224],
                            "lraspp_mobilenet_v3_large"),
    "regnet_y_400mf": ("vision", "grouped 3x3 convolutions, squeeze-excitation", [3, 224, 224], "regnet_y_400mf"),
    "resnet18": ("vision", "ordinary 3x3 convolutions", [3, 224, 224], "resnet18"),
    "mobilenet_v2": ("vision", "depthwise convolutions", [3, 224, 224], "mobilenet_v2"),
    "ssdlite320_mobilenet_v3": ("vision", "detection: SSDlite head, box decoding, NMS", [3, 320, 320],
                                "ssdlite320_mobilenet_v3_large"),
}


def build(builder: str):
    import torchvision

    if builder.startswith(("deeplab", "lraspp")):
        return getattr(torchvision.models.segmentation, builder)(weights=None, weights_backbone=None)
    if builder.startswith("ssdlite"):
        # torchvision's score threshold (0.001) keeps every candidate box of a random-weight network
        # (softmax scores near 1/91): 300 per class through NMS, minutes per run on either runtime.
        # At 0.2 it keeps what a trained network would (a few boxes); the network, the box decoding
        # and the NMS still run.
        return getattr(torchvision.models.detection, builder)(weights=None, weights_backbone=None, score_thresh=0.2)
    return getattr(torchvision.models, builder)(weights=None)


class Batched:
    """A detector taking a batch tensor (torchvision's take a list of images) and returning its
    boxes, scores and labels as flat tensors, image after image, with the image index of each."""

    def __init__(self, model):
        import torch

        class Wrap(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                out = self.inner(list(x.unbind(0)))
                boxes = torch.cat([o["boxes"] for o in out])
                scores = torch.cat([o["scores"] for o in out])
                labels = torch.cat([o["labels"] for o in out])
                return boxes, scores, labels

        self.module = Wrap(model)


def export(name: str, spec, torch, onnx, ort, batches=BATCHES) -> dict:
    kind, what, chw, builder = spec
    torch.manual_seed(0)
    model = build(builder).eval()
    detector = builder.startswith("ssdlite")
    module = Batched(model).module if detector else model
    entry = {"name": name, "kind": kind, "description": f"torchvision {builder}, random weights: {what}",
             "batches": {}}
    for batch in batches:
        folder = OUT / name / f"b{batch}"
        if folder.exists():
            shutil.rmtree(folder)
        (folder / "inputs").mkdir(parents=True)
        (folder / "expected").mkdir()
        x = np.random.default_rng(batch).standard_normal([batch, *chw]).astype(np.float32)
        outputs = ["boxes", "scores", "labels"] if detector else ["out"]
        path = folder / "model.onnx"
        with torch.no_grad():
            torch.onnx.export(module, (torch.from_numpy(x),), str(path), opset_version=17, input_names=["x"],
                              output_names=outputs, dynamo=False)
        proto = onnx.load(str(path))
        outputs = [o.name for o in proto.graph.output]
        np.save(folder / "inputs" / "x.npy", x)
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        for out_name, value in zip(outputs, sess.run(None, {"x": x})):
            np.save(folder / "expected" / f"{out_name}.npy", value)
        entry["batches"][str(batch)] = {"input": [batch, *chw], "outputs": outputs,
                                        "bytes": path.stat().st_size}
        print(f"{name} b{batch}: {path.stat().st_size / 1e6:.1f} MB, outputs {outputs}", file=sys.stderr)
    return entry


def on_disk(name: str, batches=BATCHES) -> dict | None:
    """The manifest entry of a model already written (every batch's folder complete), else None."""
    import onnx

    kind, what, chw, builder = MODELS[name]
    entry = {"name": name, "kind": kind, "description": f"torchvision {builder}, random weights: {what}",
             "batches": {}}
    for batch in batches:
        folder = OUT / name / f"b{batch}"
        path = folder / "model.onnx"
        if not (path.exists() and (folder / "inputs" / "x.npy").exists()):
            return None
        outputs = [o.name for o in onnx.load(str(path), load_external_data=False).graph.output]
        if not all((folder / "expected" / f"{o}.npy").exists() for o in outputs):
            return None
        entry["batches"][str(batch)] = {"input": [batch, *chw], "outputs": outputs, "bytes": path.stat().st_size}
    return entry


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="", help="comma-separated model names")
    p.add_argument("--list", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the models already written in full")
    p.add_argument("--batches", default="1,8", help="comma-separated batch sizes (default 1,8)")
    args = p.parse_args()
    if args.list:
        for name, spec in MODELS.items():
            print(f"{name}: {spec[1]}")
        return 0
    import onnx
    import onnxruntime as ort
    import torch
    import torchvision

    names = [n for n in MODELS if not args.only or n in args.only.split(",")]
    try:
        batches = tuple(int(b) for b in args.batches.split(","))
    except ValueError:
        sys.exit(f"error: --batches {args.batches!r}: comma-separated positive integers expected")
    if not batches or min(batches) < 1:
        sys.exit(f"error: --batches {args.batches!r}: comma-separated positive integers expected")
    unknown = set(args.only.split(",")) - set(MODELS) - {""}
    if unknown:
        sys.exit(f"error: unknown models {sorted(unknown)}")
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"models": []}
    kept = [m for m in manifest["models"] if m["name"] not in names]
    made = []
    order = list(MODELS)
    for name in names:
        try:
            entry = on_disk(name, batches) if args.keep else None
            made.append(entry or export(name, MODELS[name], torch, onnx, ort, batches))
        except Exception as e:  # noqa: BLE001 - reported, the other models still made
            print(f"error: {name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        # Written after every model, so that an interrupted run keeps what it made.
        manifest = {
            "versions": {"torch": torch.__version__, "torchvision": torchvision.__version__,
                         "onnx": onnx.__version__, "onnxruntime": ort.__version__},
            "models": sorted(kept + made, key=lambda m: order.index(m["name"]) if m["name"] in order else len(order)),
        }
        OUT.mkdir(parents=True, exist_ok=True)
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
