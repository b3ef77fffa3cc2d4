#!/usr/bin/env python3
"""Independent float64 numpy reference for the head overview (issue 39, point 2).

For each model, runs headmap-cli --head-overview --json --npy, reads the attention maps it
exported (attention.npy, themselves held to numpy forwards by the other reference tests), and
recomputes from them, over the real query rows t >= 1 of the sentence:

  entropy        -sum_s w log w (nats), the mean over every real row (row 0 too: metrics.h's);
  first_token    w[t, 0], prev_token w[t, t-1], self w[t, t], mean_distance sum_s w[t, s] |t - s|:
                 each the mean over the rows t >= 1;
  similarity     the cosine of two heads' maps, each the rows t >= 1 flattened;
  layout         classical MDS of 1 - similarity: compared through the layout's pairwise
                 distances (a rotation or a sign flip of the plane is the same layout), where
                 the second and third eigenvalues are apart;
  near pairs     every pair with similarity >= 0.95.

It also checks that the sizes used tell the definitions apart: including row 0 (a causal
map's [1, 0, ...]) would move some similarity by more than the tolerance.

Usage: overview_reference.py HEADMAP_CLI WORKDIR SPEC [...]
  SPEC  ckpt=PATH:TEXT | family=VARIANT:TEXT | encoder=VARIANT:TEXT (as lens_reference.py)
Exit status: 0 all agree, 1 a mismatch, 77 numpy is missing (a skipped test).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

np = reference_common.numpy_or_skip()

TOL = 1e-4
failures = []


def close(tag, name, got, want, tol=TOL):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failures.append(f"{tag} {name}: shape {got.shape} vs reference {want.shape}")
        return
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    print(f"  {name:<26} max error {err:.2e}  {'ok' if err <= tol else 'MISMATCH'}")
    if err > tol:
        failures.append(f"{tag} {name}: {err:.2e}")


def mds(d):
    n = d.shape[0]
    j = np.eye(n) - np.ones((n, n)) / n
    b = -0.5 * j @ (d ** 2) @ j
    vals, vecs = np.linalg.eigh(b)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    return vals, vecs[:, :2] * np.sqrt(np.maximum(vals[:2], 0))


def check(cli, work, spec):
    got = reference_common.run_spec(cli, work, spec, ["--head-overview"], failures)
    if got is None:
        return
    tag, base, _, contrib = got
    doc = contrib["head_overview"]
    att = np.load(os.path.join(base + ".d", "attention.npy")).astype(np.float64)[:, 0]  # (L, H, T, T)
    L, H, T, _ = att.shape
    N = L * H
    rows = att[:, :, 1:, :].reshape(N, T - 1, T)  # rows t >= 1
    t_idx = np.arange(1, T)[:, None]
    s_idx = np.arange(T)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(rows > 0, rows * np.log(np.where(rows > 0, rows, 1)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = att.reshape(N, T, T)
        plogp0 = np.where(a > 0, a * np.log(np.where(a > 0, a, 1)), 0.0)
    want = {
        "entropy": (-plogp0.sum(-1)).mean(-1),
        "first_token": rows[:, :, 0].mean(-1),
        "prev_token": np.array([[rows[n, t - 1, t - 1] for t in range(1, T)] for n in range(N)]).mean(-1),
        "self": np.array([[rows[n, t - 1, t] for t in range(1, T)] for n in range(N)]).mean(-1),
        "mean_distance": (rows * np.abs(t_idx - s_idx)).sum(-1).mean(-1),
    }
    print(f"{tag}: L={L} H={H} T={T}")
    for key, w in want.items():
        close(tag, key, np.array(doc["stats"][key]).reshape(N), w)
    flat = rows.reshape(N, -1)
    norms = np.linalg.norm(flat, axis=1)
    sim = flat @ flat.T / np.outer(norms, norms)
    np.fill_diagonal(sim, 1.0)
    close(tag, "similarity", doc["similarity"], sim)
    full = att.reshape(N, -1)
    sim0 = full @ full.T / np.outer(np.linalg.norm(full, axis=1), np.linalg.norm(full, axis=1))
    np.fill_diagonal(sim0, 1.0)
    moved = float(np.abs(sim0 - sim).max())
    print(f"  row 0 included would move a similarity by {moved:.2e}")
    if moved <= 10 * TOL:
        failures.append(f"{tag}: including row 0 stays within the tolerance (a test that cannot tell)")
    vals, lay = mds(1.0 - sim)
    got = np.array(doc["layout"])
    if N >= 3 and vals[1] - vals[2] > 1e-3 * max(vals[0], 1e-12):
        dist = lambda x: np.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)
        close(tag, "layout distances", dist(got), dist(lay))
    else:
        print("  layout: eigenvalues 2 and 3 too close to compare the plane")
    pairs = sorted((n, m) for n in range(N) for m in range(n + 1, N) if sim[n, m] >= 0.95)
    gotp = sorted((a[0] * H + a[1], b[0] * H + b[1]) for a, b in ((p["a"], p["b"]) for p in doc["near_duplicates"]))
    borderline = [(n, m) for n in range(N) for m in range(n + 1, N) if abs(sim[n, m] - 0.95) < 1e-5]
    if [p for p in gotp if p not in borderline] != [p for p in pairs if p not in borderline]:
        failures.append(f"{tag}: near-duplicate pairs {gotp}, reference {pairs}")
    print(f"  near-duplicate pairs: {len(pairs)}")


def main():
    return reference_common.specs_main(__doc__, check, failures, "the head overview agrees with the numpy reference")


if __name__ == "__main__":
    sys.exit(main())
