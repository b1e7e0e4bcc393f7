"""PaddlePaddle OCR-style models through paddle2onnx (generate.py's "paddle" worker).

The PP-OCR detection and recognition models that rapidocr-onnxruntime ships are too large to
commit (4.7 MB and 10.9 MB), so these are tiny random-weight PaddlePaddle networks with the
same structure, saved with paddle.jit.save (dynamic dims as -1 in the InputSpec) and
converted by paddle2onnx as it comes (optimize_tool="None": no polygraphy constant folding
afterwards, which also needs an onnx older than ours). paddle2onnx 2.x names the dynamic
dims "DynamicDimension.N".

* ocr_det: DB-style text detector. Conv-BN-ReLU backbone with five stride-2 steps (stride
  32), FPN with lateral 1x1 convs and nearest-neighbour x2 upsampling (target size computed
  from the feature map's run-time shape) added to the skip maps, the four levels upsampled
  to stride 4 and concatenated, and a head of a conv and two stride-2 transposed convs back
  to a sigmoid probability map at the input resolution. Dynamic batch, height and width.
* ocr_rec: CRNN-style text recognizer. Convs that bring a 32-pixel-high line image to
  height 1, squeeze + transpose into a sequence over the width, a bidirectional LSTM and a
  linear layer with softmax over 40 classes per step. Dynamic batch and width.

onnxruntime's outputs are checked against Paddle's own at both input sizes.
"""

import os
import tempfile

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
import paddle2onnx

from _common import write_model

OPSET = 11  # what PP-OCR's own ONNX exports use (and paddle2onnx raises it when an op needs it)


def exporter_name(opset):
    return f"paddle2onnx {paddle2onnx.__version__} (paddlepaddle {paddle.__version__}) opset {opset}"


def conv_bn_relu(cin, cout, stride):
    return nn.Sequential(nn.Conv2D(cin, cout, 3, stride=stride, padding=1, bias_attr=False),
                         nn.BatchNorm2D(cout), nn.ReLU())


def upsample_x2(x):
    return F.interpolate(x, size=[x.shape[2] * 2, x.shape[3] * 2], mode="nearest")


class TinyDB(nn.Layer):
    def __init__(self):
        super().__init__()
        chans = [8, 8, 16, 16, 32]  # strides 2, 4, 8, 16, 32
        self.stem = conv_bn_relu(3, chans[0], 2)
        self.stages = nn.LayerList([conv_bn_relu(chans[i - 1], chans[i], 2) for i in range(1, 5)])
        self.lateral = nn.LayerList([nn.Conv2D(c, 16, 1) for c in chans[1:]])
        self.smooth = nn.LayerList([nn.Conv2D(16, 4, 3, padding=1) for _ in range(4)])
        self.head = nn.Sequential(conv_bn_relu(16, 8, 1), nn.Conv2DTranspose(8, 8, 2, stride=2),
                                  nn.BatchNorm2D(8), nn.ReLU(), nn.Conv2DTranspose(8, 1, 2, stride=2))

    def forward(self, x):
        x = self.stem(x)
        skips = []
        for stage in self.stages:
            x = stage(x)
            skips.append(x)
        lat = [conv(f) for conv, f in zip(self.lateral, skips)]  # strides 4, 8, 16, 32
        top_down = [lat[3]]
        for level in (2, 1, 0):
            top_down.insert(0, lat[level] + upsample_x2(top_down[0]))
        maps = [conv(f) for conv, f in zip(self.smooth, top_down)]
        size = [maps[0].shape[2], maps[0].shape[3]]
        fused = paddle.concat([maps[0]] + [F.interpolate(m, size=size, mode="nearest") for m in maps[1:]], axis=1)
        return F.sigmoid(self.head(fused))


class TinyCRNN(nn.Layer):
    def __init__(self, classes=40):
        super().__init__()
        self.convs = nn.Sequential(conv_bn_relu(3, 8, (2, 2)), conv_bn_relu(8, 16, (2, 2)),
                                   conv_bn_relu(16, 16, (2, 1)), conv_bn_relu(16, 32, (2, 1)))
        self.pool = nn.MaxPool2D(kernel_size=2, stride=2)  # height 32 -> 1, width / 8
        self.lstm = nn.LSTM(32, 16, num_layers=1, direction="bidirect")
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        f = self.pool(self.convs(x))
        f = paddle.transpose(paddle.squeeze(f, axis=2), [0, 2, 1])  # [batch, steps, 32]
        f, _ = self.lstm(f)
        return F.softmax(self.fc(f), axis=2)


def randomize_batchnorm(layer, rng):
    """Non-trivial BatchNorm statistics (fresh layers have mean 0 / variance 1)."""
    for sub in layer.sublayers():
        if isinstance(sub, nn.BatchNorm2D):
            sub._mean.set_value(rng.uniform(-0.2, 0.2, sub._mean.shape).astype(np.float32))
            sub._variance.set_value(rng.uniform(0.5, 1.5, sub._variance.shape).astype(np.float32))


def export(layer, shape):
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "inference")
        paddle.jit.save(layer, prefix, input_spec=[paddle.static.InputSpec(shape, "float32", "x")])
        model_file = prefix + (".json" if os.path.exists(prefix + ".json") else ".pdmodel")
        out = os.path.join(tmp, "model.onnx")
        paddle2onnx.export(model_file, prefix + ".pdiparams", save_file=out, opset_version=OPSET,
                           optimize_tool="None")
        if not os.path.exists(out):
            raise RuntimeError("paddle2onnx wrote no model (see its log above)")
        with open(out, "rb") as f:
            return f.read()


def build(name, family, layer, spec_shape, sizes, what):
    paddle.seed(0)
    rng = np.random.default_rng(0)
    layer = layer()
    randomize_batchnorm(layer, rng)
    layer.eval()
    inputs = {s: {"x": rng.random(shape, dtype=np.float32)} for s, shape in sizes.items()}
    ref = {s: [layer(paddle.to_tensor(feeds["x"])).numpy()] for s, feeds in inputs.items()}
    onnx_bytes = export(layer, spec_shape)
    import onnx

    opset = onnx.load_from_string(onnx_bytes).opset_import[0].version
    return write_model(name, family, exporter_name(opset), what, onnx_bytes, inputs, ref)


def ocr_det():
    return build("ocr_det_paddle2onnx", "ocr_det", TinyDB, [None, 3, None, None],
                 {"a": (1, 3, 64, 96), "b": (2, 3, 96, 64)},
                 "DB-style text detector (tiny random PaddlePaddle net, PP-OCR det layout): stride-32 "
                 "conv backbone, FPN with nearest x2 upsampling to run-time sizes + skip adds, concat of "
                 "4 levels, transposed-conv head to a probability map; dynamic batch, height, width "
                 "(multiples of 32)")


def ocr_rec():
    return build("ocr_rec_paddle2onnx", "ocr_rec", TinyCRNN, [None, 3, 32, None],
                 {"a": (1, 3, 32, 96), "b": (2, 3, 32, 160)},
                 "CRNN-style text recognizer (tiny random PaddlePaddle net, PP-OCR rec layout): convs to "
                 "height 1, squeeze/transpose to a sequence over the width, bidirectional LSTM, linear + "
                 "softmax over 40 classes; 32-pixel lines, dynamic batch and width (multiples of 8)")


BUILDERS = {
    "ocr_det_paddle2onnx": ocr_det,
    "ocr_rec_paddle2onnx": ocr_rec,
}
