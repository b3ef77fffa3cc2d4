#!/usr/bin/env python3
"""gguf_reference.py: holds headmap-cli --model FILE.gguf to a float64 numpy forward of the
weights the file holds (dequantized by make_gguf.py's own reading of the block layouts), for
every architecture and tensor type of make_gguf.py.

    gguf_reference.py HEADMAP_CLI WORK_DIR [VARIANT ...]

The forward is family_reference.forward (written from the families' definitions); headmap's
attention (L, B, H, T, T), each layer's attention input and output are held to 1e-4 and the
mean next-token loss to 1e-3, on the ids headmap used. Exit 0 all agree, 1 a difference, 77
numpy missing.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

np = reference_common.numpy_or_skip()
import family_reference  # noqa: E402
import make_gguf  # noqa: E402

TOL, LOSS_TOL = 1e-4, 1e-3
TEXTS = ["The cat sat on the mat because it was tired.", "it was the cat"]


def check_variant(cli, work, variant):
    path = make_gguf.write_variant(work, variant)
    out, run_json = os.path.join(work, variant + "-out"), os.path.join(work, variant + ".json")
    cmd = [cli, "--model", path, "--npy", out, "--json", run_json]
    for t in TEXTS:
        cmd += ["--text", t]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{variant:16s} headmap-cli refused it: {run.stderr.strip()}  DIFFERENT")
        return False
    meta = json.load(open(os.path.join(out, "meta.json")))
    loss = json.load(open(run_json))["loss_on_text"]
    cfg = json.load(open(os.path.join(work, variant + ".cfg.json")))
    W = dict(np.load(os.path.join(work, variant + ".ref.npz")))
    if cfg.pop("gpt2_scale", False):
        # GPT-2 scales scores by 1/sqrt(dh); the reference's GPT-Neo path does not, so the
        # queries carry the scale (the same attention weights).
        dh = cfg["hidden_size"] // cfg["num_heads"]
        for k in list(W):
            if k.endswith("q_proj.weight") or k.endswith("q_proj.bias"):
                W[k] = W[k] / np.sqrt(dh)
    att = np.load(os.path.join(out, "attention.npy"))  # (L, B, H, T, T)
    L, B, H, T, _ = att.shape
    worst = {"attention": 0.0, "attn_in": 0.0, "attn_out": 0.0}
    total, count = 0.0, 0
    for b, ids in enumerate(meta["token_ids"]):
        n = meta["lengths"][b]
        layers, nll, k = family_reference.forward(cfg, W, np.array(ids))
        total, count = total + nll, count + k
        for l, (a_ref, in_ref, out_ref) in enumerate(layers):
            worst["attention"] = max(worst["attention"], np.abs(att[l, b, :, :n, :n] - a_ref).max())
            reference_common.worst_layer_io(worst, out, l, b, n, in_ref, out_ref)
    loss_ref = total / count
    ok = all(v <= TOL for v in worst.values()) and loss is not None and abs(loss - loss_ref) <= LOSS_TOL
    print(f"{variant:16s} L={L} B={B} H={H} T={T}  max |diff|: attention {worst['attention']:.2e}, attn_in {worst['attn_in']:.2e}, "
          f"attn_out {worst['attn_out']:.2e}; loss {loss} vs {loss_ref:.6f}  {'ok' if ok else 'DIFFERENT'}")
    if ok:  # what a difference would be read from is kept; 123 files' worth would be about 1 GB
        shutil.rmtree(out, ignore_errors=True)
        os.remove(os.path.join(work, variant + ".ref.npz"))
    return ok


def main():
    args = reference_common.cli_and_work(__doc__)
    if args is None:
        return 2
    cli, work = args
    variants = sys.argv[3:] or list(make_gguf.VARIANTS)
    results = [check_variant(cli, work, v) for v in variants]
    print(f"{sum(results)} of {len(results)} GGUF variants agree with the float64 reference (attention, layer input and output to {TOL}, loss to {LOSS_TOL})")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
