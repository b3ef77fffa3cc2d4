#!/usr/bin/env python3
"""normals.py: headmap's random-init weights against the definition in numpy.

Usage: normals.py HEADMAP_CLI WORKDIR

headmap-cli --random-init --npy exports W_Q, W_K, W_V and W_O. This script derives each
tensor's stream key (core/model/weights.cpp) and draws the stream as core/math/rng.h
defines it (murmur3's finaliser on 32-bit counters, Box-Muller with both outputs), in
float64, and holds the export to it. It also checks that the numbers look normal.
Exit 77 (skipped) when numpy is missing.
"""
import json
import math
import os
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("numpy is missing: skipped")
    sys.exit(77)

M64 = (1 << 64) - 1


def mix64(z):  # splitmix64's finaliser
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def hash_bytes(s, seed=0):  # FNV-1a, then mixed
    h = 0xCBF29CE484222325 ^ mix64(seed)
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return mix64(h)


def combine(a, b):
    return mix64(a ^ ((b + 0x9E3779B97F4A7C15 + ((a << 6) & M64) + (a >> 2)) & M64))


def fmix32(h):  # h: uint32 array; numpy's uint32 products wrap modulo 2^32
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def normals(key, n):
    """Elements [0, n) of stream `key`, float64."""
    k0, k1 = np.uint32(key & 0xFFFFFFFF), np.uint32(key >> 32)
    p = np.arange((n + 1) // 2, dtype=np.uint32)
    a = fmix32(fmix32(p * np.uint32(0x9E3779B9) + k0) ^ k1) >> np.uint32(9)
    b = fmix32(fmix32(p * np.uint32(0x85EBCA77) + k1) ^ k0 ^ np.uint32(0x68E31DA4)) >> np.uint32(8)
    u1 = (a.astype(np.float64) + 0.5) / 2.0**23
    theta = 2 * math.pi * (b.astype(np.float64) / 2.0**24 - 0.5)
    r = np.sqrt(-2 * np.log(u1))
    z = np.empty(2 * len(p))
    z[0::2], z[1::2] = r * np.cos(theta), r * np.sin(theta)
    return z[:n]


def main():
    cli, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    worst = 0.0
    for D, L, seed in [(48, 2, 11), (768, 1, 7)]:
        out = os.path.join(work, f"d{D}")
        subprocess.run([cli, "--random-init", "--d-model", str(D), "--heads", "4", "--layers", str(L), "--seed", str(seed),
                        "--text", "x", "--npy", out], check=True, stdout=subprocess.DEVNULL)
        for l in range(L):
            base = combine(combine(hash_bytes("headmap-weights", seed), D), l)
            for name in ["w_q", "w_k", "w_v", "w_o"]:
                got = np.load(os.path.join(out, f"layer{l}.{name}.npy")).astype(np.float64)
                want = normals(combine(base, hash_bytes(name)), D * D).reshape(D, D) / math.sqrt(D)
                # float32 log/sin/cos against float64: a few ulp of values up to ~6/sqrt(D)
                err = np.abs(got - want).max() * math.sqrt(D)
                worst = max(worst, err)
                if err > 2e-5:
                    print(f"D={D} layer {l} {name}: max |headmap - numpy| = {err:.3g} (in units of the std), limit 2e-5")
                    return 1
    # The stream itself looks standard normal: 2M numbers, moments and the CDF.
    z = normals(combine(hash_bytes("check", 3), 5), 2_000_000)
    mean, std = z.mean(), z.std()
    kurt = ((z - mean) ** 4).mean() / std**4
    xs = np.sort(z)
    cdf = 0.5 * (1 + np.array([math.erf(x / math.sqrt(2)) for x in xs[::1000]]))
    ks = np.abs(cdf - (np.arange(0, len(xs), 1000) + 0.5) / len(xs)).max()
    print(f"max |headmap - numpy| = {worst:.3g} std; stream: mean {mean:.4f}, std {std:.4f}, kurtosis {kurt:.3f}, KS {ks:.4f}")
    # 5 sigma of the sampling error of each figure for 2M draws
    if abs(mean) > 0.004 or abs(std - 1) > 0.003 or abs(kurt - 3) > 0.02 or ks > 0.004:
        print("the stream does not look standard normal")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
