#!/usr/bin/env python3
"""make_family_dir.py: writes tiny random models of every family headmap opens besides GPT-2
(Llama, SmolLM2, Mistral, Qwen2, Qwen3, Gemma, Gemma 2, Gemma 3, Pythia, GPT-Neo, Phi-3, Phi,
OLMo 2, SmolLM3) in Hugging
Face's directory layout, for tests that need no download.

    make_family_dir.py OUT_DIR [--variant NAME | --variant all]

Each variant is one family with one or more quirks, in one file variant (F32, F16, BF16,
sharded, rope settings top-level or in transformers v5's rope_parameters); see VARIANTS.
The tensors use Hugging Face's names and its (out, in) storage of Linear weights. The
tokenizer is make_gpt2_dir.py's tiny byte-level BPE as tokenizer.json. Needs numpy only.
"""
import copy
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_gpt2_dir  # noqa: E402
import reference_common  # noqa: E402

P = 64  # max_position_embeddings

# name -> (model_type, config overrides, dtype, extras)
VARIANTS = {
    # Llama: GQA 4 query heads on 2 K/V heads, untied lm_head
    "llama": ("llama", dict(hidden_size=48, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=3, intermediate_size=80,
                            tie_word_embeddings=False, rope_theta=10000.0), "F32", {}),
    # SmolLM2: multi-query (3 query heads, 1 K/V head), tied, BF16
    "smollm2": ("llama", dict(hidden_size=48, num_attention_heads=3, num_key_value_heads=1, num_hidden_layers=2, intermediate_size=64,
                              tie_word_embeddings=True, rope_theta=100000.0), "BF16", {}),
    # Llama 3.1/3.2: llama3 rope scaling (a short original context, so it bends these positions), F16
    "llama3_scaling": ("llama", dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2, intermediate_size=96,
                                     tie_word_embeddings=True, rope_theta=500000.0,
                                     rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                   "original_max_position_embeddings": 16}), "F16", {}),
    # Llama with linear rope scaling, in transformers v5's rope_parameters
    "llama_linear_v5": ("llama", dict(hidden_size=32, num_attention_heads=2, num_hidden_layers=2, intermediate_size=48,
                                      tie_word_embeddings=False,
                                      rope_parameters={"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}), "F32", {}),
    # Mistral: a sliding window of 4 tokens, shorter than the text; sharded BF16
    "mistral_window": ("mistral", dict(hidden_size=48, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                                       intermediate_size=64, sliding_window=4, tie_word_embeddings=False, rope_theta=10000.0), "BF16",
                       {"sharded": True}),
    # Qwen2: Q/K/V biases, tied
    "qwen2": ("qwen2", dict(hidden_size=48, num_attention_heads=6, num_key_value_heads=2, num_hidden_layers=2, intermediate_size=64,
                            tie_word_embeddings=True, rope_theta=1000000.0, use_sliding_window=False), "F32", {}),
    # Qwen3: q/k norms, head_dim 16 with H·d_head = 64 != D = 32, BF16
    "qwen3": ("qwen3", dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                            intermediate_size=48, tie_word_embeddings=True, rope_theta=1000000.0), "BF16", {}),
    # Gemma: (1 + w) norms, embeddings x sqrt(D), GELU-tanh gate, head_dim 24 != D/H, multi-query, F16
    "gemma": ("gemma", dict(hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=24, num_hidden_layers=2,
                            intermediate_size=48, hidden_activation="gelu_pytorch_tanh", rope_theta=10000.0), "F16", {}),
    # Gemma 2: four norms, score and logit soft-capping, query_pre_attn_scalar, local layers of window 3
    "gemma2": ("gemma2", dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_hidden_layers=3,
                              intermediate_size=48, hidden_activation="gelu_pytorch_tanh", rope_theta=10000.0,
                              query_pre_attn_scalar=20, attn_logit_softcapping=3.0, final_logit_softcapping=2.5,
                              sliding_window=3), "F32", {}),
    # Gemma 3: q/k norms, local layers (window 3, their own theta) and global ones (linear scaling), BF16
    "gemma3": ("gemma3_text", dict(hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16, num_hidden_layers=4,
                                   intermediate_size=48, hidden_activation="gelu_pytorch_tanh", rope_theta=1000000.0,
                                   rope_local_base_freq=10000.0, rope_scaling={"rope_type": "linear", "factor": 8.0},
                                   query_pre_attn_scalar=16, sliding_window=3, sliding_window_pattern=2,
                                   final_logit_softcapping=None, attn_logit_softcapping=None), "BF16", {}),
    # Pythia: fused per-head query_key_value, partial rotary (a quarter of each head), parallel
    # residual, LayerNorms with biases, untied embed_out, the buffers real files carry, F16
    "pythia": ("gpt_neox", dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=192, rotary_pct=0.25,
                                rotary_emb_base=10000, use_parallel_residual=True, hidden_act="gelu", tie_word_embeddings=False,
                                layer_norm_eps=1e-5), "F16", {"buffers": True}),
    # GPT-NeoX without the parallel residual
    "neox_sequential": ("gpt_neox", dict(hidden_size=32, num_attention_heads=2, num_hidden_layers=2, intermediate_size=128,
                                         rotary_pct=0.5, rotary_emb_base=10000, use_parallel_residual=False, hidden_act="gelu",
                                         tie_word_embeddings=False, layer_norm_eps=1e-5), "F32", {}),
    # Phi-3: fused qkv_proj with grouped K/V (4 query heads, 2 K/V), fused gate_up_proj, longrope:
    # the text is longer than original_max_position_embeddings (8), so the long factors and the
    # attention factor sqrt(1 + ln(64/8) / ln 8) apply; BF16, so the fused tensors stay 16-bit
    "phi3_longrope_long": ("phi3", dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                                        intermediate_size=96, tie_word_embeddings=False, rope_theta=10000.0, sliding_window=None,
                                        original_max_position_embeddings=8,
                                        rope_scaling={"type": "longrope", "short_factor": [1.0, 1.2, 1.6, 2.2, 3.0, 4.0, 5.5, 7.0],
                                                      "long_factor": [1.5, 3.0, 6.0, 11.0, 19.0, 30.0, 45.0, 64.0]}), "BF16", {}),
    # ...and a text shorter than original_max_position_embeddings (48): the short factors, F32
    "phi3_longrope_short": ("phi3", dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                                         intermediate_size=96, tie_word_embeddings=False, rope_theta=10000.0, sliding_window=None,
                                         original_max_position_embeddings=48,
                                         rope_scaling={"type": "longrope", "short_factor": [1.0, 1.2, 1.6, 2.2, 3.0, 4.0, 5.5, 7.0],
                                                       "long_factor": [1.5, 3.0, 6.0, 11.0, 19.0, 30.0, 45.0, 64.0]}), "F32", {}),
    # Phi-1.5 / Phi-2: attention and MLP in parallel from one LayerNorm, rotary on half of each
    # head, biases on every Linear, an untied lm_head with its bias, F16
    "phi": ("phi", dict(hidden_size=48, num_attention_heads=4, num_hidden_layers=2, intermediate_size=80, partial_rotary_factor=0.5,
                        hidden_act="gelu_new", layer_norm_eps=1e-5, tie_word_embeddings=False, rope_theta=10000.0, qk_layernorm=False),
            "F16", {}),
    # OLMo 2: each sub-block's output RMSNormed before the residual (no pre-norms); q/k RMSNorm
    # over the whole projected width (H·dh = 48, KV·dh = 24), not per head
    "olmo2": ("olmo2", dict(hidden_size=48, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2, intermediate_size=64,
                            tie_word_embeddings=False, rope_theta=10000.0, attention_bias=False, rms_norm_eps=1e-6), "F32", {}),
    # SmolLM3: no rotary position on layers 1 and 3 (no_rope_layers 0), tied, BF16
    "smollm3": ("smollm3", dict(hidden_size=48, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=4, intermediate_size=64,
                                tie_word_embeddings=True, rope_theta=10000.0, no_rope_layers=[1, 0, 1, 0], use_sliding_window=False,
                                attention_bias=False, mlp_bias=False), "BF16", {}),
    # GPT-Neo (TinyStories): learned positions, no score scale, global and local (window 3) layers
    "gpt_neo": ("gpt_neo", dict(hidden_size=32, num_heads=4, num_layers=2, intermediate_size=None, window_size=3,
                                attention_types=[[["global", "local"], 1]], activation_function="gelu_new",
                                layer_norm_epsilon=1e-5, max_position_embeddings=P), "F32", {"buffers": True}),
}


