"""PyTorch-exported models of generate.py: transformers, ultralytics and timm, random init.

Every network is built from a tiny config (no weights are downloaded) with fixed seeds and
exported with torch.onnx's TorchScript exporter (dynamo=False, opset 17, dynamic_axes) or its
dynamo exporter (dynamo=True, dynamic_shapes, the exporter's default opset). A small wrapper
module picks plain tensors out of the transformers output objects; nothing else is changed.
onnxruntime's outputs are checked against torch's eager outputs at both input sizes, which
catches a dynamic dim that the exporter silently baked in.
"""

import io
import os
import tempfile
import warnings

import numpy as np
import torch

from _common import write_model

warnings.filterwarnings("ignore")
torch.set_num_threads(2)

TORCH_VERSION = torch.__version__.split("+")[0]
LEGACY_OPSET = 17


def legacy_name():
    return f"torch.onnx legacy (TorchScript) {TORCH_VERSION} opset {LEGACY_OPSET}"


def dynamo_name(model):
    import onnxscript

    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    return f"torch.onnx dynamo {TORCH_VERSION} (onnxscript {onnxscript.__version__}) opset {opset}"


def seeded(seed=0):
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def export_legacy(module, feeds, output_names, dynamic_axes):
    """TorchScript exporter; feeds: {input name: np array} in forward's argument order."""
    f = io.BytesIO()
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    torch.onnx.export(
        module, args, f, dynamo=False, opset_version=LEGACY_OPSET,
        input_names=list(feeds), output_names=output_names, dynamic_axes=dynamic_axes,
    )
    return f.getvalue()


def export_dynamo(module, feeds, output_names, dynamic_shapes, opset=None):
    """Dynamo exporter; dynamic_shapes: {input name: {axis: torch.export.Dim}}."""
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    dynamic_shapes = tuple(dynamic_shapes.get(n) for n in feeds)  # by position
    if getattr(module, "varargs", False):  # forward(self, *args)
        dynamic_shapes = {"args": dynamic_shapes}
    kwargs = {} if opset is None else {"opset_version": opset}
    prog = torch.onnx.export(
        module, args, dynamo=True, input_names=list(feeds), output_names=output_names,
        dynamic_shapes=dynamic_shapes, verbose=False, **kwargs,
    )
    return prog.model_proto


def eager(module, feeds):
    with torch.no_grad():
        out = module(*(torch.from_numpy(v) for v in feeds.values()))
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().numpy() for o in out]


def references(module, inputs):
    return {s: eager(module, feeds) for s, feeds in inputs.items()}


class Outputs(torch.nn.Module):
    """Calls a transformers model with keyword inputs and returns the named output fields."""

    varargs = True

    def __init__(self, model, input_names, output_fields, **extra):
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.output_fields = output_fields
        self.extra = extra  # fixed keyword arguments, e.g. use_cache=False
        self.eval()  # the legacy exporter restores the wrapper's mode to the whole tree

    def forward(self, *args):
        out = self.model(**dict(zip(self.input_names, args)), **self.extra)
        return tuple(getattr(out, f) for f in self.output_fields)


# --- token models -----------------------------------------------------------------------

VOCAB = 100
TOKEN_SIZES = {"a": (1, 7), "b": (2, 13)}  # (batch, sequence)


def token_inputs(rng, names):
    inputs = {}
    for s, (b, t) in TOKEN_SIZES.items():
        feeds = {}
        for n in names:
            if n == "input_ids":
                feeds[n] = rng.integers(0, VOCAB, (b, t), dtype=np.int64)
            elif n == "position_ids":
                feeds[n] = np.arange(t, dtype=np.int64)[None].repeat(b, 0)
            elif n == "token_type_ids":
                feeds[n] = (np.arange(t) >= t // 2).astype(np.int64)[None].repeat(b, 0)
            else:  # attention_mask
                feeds[n] = np.ones((b, t), dtype=np.int64)
        inputs[s] = feeds
    return inputs


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=0, eos_token_id=0, use_cache=False)
    return GPT2LMHeadModel(cfg), "GPT-2 (transformers GPT2LMHeadModel, 2 layers, n_embd 32, 2 heads, vocab 100, 64 positions)"


def bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)
    return BertModel(cfg), "BERT encoder (transformers BertModel, 2 layers, hidden 32, 2 heads, vocab 100, 64 positions)"


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                      max_position_embeddings=64, bos_token_id=0, eos_token_id=0,
                      pad_token_id=0, use_cache=False)
    return LlamaForCausalLM(cfg), ("Llama decoder (transformers LlamaForCausalLM, 2 layers, hidden 32, 4 query "
                                   "heads / 2 key-value heads (GQA), rotary embeddings, causal mask, vocab 100)")


