#!/usr/bin/env python3
"""Independent float64 numpy reference for the offset profile (issue 39, point 5).

For each model, runs headmap-cli --offset-profile --json --npy and recomputes:

  offsets      from the exported maps (L, H, T, T): for each d = t - s in -(T-1)..T-1, the mean of
               w[t, t - d] over the rows t >= 1 whose key t - d is a token (1e-5); and checks the
               profile is not the naive one that also counts row 0 (a test that can tell);
  frequencies  on a rotary family, from family_reference.py's own float64 forward (q and k after
               the q/k norm and RoPE, its own weights): per head, each rotate-half pair i's
               attention-weighted mean |q_t[i] k_s[i] + q_t[i+half] k_s[i+half]| over the cells of
               rows t >= 1, and the unrotated dims' |sum|, as shares of their sum (1e-4), and the
               pairs' wavelengths 2 pi / inv_freq (relative 1e-6). Layers without RoPE (SmolLM3's
               NoPE) have no pairs and give everything to the unrotated part. A model without RoPE
               gives no frequencies and says why.

Usage: offset_reference.py HEADMAP_CLI WORKDIR SPEC [...]
  SPEC  ckpt=PATH:TEXT | family=VARIANT:TEXT | encoder=VARIANT:TEXT
Exit status: 0 all agree, 1 a mismatch, 77 numpy is missing (a skipped test).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

np = reference_common.numpy_or_skip()

TOL = 1e-5
TOL_SHARE = 1e-4
failures = []


def close(tag, name, got, want, tol):
    reference_common.close(failures, tag, name, got, want, tol)


def offsets_of(att, first_row):
    """att (L, H, T, T) -> (L, H, 2T-1) the mean weight at d = t - s over rows t >= first_row."""
    L, H, T, _ = att.shape
    out = np.zeros((L, H, 2 * T - 1))
    for d in range(-(T - 1), T):
        rows = [t for t in range(first_row, T) if 0 <= t - d < T]
        if rows:
            out[:, :, d + T - 1] = np.mean([att[:, :, t, t - d] for t in rows], axis=0)
    return out


def shares_of(q, k, att, freq):
    """One layer: q, k (H, T, dh), att (H, T, T), freq (half) or None -> (H, half + 1)."""
    H, T, dh = q.shape
    half = 0 if freq is None else len(freq)
    out = np.zeros((H, half + 1))
    for h in range(H):
        terms = [np.outer(q[h][:, i], k[h][:, i]) + np.outer(q[h][:, i + half], k[h][:, i + half]) for i in range(half)]
        terms.append(q[h][:, 2 * half:] @ k[h][:, 2 * half:].T)  # (T, T) the unrotated dims
        w = att[h][1:]  # rows t >= 1
        means = np.array([(w * np.abs(c[1:])).sum() for c in terms])
        out[h] = means / means.sum() if means.sum() > 0 else 0
    return out


def check(cli, work, spec):
    got = reference_common.run_spec(cli, work, spec, ["--offset-profile"], failures)
    if got is None:
        return
    tag, base, d, contrib = got
    kind = spec.split("=", 1)[0]
    doc = contrib["offset_profile"]
    att = np.load(os.path.join(base + ".d", "attention.npy")).astype(np.float64)[:, 0]  # (L, H, T, T)
    L, H, T, _ = att.shape
    print(f"{tag}: L={L} H={H} T={T}")
    if doc["len"] != T or doc["offsets"] != list(range(-(T - 1), T)):
        failures.append(f"{tag}: len {doc['len']} and offsets {doc['offsets'][:3]}..., the reference {T} tokens")
        return
    want = offsets_of(att, 1)
    close(tag, "offset profile", doc["by_offset"], want, TOL)
    naive = float(np.abs(offsets_of(att, 0) - want).max())
    print(f"  counting row 0 too would move a value by {naive:.2e}")
    if naive <= 10 * TOL:
        failures.append(f"{tag}: counting row 0 stays within the tolerance (a test that cannot tell)")
    freqs = doc["frequencies"]
    if kind != "family":
        if freqs is not None or not doc.get("no_frequencies"):
            failures.append(f"{tag}: a model without RoPE gave frequencies, or no reason: {doc.get('no_frequencies')!r}")
        else:
            print(f"  no frequencies: {doc['no_frequencies']}")
        return
    import family_reference as fr
    from gpt2_reference import read_model
    meta = json.load(open(os.path.join(base + ".d", "meta.json")))
    ids = np.array(meta["token_ids"][0])
    cfg, _ = read_model(d)
    W = {k: v.astype(np.float64) for k, v in fr.read_dir_weights(d).items()}
    rec = {}
    fr.forward(cfg, W, ids, rec=rec)
    rotary = [ly["freq"] is not None for ly in rec["layers"]]
    if not any(rotary):
        if freqs is not None:
            failures.append(f"{tag}: a family without RoPE gave frequencies")
        return
    if freqs is None:
        failures.append(f"{tag}: no frequencies on a rotary family: {doc.get('no_frequencies')!r}")
        return
    P = max(len(ly["freq"]) for ly in rec["layers"] if ly["freq"] is not None)
    got_share = np.array(freqs["share"])  # (L, H, P + 1)
    want_share = np.zeros((L, H, P + 1))
    want_wave = np.zeros((L, P))
    for l, ly in enumerate(rec["layers"]):
        half = 0 if ly["freq"] is None else len(ly["freq"])
        s = shares_of(ly["q"], ly["k"], ly["att"], ly["freq"])
        want_share[l, :, :half] = s[:, :half]
        want_share[l, :, P] = s[:, half]
        if half:
            want_wave[l, :half] = 2 * np.pi / ly["freq"]
    if freqs["pairs"] != [0 if ly["freq"] is None else len(ly["freq"]) for ly in rec["layers"]]:
        failures.append(f"{tag}: pairs per layer {freqs['pairs']}")
    close(tag, "frequency shares", got_share, want_share, TOL_SHARE)
    wave = np.array(freqs["wavelength"])
    rel = np.abs(wave - want_wave) / np.maximum(want_wave, 1)
    print(f"  wavelengths: max relative error {rel.max():.2e}")
    if rel.max() > 1e-6:
        failures.append(f"{tag}: wavelengths differ by {rel.max():.2e} (relative)")
    # Not trivial: the shares differ from the pairs' share of q·k without the weights.
    flat = np.zeros_like(want_share)
    for l, ly in enumerate(rec["layers"]):
        half = 0 if ly["freq"] is None else len(ly["freq"])
        uniform = np.where(ly["att"] > 0, 1.0, 0.0)
        s = shares_of(ly["q"], ly["k"], uniform, ly["freq"])
        flat[l, :, :half], flat[l, :, P] = s[:, :half], s[:, half]
    moved = float(np.abs(flat - want_share).max())
    print(f"  unweighted shares would move a share by {moved:.2e}")
    if moved <= 10 * TOL_SHARE:
        failures.append(f"{tag}: the unweighted shares stay within the tolerance (a test that cannot tell)")


def main():
    return reference_common.specs_main(__doc__, check, failures, "the offset profile agrees with the numpy reference")


if __name__ == "__main__":
    sys.exit(main())
