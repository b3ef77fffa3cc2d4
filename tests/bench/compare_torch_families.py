#!/usr/bin/env python3
"""Llama-3.2-1B, Qwen3-0.6B and GPT-2 small shapes: headmap beside PyTorch, same machine, same run.

Writes each model (random weights; never in the repository) under --root (/tmp by default):

  llama    Llama-3.2-1B's shape: D=2048, 32 heads on 8 K/V heads of 64, L=16, gated SiLU MLP of
           8192, vocabulary 128,256, tied, RoPE theta 500,000 with llama3 scaling; BF16, 2.47 GB
  qwen3    Qwen3-0.6B's shape: D=1024, 16 heads on 8 K/V heads of 128, L=28, MLP 3072, q/k norms,
           vocabulary 151,936, tied, theta 1,000,000; BF16, 1.19 GB
  gpt2     GPT-2 small (compare_torch_gpt2.py's F32 file, D=768, H=12, L=12, V=50,257), 498 MB

reads it once so the page cache is warm, then alternates the two sides for --rounds rounds,
each in a fresh process:

  headmap   build/tests/headmap-bench-families DIR 128: load_hf_model (mmap, tensor by tensor;
            BF16 weights kept 16-bit), forward() at T=128 with every layer's maps, without and
            with the logits and loss, and the peak RSS (VmHWM); and, when --bench-incremental
            names developer kvcache's headmap-bench-incremental, its "append_ms": one token
            appended after a 128-token prefix
  PyTorch   the same forward written here in torch (Debian's python3-torch has neither a
            safetensors reader nor transformers): weights read with numpy and widened to F32
            (torch at its best on this CPU), eval, torch.no_grad(), every layer's maps kept,
            the best of 1 and 2 threads; one token appended after 128 by a full forward of
            129 tokens, and by this script's own K/V cache; its peak RSS (ru_maxrss)

Both sides run the same 128 ids and must give the same loss and the same fingerprint (the
mean attended key position in the last layer): checked. Medians over rounds are reported.
torch must run on OpenBLAS (libopenblas0-pthread as the libblas.so.3 alternative): the script
looks for it in the process's maps and times a 128x768x3072 matmul, and quotes no ratio
against the reference BLAS.

Usage: /usr/bin/python3 tests/bench/compare_torch_families.py [--bench build/tests/headmap-bench-families]
       [--bench-incremental PATH] [--models llama,qwen3,gpt2] [--rounds 3] [--seconds 3] [--root /tmp]
Needs /usr/bin/python3 with python3-numpy and python3-torch (Debian); about 4 GB under --root.
"""
import argparse
import json
import math
import os
import platform
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_common  # noqa: E402  (torch_and_bench, warm, TorchModel)
import compare_torch_gpt2 as gpt2  # noqa: E402  (GPT-2's file and its torch forward, TorchGpt2)

TOKENIZER = os.path.join(HERE, "..", "data", "tokenizers", "bpe_bytelevel_trim.json")

SHAPES = {
    "llama": dict(model_type="llama", hidden_size=2048, num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                  num_hidden_layers=16, intermediate_size=8192, vocab_size=128256, max_position_embeddings=131072,
                  rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=True, hidden_act="silu",
                  rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 8192},
                  architectures=["LlamaForCausalLM"], torch_dtype="bfloat16"),
    "qwen3": dict(model_type="qwen3", hidden_size=1024, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                  num_hidden_layers=28, intermediate_size=3072, vocab_size=151936, max_position_embeddings=40960,
                  rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True, hidden_act="silu",
                  architectures=["Qwen3ForCausalLM"], torch_dtype="bfloat16"),
}
NAMES = {"llama": "Llama-3.2-1B shape, BF16", "qwen3": "Qwen3-0.6B shape, BF16", "gpt2": "GPT-2 small, F32"}