TEXT = {  # variant: (family, builder, graph inputs, graph outputs)
    "gpt2": ("gpt2", gpt2, ["input_ids", "attention_mask"], ["logits"]),
    "bert": ("bert", bert, ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"]),
    "llama": ("llama", llama, ["input_ids", "attention_mask"], ["logits"]),
    # position_ids as an input, as in optimum's Llama exports: with the implicit [1, sequence]
    # positions the opset-23 export's RotaryEmbedding fails at batch > 1 in onnxruntime.
    "llama_positions": ("llama", llama, ["input_ids", "attention_mask", "position_ids"], ["logits"]),
}


def text_model(name, variant, dynamo, opset=None):
    family, build, in_names, out_names = TEXT[variant]
    rng = seeded(0)
    model, what = build()
    extra = {} if family == "bert" else {"use_cache": False}  # logits only, no KV cache
    module = Outputs(model.eval(), in_names, out_names, **extra)
    inputs = token_inputs(rng, in_names)
    ref = references(module, inputs)
    seq_axes = {0: "batch", 1: "sequence"}
    if dynamo:
        batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("sequence", max=64)
        shapes = {n: {0: batch, 1: seq} for n in in_names}
        onnx_model = export_dynamo(module, inputs["a"], out_names, shapes, opset)
        exporter = dynamo_name(onnx_model)
    else:
        axes = {n: seq_axes for n in in_names}
        for o in out_names:
            axes[o] = {0: "batch"} if o == "pooler_output" else seq_axes
        onnx_model = export_legacy(module, inputs["a"], out_names, axes)
        exporter = legacy_name()
    return write_model(name, family, exporter, what + "; dynamic batch and sequence",
                       onnx_model, inputs, ref)


# --- vision and speech ------------------------------------------------------------------

IMAGE_SIZES = {"a": (1, 64, 96), "b": (2, 96, 64)}  # (batch, height, width)


def image_inputs(rng, name, sizes=IMAGE_SIZES, channels=3):
    return {s: {name: rng.random((b, channels, h, w), dtype=np.float32)} for s, (b, h, w) in sizes.items()}


def swin():
    from transformers import SwinConfig, SwinModel

    rng = seeded(0)
    cfg = SwinConfig(image_size=64, patch_size=4, num_channels=3, embed_dim=16, depths=[2, 2],
                     num_heads=[2, 4], window_size=4, mlp_ratio=2.0)
    out_names = ["last_hidden_state", "pooler_output"]
    module = Outputs(SwinModel(cfg).eval(), ["pixel_values"], out_names)
    # 80x112: the stage-2 map (10x14) is not a multiple of the window 4, so it is padded to
    # 12x16 and cropped back. Whether to pad is a Python branch, so the trace is taken at the
    # padded size (the pad / crop then compute 0 / the whole map at 64x96).
    inputs = image_inputs(rng, "pixel_values", {"a": (1, 80, 112), "b": (2, 64, 96)})
    axes = {"pixel_values": {0: "batch", 2: "height", 3: "width"},
            "last_hidden_state": {0: "batch", 1: "patches"}, "pooler_output": {0: "batch"}}
    onnx_model = export_legacy(module, inputs["a"], out_names, axes)
    what = ("Swin transformer (transformers SwinModel, embed 16, depths [2, 2], heads [2, 4], window 4, "
            "patch 4): shifted-window attention with masks, patch merging, padding to the window; "
            "dynamic batch, height and width")
    return write_model("swin_torch_legacy", "swin", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


def vit():
    from transformers import ViTConfig, ViTForImageClassification

    rng = seeded(0)
    cfg = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, num_labels=10)
    module = Outputs(ViTForImageClassification(cfg).eval(), ["pixel_values"], ["logits"])
    inputs = image_inputs(rng, "pixel_values", {"a": (1, 32, 32), "b": (3, 32, 32)})
    shapes = {"pixel_values": {0: torch.export.Dim("batch", max=64)}}
    onnx_model = export_dynamo(module, inputs["a"], ["logits"], shapes)
    what = ("ViT classifier (transformers ViTForImageClassification, 32x32 images, patch 8, hidden 32, "
            "2 layers, 2 heads, 10 labels); dynamic batch")
    return write_model("vit_torch_dynamo", "vit", dynamo_name(onnx_model), what, onnx_model, inputs,
                       references(module, inputs))


def speech2text():
    from transformers import Speech2TextConfig, Speech2TextForConditionalGeneration

    rng = seeded(0)
    cfg = Speech2TextConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                            encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                            decoder_ffn_dim=64, max_source_positions=256, max_target_positions=64,
                            num_conv_layers=2, conv_kernel_sizes=[5, 5], conv_channels=32,
                            input_feat_per_channel=16, input_channels=1, pad_token_id=1,
                            bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, use_cache=False)
    in_names = ["input_features", "attention_mask", "decoder_input_ids"]
    module = Outputs(Speech2TextForConditionalGeneration(cfg).eval(), in_names,
                     ["logits", "encoder_last_hidden_state"], use_cache=False)
    inputs = {}
    for s, (b, frames, tokens) in {"a": (1, 40, 5), "b": (2, 64, 9)}.items():
        inputs[s] = {
            "input_features": rng.standard_normal((b, frames, 16), dtype=np.float32),
            "attention_mask": np.ones((b, frames), dtype=np.int64),
            "decoder_input_ids": rng.integers(3, VOCAB, (b, tokens), dtype=np.int64),
        }
    out_names = ["logits", "encoder_last_hidden_state"]
    axes = {"input_features": {0: "batch", 1: "frames"}, "attention_mask": {0: "batch", 1: "frames"},
            "decoder_input_ids": {0: "batch", 1: "tokens"}, "logits": {0: "batch", 1: "tokens"},
            "encoder_last_hidden_state": {0: "batch", 1: "encoder_frames"}}
    onnx_model = export_legacy(module, inputs["a"], out_names, axes)
    what = ("encoder-decoder speech transformer (transformers Speech2TextForConditionalGeneration: 2-layer "
            "conv subsampler (stride 4) over 16 filterbank features, sinusoidal positions, 2+2 layers, "
            "d_model 32, vocab 100); dynamic batch, frames and decoder length")
    return write_model("speech2text_torch_legacy", "speech2text", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


def yolov8_export(prepare=None, **options):
    """ultralytics' own yolov8.yaml at scale n, with the width multiplier cut from 0.25 to 0.0625 and
    4 classes to keep the file small; built from the yaml with random weights, `prepare(yolo)` applied,
    then exported (dynamic batch, height and width; `options` passed to the export). Returns the YOLO
    object and the ONNX bytes."""
    import yaml
    from ultralytics import YOLO
    from ultralytics.nn.tasks import yaml_model_load

    cfg = yaml_model_load("yolov8n.yaml")
    cfg = {k: v for k, v in cfg.items() if k not in ("yaml_file", "scale")}
    cfg["scales"] = {"n": [0.33, 0.0625, 1024]}
    cfg["nc"] = 4
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "yolov8n.yaml")  # the file name selects scale "n"
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        yolo = YOLO(path)
        if prepare is not None:
            prepare(yolo)
        out = yolo.export(format="onnx", dynamic=True, simplify=False, imgsz=64, device="cpu", verbose=False,
                          **options)
        with open(out, "rb") as f:
            onnx_bytes = f.read()
        os.remove(out)
    return yolo, onnx_bytes


