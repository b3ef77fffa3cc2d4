#!/usr/bin/env python3
"""GPT-2 small from a Hugging Face directory: headmap beside PyTorch, same machine, same run.

Writes a GPT-2-small-shaped model (D=768, H=12, L=12, V=50257, 1024 positions; random
weights, F32 safetensors, about 500 MB, with GPT-2's real vocab.json and merges.txt from
tests/data/gpt2/) under /tmp (never in the repository), reads it once so the page cache is
warm, then alternates for --rounds rounds:

  headmap   build/tests/headmap-bench-families DIR 128: load_hf_model, which opens a GPT-2
            directory through load_family_tensors (mmap, tensor by tensor),
            forward() at T=128 with every layer's attention maps (L, B, H, T, T), without and
            with the logits and loss, and the process's peak RSS (VmHWM)
  PyTorch   the same forward written here in torch (Debian python3-torch has no safetensors
            reader and there is no transformers package): weights read with numpy into
            torch tensors, eval, torch.no_grad(), every layer's maps stacked, the best of 1
            and 2 threads (torch.set_num_threads); its peak RSS (ru_maxrss)

Each side runs in a fresh process. Both run the same 128 token ids and must give the same
loss (checked). Medians over rounds are reported.

Usage: tests/bench/compare_torch_gpt2.py [--bench build/tests/headmap-bench-families]
       [--rounds 3] [--dir /tmp/headmap-gpt2-small] [--seconds 3]
Needs /usr/bin/python3 with python3-numpy and python3-torch (Debian).
"""
import argparse
import json
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

DATA = os.path.join(HERE, "..", "data", "gpt2")
D, H, L, V, P = 768, 12, 12, 50257, 1024


# ---- the model directory ------------------------------------------------------------------
def tensor_list():
    t = [("wte.weight", (V, D), 0.02), ("wpe.weight", (P, D), 0.01)]
    for l in range(L):
        h = f"h.{l}."
        t += [(h + "ln_1.weight", (D,), "ones"), (h + "ln_1.bias", (D,), 0.0),
              (h + "attn.c_attn.weight", (D, 3 * D), 0.02), (h + "attn.c_attn.bias", (3 * D,), 0.0),
              (h + "attn.c_proj.weight", (D, D), 0.02 / np.sqrt(2 * L)), (h + "attn.c_proj.bias", (D,), 0.0),
              (h + "ln_2.weight", (D,), "ones"), (h + "ln_2.bias", (D,), 0.0),
              (h + "mlp.c_fc.weight", (D, 4 * D), 0.02), (h + "mlp.c_fc.bias", (4 * D,), 0.0),
              (h + "mlp.c_proj.weight", (4 * D, D), 0.02 / np.sqrt(2 * L)), (h + "mlp.c_proj.bias", (D,), 0.0)]
    t += [("ln_f.weight", (D,), "ones"), ("ln_f.bias", (D,), 0.0)]
    return t