# ---- the model directories --------------------------------------------------------------------
def llama_tensors(c):
    D, L, V, F = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"]
    Dq, Dkv, dh = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"], c["head_dim"]
    # std 0.05 for the embedding: tied logits of ~2 nats spread, so the loss depends on every layer
    t = [("model.embed_tokens.weight", (V, D), 0.05)]
    for l in range(L):
        p = f"model.layers.{l}."
        t += [(p + "input_layernorm.weight", (D,), "ones"), (p + "post_attention_layernorm.weight", (D,), "ones"),
              (p + "self_attn.q_proj.weight", (Dq, D), 0.02), (p + "self_attn.k_proj.weight", (Dkv, D), 0.02),
              (p + "self_attn.v_proj.weight", (Dkv, D), 0.02), (p + "self_attn.o_proj.weight", (D, Dq), 0.02 / math.sqrt(2 * L)),
              (p + "mlp.gate_proj.weight", (F, D), 0.02), (p + "mlp.up_proj.weight", (F, D), 0.02),
              (p + "mlp.down_proj.weight", (D, F), 0.02 / math.sqrt(2 * L))]
        if c["model_type"] == "qwen3":
            t += [(p + "self_attn.q_norm.weight", (dh,), "ones"), (p + "self_attn.k_norm.weight", (dh,), "ones")]
    t += [("model.norm.weight", (D,), "ones")]
    return t


def to_bf16(a):
    """float32 -> BF16 bits, round to nearest even (numpy, in place on a uint32 view)."""
    u = a.view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype("<u2")


def write_family(d, c):
    """Random BF16 weights (normal, the std above; norms 1), written tensor by tensor in chunks."""
    marker = os.path.join(d, "complete")
    if os.path.exists(marker):
        return
    os.makedirs(d, exist_ok=True)
    tensors = llama_tensors(c)
    header, offset = {}, 0
    for name, shape, _ in tensors:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    r = np.random.default_rng(2026)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape, init in tensors:
            n = int(np.prod(shape))
            if init == "ones":
                f.write(to_bf16(np.ones(n, np.float32)).tobytes())
                continue
            for s in range(0, n, 1 << 24):
                a = r.standard_normal(min(1 << 24, n - s), dtype=np.float32) * np.float32(init)
                f.write(to_bf16(a).tobytes())
    json.dump(c, open(os.path.join(d, "config.json"), "w"), indent=2)
    shutil.copy(TOKENIZER, os.path.join(d, "tokenizer.json"))  # a small BPE: the benchmark runs ids
    open(marker, "w").close()