def config_for(variant):
    mtype, over, _, _ = VARIANTS[variant]
    vocab = make_gpt2_dir.tiny_vocab()
    cfg = {"model_type": mtype, "vocab_size": len(vocab), "max_position_embeddings": P, "bos_token_id": len(vocab) - 1,
           "eos_token_id": len(vocab) - 1}
    if mtype in ("llama", "mistral", "qwen2", "qwen3", "phi3", "olmo2", "smollm3"):
        cfg.update(hidden_act="silu", rms_norm_eps=1e-6)
    if mtype.startswith("gemma"):
        cfg.update(rms_norm_eps=1e-6)
    cfg.update(copy.deepcopy(over))
    return cfg


def make_tensors(cfg, r, buffers):
    """HF's tensor names (with their prefix) and float32 arrays, Linear weights (out, in)."""
    t = cfg["model_type"]
    n = lambda *shape, s=0.2: (r.standard_normal(shape) * s).astype(np.float32)
    gamma = lambda D: (1 + n(D, s=0.1)) if not t.startswith("gemma") else n(D, s=0.1)  # Gemma stores w of (1 + w)
    D, V = cfg["hidden_size"], cfg["vocab_size"]
    out = []
    if t == "gpt_neox":
        H, L, F = cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["intermediate_size"]
        out.append(("gpt_neox.embed_in.weight", n(V, D, s=0.5)))
        for l in range(L):
            p = f"gpt_neox.layers.{l}."
            out += [(p + "input_layernorm.weight", gamma(D)), (p + "input_layernorm.bias", n(D, s=0.05)),
                    (p + "post_attention_layernorm.weight", gamma(D)), (p + "post_attention_layernorm.bias", n(D, s=0.05)),
                    (p + "attention.query_key_value.weight", n(3 * D, D, s=0.3)), (p + "attention.query_key_value.bias", n(3 * D, s=0.1)),
                    (p + "attention.dense.weight", n(D, D)), (p + "attention.dense.bias", n(D, s=0.05)),
                    (p + "mlp.dense_h_to_4h.weight", n(F, D)), (p + "mlp.dense_h_to_4h.bias", n(F, s=0.05)),
                    (p + "mlp.dense_4h_to_h.weight", n(D, F, s=0.1)), (p + "mlp.dense_4h_to_h.bias", n(D, s=0.05))]
            if buffers:
                out += [(p + "attention.bias", np.tril(np.ones((1, 1, P, P), np.float32))),
                        (p + "attention.masked_bias", np.array(-1e9, np.float32)),
                        (p + "attention.rotary_emb.inv_freq", n(4))]
        out += [("gpt_neox.final_layer_norm.weight", gamma(D)), ("gpt_neox.final_layer_norm.bias", n(D, s=0.05)),
                ("embed_out.weight", n(V, D, s=0.3))]
        return out
    if t == "gpt_neo":
        L, F = cfg["num_layers"], cfg.get("intermediate_size") or 4 * D
        out += [("transformer.wte.weight", n(V, D, s=0.5)), ("transformer.wpe.weight", n(P, D, s=0.2))]
        for l in range(L):
            p = f"transformer.h.{l}."
            out += [(p + "ln_1.weight", gamma(D)), (p + "ln_1.bias", n(D, s=0.05)),
                    (p + "attn.attention.q_proj.weight", n(D, D, s=0.3)), (p + "attn.attention.k_proj.weight", n(D, D, s=0.3)),
                    (p + "attn.attention.v_proj.weight", n(D, D)), (p + "attn.attention.out_proj.weight", n(D, D)),
                    (p + "attn.attention.out_proj.bias", n(D, s=0.05)),
                    (p + "ln_2.weight", gamma(D)), (p + "ln_2.bias", n(D, s=0.05)),
                    (p + "mlp.c_fc.weight", n(F, D)), (p + "mlp.c_fc.bias", n(F, s=0.05)),
                    (p + "mlp.c_proj.weight", n(D, F, s=0.1)), (p + "mlp.c_proj.bias", n(D, s=0.05))]
            if buffers:
                out += [(p + "attn.attention.bias", np.tril(np.ones((1, 1, P, P), np.float32))),
                        (p + "attn.attention.masked_bias", np.array(-1e9, np.float32))]
        out += [("transformer.ln_f.weight", gamma(D)), ("transformer.ln_f.bias", n(D, s=0.05))]
        return out
    H, L, F = cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    KV = cfg.get("num_key_value_heads") or H
    dh = cfg.get("head_dim") or D // H
    if t == "phi":  # one LayerNorm, biases everywhere, dense / fc1 / fc2, final_layernorm, lm_head with a bias
        out.append(("model.embed_tokens.weight", n(V, D, s=0.5)))
        for l in range(L):
            p = f"model.layers.{l}."
            out += [(p + "input_layernorm.weight", gamma(D)), (p + "input_layernorm.bias", n(D, s=0.05))]
            for name, rows in (("q_proj", H * dh), ("k_proj", KV * dh), ("v_proj", KV * dh)):
                out += [(p + "self_attn." + name + ".weight", n(rows, D, s=0.3)), (p + "self_attn." + name + ".bias", n(rows, s=0.2))]
            out += [(p + "self_attn.dense.weight", n(D, H * dh)), (p + "self_attn.dense.bias", n(D, s=0.05)),
                    (p + "mlp.fc1.weight", n(F, D)), (p + "mlp.fc1.bias", n(F, s=0.05)),
                    (p + "mlp.fc2.weight", n(D, F, s=0.1)), (p + "mlp.fc2.bias", n(D, s=0.05))]
        out += [("model.final_layernorm.weight", gamma(D)), ("model.final_layernorm.bias", n(D, s=0.05)),
                ("lm_head.weight", n(V, D, s=0.3)), ("lm_head.bias", n(V, s=0.5))]
        return out
    bias = t == "qwen2"
    out.append(("model.embed_tokens.weight", n(V, D, s=0.5 if not t.startswith("gemma") else 0.1)))
    for l in range(L):
        p = f"model.layers.{l}."
        if t != "olmo2":  # OLMo 2 norms the sub-blocks' outputs only
            out.append((p + "input_layernorm.weight", gamma(D)))
        if t == "phi3":  # [q; k; v] rows in one Linear
            out.append((p + "self_attn.qkv_proj.weight", np.concatenate([n(H * dh, D, s=0.3), n(KV * dh, D, s=0.3), n(KV * dh, D)])))
        else:
            out += [(p + "self_attn.q_proj.weight", n(H * dh, D, s=0.3)), (p + "self_attn.k_proj.weight", n(KV * dh, D, s=0.3)),
                    (p + "self_attn.v_proj.weight", n(KV * dh, D))]
        out.append((p + "self_attn.o_proj.weight", n(D, H * dh)))
        if bias:
            out += [(p + "self_attn.q_proj.bias", n(H * dh, s=0.2)), (p + "self_attn.k_proj.bias", n(KV * dh, s=0.2)),
                    (p + "self_attn.v_proj.bias", n(KV * dh, s=0.2))]
        if t in ("qwen3", "gemma3_text"):
            out += [(p + "self_attn.q_norm.weight", gamma(dh)), (p + "self_attn.k_norm.weight", gamma(dh))]
        if t == "olmo2":  # over the whole projected width
            out += [(p + "self_attn.q_norm.weight", gamma(H * dh)), (p + "self_attn.k_norm.weight", gamma(KV * dh))]
        out.append((p + "post_attention_layernorm.weight", gamma(D)))
        if t in ("gemma2", "gemma3_text"):
            out.append((p + "pre_feedforward_layernorm.weight", gamma(D)))
        if t in ("gemma2", "gemma3_text", "olmo2"):
            out.append((p + "post_feedforward_layernorm.weight", gamma(D)))
        if t == "phi3":  # [gate; up] rows in one Linear
            out.append((p + "mlp.gate_up_proj.weight", np.concatenate([n(F, D), n(F, D)])))
        else:
            out += [(p + "mlp.gate_proj.weight", n(F, D)), (p + "mlp.up_proj.weight", n(F, D))]
        out.append((p + "mlp.down_proj.weight", n(D, F, s=0.1)))
    out.append(("model.norm.weight", gamma(D)))
    if not cfg.get("tie_word_embeddings", t.startswith("gemma")):
        out.append(("lm_head.weight", n(V, D, s=0.3)))
    return out


