"""reference_common.py: what the float64 reference scripts and the model-directory writers of
tests/reference/ share (numpy only; nothing here imports headmap).

  numpy_or_skip()     numpy, or exit 77 (ctest's skip code) with a message when it is missing
  llama_cpp_missing() why llama.cpp (node and npm's node-llama-cpp) cannot run, or None
  cli_and_work()      HEADMAP_CLI WORK_DIR from the command line, WORK_DIR created
  worst_layer_io()    headmap's attention input and output of one layer (--npy) against the
                      reference's, relative to the larger magnitude
  variants_main()     the command line of make_family_dir.py and make_encoder_dir.py
  close()             headmap's array against the reference's, a mismatch added to the failures
  run_spec()          one ckpt=/family=/encoder= spec: its model written, headmap-cli run, "contrib" read
  specs_main()        HEADMAP_CLI WORK_DIR SPEC...: check each spec, report the failures
"""
import argparse
import json
import os
import subprocess
import sys


def numpy_or_skip():
    """The numpy module; without it, a message and exit status 77 (the test is skipped)."""
    try:
        import numpy
    except ImportError:
        print("numpy is missing: skipped (apt-get install python3-numpy)")
        sys.exit(77)
    return numpy


def llama_cpp_missing(modules):
    """Why llama.cpp cannot be run from `modules` (node missing, or node-llama-cpp not installed
    there by the gguf_oracle_setup fixture) as a skip message, or None when it can."""
    import shutil
    if not shutil.which("node"):
        return "SKIPPED: node is missing (.ci/setup installs it)"
    if not os.path.isdir(os.path.join(modules, "node-llama-cpp")):
        return f"SKIPPED: node-llama-cpp is not installed in {modules} (the fixture gguf_oracle_setup installs it; it says why it did not)"
    return None


def cli_and_work(doc, exact=False):
    """(HEADMAP_CLI, WORK_DIR) from sys.argv (WORK_DIR created), or None after printing `doc`
    when they are missing (or, with exact, when anything else is given)."""
    if len(sys.argv) < 3 or (exact and len(sys.argv) != 3):
        print(doc)
        return None
    os.makedirs(sys.argv[2], exist_ok=True)
    return sys.argv[1], sys.argv[2]


def worst_layer_io(worst, out, l, b, n, in_ref, out_ref):
    """Layer l's attention input and output for sentence b (its n real tokens) from headmap's
    --npy directory `out` against the reference's (n, D) in_ref and out_ref: the largest
    difference relative to the largest reference magnitude (at least 1), kept as the worst of
    worst["attn_in"] and worst["attn_out"]."""
    import numpy as np
    a_in = np.load(os.path.join(out, f"layer{l}.attn_in.npy"))[b, :n]
    a_out = np.load(os.path.join(out, f"layer{l}.attn_out.npy"))[b, :n]
    worst["attn_in"] = max(worst["attn_in"], np.abs(a_in - in_ref).max() / max(1.0, np.abs(in_ref).max()))
    worst["attn_out"] = max(worst["attn_out"], np.abs(a_out - out_ref).max() / max(1.0, np.abs(out_ref).max()))


def variants_main(doc, variants, write_dir, default):
    """SCRIPT OUT [--variant NAME|all]: writes one variant's directory into OUT, or every
    variant into OUT/NAME, with write_dir(dir, name); prints each directory."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--variant", default=default, choices=list(variants) + ["all"])
    a = ap.parse_args()
    for v in (list(variants) if a.variant == "all" else [a.variant]):
        d = os.path.join(a.out, v) if a.variant == "all" else a.out
        write_dir(d, v)
        print(d)


def run_spec(cli, work, spec, flags, failures):
    """SPEC "ckpt=PATH:TEXT", "family=VARIANT:TEXT" or "encoder=VARIANT:TEXT": writes the tiny
    model (make_family_dir.py, make_encoder_dir.py) under WORK, runs headmap-cli on TEXT with
    `flags`, --json and --npy. Returns (tag, base, model_dir or None, the JSON's "contrib"),
    or None after adding the refusal to `failures`. base + ".d" is the --npy directory."""
    kind, rest = spec.split("=", 1)
    where, text = rest.split(":", 1)
    tag = f"{kind}={os.path.basename(where)}"
    base = os.path.join(work, tag.replace("=", "-"))
    d = None
    if kind == "ckpt":
        src = ["--checkpoint", where]
    else:
        d = base + ".model"
        if kind == "family":
            import make_family_dir
            make_family_dir.write_dir(d, where)
        else:
            import make_encoder_dir
            make_encoder_dir.write_dir(d, where)
        src = ["--model", d]
    cmd = [cli] + src + ["--text", text] + flags + ["--json", base + ".json", "--npy", base + ".d"]
    print(" ".join(cmd))
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        failures.append(f"{tag}: headmap-cli refused it: {run.stderr.strip()}")
        return None
    with open(base + ".json") as f:
        return tag, base, d, json.load(f)["contrib"]


def close(failures, tag, name, got, want, tol):
    """headmap's `got` against the reference's `want` (same shape, largest difference <= tol),
    printed; a mismatch added to `failures`."""
    import numpy as np
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failures.append(f"{tag}: {name} has shape {got.shape}, the reference {want.shape}")
        return
    err = float(np.abs(got - want).max()) if got.size else 0.0
    print(f"  {name}: max error {err:.2e}")
    if err > tol:
        failures.append(f"{tag}: {name} differs by {err:.2e} (tolerance {tol:.1e})")


def specs_main(doc, check, failures, agreed):
    """SCRIPT HEADMAP_CLI WORK_DIR SPEC...: check(cli, work, spec) for each spec (WORK_DIR
    created); the exit status: 0 with `agreed` printed when `failures` stayed empty, 1 with
    them listed, 2 (and `doc`) when the arguments are missing."""
    if len(sys.argv) < 4:
        print(doc)
        return 2
    cli, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    for spec in sys.argv[3:]:
        check(cli, work, spec)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(agreed)
    return 0