# ---- the torch side (run in its own process) ------------------------------------------------------
def read_safetensors_f32(path):
    """name -> F32 numpy array; BF16 and F16 widened exactly."""
    W = {}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        for name, t in header.items():
            if name == "__metadata__":
                continue
            b, e = t["data_offsets"]
            f.seek(base + b)
            if t["dtype"] == "BF16":
                u = np.fromfile(f, dtype="<u2", count=(e - b) // 2).astype(np.uint32) << np.uint32(16)
                a = u.view(np.float32)
            elif t["dtype"] == "F16":
                a = np.fromfile(f, dtype="<f2", count=(e - b) // 2).astype(np.float32)
            else:
                a = np.fromfile(f, dtype="<f4", count=(e - b) // 4)
            W[name] = a.reshape(t["shape"])
    return W


def llama3_inv_freq(torch, c):
    dh, theta = c["head_dim"], c["rope_theta"]
    inv = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    sc = c.get("rope_scaling")
    if sc and sc.get("rope_type") == "llama3":  # transformers' _compute_llama3_parameters
        factor, lo, hi, old = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"], sc["original_max_position_embeddings"]
        lo_wl, hi_wl = old / lo, old / hi
        wl = 2 * math.pi / inv
        scaled = torch.where(wl > lo_wl, inv / factor, inv)
        smooth = (old / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wl < hi_wl) & ~(wl > lo_wl)
        inv = torch.where(medium, smoothed, scaled)
    return inv


class TorchLlama(bench_common.TorchModel):
    """Llama / Qwen3 in torch from the published definitions: RMSNorm, rotate-half RoPE, GQA
    (K/V repeated to the query heads), q/k RMSNorm per head (Qwen3), SiLU(gate) x up, tied."""

    def __init__(self, torch, c, W):
        self.t, self.c = torch, c
        self.W = {k: torch.from_numpy(v) for k, v in W.items()}
        self.L, self.H, self.KV, self.dh = c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.eps = c["rms_norm_eps"]
        inv = llama3_inv_freq(torch, c)
        pos = torch.arange(0, 4096, dtype=torch.float64)
        ang = torch.outer(pos, inv)  # (P, dh/2)
        ang = torch.cat([ang, ang], dim=-1)
        self.cos, self.sin = ang.cos().float(), ang.sin().float()  # (P, dh)
        self.qk_norm = c["model_type"] == "qwen3"

    def rms(self, x, g):
        return x * self.t.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * g

    def rope(self, x, p0):  # x (heads, T, dh)
        T = x.shape[-2]
        cos, sin = self.cos[p0:p0 + T], self.sin[p0:p0 + T]
        h = self.dh // 2
        rot = self.t.cat([-x[..., h:], x[..., :h]], dim=-1)
        return x * cos + rot * sin

    def layer_qkv(self, l, x, p0):
        F = self.t.nn.functional
        p = f"model.layers.{l}."
        W = self.W
        a = self.rms(x, W[p + "input_layernorm.weight"])
        T = x.shape[0]
        q = F.linear(a, W[p + "self_attn.q_proj.weight"]).view(T, self.H, self.dh).transpose(0, 1)  # (H, T, dh)
        k = F.linear(a, W[p + "self_attn.k_proj.weight"]).view(T, self.KV, self.dh).transpose(0, 1)  # (KV, T, dh)
        v = F.linear(a, W[p + "self_attn.v_proj.weight"]).view(T, self.KV, self.dh).transpose(0, 1)
        if self.qk_norm:
            q = self.rms(q, W[p + "self_attn.q_norm.weight"])
            k = self.rms(k, W[p + "self_attn.k_norm.weight"])
        return self.rope(q, p0), self.rope(k, p0), v

    def layer_rest(self, l, x, q, k, v, mask):
        """Attention of q (H, Tq, dh) over k, v (KV, Tk, dh); returns the new x and the maps."""
        F = self.t.nn.functional
        p = f"model.layers.{l}."
        W = self.W
        G = self.H // self.KV
        k = k.repeat_interleave(G, dim=0)  # (H, Tk, dh)
        v = v.repeat_interleave(G, dim=0)
        s = (q @ k.transpose(-1, -2)) * self.dh ** -0.5
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        att = self.t.softmax(s, dim=-1)  # (H, Tq, Tk)
        Tq = q.shape[1]
        y = (att @ v).transpose(0, 1).reshape(Tq, self.H * self.dh)
        x = x + F.linear(y, W[p + "self_attn.o_proj.weight"])
        m = self.rms(x, W[p + "post_attention_layernorm.weight"])
        x = x + F.linear(F.silu(F.linear(m, W[p + "mlp.gate_proj.weight"])) * F.linear(m, W[p + "mlp.up_proj.weight"]),
                         W[p + "mlp.down_proj.weight"])
        return x, att

    def logits(self, x):
        return self.rms(x, self.W["model.norm.weight"]) @ self.W["model.embed_tokens.weight"].T

    def forward(self, ids, want_logits, cache=None):
        """Every layer's maps (L, H, T, T); logits and loss when asked; fills cache (K, V per layer)."""
        T = ids.shape[0]
        x = self.W["model.embed_tokens.weight"][ids]
        mask = self.t.triu(self.t.ones(T, T, dtype=self.t.bool), 1)
        maps = []
        for l in range(self.L):
            q, k, v = self.layer_qkv(l, x, 0)
            if cache is not None:
                cache[l][0][:, :T] = k
                cache[l][1][:, :T] = v
            x, att = self.layer_rest(l, x, q, k, v, mask)
            maps.append(att)
        return self.maps_logits_loss(maps, x, ids, want_logits)

    def new_cache(self, P):
        return [(self.t.zeros(self.KV, P, self.dh), self.t.zeros(self.KV, P, self.dh)) for _ in range(self.L)]

    def append(self, cache, n, token):
        """One token at position n over the cached prefix: its row of every map and its logits."""
        x = self.W["model.embed_tokens.weight"][token].view(1, -1)
        rows = []
        for l in range(self.L):
            q, k, v = self.layer_qkv(l, x, n)
            cache[l][0][:, n:n + 1] = k
            cache[l][1][:, n:n + 1] = v
            x, att = self.layer_rest(l, x, q, cache[l][0][:, :n + 1], cache[l][1][:, :n + 1], None)
            rows.append(att)
        return rows, self.logits(x)


def blas_of_this_process():
    """The BLAS library mapped into this process (after torch ran a matmul), and a matmul's time."""
    import torch
    a, b = torch.randn(128, 768), torch.randn(768, 3072)
    torch.set_num_threads(1)
    for _ in range(3):
        a @ b
    t0 = time.perf_counter()
    for _ in range(5):
        a @ b
    ms = (time.perf_counter() - t0) / 5 * 1e3
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "blas" in os.path.basename(path).lower() or "openblas" in path.lower() or "mkl" in path.lower():
                libs.add(path)
    return sorted(libs), ms


def torch_side(kind, d, ids, seconds, threads=(1, 2), tokens=0):
    """One engine process: load, check, time. With tokens < len(ids) the forward runs ids[:tokens]
    and the token appended is ids[tokens] (compare_engines.py: the ids every engine runs);
    otherwise all ids, and the appended token is ids[T // 2]."""
    import torch
    t0 = time.perf_counter()
    W = read_safetensors_f32(os.path.join(d, "model.safetensors"))
    if kind == "gpt2":
        m = gpt2.TorchGpt2(torch, W)
    else:
        m = TorchLlama(torch, json.load(open(os.path.join(d, "config.json"))), W)
    del W
    load_s = time.perf_counter() - t0
    T = tokens if 0 < tokens < len(ids) else len(ids)
    ids_t = torch.tensor(ids[:T])
    nxt = torch.tensor(ids[T] if len(ids) > T else ids[T // 2])  # the appended token
    ids_129 = torch.cat([ids_t, nxt.view(1)])

    def timed(fn):
        fn()  # warm-up
        times = []
        start = time.perf_counter()
        while time.perf_counter() - start < seconds or len(times) < 3:
            s = time.perf_counter()
            fn()
            times.append((time.perf_counter() - s) * 1e3)
        return statistics.median(times)

    res = {"load_s": load_s, "torch": torch.__version__}
    with torch.no_grad():
        maps, lg, loss = m.forward(ids_t, True)
        last = maps[-1].double()  # (H, T, T)
        res["loss"] = loss
        res["last_logits_head"] = [float(x) for x in lg[-1][:16]]  # compare_engines.py: against llama.cpp's
        res["fingerprint"] = float((last * torch.arange(T, dtype=torch.float64)).sum() / (last.shape[0] * T))
        # the K/V cache agrees with the full forward of 129 tokens (last row of every map, logits)
        cache = m.new_cache(T + 1)
        m.forward(ids_t, False, cache)
        rows, lg1 = m.append(cache, T, nxt)
        full, lg, _ = m.forward(ids_129, True)
        res["cache_max_diff"] = max(float((full[l][:, -1] - rows[l][:, 0]).abs().max()) for l in range(len(rows)))
        res["cache_logit_diff"] = float((lg[-1] - lg1[0]).abs().max())
        for n in threads:
            torch.set_num_threads(n)
            res[f"attention_ms_{n}t"] = timed(lambda: m.forward(ids_t, False))
            res[f"logits_ms_{n}t"] = timed(lambda: m.forward(ids_t, True))
            if not tokens:  # compare_engines.py leaves it out: no other engine runs it
                res[f"append_full_ms_{n}t"] = timed(lambda: m.forward(ids_129, True))  # the 129 tokens again
            res[f"append_cache_ms_{n}t"] = timed(lambda: m.append(cache, T, nxt))  # prefix cached
    res["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(res))


# ---- the driver ---------------------------------------------------------------------------------
def run_model(a, kind, blas_ok):
    d = os.path.join(a.root, f"headmap-bench-{kind}")
    t0 = time.perf_counter()
    if kind == "gpt2":
        gpt2.write_model(d)
    else:
        write_family(d, SHAPES[kind])
    written = time.perf_counter() - t0
    st = os.path.join(d, "model.safetensors")
    size = os.path.getsize(st)
    bench_common.warm(st)
    hm, th, inc, inc_errors = [], [], [], []
    for r in range(a.rounds):
        out = subprocess.run([a.bench, d, "128", str(a.seconds)], check=True, capture_output=True, text=True).stdout
        hm.append(json.loads(out))
        if a.bench_incremental and os.path.exists(a.bench_incremental):
            p = subprocess.run([a.bench_incremental, d, "128"], capture_output=True, text=True)
            lines = [x for x in p.stdout.splitlines() if x.strip().startswith("{")]
            if p.returncode == 0 and lines and "append_ms" in json.loads(lines[-1]):
                inc.append(json.loads(lines[-1]))
            else:
                inc_errors.append((p.stderr or p.stdout).strip()[:200])
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--seconds", str(a.seconds), "--torch-side", kind, d,
                              json.dumps(hm[-1]["ids"])], check=True, capture_output=True, text=True).stdout
        th.append(json.loads(out))
        print(f"  {kind} round {r + 1}: headmap load {hm[-1]['load_s']:.3f} s, maps {hm[-1]['forward_attention_ms']:.1f} ms; "
              f"torch load {th[-1]['load_s']:.3f} s, maps {min(th[-1]['attention_ms_1t'], th[-1]['attention_ms_2t']):.1f} ms", flush=True)
    med = statistics.median
    best = lambda x, k: min(x[f"{k}_1t"], x[f"{k}_2t"])
    h_load, t_load = med([x["load_s"] for x in hm]), med([x["load_s"] for x in th])
    h_att, h_full = med([x["forward_attention_ms"] for x in hm]), med([x["forward_logits_ms"] for x in hm])
    t_att, t_full = med([best(x, "attention_ms") for x in th]), med([best(x, "logits_ms") for x in th])
    t_app_full, t_app_cache = med([best(x, "append_full_ms") for x in th]), med([best(x, "append_cache_ms") for x in th])
    h_hwm_load = max(x["peak_rss_after_load_kib"] for x in hm) * 1024
    h_rss, t_rss = max(x["peak_rss_kib"] for x in hm) * 1024, max(x["peak_rss_kib"] for x in th) * 1024
    ratio = (lambda t, h: f"{t / h:.2f}x") if blas_ok else (lambda t, h: "not quoted (reference BLAS)")
    print()
    print(f"### {NAMES[kind]}: file {size / 1e6:.0f} MB, {hm[0]['parameters']:,} parameters, headmap keeps {hm[0]['dtype']}; "
          f"{a.rounds} round(s), medians" + (f"; written in {written:.0f} s" if written > 1 else ""))
    print(f"loss on the same 128 ids: headmap {hm[-1]['loss']:.5f}, torch {th[-1]['loss']:.5f}; last layer's mean attended position "
          f"{hm[-1]['fingerprint']:.4f} and {th[-1]['fingerprint']:.4f}; torch's K/V cache against its full forward: "
          f"maps {th[-1]['cache_max_diff']:.1e}, logits {th[-1]['cache_logit_diff']:.1e}")
    print("| figure | headmap | PyTorch F32 (best of 1, 2 threads) | torch / headmap | target |")
    print("|---|---|---|---|---|")
    print(f"| load, warm page cache | {h_load:.3f} s | {t_load:.3f} s (numpy reader) | | <= 1.5 s: {'holds' if h_load <= 1.5 else 'misses'} |")
    print(f"| forward, T=128, every map | {h_att:.1f} ms | {t_att:.1f} ms | {ratio(t_att, h_att)} | >= 2x: "
          f"{('holds' if t_att / h_att >= 2 else 'misses') if blas_ok else '-'} |")
    print(f"| the same + logits and loss | {h_full:.1f} ms | {t_full:.1f} ms | {ratio(t_full, h_full)} | |")
    if inc:
        h_app = med([x["append_ms"] for x in inc])
        print(f"| one token after 128: headmap incremental / torch full forward of 129 | {h_app:.2f} ms | {t_app_full:.1f} ms | "
              f"{ratio(t_app_full, h_app)} | <= 16 ms |")
        print(f"| one token after 128: headmap incremental / torch with its K/V cache | {h_app:.2f} ms | {t_app_cache:.2f} ms | "
              f"{ratio(t_app_cache, h_app)} | >= 5x |")
    else:
        why = f"headmap-bench-incremental failed: {inc_errors[-1]}" if inc_errors else "no headmap-bench-incremental"
        print(f"| one token after 128: headmap incremental / torch full forward of 129 / torch with its K/V cache | not measured "
              f"({why}) | {t_app_full:.1f} / {t_app_cache:.2f} ms | | <= 16 ms; >= 5x torch's cache |")
    print(f"| peak RSS after load | {h_hwm_load / 1e6:.0f} MB = {h_hwm_load / size:.2f}x the file | | | <= 1.15x: "
          f"{'holds' if h_hwm_load / size <= 1.15 else 'misses'} |")
    print(f"| peak RSS, whole run | {h_rss / 1e6:.0f} MB = {h_rss / size:.2f}x | {t_rss / 1e6:.0f} MB = {t_rss / size:.2f}x | | |")
    print(flush=True)
    ok = abs(hm[-1]["loss"] - th[-1]["loss"]) <= 1e-3 * abs(th[-1]["loss"]) and \
        abs(hm[-1]["fingerprint"] - th[-1]["fingerprint"]) <= 1e-3 * max(1.0, abs(th[-1]["fingerprint"])) and \
        th[-1]["cache_max_diff"] < 1e-4
    if not ok:
        print(f"{kind}: the two sides disagree (loss, fingerprint or torch's cache): the comparison is void")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/tests/headmap-bench-families")
    ap.add_argument("--bench-incremental", default="build/tests/headmap-bench-incremental")
    ap.add_argument("--models", default="llama,qwen3,gpt2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--root", default="/tmp")
    ap.add_argument("--torch-side", nargs=3, metavar=("KIND", "DIR", "IDS_JSON"), help=argparse.SUPPRESS)
    ap.add_argument("--torch-threads", default="1,2", help=argparse.SUPPRESS)  # compare_engines.py: one count
    ap.add_argument("--torch-tokens", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--blas-check", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_side:
        return torch_side(a.torch_side[0], a.torch_side[1], json.loads(a.torch_side[2]), a.seconds,
                          tuple(int(x) for x in a.torch_threads.split(",")), a.torch_tokens)
    if a.blas_check:
        libs, ms = blas_of_this_process()
        print(json.dumps({"libs": libs, "matmul_ms": ms}))
        return 0
    torch = bench_common.torch_and_bench(a.bench, "headmap-bench-families")
    if torch is None:
        return 2
    # Which BLAS torch runs on, in a fresh process like the measured ones.
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--blas-check"], check=True, capture_output=True, text=True).stdout
    blas = json.loads(out)
    openblas = any("openblas" in p.lower() for p in blas["libs"])
    blas_ok = openblas and blas["matmul_ms"] < 20
    load = os.getloadavg()
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(x.split(":", 1)[1].strip() for x in open("/proc/cpuinfo") if x.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"machine: {cpu}, {os.cpu_count()} cores; torch {torch.__version__}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"torch's BLAS: {', '.join(blas['libs']) or 'none found in its maps'}; a 128x768x3072 matmul, 1 thread: {blas['matmul_ms']:.1f} ms")
    if not blas_ok:
        print("torch is not on OpenBLAS (the reference BLAS is ~30x slower): figures are printed, ratios against torch are not quoted. "
              "Fix: apt-get install libopenblas0-pthread (update-alternatives --display libblas.so.3-x86_64-linux-gnu).")
    inc = a.bench_incremental if os.path.exists(a.bench_incremental) else None
    if not inc:
        print(f"{a.bench_incremental} not found: headmap's one appended token is not measured.")
    a.bench_incremental = inc
    print()
    t0 = time.perf_counter()
    ok = True
    for kind in a.models.split(","):
        ok = run_model(a, kind, blas_ok) and ok
    load = os.getloadavg()
    print(f"whole run: {time.perf_counter() - t0:.0f} s; load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