def tokenizer_vocab_size(path):
    """The ids a tokenizer.json can produce: its model's vocabulary and its added tokens."""
    tok = json.load(open(path, encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    ids = list(vocab.values()) if isinstance(vocab, dict) else [len(vocab) - 1]
    ids += [t["id"] for t in tok.get("added_tokens", [])]
    return max(ids) + 1


def write_dir(out, variant, seed=4321, tokenizer=None):
    """tokenizer: a real tokenizer.json to copy in (never committed), with vocab_size set to cover it."""
    _, _, dtype, extras = VARIANTS[variant]
    os.makedirs(out, exist_ok=True)
    cfg = config_for(variant)
    if tokenizer:
        cfg["vocab_size"] = tokenizer_vocab_size(tokenizer)
        cfg.pop("bos_token_id", None), cfg.pop("eos_token_id", None)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    r = np.random.default_rng(seed)
    named = make_tensors(cfg, r, extras.get("buffers", False))
    is_buffer = lambda name: name.endswith("attention.bias") or name.endswith("masked_bias") or name.endswith("inv_freq")
    dtype_of = lambda name: "F32" if is_buffer(name) else dtype
    meta = {"format": "pt"}
    if extras.get("sharded"):
        k = len(named) // 2
        weight_map = {}
        for i, part in enumerate([named[:k], named[k:]]):
            fname = f"model-{i + 1:05d}-of-00002.safetensors"
            make_gpt2_dir.write_safetensors(os.path.join(out, fname), part, dtype_of, meta)
            weight_map.update({name: fname for name, _ in part})
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1)
    else:
        make_gpt2_dir.write_safetensors(os.path.join(out, "model.safetensors"), named, dtype_of, meta)
    if tokenizer:
        shutil.copyfile(tokenizer, os.path.join(out, "tokenizer.json"))
        return cfg
    vocab = make_gpt2_dir.tiny_vocab()
    V = len(vocab)
    tok = {"version": "1.0", "added_tokens": [{"id": V - 1, "content": "<|endoftext|>", "special": True}],
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                     "end_of_word_suffix": "", "fuse_unk": False, "vocab": vocab, "merges": make_gpt2_dir.MERGES}}
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    return cfg


def main():
    reference_common.variants_main(__doc__, VARIANTS, write_dir, "llama")


if __name__ == "__main__":
    sys.exit(main())
