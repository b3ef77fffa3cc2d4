#!/usr/bin/env python3
"""compare_engines.py: headmap, llama.cpp and torch in the same run, on the same weights, the
same token ids and the same thread counts, in alternating rounds (issue 38, point 6).

Models (random weights, written under --root once, never in the repository):
  llama  the Llama-3.2-1B shape in BF16 (compare_torch_families.py's HF directory, 2.47 GB), and
         the same tensors as a BF16 GGUF file for llama.cpp (hf_to_gguf.py: Q/K rows permuted
         as llama.cpp's converter does, llama3 RoPE factors)
  gpt2   GPT-2 small in F32 (compare_torch_gpt2.py's directory; headmap and torch only: no GGUF
         writer for GPT-2 here)

Engines, each in a fresh process per measurement, each told the thread count:
  headmap    OMP_NUM_THREADS=N build/tests/headmap-bench-families DIR 128 (the forward at
             T = 128 with every map, then with the logits and loss; with --bf16-products also
             its BF16-products passes, a row "headmap BF16 products" of their own: avx512_bf16
             CPUs only, the append is F32's) and
             headmap-bench-incremental DIR 128 (one token appended after the 128 in the K/V cache,
             with every map and its logits; the 129 ids it runs are the ids of this whole run)
  llama.cpp  bench_llama_cpp.mjs (node-llama-cpp's prebuilt CPU build from
             build/tests/gguf-oracle/node_modules: `ctest --test-dir build -R gguf_oracle_setup`
             installs it): the 128 ids in one batch (no maps, no logits) and the 129th appended
             with its logits; and its loss over the 128 ids
  torch      compare_torch_families.py's torch forward (weights widened to F32, eval, no_grad,
             every map kept), torch.set_num_threads(N): forward, + logits and loss, the 129th id
             appended through its own K/V cache
Rounds alternate the engines' order; medians are reported. The three losses must agree (the
same weights and ids; llama.cpp's BF16 kernels round differently, so to ~1e-2 there, 1e-3 between
headmap and torch). headmap-bench-bandwidth (the memory floor and the FP32 FMA peak) runs at the
start and the end. With --lock CMD (e.g. hm-lock) every measured process runs under CMD, so a
shared machine is quiet while it runs, and no lock is held for the whole run.

Usage: /usr/bin/python3 tests/bench/compare_engines.py [--models llama,gpt2] [--threads 1,2]
       [--rounds 2] [--seconds 2] [--root /tmp] [--build build] [--raw DIR] [--lock hm-lock]
       [--bf16-products]
Needs /usr/bin/python3 with numpy (torch optional: without it torch is left out, said so), node.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_common  # noqa: E402
import compare_torch_families as fam  # noqa: E402
import compare_torch_gpt2 as gpt2  # noqa: E402
import hf_to_gguf  # noqa: E402

BF16 = "headmap BF16 products"  # headmap-bench-families --bf16-products: the same run's faster passes


def loadavg():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Runner:
    def __init__(self, a):
        self.a, self.raw = a, None
        if a.raw:
            os.makedirs(a.raw, exist_ok=True)
            self.raw = open(os.path.join(a.raw, time.strftime("%Y-%m-%d-%H%M-engines.txt", time.gmtime())), "w")

    def run(self, what, cmd, env=None):
        """Runs cmd (under --lock), returns stdout; stdout and stderr go to the raw file."""
        full = (self.a.lock.split() if self.a.lock else []) + cmd
        t0 = time.perf_counter()
        p = subprocess.run(full, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
        line = f"## {what} | load {loadavg()} | {time.perf_counter() - t0:.1f} s | {' '.join(cmd)}"
        self.log(line + "\n" + p.stdout + (("--- stderr\n" + p.stderr) if p.stderr.strip() else ""))
        if p.returncode != 0:
            raise RuntimeError(f"{what} failed ({p.returncode}): {(p.stderr or p.stdout).strip()[-400:]}")
        return p.stdout

    def log(self, text):
        if self.raw:
            self.raw.write(text.rstrip() + "\n")
            self.raw.flush()


def last_json(out):
    return json.loads([x for x in out.splitlines() if x.strip().startswith("{")][-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="llama,gpt2")
    ap.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2 or 1,2,16 (default 1,2)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--root", default="/tmp")
    ap.add_argument("--build", default="build")
    ap.add_argument("--raw", default="", help="a directory for the raw output of every process")
    ap.add_argument("--lock", default="", help="a command every measured process runs under (hm-lock)")
    ap.add_argument("--engines", default="headmap,llama.cpp,torch")
    ap.add_argument("--bf16-products", action="store_true", help="also headmap's BF16-products passes (a CPU with avx512_bf16)")
    ap.add_argument("--node-modules", default="", help="node-llama-cpp's node_modules (default BUILD/tests/gguf-oracle/node_modules)")
    a = ap.parse_args()
    R = Runner(a)
    bench = lambda name: os.path.join(a.build, "tests", name)
    modules = a.node_modules or os.path.join(a.build, "tests", "gguf-oracle", "node_modules")
    engines = a.engines.split(",")
    notes = []
    try:
        import torch  # noqa: F401
    except ImportError:
        if "torch" in engines:
            engines.remove("torch")
            notes.append("torch is not installed (Debian: apt-get install python3-torch): left out")
    if "llama.cpp" in engines and not os.path.isdir(os.path.join(modules, "node-llama-cpp")):
        engines.remove("llama.cpp")
        notes.append(f"{modules}/node-llama-cpp is missing (ctest --test-dir {a.build} -R gguf_oracle_setup): llama.cpp left out")
    threads = [int(x) for x in a.threads.split(",")]
    cpu = next((x.split(":", 1)[1].strip() for x in open("/proc/cpuinfo") if x.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} cores; engines {', '.join(engines)}; threads {threads}; load average {loadavg()}")
    for n in notes:
        print(n)
    bw_lines = R.run("bandwidth", [bench("headmap-bench-bandwidth")]).splitlines()
    floors = {}
    for l in bw_lines:
        j = json.loads(l)
        floors[j["threads"]] = j
        print(f"  {j['threads']} thread(s): read {j['read_GBps']:.2f} GB/s, FP32 FMA peak {j['fp32_peak_GFLOPs']:.1f} GFLOP/s")
    ok = True
    for kind in a.models.split(","):
        d = os.path.join(a.root, f"headmap-bench-{kind}")
        if kind == "gpt2":
            gpt2.write_model(d)
        else:
            fam.write_family(d, fam.SHAPES[kind])
        st = os.path.join(d, "model.safetensors")
        gguf = None
        eng = list(engines)
        if "llama.cpp" in eng:
            if kind == "llama":
                gguf = os.path.join(a.root, f"headmap-bench-{kind}-BF16.gguf")
                if not os.path.exists(gguf) or os.path.getmtime(gguf) < os.path.getmtime(st):
                    hf_to_gguf.convert(d, gguf)
                bench_common.warm(gguf)
            else:
                eng.remove("llama.cpp")
        bench_common.warm(st)
        res = {(e, n): [] for e in eng for n in threads}
        shown = list(eng)  # the table's rows: the engines, and headmap's BF16-products passes
        if a.bf16_products and "headmap" in eng:
            shown.insert(eng.index("headmap") + 1, BF16)
            res.update({(BF16, n): [] for n in threads})
        ids = None
        for r in range(a.rounds):
            order = eng[r % len(eng):] + eng[:r % len(eng)]
            for n in threads:
                for e in order:
                    env = {"OMP_NUM_THREADS": str(n)}
                    if e == "headmap":
                        f = last_json(R.run(f"{kind} headmap families {n}t", [bench("headmap-bench-families"), d, "128", str(a.seconds)]
                                            + (["--bf16-products"] if a.bf16_products else []), env))
                        i = last_json(R.run(f"{kind} headmap incremental {n}t", [bench("headmap-bench-incremental"), d, "128", str(a.seconds)], env))
                        if i["ids"][:128] != f["ids"]:
                            raise RuntimeError("headmap-bench-families and -incremental ran different ids")
                        ids = ids or i["ids"]
                        res[(e, n)].append(dict(forward=f["forward_attention_ms"], logits=f["forward_logits_ms"], append=i["append_ms"], loss=f["loss"],
                                                threads=f["threads"]))
                        if a.bf16_products:
                            res[(BF16, n)].append(dict(forward=f["forward_attention_bf16_ms"], logits=f["forward_logits_bf16_ms"], append=None,
                                                       loss=f["bf16_loss"], attention_diff=f["bf16_attention_diff"]))
                    elif ids is None:
                        raise RuntimeError("headmap runs first in round 1: it gives the ids")
                    elif e == "llama.cpp":
                        idf = os.path.join(a.root, f"headmap-bench-{kind}-ids.json")
                        json.dump(ids, open(idf, "w"))
                        j = last_json(R.run(f"{kind} llama.cpp {n}t", ["node", os.path.join(HERE, "bench_llama_cpp.mjs"), modules, gguf, "--threads", str(n),
                                                                      "--tokens", "128", "--seconds", str(2 * a.seconds), "--ids", idf]))
                        res[(e, n)].append(dict(forward=j["forward_ms"], logits=None, append=j["append_ms"], loss=j.get("loss"),
                                                head=j.get("last_logits_head")))
                    else:
                        j = last_json(R.run(f"{kind} torch {n}t", [sys.executable, os.path.join(HERE, "compare_torch_families.py"), "--seconds", str(a.seconds),
                                                                  "--torch-threads", str(n), "--torch-tokens", "128", "--torch-side", kind, d, json.dumps(ids)]))
                        res[(e, n)].append(dict(forward=j[f"attention_ms_{n}t"], logits=j[f"logits_ms_{n}t"], append=j[f"append_cache_ms_{n}t"],
                                                loss=j["loss"], head=j["last_logits_head"]))
            print(f"  {kind} round {r + 1} done, load {loadavg()}", flush=True)
        med = lambda e, n, k: statistics.median(x[k] for x in res[(e, n)]) if res[(e, n)] and res[(e, n)][0][k] is not None else None
        fmt = lambda v: "-" if v is None else f"{v:.1f}"
        losses = {e: res[(e, threads[0])][-1]["loss"] for e in eng}
        print(f"\n### {fam.NAMES[kind]}, T = 128, {a.rounds} round(s), medians (ms)\n")
        print("losses on the same 128 ids: " + ", ".join(f"{e} {v:.5f}" for e, v in losses.items() if v is not None))
        print("| threads | engine | forward, every map | + logits and loss | one token appended after 128, with logits | append / memory floor |")
        print("|---|---|---|---|---|---|")
        size = os.path.getsize(st)
        for n in threads:
            fl = floors.get(n) or floors[max(floors)]
            # the floor: the bytes one append must read (the file: every matrix once, the tied embedding as the unembedding)
            floor_ms = size / (fl["read_GBps"] * 1e9) * 1e3
            for e in shown:
                ap_ = med(e, n, "append")
                print(f"| {n} | {e} | {fmt(med(e, n, 'forward'))} | {fmt(med(e, n, 'logits'))} | {fmt(ap_)} | "
                      f"{'-' if ap_ is None else f'{ap_ / floor_ms:.2f}x of {floor_ms:.0f} ms'} |")
        print()
        if BF16 in shown:
            print(f"{BF16}: largest attention difference from F32 " + ", ".join(f"{x['attention_diff']:.2e}" for x in res[(BF16, threads[0])])
                  + f"; loss {res[(BF16, threads[0])][-1]['loss']:.5f}\n")
        heads = {e: res[(e, threads[0])][-1].get("head") for e in eng}
        if heads.get("llama.cpp") and heads.get("torch"):
            diff = max(abs(x - y) for x, y in zip(heads["llama.cpp"], heads["torch"]))
            scale = max(abs(y) for y in heads["torch"])
            print(f"llama.cpp against torch, the last position's logits of ids 0..15: max difference {diff:.2e} "
                  f"({100 * diff / scale:.1f} % of the largest)")
            # llama.cpp rounds the activations to BF16 in its BF16 products (1.0 % on the 1B shape,
            # 2026-11-27); on a small model, Q/K rows left unpermuted moved them 6x as far as the
            # right file's rounding did
            if diff > 0.03 * scale:
                print(f"{kind}: llama.cpp's logits differ from torch's by {diff:.3f}: the GGUF file is not the same model; the comparison is void")
                ok = False
        h = losses.get("headmap")
        for e, v in losses.items():
            tol = 1e-2 if e == "llama.cpp" else 1e-3
            if v is not None and h is not None and abs(v - h) > tol * abs(h):
                print(f"{kind}: {e}'s loss {v:.5f} differs from headmap's {h:.5f}: the comparison is void")
                ok = False
    bw_end = R.run("bandwidth at the end", [bench("headmap-bench-bandwidth")]).splitlines()
    print("memory floor at the end: " + ", ".join(f"{json.loads(l)['threads']} thread(s) {json.loads(l)['read_GBps']:.2f} GB/s" for l in bw_end)
          + f"; load average {loadavg()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
