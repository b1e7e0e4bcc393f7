"""Keras models converted by tf2onnx (generate.py's "tf" worker).

The worker runs with TF_USE_LEGACY_KERAS=1, so tf.keras is tf-keras (Keras 2), the Keras
that tf2onnx.convert.from_keras converts. Weights are Keras' random initializers under a
fixed seed. tf2onnx names unknown dims "unk__N" and writes INT32_MAX / INT64_MAX as the end
of open slices; the graph keeps Keras' NHWC layout with Transposes around convs.
onnxruntime's outputs are checked against Keras' own at both input sizes.
"""

import numpy as np
import tensorflow as tf
import tf2onnx

from _common import write_model

keras = tf.keras
OPSET = 17
VOCAB = 100


def exporter_name():
    return f"tf2onnx {tf2onnx.__version__} (tensorflow {tf.__version__}, tf-keras) opset {OPSET}"


def convert(model, signature):
    onnx_model, _ = tf2onnx.convert.from_keras(model, input_signature=signature, opset=OPSET)
    return onnx_model


def keras_outputs(model, inputs):
    out = {}
    for s, feeds in inputs.items():
        res = model(list(feeds.values()) if len(feeds) > 1 else next(iter(feeds.values())), training=False)
        res = res if isinstance(res, (list, tuple)) else [res]
        out[s] = [np.asarray(r) for r in res]
    return out


class TokenAndPosition(keras.layers.Layer):
    """Token embedding plus position terms computed from the run-time sequence length:
    a learned table gathered at tf.range(length) and a fixed sinusoid over a float range."""

    def __init__(self, vocab, max_len, dim, **kw):
        super().__init__(**kw)
        self.dim = dim
        self.tokens = keras.layers.Embedding(vocab, dim)
        self.positions = keras.layers.Embedding(max_len, dim)

    def call(self, ids):
        length = tf.shape(ids)[-1]
        learned = self.positions(tf.range(length))
        pos = tf.range(tf.cast(length, tf.float32))  # float Range
        freq = tf.exp(tf.range(0.0, self.dim, 2.0) * (-np.log(10000.0) / self.dim))
        angles = pos[:, None] * freq[None, :]
        sinusoid = tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)
        return self.tokens(ids) * np.sqrt(self.dim).astype(np.float32) + learned + sinusoid


def gelu_tanh(x):
    return tf.nn.gelu(x, approximate=True)


def gpt_block(x, dim, heads, name):
    h = keras.layers.LayerNormalization(epsilon=1e-5, name=f"{name}_ln1")(x)
    h = keras.layers.MultiHeadAttention(heads, dim // heads, name=f"{name}_attn")(h, h, use_causal_mask=True)
    x = keras.layers.Add(name=f"{name}_res1")([x, h])
    h = keras.layers.LayerNormalization(epsilon=1e-5, name=f"{name}_ln2")(x)
    # GPT-2's tanh GELU (tf2onnx has no conversion for the Erfc of the exact one)
    h = keras.layers.Dense(2 * dim, activation=gelu_tanh, name=f"{name}_fc")(h)
    h = keras.layers.Dense(dim, name=f"{name}_proj")(h)
    return keras.layers.Add(name=f"{name}_res2")([x, h])


def keras_gpt():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    dim = 32
    ids = keras.Input(shape=(None,), dtype="int32", name="input_ids")
    x = TokenAndPosition(VOCAB, 64, dim, name="embed")(ids)
    for i in range(2):
        x = gpt_block(x, dim, 2, f"block{i}")
    x = keras.layers.LayerNormalization(epsilon=1e-5, name="ln_f")(x)
    logits = keras.layers.Dense(VOCAB, name="logits")(x)
    model = keras.Model(ids, logits, name="tiny_gpt")

    inputs = {s: {"input_ids": rng.integers(0, VOCAB, (b, t)).astype(np.int32)}
              for s, (b, t) in {"a": (1, 7), "b": (2, 13)}.items()}
    onnx_model = convert(model, [tf.TensorSpec((None, None), tf.int32, name="input_ids")])
    what = ("GPT-2-like Keras decoder (tf-keras functional model: token embedding + learned positions "
            "gathered at tf.range(seq) + a sinusoid over a float tf.range, 2 pre-LN blocks with "
            "MultiHeadAttention(use_causal_mask=True) and a tanh-GELU MLP, dim 32, 2 heads, vocab 100); int32 "
            "token ids; dynamic batch and sequence")
    return write_model("keras_gpt_tf2onnx", "keras_gpt", exporter_name(), what, onnx_model, inputs,
                       keras_outputs(model, inputs))


def keras_convnet():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    L = keras.layers
    image = keras.Input(shape=(None, None, 3), name="image")
    c1 = L.Conv2D(8, 3, strides=2, padding="same", activation="relu", name="down1")(image)
    c2 = L.Conv2D(16, 3, strides=2, padding="same", activation="relu", name="down2")(c1)
    c3 = L.Conv2D(32, 3, strides=2, padding="same", activation="relu", name="down3")(c2)
    c3 = L.BatchNormalization(name="bn3")(c3)
    u2 = L.Concatenate(name="skip2")([L.UpSampling2D(2, name="up2")(c3), c2])
    u2 = L.Conv2D(16, 3, padding="same", activation="relu", name="fuse2")(u2)
    u1 = L.Concatenate(name="skip1")([L.UpSampling2D(2, interpolation="bilinear", name="up1")(u2), c1])
    mask = L.Conv2D(1, 1, activation="sigmoid", name="mask")(u1)
    pooled = L.GlobalAveragePooling2D(name="pool")(c3)
    logits = L.Dense(5, name="logits")(pooled)
    model = keras.Model(image, [mask, logits], name="tiny_unet")
    # moving statistics away from 0 / 1 so BatchNormalization does something
    bn = model.get_layer("bn3")
    bn.set_weights([w + rng.uniform(0.1, 0.5, w.shape).astype(np.float32) for w in bn.get_weights()])

    inputs = {s: {"image": rng.random((b, h, w, 3), dtype=np.float32)}
              for s, (b, h, w) in {"a": (1, 64, 96), "b": (2, 96, 64)}.items()}
    onnx_model = convert(model, [tf.TensorSpec((None, None, None, 3), tf.float32, name="image")])
    what = ("small Keras U-Net-like conv net (tf-keras functional model, NHWC): three stride-2 'same' convs, "
            "nearest and bilinear UpSampling2D x2 with skip concatenations to a sigmoid mask at half "
            "resolution, plus global average pooling to 5 logits; dynamic batch, height and width "
            "(multiples of 8)")
    return write_model("keras_convnet_tf2onnx", "keras_convnet", exporter_name(), what, onnx_model, inputs,
                       keras_outputs(model, inputs))


BUILDERS = {
    "keras_gpt_tf2onnx": keras_gpt,
    "keras_convnet_tf2onnx": keras_convnet,
}
