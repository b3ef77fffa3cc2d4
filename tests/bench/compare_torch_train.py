#!/usr/bin/env python3
"""Training throughput: headmap's trainer beside PyTorch CPU on the same model, same run.

The model on both sides (B = batch, T = tokens, D = d_model, H = heads, L = layers, V = vocab):
learned token and position embeddings; L pre-LN blocks x += attn(LN1(x)), x += MLP(LN2(x))
with a fused QKV projection, causal softmax(Q K^T / sqrt(d_head)), W_O, a 4D MLP with GELU
(tanh form); a final LayerNorm; the tied unembedding logits = LN_f(x) tok_emb^T; mean
cross-entropy. One step = zero the gradients, forward, backward, clip the global gradient
norm to 1, one AdamW update (lr 3e-3, betas 0.9/0.95, weight decay 0.1 on the weight
matrices). Attention is written out by hand (torch 1.13 has no scaled_dot_product_attention).

PyTorch runs with 1 and with 2 threads, and with AdamW's for-each and single-tensor paths;
the fastest setting counts. headmap-bench's train_step runs the same shapes. The two sides
alternate for --rounds rounds and each side's median is reported, because a shared
machine's speed drifts over minutes.

Usage: tests/bench/compare_torch_train.py [--bench build/tests/headmap-bench] [--rounds 3]
Needs /usr/bin/python3 with python3-torch (Debian) and libopenblas0-pthread.
"""
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import bench_common

TARGET = 1.5  # headmap's tokens/s over torch's


def run_headmap(bench, min_time):
    out = subprocess.run([bench, "--benchmark_format=json", f"--benchmark_min_time={min_time}",
                          "--benchmark_filter=train_step"], check=True, capture_output=True, text=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        m = re.match(r"train_step/B:(\d+)/T:(\d+)/D:(\d+)/H:(\d+)/L:(\d+)/V:(\d+)", b["name"])
        if m:
            res[tuple(int(g) for g in m.groups())] = b["tokens_per_s"]
    return res


def make_torch_model(torch, B, T, D, H, L, V):
    nn, F = torch.nn, torch.nn.functional
    dh = D // H

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.o = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x, mask):
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)               # (B, T, D) each
            q = q.view(B, T, H, dh).transpose(1, 2)                       # (B, H, T, d_head)
            k = k.view(B, T, H, dh).transpose(1, 2)
            v = v.view(B, T, H, dh).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))       # (B, H, T, T)
            att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, D)                # (B, T, D)
            x = x + self.o(y)
            return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(V, D)
            self.pos = nn.Parameter(torch.randn(T, D) * 0.01)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(D)
            self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

        def forward(self, idx, targets):
            x = self.tok(idx) + self.pos                                  # (B, T, D)
            for blk in self.blocks:
                x = blk(x, self.mask)
            logits = self.lnf(x) @ self.tok.weight.t()                    # (B, T, V), tied
            return F.cross_entropy(logits.view(B * T, V), targets.view(B * T))

    return LM()


def time_torch(torch, shape, threads, foreach, budget_s=3.0):
    B, T, D, H, L, V = shape
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = make_torch_model(torch, B, T, D, H, L, V)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and ("qkv" in n or ".o." in n or "fc" in n or "proj" in n)]
    other = [p for n, p in model.named_parameters() if not any(p is d for d in decay)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.95), eps=1e-8, foreach=foreach)
    idx = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(idx, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(10):
        step()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < budget_s or len(times) < 20:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return B * T / statistics.median(times)


def main():
    a, torch = bench_common.setup(__doc__, 3.0, "Google Benchmark min time, seconds")

    hm, th, th_cfg = {}, {}, {}
    for r in range(a.rounds):
        for shape, tps in run_headmap(a.bench, a.min_time).items():
            hm.setdefault(shape, []).append(tps)
            best = max((time_torch(torch, shape, n, fe), n, fe) for n in (1, 2) for fe in (False, True))
            th.setdefault(shape, []).append(best[0])
            th_cfg[shape] = best[1:]
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    print(f"machine: {cpu}, {os.cpu_count()} cores; torch {torch.__version__}; medians of {a.rounds} alternating rounds")
    print("one step: forward, backward, clip, AdamW; tokens/s = B*T / step time\n")
    print(f"{'B,T,D,H,L,V':<22}{'headmap':>14}{'torch':>14}  {'torch setting':<22}{'ratio':>7}  target")
    ok_all = True
    for shape in sorted(hm):
        h, t = statistics.median(hm[shape]), statistics.median(th[shape])
        ratio = h / t
        ok = ratio >= TARGET
        ok_all &= ok
        n, fe = th_cfg[shape]
        setting = f"{n} thread{'s' if n > 1 else ''}, foreach={fe}"
        print(f"{','.join(map(str, shape)):<22}{h:>10.0f} t/s{t:>10.0f} t/s  {setting:<22}{ratio:>6.2f}x  "
              f">= {TARGET:g}x: {'holds' if ok else 'MISSED'}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
