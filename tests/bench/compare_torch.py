#!/usr/bin/env python3
"""Times headmap's mha_forward beside PyTorch CPU on the same shapes, in the same run.

PyTorch does the same work: nn.MultiheadAttention (fused in-projection, out-projection,
biases) with a causal mask, per-head weights returned (need_weights=True,
average_attn_weights=False), under torch.no_grad(), with 1 and with 2 threads; the faster
of the two counts. headmap-bench runs mha_forward on the same shapes and the machine's own
Eigen GEMM rate. The two sides alternate for --rounds rounds and each side's median is
reported, because a shared machine's speed drifts over minutes.

Usage: tests/bench/compare_torch.py [--bench build/tests/headmap-bench] [--rounds 3]
Needs /usr/bin/python3 with python3-torch (Debian) and libopenblas0-pthread.
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import bench_common

SHAPES = [(1, 16, 64, 4), (1, 128, 768, 12), (1, 1024, 768, 12)]
TARGETS = {(1, 16, 64, 4): 10.0, (1, 128, 768, 12): 1.2}


def run_headmap(bench, min_time):
    out = subprocess.run([bench, "--benchmark_format=json", f"--benchmark_min_time={min_time}",
                          "--benchmark_filter=mha_forward|eigen_gemm|gemm_split"],
                         check=True, capture_output=True, text=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        name = b["name"]
        us = b["real_time"] * {"us": 1, "ms": 1e3, "ns": 1e-3, "s": 1e6}[b["time_unit"]]
        res[name] = (us, b["GFLOPs"])  # the counter is already GFLOP per second
    return res


def time_torch(torch, shape, threads, budget_s=1.5):
    B, T, D, H = shape
    torch.set_num_threads(threads)
    m = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
    x = torch.randn(B, T, D)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    with torch.no_grad():
        for _ in range(5):
            m(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
        times = []
        start = time.perf_counter()
        while time.perf_counter() - start < budget_s or len(times) < 10:
            t0 = time.perf_counter()
            m(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main():
    a, torch = bench_common.setup(__doc__, 1.0, "Google Benchmark min time per case, seconds")

    hm = {s: [] for s in SHAPES}
    gemm = []
    th = {s: [] for s in SHAPES}
    th_threads = {s: None for s in SHAPES}
    for r in range(a.rounds):
        res = run_headmap(a.bench, a.min_time)
        for s in SHAPES:
            key = "mha_forward/B:%d/T:%d/D:%d/H:%d/real_time" % s
            hm[s].append(res[key])
        # The reference: the best Eigen GEMM rate at the shapes a T=1024 layer runs
        # (M = 1024 rows), by Eigen's own threading or by headmap's column split.
        gemm.append(max(v[1] for k, v in res.items() if k.startswith(("eigen_gemm/M:1024", "gemm_split/M:1024"))))
        for s in SHAPES:
            best = min((time_torch(torch, s, n), n) for n in (1, 2))
            th[s].append(best[0])
            th_threads[s] = best[1]
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    print(f"machine: {cpu}, {os.cpu_count()} cores; torch {torch.__version__}; medians of {a.rounds} alternating rounds")
    gemm_rate = statistics.median(gemm)
    print(f"Eigen GEMM on this machine at M=1024 (best of Eigen's threading and headmap's split, same run): "
          f"{gemm_rate:.1f} GFLOP/s")
    print("GFLOP/s counts FLOPs densely (as torch performs them); headmap skips fully masked causal blocks.\n")
    print(f"{'B,T,D,H':<16}{'headmap':>12}{'GFLOP/s':>9}{'torch':>12}{'thr':>5}{'speed-up':>10}  target")
    ok_all = True
    for s in SHAPES:
        us = statistics.median(v[0] for v in hm[s])
        gf = statistics.median(v[1] for v in hm[s])
        tu = statistics.median(th[s])
        ratio = tu / us
        if s in TARGETS:
            ok = ratio >= TARGETS[s]
            target = f">= {TARGETS[s]:g}x torch: {'holds' if ok else 'MISSED'}"
        else:
            ok = gf >= 0.8 * gemm_rate
            target = f">= 80% of GEMM ({0.8 * gemm_rate:.0f}): {gf / gemm_rate * 100:.0f}% {'holds' if ok else 'MISSED'}"
        ok_all &= ok
        fmt = lambda v: f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.1f} us"
        print(f"{','.join(map(str, s)):<16}{fmt(us):>12}{gf:>9.1f}{fmt(tu):>12}{th_threads[s]:>5}{ratio:>9.1f}x  {target}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