def yolov8_exporter(onnx_bytes, options):
    import onnx
    import ultralytics

    opset = onnx.load_from_string(onnx_bytes).opset_import[0].version
    return (f"ultralytics {ultralytics.__version__} export(format='onnx', dynamic=True{options}) -> "
            f"torch.onnx legacy (TorchScript) {TORCH_VERSION} opset {opset}")


def yolov8():
    rng = seeded(0)
    inputs = image_inputs(rng, "images", {"a": (1, 64, 96), "b": (2, 96, 64)})
    yolo, onnx_bytes = yolov8_export()
    # the exported network in eval mode: its first output is the exported one
    ref = {s: [yolo.model.eval()(torch.from_numpy(feeds["images"]))[0].detach().numpy()]
           for s, feeds in inputs.items()}
    what = ("YOLOv8 detector (ultralytics yolov8n.yaml, width multiplier 0.0625, 4 classes, random init): "
            "C2f backbone with stride 32, SPPF, nearest x2 upsampling + concat neck, DFL box head with "
            "anchors made from the feature-map sizes; dynamic batch, height and width (multiples of 32)")
    return write_model("yolov8_ultralytics", "yolov8", yolov8_exporter(onnx_bytes, ""), what, onnx_bytes, inputs,
                       ref)


def yolov8_nms():
    rng = seeded(0)
    inputs = image_inputs(rng, "images", {"a": (1, 64, 96), "b": (2, 96, 64)})

    def distinct_scores(yolo):
        # Default initialisation makes every anchor score alike (the variance dies out over the
        # layers), which leaves the order of equal scores to the runtime; convolutions drawn with
        # He-normal weights (the DFL projection kept) and class biases N(0, 1) give distinct scores.
        head = yolo.model.model[-1]
        for module in yolo.model.modules():
            if isinstance(module, torch.nn.Conv2d) and module is not head.dfl.conv:
                torch.nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        for branch in head.cv3:
            torch.nn.init.normal_(branch[-1].bias, 0.0, 1.0)

    _, onnx_bytes = yolov8_export(distinct_scores, nms=True)
    what = ("YOLOv8 detector with its post-processing in the graph (ultralytics yolov8n.yaml, width multiplier "
            "0.0625, 4 classes, random init): the network of yolov8_ultralytics, then score threshold 0.25 "
            "(NonZero, GatherND), NonMaxSuppression (IoU 0.7) and ScatterND into a padded [batch, 300, 6] "
            "of boxes, score and class; dynamic batch, height and width (multiples of 32)")
    # No framework reference: ultralytics' eager NMS differs from the graph's in the order of ties
    # only, so the committed outputs are onnxruntime's (at two sizes, as for every export).
    return write_model("yolov8_nms_ultralytics", "yolov8", yolov8_exporter(onnx_bytes, ", nms=True"), what,
                       onnx_bytes, inputs)


