#!/usr/bin/env python3
"""hf_to_gguf.py: a Llama-family Hugging Face directory (model.safetensors in BF16 or F32, the
random models compare_torch_families.py writes) rewritten as a GGUF file (version 3) holding
the same values, so llama.cpp runs the very weights headmap and torch run (compare_engines.py).

    hf_to_gguf.py HF_DIR OUT.gguf

What llama.cpp's convert_hf_to_gguf.py does for the llama architecture, on this subset:
  - every matrix keeps the file's dtype (BF16 stays BF16, bit for bit); norms are written F32
    (exact from BF16); tensors renamed (model.layers.N.self_attn.q_proj -> blk.N.attn_q, ...);
  - W_Q's and W_K's rows permuted per head from rotate-half order to adjacent pairs (llama.cpp's
    RoPE rotates neighbouring elements), the permute() of make_gguf.py;
  - llama3 RoPE scaling as the rope_freqs tensor (one factor per frequency);
  - a tied embedding has no output.weight (llama.cpp then reads token_embd);
  - the tokenizer: llama.cpp needs one token per embedding row; the benchmark runs ids, never
    text, so the vocabulary is the byte tokens padded with unused ones (gguf_writer.h's
    full_vocab rule).
Streams tensor by tensor (the 1B shape's 2.47 GB never sit in memory at once). Needs numpy.
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from make_gguf import ARRAY, BOOL, F32, GGML, I32, STRING, U32, gguf_string, gguf_value, llama3_rope_factors, permute  # noqa: E402


def safetensors_index(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def llama3_factors(c):
    """convert_hf_to_gguf.py's rope_freqs for rope_type llama3 (None without it)."""
    s = c.get("rope_scaling") or {}
    if s.get("rope_type", s.get("type")) != "llama3":
        return None
    return llama3_rope_factors(c["rope_theta"], c.get("head_dim", c["hidden_size"] // c["num_attention_heads"]), s)


RENAME = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
          "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
          "post_attention_layernorm": "ffn_norm"}


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".")  # model.layers.N.<module...>.weight
    if parts[:2] != ["model", "layers"]:
        raise ValueError(f"hf_to_gguf: tensor {hf} has no GGUF name here")
    module = ".".join(parts[3:-1])
    if module not in RENAME:
        raise ValueError(f"hf_to_gguf: tensor {hf} has no GGUF name here")
    return f"blk.{parts[2]}.{RENAME[module]}.{parts[-1]}"


def convert(hf_dir, out_path):
    c = json.load(open(os.path.join(hf_dir, "config.json")))
    if c.get("model_type") != "llama":
        raise ValueError("hf_to_gguf: only model_type llama is converted")
    st = os.path.join(hf_dir, "model.safetensors")
    header, base = safetensors_index(st)
    D, H, KV = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    dh, V = c.get("head_dim", D // H), c["vocab_size"]
    # (gguf name, hf name or None, ne innermost first, ggml type, how to make the bytes)
    plan = []
    for name, t in header.items():
        shape = t["shape"]
        dtype = t["dtype"]
        if len(shape) == 1:
            plan.append((gguf_name(name), name, [shape[0]], "F32"))
        else:
            plan.append((gguf_name(name), name, [shape[1], shape[0]], dtype))
    factors = llama3_factors(c)
    if factors is not None:
        plan.append(("rope_freqs.weight", None, [len(factors)], "F32"))

    tokens, types = ["<unk>", "<s>", "</s>"], [2, 3, 3]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    tokens += [f"<unused{i}>" for i in range(len(tokens), V)]
    types += [5] * (V - len(types))
    kv = [("general.architecture", STRING, "llama"), ("general.name", STRING, "headmap-bench " + os.path.basename(hf_dir.rstrip("/"))),
          ("general.alignment", U32, 32), ("llama.context_length", U32, min(c.get("max_position_embeddings", 4096), 131072)),
          ("llama.embedding_length", U32, D), ("llama.block_count", U32, c["num_hidden_layers"]),
          ("llama.feed_forward_length", U32, c["intermediate_size"]), ("llama.attention.head_count", U32, H),
          ("llama.attention.head_count_kv", U32, KV), ("llama.attention.key_length", U32, dh), ("llama.attention.value_length", U32, dh),
          ("llama.attention.layer_norm_rms_epsilon", F32, c["rms_norm_eps"]), ("llama.rope.freq_base", F32, c["rope_theta"]),
          ("llama.rope.dimension_count", U32, dh), ("llama.vocab_size", U32, V),
          ("tokenizer.ggml.model", STRING, "llama"), ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
          ("tokenizer.ggml.scores", ARRAY, (F32, [0.0] * V)), ("tokenizer.ggml.token_type", ARRAY, (I32, types)),
          ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2), ("tokenizer.ggml.unknown_token_id", U32, 0),
          ("tokenizer.ggml.add_bos_token", BOOL, 0)]
    align = 32
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(plan), len(kv)))
    for key, t, v in kv:
        out += gguf_string(key) + struct.pack("<I", t) + gguf_value(t, v)
    offset, sizes = 0, []
    for gname, _, ne, tname in plan:
        n = int(np.prod(ne))
        size = n * GGML[tname][2]
        out += gguf_string(gname) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
        out += struct.pack("<IQ", GGML[tname][0], offset)
        sizes.append(size)
        offset += (size + align - 1) // align * align
    out += b"\0" * ((-len(out)) % align)
    tmp = out_path + ".part"
    with open(st, "rb") as src, open(tmp, "wb") as f:
        f.write(out)
        for (gname, hf, ne, tname), size in zip(plan, sizes):
            if hf is None:
                data = factors.tobytes()
            else:
                t = header[hf]
                b, e = t["data_offsets"]
                src.seek(base + b)
                raw = np.fromfile(src, dtype={"BF16": "<u2", "F16": "<u2", "F32": "<u4"}[t["dtype"]], count=(e - b) // (4 if t["dtype"] == "F32" else 2))
                if tname == "F32" and t["dtype"] == "BF16":  # a norm: widened exactly
                    raw = (raw.astype(np.uint32) << np.uint32(16))
                elif tname == "F32" and t["dtype"] == "F16":
                    raw = raw.view("<f2").astype("<f4").view("<u4")
                if gname.endswith(("attn_q.weight", "attn_k.weight")):
                    heads = H if gname.endswith("attn_q.weight") else KV
                    raw = np.ascontiguousarray(permute(raw.reshape(ne[1], ne[0]), heads))
                data = raw.tobytes()
            assert len(data) == size, (gname, len(data), size)
            f.write(data)
            f.write(b"\0" * ((-size) % align))
    os.replace(tmp, out_path)
    return out_path


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    convert(sys.argv[1], sys.argv[2])