def write_model(d):
    """GPT-2's initialisation (normal 0.02, scaled residual projections), written tensor by tensor."""
    marker = os.path.join(d, "complete")
    if os.path.exists(marker):
        return
    os.makedirs(d, exist_ok=True)
    r = np.random.default_rng(124)
    header, offset = {}, 0
    for name, shape, _ in tensor_list():
        n = int(np.prod(shape)) * 4
        header["transformer." + name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape, init in tensor_list():
            if init == "ones":
                a = np.ones(shape, np.float32)
            elif init == 0.0:
                a = np.zeros(shape, np.float32)
            else:
                a = (r.standard_normal(shape, dtype=np.float32) * np.float32(init))
            f.write(a.astype("<f4").tobytes())
    json.dump({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
               "n_embd": D, "n_head": H, "n_layer": L, "n_positions": P, "n_ctx": P, "vocab_size": V,
               "layer_norm_epsilon": 1e-5}, open(os.path.join(d, "config.json"), "w"), indent=2)
    shutil.copy(os.path.join(DATA, "encoder.json"), os.path.join(d, "vocab.json"))
    shutil.copy(os.path.join(DATA, "vocab.bpe"), os.path.join(d, "merges.txt"))
    open(marker, "w").close()


# ---- the torch side (run in its own process) ------------------------------------------------
class TorchGpt2(bench_common.TorchModel):
    """GPT-2 in torch from its definitions (compare_torch_families.py runs it too): every map, the
    logits and the loss; with a K/V cache, one appended token."""

    def __init__(self, torch, W):
        self.t = torch
        self.W = {k[len("transformer."):]: torch.from_numpy(v) for k, v in W.items()}
        self.L, self.H, self.D = L, H, D

    def block(self, l, x, past):
        F = self.t.nn.functional
        W, D, H = self.W, self.D, self.H
        dh = D // H
        p = f"h.{l}."
        a = F.layer_norm(x, (D,), W[p + "ln_1.weight"], W[p + "ln_1.bias"], 1e-5)
        T = x.shape[0]
        q, k, v = self.t.addmm(W[p + "attn.c_attn.bias"], a, W[p + "attn.c_attn.weight"]).split(D, dim=-1)
        q, k, v = (z.view(T, H, dh).transpose(0, 1) for z in (q, k, v))  # (H, T, dh)
        if past is not None:  # (cache, n): K and V of positions < n, this token at n
            cache, n = past
            cache[l][0][:, n:n + T] = k
            cache[l][1][:, n:n + T] = v
            k, v = cache[l][0][:, :n + T], cache[l][1][:, :n + T]
        s = (q @ k.transpose(-1, -2)) / dh ** 0.5
        if past is None or past[1] == 0:
            s = s.masked_fill(self.t.triu(self.t.ones(T, T, dtype=self.t.bool), 1), float("-inf"))
        att = self.t.softmax(s, dim=-1)
        y = (att @ v).transpose(0, 1).reshape(T, D)
        x = x + self.t.addmm(W[p + "attn.c_proj.bias"], y, W[p + "attn.c_proj.weight"])
        m = F.layer_norm(x, (D,), W[p + "ln_2.weight"], W[p + "ln_2.bias"], 1e-5)
        hdn = F.gelu(self.t.addmm(W[p + "mlp.c_fc.bias"], m, W[p + "mlp.c_fc.weight"]), approximate="tanh")
        return x + self.t.addmm(W[p + "mlp.c_proj.bias"], hdn, W[p + "mlp.c_proj.weight"]), att

    def logits(self, x):
        F = self.t.nn.functional
        return F.layer_norm(x, (self.D,), self.W["ln_f.weight"], self.W["ln_f.bias"], 1e-5) @ self.W["wte.weight"].T

    def forward(self, ids, want_logits, cache=None):
        T = ids.shape[0]
        x = self.W["wte.weight"][ids] + self.W["wpe.weight"][:T]
        maps = []
        for l in range(self.L):
            x, att = self.block(l, x, (cache, 0) if cache is not None else None)
            maps.append(att)
        return self.maps_logits_loss(maps, x, ids, want_logits)

    def new_cache(self, P):
        dh = self.D // self.H
        return [(self.t.zeros(self.H, P, dh), self.t.zeros(self.H, P, dh)) for _ in range(self.L)]

    def append(self, cache, n, token):
        x = (self.W["wte.weight"][token] + self.W["wpe.weight"][n]).view(1, -1)
        rows = []
        for l in range(self.L):
            x, att = self.block(l, x, (cache, n))
            rows.append(att)
        return rows, self.logits(x)



def torch_side(d, ids, seconds):
    import torch

    t0 = time.perf_counter()
    with open(os.path.join(d, "model.safetensors"), "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        W = {}
        for name, t in header.items():
            if name == "__metadata__":
                continue
            b, e = t["data_offsets"]
            f.seek(base + b)
            W[name] = np.fromfile(f, dtype="<f4", count=(e - b) // 4).reshape(t["shape"])
    m = TorchGpt2(torch, W)
    load_s = time.perf_counter() - t0
    ids_t = torch.tensor(ids)

    def timed(logits):
        with torch.no_grad():
            for _ in range(3):
                m.forward(ids_t, logits)
            times = []
            start = time.perf_counter()
            while time.perf_counter() - start < seconds or len(times) < 10:
                s = time.perf_counter()
                _, _, loss = m.forward(ids_t, logits)
                times.append((time.perf_counter() - s) * 1e3)
        return statistics.median(times), loss

    res = {"load_s": load_s, "torch": torch.__version__}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        res[f"attention_ms_{threads}t"], _ = timed(False)
        res[f"logits_ms_{threads}t"], res["loss"] = timed(True)
    res["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(res))


# ---- the driver ------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # --bench-gpt2: the old name (headmap-bench-gpt2 is gone: headmap-bench-families opens GPT-2 too)
    ap.add_argument("--bench", "--bench-gpt2", dest="bench", default="build/tests/headmap-bench-families")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/headmap-gpt2-small")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--torch-side", nargs=2, metavar=("DIR", "IDS_JSON"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_side:
        return torch_side(a.torch_side[0], json.loads(a.torch_side[1]), a.seconds)
    if bench_common.torch_and_bench(a.bench, "headmap-bench-families") is None:
        return 2
    write_model(a.dir)
    size = os.path.getsize(os.path.join(a.dir, "model.safetensors"))
    bench_common.warm(os.path.join(a.dir, "model.safetensors"))
    hm, th = [], []
    for r in range(a.rounds):
        out = subprocess.run([a.bench, a.dir, "128", str(a.seconds)], check=True, capture_output=True, text=True).stdout
        hm.append(json.loads(out))
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--seconds", str(a.seconds), "--torch-side", a.dir,
                              json.dumps(hm[-1]["ids"])], check=True, capture_output=True, text=True).stdout
        th.append(json.loads(out))
        print(f"round {r + 1}: headmap load {hm[-1]['load_s']:.3f} s, maps {hm[-1]['forward_attention_ms']:.1f} ms; "
              f"torch load {th[-1]['load_s']:.3f} s, maps {min(th[-1]['attention_ms_1t'], th[-1]['attention_ms_2t']):.1f} ms", flush=True)
    med = lambda xs: statistics.median(xs)
    h_load, t_load = med([x["load_s"] for x in hm]), med([x["load_s"] for x in th])
    h_att, h_full = med([x["forward_attention_ms"] for x in hm]), med([x["forward_logits_ms"] for x in hm])
    t_att = med([min(x["attention_ms_1t"], x["attention_ms_2t"]) for x in th])
    t_full = med([min(x["logits_ms_1t"], x["logits_ms_2t"]) for x in th])
    h_rss, t_rss = max(x["peak_rss_kib"] for x in hm) * 1024, max(x["peak_rss_kib"] for x in th) * 1024
    loss_h, loss_t = hm[-1]["loss"], th[-1]["loss"]
    print()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; torch {th[0]['torch']}; "
          f"file {size / 1e6:.1f} MB ({hm[0]['parameters']} parameters); {a.rounds} rounds, medians")
    print(f"loss on the same 128 ids: headmap {loss_h:.5f}, torch {loss_t:.5f}")
    print("| figure | headmap | PyTorch (best of 1, 2 threads) | ratio | target |")
    print("|---|---|---|---|---|")
    print(f"| load, warm page cache | {h_load:.3f} s | {t_load:.3f} s | | <= 1 s: {'holds' if h_load <= 1 else 'not met'} |")
    print(f"| forward, T=128, all 144 maps | {h_att:.1f} ms | {t_att:.1f} ms | {t_att / h_att:.2f}x | >= 1.2x: "
          f"{'holds' if t_att / h_att >= 1.2 else 'not met'} |")
    print(f"| the same + logits and loss | {h_full:.1f} ms | {t_full:.1f} ms | {t_full / h_full:.2f}x | |")
    print(f"| peak RSS | {h_rss / 1e6:.0f} MB = {h_rss / size:.2f}x the file | {t_rss / 1e6:.0f} MB = {t_rss / size:.2f}x | | "
          f"<= 1.3x: {'holds' if h_rss / size <= 1.3 else 'not met'} |")
    if abs(loss_h - loss_t) > 1e-3 * abs(loss_t):
        print("the two sides disagree on the loss: the comparison is void")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