def timm_vit():
    import timm

    rng = seeded(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64, patch_size=16, embed_dim=32,
                              depth=2, num_heads=2, mlp_ratio=2.0, num_classes=10, dynamic_img_size=True).eval()
    inputs = image_inputs(rng, "image", {"a": (1, 64, 96), "b": (2, 96, 64)})
    dims = {0: torch.export.Dim("batch", max=64), 2: torch.export.Dim("height", min=16, max=1024),
            3: torch.export.Dim("width", min=16, max=1024)}
    ref = references(model, inputs)
    onnx_model = export_dynamo(model, inputs["a"], ["logits"], {"image": dims})
    what = (f"timm {timm.__version__} VisionTransformer (vit_tiny_patch16_224 layout with embed 32, depth 2, 2 heads, "
            "10 classes) with dynamic_img_size=True: the position embedding is resized (bicubic, antialiased) "
            "to the patch grid at run time; dynamic batch, height and width (multiples of 16)")
    return write_model("timm_vit_dynamo", "timm_vit", dynamo_name(onnx_model), what, onnx_model, inputs, ref)


def timm_efficientnet():
    import timm

    rng = seeded(0)
    model = timm.create_model("test_efficientnet", pretrained=False, num_classes=10, pad_type="same").eval()
    inputs = image_inputs(rng, "image", {"a": (1, 64, 96), "b": (2, 50, 77)})
    ref = references(model, inputs)
    axes = {"image": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}
    onnx_model = export_legacy(model, inputs["a"], ["logits"], axes)
    what = (f"timm {timm.__version__} test_efficientnet with pad_type='same': TensorFlow-style SAME padding "
            "computed from the input size at run time (Shape, Ceil, Pad) before each strided conv, "
            "depthwise convs, squeeze-excite; dynamic batch, height and width (any size)")
    return write_model("timm_efficientnet_same_legacy", "timm_efficientnet", legacy_name(), what, onnx_model,
                       inputs, ref)


# --- two-stage detection -----------------------------------------------------------------


class FirstImage(torch.nn.Module):
    """Calls a torchvision detector on one image and returns its first result's named fields."""

    def __init__(self, model, fields):
        super().__init__()
        self.m = model
        self.fields = fields
        self.eval()

    def forward(self, image):
        out = self.m([image])[0]
        return tuple(out[f] for f in self.fields)


def tiny_fpn_backbone(out_channels=8):
    """Four stride-2 conv stages (8, 8, 16, 16 channels) and torchvision's FPN over the last two,
    with the max-pooled extra level: three feature maps at strides 8, 16 and 32."""
    from collections import OrderedDict

    from torchvision.models.detection.backbone_utils import BackboneWithFPN
    from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

    def stage(cin, cout):
        return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride=2, padding=1), torch.nn.ReLU())

    body = torch.nn.Sequential(OrderedDict(c1=stage(3, 8), c2=stage(8, 8), c3=stage(8, 16), c4=stage(16, 16)))
    return BackboneWithFPN(body, {"c3": "0", "c4": "1"}, [16, 16], out_channels, extra_blocks=LastLevelMaxPool())


