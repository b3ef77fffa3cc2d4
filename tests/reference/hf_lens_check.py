#!/usr/bin/env python3
"""headmap's logit lens beside Hugging Face transformers' own hidden states, read out the same way.

Run it where transformers is installed (the lent GPU machine has transformers 5.17 and torch 2.11;
CI does not: ctest holds the lens to float64 numpy instead, lens_reference.py):

  hf_lens_check.py MODEL_DIR LENS_JSON

MODEL_DIR  a decoder Hugging Face directory headmap opened (hf_check_prepare.py writes them)
LENS_JSON  what `headmap-cli --model MODEL_DIR --text ... --logit-lens final --lens-top-k 5 --json LENS_JSON` wrote

It loads the model in float32 (eager attention), runs the token ids headmap used (meta token_ids in
the JSON's "contrib" sibling, else re-read from LENS_JSON's "token_ids"), asks for every hidden
state, and reads each one as headmap's lens does: the model's final norm, its output embedding
(tied or not, with a bias where the family has one) and any final logit soft-cap. headmap's points
2l + 2 (after layer l's MLP, l < L - 1) are transformers' hidden_states[l + 1], its point 0 the
embeddings (hidden_states[0]), and its last point the model's own logits. It prints the largest
difference in the target's probability and in the top-5 probabilities. Exit 0 within 1e-4.
"""
import json
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM

torch.set_grad_enabled(False)
model_dir, lens_json = sys.argv[1], sys.argv[2]
doc = json.load(open(lens_json))
ids = doc["token_ids"][0] if "token_ids" in doc else None
lens = doc["contrib"]["logit_lens"]
model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").eval()
if ids is None:
    print("no token ids in", lens_json)
    sys.exit(2)
x = torch.tensor([ids])
out = model(x, output_hidden_states=True)
hs = out.hidden_states
L = len(lens["points"]) // 2


def final_norm(m):
    for path in ("model.norm", "model.final_layernorm", "transformer.ln_f", "gpt_neox.final_layer_norm"):
        o = m
        try:
            for part in path.split("."):
                o = getattr(o, part)
            return o
        except AttributeError:
            continue
    raise SystemExit("no final norm found on " + type(m).__name__)


norm, head = final_norm(model), model.get_output_embeddings()
cap = getattr(model.config, "final_logit_softcapping", None) or 0


def readout(h):
    z = head(norm(h))
    return cap * torch.tanh(z / cap) if cap else z


pairs = [(0, hs[0])] + [(2 * l + 2, hs[l + 1]) for l in range(L - 1)] + [(2 * L, None)]
worst_t, worst_k = 0.0, 0.0
for p, h in pairs:
    logits = out.logits[0] if h is None else readout(h)[0]
    prob = torch.softmax(logits.double(), -1).numpy()  # (T, V)
    for t in range(prob.shape[0]):
        tgt = lens["targets"][t]
        if tgt is not None:
            worst_t = max(worst_t, abs(lens["target_probs"][p][t] - prob[t, tgt["id"]]))
        for cell in lens["top"][p][t]:
            worst_k = max(worst_k, abs(cell["prob"] - prob[t, cell["id"]]))
ok = worst_t < 1e-4 and worst_k < 1e-4
print(f"{model_dir}: {model.config.model_type}, {len(pairs)} points vs transformers' hidden states: "
      f"target prob max diff {worst_t:.2e}, top-5 prob max diff {worst_k:.2e}  {'OK' if ok else 'DIFFERS'}")
sys.exit(0 if ok else 1)
