"""Language and speech models of generate.py: transformers encoder-decoders (T5, BART), wav2vec2
and grouped-query decoders (Qwen2, Gemma, Phi-3), from tiny configs with random weights.

As in _torch_models (whose export helpers this module uses): nothing is downloaded, seeds are
fixed, token ids are fed directly (no tokenizer), and onnxruntime's outputs are checked against
torch's eager outputs at both input sizes. Encoder-decoders are exported as one graph: the
model's forward with input_ids, attention_mask and decoder_input_ids (no KV cache), returning the
logits and the encoder's last hidden state.
"""

import numpy as np
import torch

from _common import write_model
from _torch_models import (VOCAB, Outputs, dynamo_name, export_dynamo, export_legacy, legacy_name, references,
                           seeded, token_inputs)

# --- encoder-decoders --------------------------------------------------------------------

# (batch, encoder tokens, decoder tokens): batch and both lengths differ between the two sets
SEQ2SEQ_SIZES = {"a": (1, 7, 5), "b": (2, 13, 9)}
SEQ2SEQ_INPUTS = ["input_ids", "attention_mask", "decoder_input_ids"]
SEQ2SEQ_OUTPUTS = ["logits", "encoder_last_hidden_state"]


def seq2seq_inputs(rng):
    inputs = {}
    for s, (b, t, d) in SEQ2SEQ_SIZES.items():
        mask = np.ones((b, t), dtype=np.int64)
        if b > 1:
            mask[1, t - 3:] = 0  # the second sequence is padded: the encoder mask is not all ones
        inputs[s] = {
            "input_ids": rng.integers(3, VOCAB, (b, t), dtype=np.int64),
            "attention_mask": mask,
            "decoder_input_ids": rng.integers(3, VOCAB, (b, d), dtype=np.int64),
        }
    return inputs


def t5(attention=None):
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=VOCAB, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_decoder_layers=2, num_heads=4,
                   relative_attention_num_buckets=8, relative_attention_max_distance=32, dropout_rate=0.0,
                   pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, use_cache=False)
    if attention is not None:
        cfg._attn_implementation = attention
    return T5ForConditionalGeneration(cfg), (
        "T5 encoder-decoder (transformers T5ForConditionalGeneration, 2+2 layers, d_model 16, 4 heads of 4, "
        "d_ff 32, relative position buckets 8 (max distance 32) computed from the lengths at run time, "
        "vocab 100)")


def bart():
    from transformers import BartConfig, BartForConditionalGeneration

    cfg = BartConfig(vocab_size=VOCAB, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                     decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
                     pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, use_cache=False)
    return BartForConditionalGeneration(cfg), (
        "BART encoder-decoder (transformers BartForConditionalGeneration, 2+2 layers, d_model 16, 2 heads, "
        "ffn 32, learned positions (64), vocab 100)")


SEQ2SEQ = {"t5": t5, "bart": bart}


def seq2seq_model(name, family, dynamo, **config):
    rng = seeded(0)
    model, what = SEQ2SEQ[family](**config)
    if config.get("attention"):
        what += f"; attention '{config['attention']}'"
    module = Outputs(model.eval(), SEQ2SEQ_INPUTS, SEQ2SEQ_OUTPUTS, use_cache=False)
    inputs = seq2seq_inputs(rng)
    ref = references(module, inputs)
    if dynamo:
        batch = torch.export.Dim("batch", max=64)
        enc, dec = torch.export.Dim("sequence", max=64), torch.export.Dim("decoder_sequence", max=64)
        shapes = {"input_ids": {0: batch, 1: enc}, "attention_mask": {0: batch, 1: enc},
                  "decoder_input_ids": {0: batch, 1: dec}}
        onnx_model = export_dynamo(module, inputs["a"], SEQ2SEQ_OUTPUTS, shapes)
        exporter = dynamo_name(onnx_model)
    else:
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                "decoder_input_ids": {0: "batch", 1: "decoder_sequence"},
                "logits": {0: "batch", 1: "decoder_sequence"},
                "encoder_last_hidden_state": {0: "batch", 1: "sequence"}}
        onnx_model = export_legacy(module, inputs["a"], SEQ2SEQ_OUTPUTS, axes)
        exporter = legacy_name()
    return write_model(name, family, exporter, what + "; one graph (encoder + decoder, no KV cache); dynamic "
                       "batch, encoder and decoder lengths; the second sequence of set b padded", onnx_model,
                       inputs, ref)


# --- speech ------------------------------------------------------------------------------


def wav2vec2(name, dynamo):
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    rng = seeded(0)
    # feat_extract_norm="group": the first conv layer is followed by GroupNorm(32 groups, 32
    # channels), which the TorchScript exporter writes as Reshape(x, [0, 32, -1]) +
    # InstanceNormalization.
    cfg = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         conv_dim=(32, 32, 32), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2),
                         feat_extract_norm="group", num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                         do_stable_layer_norm=False, apply_spec_augment=False, mask_time_prob=0.0,
                         vocab_size=VOCAB)
    out_names = ["last_hidden_state", "extract_features"]
    module = Outputs(Wav2Vec2Model(cfg).eval(), ["input_values"], out_names)
    inputs = {s: {"input_values": rng.standard_normal((b, n), dtype=np.float32)}
              for s, (b, n) in {"a": (1, 400), "b": (2, 643)}.items()}
    if dynamo:
        # the feature extractor needs at least 40 samples (one frame out of the third conv)
        dims = {0: torch.export.Dim("batch", max=64), 1: torch.export.Dim("samples", min=40, max=1 << 20)}
        onnx_model = export_dynamo(module, inputs["a"], out_names, {"input_values": dims})
        exporter = dynamo_name(onnx_model)
    else:
        axes = {"input_values": {0: "batch", 1: "samples"}, "last_hidden_state": {0: "batch", 1: "frames"},
                "extract_features": {0: "batch", 1: "frames"}}
        onnx_model = export_legacy(module, inputs["a"], out_names, axes)
        exporter = legacy_name()
    what = ("wav2vec2 encoder (transformers Wav2Vec2Model, feat_extract_norm='group': conv feature extractor of 3 "
            "layers (32 channels, kernels 10/3/3, strides 5/2/2) with GroupNorm(32) after the first, positional "
            "conv (kernel 16, 4 groups), 2 layers, hidden 32, 2 heads) over raw samples; dynamic batch and "
            "samples")
    return write_model(name, "wav2vec2", exporter, what, onnx_model, inputs, references(module, inputs))