def faster_rcnn():
    from torchvision.models.detection import FasterRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
    from torchvision.ops import MultiScaleRoIAlign

    rng = seeded(0)
    anchors = AnchorGenerator(sizes=((16,), (32,), (64,)), aspect_ratios=((0.5, 1.0, 2.0),) * 3)
    pool = MultiScaleRoIAlign(featmap_names=["0", "1"], output_size=4, sampling_ratio=2)
    detector = FasterRCNN(
        tiny_fpn_backbone(), num_classes=None, min_size=64, max_size=128,
        rpn_anchor_generator=anchors, rpn_pre_nms_top_n_test=60, rpn_post_nms_top_n_test=30,
        box_roi_pool=pool, box_head=TwoMLPHead(8 * 4 * 4, 32), box_predictor=FastRCNNPredictor(32, 4),
        box_detections_per_img=12,
    ).eval()
    out_names = ["boxes", "labels", "scores"]
    module = FirstImage(detector, out_names)
    inputs = {s: {"image": rng.random((3, h, w), dtype=np.float32)} for s, (h, w) in
              {"a": (64, 96), "b": (120, 80)}.items()}
    axes = {"image": {1: "height", 2: "width"}, **{n: {0: "detections"} for n in out_names}}
    onnx_model = export_legacy(module, inputs["a"], out_names, axes)
    import torchvision

    what = (f"torchvision {torchvision.__version__.split('+')[0]} FasterRCNN (random init): 4 stride-2 conv stages "
            "(8-16 channels), FPN (8 channels, 3 levels), RPN with 3 anchors per place (60 pre-NMS, 30 post-NMS "
            "proposals), MultiScaleRoIAlign 4x4 over 2 levels, TwoMLPHead 32, 4 classes, 12 detections; the "
            "image resized to 64..128 inside the graph; NMS, TopK, If branches and RoiAlign on data-dependent "
            "box counts; dynamic height and width, one image")
    return write_model("faster_rcnn_torch_legacy", "faster_rcnn", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


class TinySSDBackbone(torch.nn.Module):
    """Three stride-2 conv stages, the last two returned: feature maps at strides 4 and 8 with 8 and
    16 channels (SSD takes a backbone returning its feature maps by name)."""

    def __init__(self):
        super().__init__()

        def stage(cin, cout):
            return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride=2, padding=1), torch.nn.ReLU())

        self.c1, self.c2, self.c3 = stage(3, 8), stage(8, 8), stage(8, 16)

    def forward(self, x):
        from collections import OrderedDict

        f2 = self.c2(self.c1(x))
        return OrderedDict([("0", f2), ("1", self.c3(f2))])


def spread_head(head, std):
    """Redraws a detection head's conv weights with a wider spread (normal, `std`) and zero biases: at
    torchvision's own init every class scores about the same, so thresholds keep all or nothing."""
    for m in head.modules():
        if isinstance(m, torch.nn.Conv2d):
            torch.nn.init.normal_(m.weight, std=std)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)


