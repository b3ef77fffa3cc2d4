#!/usr/bin/env python3
"""hf_check_prepare.py: one tiny random Hugging Face directory per family variant headmap opens,
each with headmap's own export beside it, for Hugging Face transformers' forward to be compared
with on a machine that has transformers (this one does not).

    hf_check_prepare.py BUILD_DIR OUT_DIR [VARIANT ...]

For every variant of make_family_dir.py (the decoder families, each quirk at a size where it
shows), make_gpt2_dir.py (GPT-2, F32 and BF16) and make_encoder_dir.py (BERT, RoBERTa,
DistilBERT) it writes OUT_DIR/NAME/ (config.json with model_type and architectures,
model.safetensors, tokenizer files) and runs

    BUILD_DIR/app/headmap-cli --model OUT_DIR/NAME --text SENTENCE --npy OUT_DIR/NAME/export --json OUT_DIR/NAME/export.json

It writes OUT_DIR/run_hf_check.sh, which runs /work/shared/oracles/hf_check.py on each:

    # here (numpy, no transformers; Debian's python3 has numpy):
    /usr/bin/python3 tests/reference/hf_check_prepare.py build /tmp/hf_check
    # where transformers 5.17 is installed (copy /tmp/hf_check and hf_check.py there):
    sh /tmp/hf_check/run_hf_check.sh /path/to/hf_check.py
      (the same as, for each NAME:  python3 hf_check.py OUT_DIR/NAME OUT_DIR/NAME/export OUT_DIR/NAME/export.json)

Each line hf_check.py prints says OK or DIFFERS (attention 1e-4, loss 1e-3). The directories
are a few hundred KB each; numpy only. A variant headmap refuses is reported and left out.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_encoder_dir  # noqa: E402
import make_family_dir  # noqa: E402
import make_gpt2_dir  # noqa: E402

# Long enough to pass every sliding window and the short original contexts of the rope
# variants (make_family_dir.py's VARIANTS say which).
SENTENCE = "The cat sat on the mat because it was tired, and then it slept."

# model_type -> the class transformers builds (config.json's "architectures").
ARCHITECTURES = {
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
    "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM",
    "gpt_neox": "GPTNeoXForCausalLM", "gpt_neo": "GPTNeoForCausalLM", "gpt2": "GPT2LMHeadModel",
    "phi3": "Phi3ForCausalLM", "phi": "PhiForCausalLM", "olmo2": "Olmo2ForCausalLM", "smollm3": "SmolLM3ForCausalLM",
}


def writers():
    """(name, write(dir)) for every variant."""
    out = [(v, lambda d, v=v: make_family_dir.write_dir(d, v)) for v in make_family_dir.VARIANTS]
    out += [("gpt2_" + v, lambda d, v=v: make_gpt2_dir.write_dir(d, v)) for v in ("f32", "bf16", "untied")]
    out += [(v, lambda d, v=v: make_encoder_dir.write_dir(d, v)) for v in make_encoder_dir.VARIANTS]
    return out


def complete_config(d):
    """architectures added where the writer leaves it out (transformers reads model_type; people read both),
    and pad_token_id null where it is absent: transformers' Phi-3 and SmolLM3 configs otherwise default it to
    the real vocabularies' 32000 / 128004, past a tiny vocabulary, and refuse to build the embedding."""
    path = os.path.join(d, "config.json")
    cfg = json.load(open(path))
    changed = False
    if "architectures" not in cfg and cfg["model_type"] in ARCHITECTURES:
        cfg["architectures"] = [ARCHITECTURES[cfg["model_type"]]]
        changed = True
    if "pad_token_id" not in cfg and cfg["model_type"] in ARCHITECTURES:  # decoders (an encoder reads its own)
        cfg["pad_token_id"] = None
        changed = True
    if changed:
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    build, out = sys.argv[1], os.path.abspath(sys.argv[2])
    cli = os.path.join(build, "app", "headmap-cli")
    if not os.path.exists(cli):
        print(f"{cli} does not exist: build the target headmap-cli first")
        return 2
    wanted = set(sys.argv[3:])
    os.makedirs(out, exist_ok=True)
    done = []
    for name, write in writers():
        if wanted and name not in wanted:
            continue
        d = os.path.join(out, name)
        write(d)
        complete_config(d)
        run = subprocess.run([cli, "--model", d, "--text", SENTENCE, "--npy", os.path.join(d, "export"), "--json", os.path.join(d, "export.json")],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{name:22s} headmap-cli refused it: {run.stderr.strip()[:300]}")
            continue
        T = len(json.load(open(os.path.join(d, "export", "meta.json")))["token_ids"][0])
        print(f"{name:22s} {json.load(open(os.path.join(d, 'config.json')))['model_type']:12s} T={T}")
        done.append(name)
    script = os.path.join(out, "run_hf_check.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n# sh run_hf_check.sh PATH/TO/hf_check.py: transformers' forward against headmap's export, one line per variant\n"
                'HERE=$(cd "$(dirname "$0")" && pwd); CHECK=${1:-hf_check.py}; FAILED=0\n')
        for name in done:
            f.write(f'printf "%-22s " {name}; python3 "$CHECK" "$HERE/{name}" "$HERE/{name}/export" "$HERE/{name}/export.json" || FAILED=$((FAILED + 1))\n')
        f.write(f'echo "$FAILED of {len(done)} differ"; exit $FAILED\n')
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
    print(f"{len(done)} variants in {out} ({size / 1e6:.1f} MB); run there: sh {script} PATH/TO/hf_check.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