# --- grouped-query decoders --------------------------------------------------------------


def qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      bos_token_id=0, eos_token_id=0, pad_token_id=0, use_cache=False, tie_word_embeddings=True)
    return Qwen2ForCausalLM(cfg), (
        "Qwen2 decoder (transformers Qwen2ForCausalLM, 2 layers, hidden 32, 4 query heads / 2 key-value heads "
        "(GQA), biased q/k/v projections, rotary embeddings, causal mask, tied embeddings, vocab 100)")


def gemma():
    from transformers import GemmaConfig, GemmaForCausalLM

    cfg = GemmaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=1, head_dim=8, max_position_embeddings=64,
                      bos_token_id=0, eos_token_id=0, pad_token_id=0, use_cache=False)
    return GemmaForCausalLM(cfg), (
        "Gemma decoder (transformers GemmaForCausalLM, 2 layers, hidden 32, 4 query heads / 1 key-value head "
        "(multi-query), head_dim 8, GeLU-tanh MLP, embeddings scaled by sqrt(hidden), rotary embeddings, causal "
        "mask, vocab 100)")


def phi3():
    from transformers import Phi3Config, Phi3ForCausalLM

    cfg = Phi3Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                     original_max_position_embeddings=64, partial_rotary_factor=0.5, bos_token_id=0,
                     eos_token_id=0, pad_token_id=0, use_cache=False)
    return Phi3ForCausalLM(cfg), (
        "Phi-3 decoder (transformers Phi3ForCausalLM, 2 layers, hidden 32, 4 query heads / 2 key-value heads "
        "(GQA) from one fused qkv projection split at run time, fused gate/up MLP, rotary embeddings on half of "
        "each head (partial_rotary_factor 0.5), causal mask, vocab 100)")


DECODERS = {"qwen2": qwen2, "gemma": gemma, "phi3": phi3}
DECODER_INPUTS = ["input_ids", "attention_mask"]


def decoder_model(name, family, dynamo):
    rng = seeded(0)
    model, what = DECODERS[family]()
    module = Outputs(model.eval(), DECODER_INPUTS, ["logits"], use_cache=False)
    inputs = token_inputs(rng, DECODER_INPUTS)
    # set b: the second sequence right-padded by 4. (Left padding leaves the padded queries no key
    # to attend to; on those meaningless rows the dynamo export differs from eager torch.)
    inputs["b"]["attention_mask"][1, -4:] = 0
    ref = references(module, inputs)
    if dynamo:
        batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("sequence", max=64)
        onnx_model = export_dynamo(module, inputs["a"], ["logits"], {n: {0: batch, 1: seq} for n in DECODER_INPUTS})
        exporter = dynamo_name(onnx_model)
    else:
        axes = {n: {0: "batch", 1: "sequence"} for n in DECODER_INPUTS + ["logits"]}
        onnx_model = export_legacy(module, inputs["a"], ["logits"], axes)
        exporter = legacy_name()
    return write_model(name, family, exporter, what + "; dynamic batch and sequence; the second sequence of set "
                       "b right-padded", onnx_model, inputs, ref)


BUILDERS = {
    "t5_torch_legacy": lambda: seq2seq_model("t5_torch_legacy", "t5", dynamo=False),
    # With T5's default attention ('sdpa') the dynamo exporter fails in its decomposition step
    # ("Cannot view a tensor with shape [s21, s50, 4, 4] and strides (16*s50, 4, 4*s50, 1) as a
    # tensor with shape (s21, s50, 16)": the attention output, transposed back to [batch,
    # sequence, heads, head_dim], merged into [batch, sequence, 16]); the eager attention exports.
    "t5_torch_dynamo": lambda: seq2seq_model("t5_torch_dynamo", "t5", dynamo=True, attention="eager"),
    "bart_torch_legacy": lambda: seq2seq_model("bart_torch_legacy", "bart", dynamo=False),
    "bart_torch_dynamo": lambda: seq2seq_model("bart_torch_dynamo", "bart", dynamo=True),
    "wav2vec2_torch_legacy": lambda: wav2vec2("wav2vec2_torch_legacy", dynamo=False),
    "wav2vec2_torch_dynamo": lambda: wav2vec2("wav2vec2_torch_dynamo", dynamo=True),
    "qwen2_torch_legacy": lambda: decoder_model("qwen2_torch_legacy", "qwen2", dynamo=False),
    "qwen2_torch_dynamo": lambda: decoder_model("qwen2_torch_dynamo", "qwen2", dynamo=True),
    "gemma_torch_legacy": lambda: decoder_model("gemma_torch_legacy", "gemma", dynamo=False),
    "gemma_torch_dynamo": lambda: decoder_model("gemma_torch_dynamo", "gemma", dynamo=True),
    "phi3_torch_legacy": lambda: decoder_model("phi3_torch_legacy", "phi3", dynamo=False),
    "phi3_torch_dynamo": lambda: decoder_model("phi3_torch_dynamo", "phi3", dynamo=True),
}