def ssdlite():
    from functools import partial

    import torchvision
    from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
    from torchvision.models.detection.ssd import SSD
    from torchvision.models.detection.ssdlite import SSDLiteHead

    rng = seeded(0)
    anchors = DefaultBoxGenerator([[2, 3], [2, 3]], min_ratio=0.2, max_ratio=0.95)
    norm = partial(torch.nn.BatchNorm2d, eps=0.001, momentum=0.03)
    head = SSDLiteHead([8, 16], anchors.num_anchors_per_location(), 4, norm)
    detector = SSD(TinySSDBackbone(), anchors, (64, 64), 4, head=head, image_mean=[0.5] * 3, image_std=[0.5] * 3,
                   score_thresh=0.4, nms_thresh=0.55, detections_per_img=20, topk_candidates=20).eval()
    spread_head(detector.head, 1.0)
    out_names = ["boxes", "labels", "scores"]
    module = FirstImage(detector, out_names)
    inputs = {s: {"image": rng.random((3, h, w), dtype=np.float32)} for s, (h, w) in
              {"a": (64, 96), "b": (120, 80)}.items()}
    axes = {"image": {1: "height", 2: "width"}, **{n: {0: "detections"} for n in out_names}}
    onnx_model = export_legacy(module, inputs["a"], out_names, axes)
    what = (f"torchvision {torchvision.__version__.split('+')[0]} SSD with SSDLiteHead (the SSDlite head: "
            "depthwise-separable convs, BatchNorm, ReLU6; random init) over 3 stride-2 conv stages (8-16 "
            "channels), DefaultBoxGenerator on 2 maps, 4 classes; the image resized to a fixed 64x64 inside "
            "the graph (head weights redrawn with std 1); per class the scores above 0.4, TopK of min(count, 20), "
            "then NMS and the best 20: "
            "data-dependent box counts; dynamic height and width, one image")
    return write_model("ssdlite_torch_legacy", "ssdlite", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


def retinanet():
    import torchvision
    from torchvision.models.detection import RetinaNet
    from torchvision.models.detection.anchor_utils import AnchorGenerator

    rng = seeded(0)
    anchors = AnchorGenerator(sizes=((16,), (32,), (64,)), aspect_ratios=((0.5, 1.0, 2.0),) * 3)
    detector = RetinaNet(tiny_fpn_backbone(), 4, min_size=64, max_size=128, anchor_generator=anchors,
                         score_thresh=0.6, detections_per_img=12, topk_candidates=30).eval()
    spread_head(detector.head, 0.3)
    out_names = ["boxes", "labels", "scores"]
    module = FirstImage(detector, out_names)
    inputs = {s: {"image": rng.random((3, h, w), dtype=np.float32)} for s, (h, w) in
              {"a": (64, 96), "b": (120, 80)}.items()}
    axes = {"image": {1: "height", 2: "width"}, **{n: {0: "detections"} for n in out_names}}
    onnx_model = export_legacy(module, inputs["a"], out_names, axes)
    what = (f"torchvision {torchvision.__version__.split('+')[0]} RetinaNet (random init): the Faster R-CNN "
            "export's backbone and FPN (8 channels, 3 levels), RetinaNetHead (4 conv layers per branch, 3 "
            "anchors per place; weights redrawn with std 0.3), 4 classes; the image resized to 64..128 inside "
            "the graph; per level the scores above 0.6, TopK of min(count, 30), then NMS and the best 12: "
            "data-dependent box counts; "
            "dynamic height and width, one image")
    return write_model("retinanet_torch_legacy", "retinanet", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


# --- segmentation ------------------------------------------------------------------------


class OutField(torch.nn.Module):
    """Returns one field of a model's dict or output object (torchvision segmentation models return
    {"out": ...}; transformers ones an output object)."""

    def __init__(self, model, field):
        super().__init__()
        self.m = model
        self.field = field
        self.eval()

    def forward(self, x):
        out = self.m(x)
        return out[self.field] if isinstance(out, dict) else getattr(out, self.field)


def tiny_mobilenet_v3_features():
    """torchvision's MobileNetV3-Large layout (the one its segmentation builders use) at width 0.1, with
    the reduced tail and the last stage dilated (output stride 16): 28k weights."""
    from torchvision.models import mobilenetv3

    settings, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large", width_mult=0.1, reduced_tail=True,
                                                     dilated=True)
    return mobilenetv3.MobileNetV3(settings, last).features


def segmentation_axes(in_name, out_name):
    return {in_name: {0: "batch", 2: "height", 3: "width"}, out_name: {0: "batch", 2: "height", 3: "width"}}


def deeplabv3():
    import torchvision
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.deeplabv3 import ASPP, DeepLabV3

    rng = seeded(0)
    features = tiny_mobilenet_v3_features()
    channels = features[-1].out_channels
    backbone = IntermediateLayerGetter(features, return_layers={str(len(features) - 1): "out"})
    # DeepLabHead's layers (ASPP with rates 12/24/36, 3x3 conv, BN, ReLU, 1x1 classifier) at 16
    # channels instead of its fixed 256.
    head = torch.nn.Sequential(
        ASPP(channels, [12, 24, 36], out_channels=16), torch.nn.Conv2d(16, 16, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.Conv2d(16, 3, 1))
    module = OutField(DeepLabV3(backbone, head).eval(), "out")
    inputs = image_inputs(rng, "image")
    onnx_model = export_legacy(module, inputs["a"], ["out"], segmentation_axes("image", "out"))
    what = (f"torchvision {torchvision.__version__.split('+')[0]} DeepLabV3 (random init): MobileNetV3-Large "
            "features at width 0.1 with the reduced, dilated tail (output stride 16), ASPP with atrous rates "
            "12/24/36 (dilated 3x3 convs) and image pooling at 16 channels, 3 classes, bilinear upsampling to "
            "the input size; dynamic batch, height and width")
    return write_model("deeplabv3_torch_legacy", "deeplabv3", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


def lraspp():
    import torchvision
    from torchvision.models import mobilenetv3
    from torchvision.models.segmentation.lraspp import _lraspp_mobilenetv3

    rng = seeded(0)
    settings, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large", width_mult=0.1, reduced_tail=True,
                                                     dilated=True)
    # torchvision's own LRASPP builder (low / high features, the 128-channel head) on the tiny backbone
    module = OutField(_lraspp_mobilenetv3(mobilenetv3.MobileNetV3(settings, last), 3).eval(), "out")
    inputs = image_inputs(rng, "image")
    onnx_model = export_legacy(module, inputs["a"], ["out"], segmentation_axes("image", "out"))
    what = (f"torchvision {torchvision.__version__.split('+')[0]} LRASPP (random init, torchvision's "
            "_lraspp_mobilenetv3 builder): MobileNetV3-Large features at width 0.1 with the reduced, dilated "
            "tail, the lite R-ASPP head (global-pool scale branch, low-level classifier), 3 classes, "
            "bilinear upsampling to run-time sizes; dynamic batch, height and width")
    return write_model("lraspp_torch_legacy", "lraspp", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


def segformer_model():
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    cfg = SegformerConfig(num_channels=3, num_encoder_blocks=4, depths=[1, 1, 1, 1], sr_ratios=[8, 4, 2, 1],
                          hidden_sizes=[8, 16, 16, 24], patch_sizes=[7, 3, 3, 3], strides=[4, 2, 2, 2],
                          num_attention_heads=[1, 1, 2, 2], mlp_ratios=[2, 2, 2, 2], decoder_hidden_size=16,
                          num_labels=3)
    what = ("Segformer (transformers SegformerForSemanticSegmentation, random init: 4 stages of depth 1, "
            "hidden 8/16/16/24, efficient attention with spatial reduction 8/4/2/1 (strided convs), Mix-FFN "
            "depthwise convs, all-MLP decoder with bilinear upsampling to the first stage's size, 3 classes); "
            "logits at 1/4 of the input; dynamic batch, height and width")
    return SegformerForSemanticSegmentation(cfg).eval(), what


def segformer(dynamo):
    rng = seeded(0)
    model, what = segformer_model()
    module = OutField(model, "logits")
    inputs = image_inputs(rng, "pixel_values")
    ref = references(module, inputs)
    if dynamo:
        dims = {0: torch.export.Dim("batch", max=64), 2: torch.export.Dim("height", min=32, max=1024),
                3: torch.export.Dim("width", min=32, max=1024)}
        # traced at batch 2: at batch 1 the export specializes the batch dim to 1
        onnx_model = export_dynamo(module, inputs["b"], ["logits"], {"pixel_values": dims})
        name, exporter = "segformer_torch_dynamo", dynamo_name(onnx_model)
    else:
        axes = {"pixel_values": {0: "batch", 2: "height", 3: "width"},
                "logits": {0: "batch", 2: "logits_height", 3: "logits_width"}}
        onnx_model = export_legacy(module, inputs["a"], ["logits"], axes)
        name, exporter = "segformer_torch_legacy", legacy_name()
    return write_model(name, "segformer", exporter, what, onnx_model, inputs, ref)


# --- instance detection: masks and keypoints, transformer detector --------------------------


def rcnn_inputs(rng):
    return {s: {"image": rng.random((3, h, w), dtype=np.float32)} for s, (h, w) in
            {"a": (64, 96), "b": (120, 80)}.items()}


def mask_rcnn():
    import torchvision
    from torchvision.models.detection import MaskRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
    from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
    from torchvision.ops import MultiScaleRoIAlign

    rng = seeded(0)
    anchors = AnchorGenerator(sizes=((16,), (32,), (64,)), aspect_ratios=((0.5, 1.0, 2.0),) * 3)
    detector = MaskRCNN(
        tiny_fpn_backbone(), num_classes=None, min_size=64, max_size=128,
        rpn_anchor_generator=anchors, rpn_pre_nms_top_n_test=60, rpn_post_nms_top_n_test=30,
        box_roi_pool=MultiScaleRoIAlign(featmap_names=["0", "1"], output_size=4, sampling_ratio=2),
        box_head=TwoMLPHead(8 * 4 * 4, 32), box_predictor=FastRCNNPredictor(32, 4), box_detections_per_img=5,
        mask_roi_pool=MultiScaleRoIAlign(featmap_names=["0", "1"], output_size=7, sampling_ratio=2),
        mask_head=MaskRCNNHeads(8, [8, 8], 1), mask_predictor=MaskRCNNPredictor(8, 8, 4),
    ).eval()
    out_names = ["boxes", "labels", "scores", "masks"]
    module = FirstImage(detector, out_names)
    inputs = rcnn_inputs(rng)
    axes = {"image": {1: "height", 2: "width"}, **{n: {0: "detections"} for n in out_names}}
    axes["masks"] = {0: "detections", 2: "height", 3: "width"}
    onnx_model = export_legacy(module, inputs["a"], out_names, axes)
    what = (f"torchvision {torchvision.__version__.split('+')[0]} MaskRCNN (random init): the Faster R-CNN "
            "export's backbone, FPN, RPN and box head (5 detections), a mask branch (MultiScaleRoIAlign 7x7, "
            "MaskRCNNHeads 2 x 8 channels, ConvTranspose x2, 4 classes) and the masks pasted into the image "
            "(a Loop over the detections); data-dependent box counts; dynamic height and width, one image")
    return write_model("mask_rcnn_torch_legacy", "mask_rcnn", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


def keypoint_rcnn():
    import torchvision
    from torchvision.models.detection import KeypointRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
    from torchvision.models.detection.keypoint_rcnn import KeypointRCNNHeads, KeypointRCNNPredictor
    from torchvision.ops import MultiScaleRoIAlign

    rng = seeded(0)
    anchors = AnchorGenerator(sizes=((16,), (32,), (64,)), aspect_ratios=((0.5, 1.0, 2.0),) * 3)
    detector = KeypointRCNN(
        tiny_fpn_backbone(), num_classes=None, min_size=64, max_size=128,
        rpn_anchor_generator=anchors, rpn_pre_nms_top_n_test=60, rpn_post_nms_top_n_test=30,
        box_roi_pool=MultiScaleRoIAlign(featmap_names=["0", "1"], output_size=4, sampling_ratio=2),
        box_head=TwoMLPHead(8 * 4 * 4, 32), box_predictor=FastRCNNPredictor(32, 2), box_detections_per_img=8,
        keypoint_roi_pool=MultiScaleRoIAlign(featmap_names=["0", "1"], output_size=7, sampling_ratio=2),
        keypoint_head=KeypointRCNNHeads(8, [8, 8]), keypoint_predictor=KeypointRCNNPredictor(8, 5),
    ).eval()
    out_names = ["boxes", "labels", "scores", "keypoints", "keypoints_scores"]
    module = FirstImage(detector, out_names)
    inputs = rcnn_inputs(rng)
    axes = {"image": {1: "height", 2: "width"}, **{n: {0: "detections"} for n in out_names}}
    onnx_model = export_legacy(module, inputs["a"], out_names, axes)
    what = (f"torchvision {torchvision.__version__.split('+')[0]} KeypointRCNN (random init): the Faster "
            "R-CNN export's backbone, FPN, RPN and box head (2 classes, 8 detections), a keypoint branch "
            "(MultiScaleRoIAlign 7x7, KeypointRCNNHeads 2 x 8 channels, ConvTranspose + bilinear x2, 5 "
            "keypoints) and the heatmap-to-keypoint step (a Loop over the detections); data-dependent box "
            "counts; dynamic height and width, one image")
    return write_model("keypoint_rcnn_torch_legacy", "keypoint_rcnn", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


def yolos():
    from transformers import YolosConfig, YolosForObjectDetection

    rng = seeded(0)
    cfg = YolosConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                      image_size=[64, 96], patch_size=16, num_detection_tokens=10, num_labels=4,
                      use_mid_position_embeddings=False)
    out_names = ["logits", "pred_boxes"]
    model = YolosForObjectDetection(cfg).eval()
    # transformers initializes the tokens and position embeddings to zeros: drawn as trained ones
    # would be, so that equal zero tensors do not stand for distinct weights.
    emb = model.vit.embeddings
    for p in (emb.cls_token, emb.detection_tokens, emb.position_embeddings):
        torch.nn.init.normal_(p, std=0.02)
    module = Outputs(model, ["pixel_values"], out_names)
    inputs = image_inputs(rng, "pixel_values", {"a": (1, 64, 96), "b": (2, 96, 64)})
    axes = {"pixel_values": {0: "batch", 2: "height", 3: "width"}, **{n: {0: "batch"} for n in out_names}}
    onnx_model = export_legacy(module, inputs["a"], out_names, axes)
    what = ("YOLOS detector (transformers YolosForObjectDetection, random init: patch 16, hidden 32, 2 layers, "
            "2 heads, 10 detection tokens, 4 labels): the position embedding resized (bicubic) to the patch "
            "grid at run time, class and box MLP heads; dynamic batch, height and width (multiples of 16)")
    return write_model("yolos_torch_legacy", "yolos", legacy_name(), what, onnx_model, inputs,
                       references(module, inputs))


BUILDERS = {
    "gpt2_torch_legacy": lambda: text_model("gpt2_torch_legacy", "gpt2", dynamo=False),
    "gpt2_torch_dynamo": lambda: text_model("gpt2_torch_dynamo", "gpt2", dynamo=True),
    "bert_torch_legacy": lambda: text_model("bert_torch_legacy", "bert", dynamo=False),
    "bert_torch_dynamo": lambda: text_model("bert_torch_dynamo", "bert", dynamo=True),
    "llama_torch_legacy": lambda: text_model("llama_torch_legacy", "llama", dynamo=False),
    "llama_torch_dynamo": lambda: text_model("llama_torch_dynamo", "llama", dynamo=True),
    "llama_torch_dynamo_opset23": lambda: text_model("llama_torch_dynamo_opset23", "llama_positions", dynamo=True,
                                                     opset=23),
    "swin_torch_legacy": swin,
    "vit_torch_dynamo": vit,
    "speech2text_torch_legacy": speech2text,
    "yolov8_ultralytics": yolov8,
    "yolov8_nms_ultralytics": yolov8_nms,
    "timm_vit_dynamo": timm_vit,
    "timm_efficientnet_same_legacy": timm_efficientnet,
    "faster_rcnn_torch_legacy": faster_rcnn,
    "ssdlite_torch_legacy": ssdlite,
    "retinanet_torch_legacy": retinanet,
    "deeplabv3_torch_legacy": deeplabv3,
    "lraspp_torch_legacy": lraspp,
    "segformer_torch_legacy": lambda: segformer(dynamo=False),
    "segformer_torch_dynamo": lambda: segformer(dynamo=True),
    "mask_rcnn_torch_legacy": mask_rcnn,
    "keypoint_rcnn_torch_legacy": keypoint_rcnn,
    "yolos_torch_legacy": yolos,
}
