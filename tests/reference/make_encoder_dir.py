#!/usr/bin/env python3
"""make_encoder_dir.py: writes tiny random BERT, RoBERTa and DistilBERT models in Hugging Face's
directory layout, in every file variant headmap reads, for tests that need no download.

    make_encoder_dir.py OUT_DIR [--variant NAME | --variant all]

Variants (see VARIANTS): BertForPreTraining with the `bert.` prefix, the MLM head, the
next-sentence head and the pooler, tokenizer.json, F32; BertModel without a prefix, the older
LayerNorm names gamma/beta, vocab.txt + tokenizer_config.json (do_lower_case true), F16; a cased
BertForMaskedLM (do_lower_case false, vocab.txt, no decoder.weight stored: tied), BF16;
RobertaForMaskedLM (byte-level BPE, <s> </s></s> pairs, positions past padding_idx 1), F16;
DistilBertForMaskedLM, F32; DistilBertModel, BF16, vocab.txt.
Each directory also gets `oracle-tokenizer.json` beside its model files' tokenizer: the same
pipeline as a tokenizer.json, for the official library (tokenizers) to load when the directory
has only vocab.txt. Tensors use Hugging Face's names and (out, in) Linear weights. Needs numpy.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_gpt2_dir  # noqa: E402
import reference_common  # noqa: E402

P = 64  # max_position_embeddings

# WordPiece vocabulary: specials, then words and ## pieces (cased forms for the cased variant).
WORDS = ["the", "a", "cat", "dog", "sat", "ran", "on", "mat", "it", "was", "tired", "because", "is", "where", "in", "park",
         "house", ".", ",", "?", "!", "'", "s", "un", "##s", "##ed", "##ing", "##er", "##ly", "##able", "happy", "play", "jump",
         "The", "Cat", "Paris", "paris", "city", "of", "france", "France", "capital", "he", "she", "went", "to", "##a", "##t", "c",
         "d", "t", "##e", "##r"]
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_vocab():
    v = {}
    for t in BERT_SPECIALS + WORDS:
        v.setdefault(t, len(v))
    return v


def bert_tokenizer_json(vocab, lowercase, template):
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    if template:  # what transformers writes for bert-base-uncased today
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                         {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                                   "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}}}
    else:
        post = {"type": "BertProcessing", "sep": ["[SEP]", sep], "cls": ["[CLS]", cls]}
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
             for t in BERT_SPECIALS]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
                           "lowercase": lowercase},
            "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": post,
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                      "vocab": vocab}}


def roberta_vocab():
    v = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for t in make_gpt2_dir.tiny_vocab():
        if t != "<|endoftext|>":
            v.setdefault(t, len(v))
    v["<mask>"] = len(v)
    return v


def roberta_tokenizer_json(vocab):
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False, "normalized": t != "<mask>" and False,
              "special": True} for t in ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True,
                               "add_prefix_space": False},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": make_gpt2_dir.MERGES}}


# name -> (model_type, sizes, dtype, options)
VARIANTS = {
    "bert_pretraining": ("bert", dict(D=32, H=4, L=2, F=48), "F32", dict(prefix=True, mlm=True, nsp=True, pooler=True, tok="json")),
    "bert_model_gamma": ("bert", dict(D=24, H=2, L=3, F=40), "F16", dict(prefix=False, gamma=True, tok="vocab", lower=True)),
    "bert_cased_bf16": ("bert", dict(D=32, H=2, L=2, F=64), "BF16", dict(prefix=True, mlm=True, no_decoder=True, tok="vocab", lower=False)),
    "roberta_mlm": ("roberta", dict(D=32, H=4, L=2, F=48), "F16", dict(prefix=True, mlm=True, pooler=False, tok="json")),
    "distilbert_mlm": ("distilbert", dict(D=32, H=4, L=2, F=64), "F32", dict(prefix=True, mlm=True, tok="json")),
    "distilbert_model_bf16": ("distilbert", dict(D=24, H=3, L=2, F=48), "BF16", dict(prefix=False, tok="vocab", lower=True)),
}


def config_for(variant):
    t, z, _, o = VARIANTS[variant]
    V = len(roberta_vocab() if t == "roberta" else wordpiece_vocab())
    if t == "distilbert":
        return {"model_type": t, "architectures": ["DistilBertForMaskedLM" if o.get("mlm") else "DistilBertModel"], "dim": z["D"],
                "n_heads": z["H"], "n_layers": z["L"], "hidden_dim": z["F"], "vocab_size": V, "max_position_embeddings": P,
                "activation": "gelu", "sinusoidal_pos_embds": False, "pad_token_id": 0}
    arch = ("RobertaForMaskedLM" if t == "roberta" else "BertForPreTraining" if o.get("nsp") else "BertForMaskedLM") if o.get("mlm") else "BertModel"
    return {"model_type": t, "architectures": [arch], "hidden_size": z["D"], "num_attention_heads": z["H"], "num_hidden_layers": z["L"],
            "intermediate_size": z["F"], "vocab_size": V, "max_position_embeddings": P + (2 if t == "roberta" else 0),
            "type_vocab_size": 1 if t == "roberta" else 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
            "pad_token_id": 1 if t == "roberta" else 0, "position_embedding_type": "absolute"}


def make_tensors(cfg, o, r):
    t = cfg["model_type"]
    distil = t == "distilbert"
    D, V = cfg["dim" if distil else "hidden_size"], cfg["vocab_size"]
    L, F = cfg["n_layers" if distil else "num_hidden_layers"], cfg["hidden_dim" if distil else "intermediate_size"]
    n = lambda *shape, s=0.2: (r.standard_normal(shape) * s).astype(np.float32)
    pre = (t + ".") if o.get("prefix") else ""
    g, b = (".gamma", ".beta") if o.get("gamma") else (".weight", ".bias")
    ln = lambda name: [(name + g, (1 + n(D, s=0.1))), (name + b, n(D, s=0.05))]
    lin = lambda name, out, inp, s=0.3: [(name + ".weight", n(out, inp, s=s)), (name + ".bias", n(out, s=0.05))]
    word = n(V, D, s=0.5)
    out = [(pre + "embeddings.word_embeddings.weight", word), (pre + "embeddings.position_embeddings.weight", n(cfg["max_position_embeddings"], D, s=0.2))]
    if not distil:
        out.append((pre + "embeddings.token_type_embeddings.weight", n(cfg["type_vocab_size"], D, s=0.3)))
    out += ln(pre + "embeddings.LayerNorm")
    if not distil:
        out.append((pre + "embeddings.position_ids", np.arange(cfg["max_position_embeddings"], dtype=np.float32)[None]))
    for l in range(L):
        if distil:
            p = pre + f"transformer.layer.{l}."
            out += lin(p + "attention.q_lin", D, D) + lin(p + "attention.k_lin", D, D) + lin(p + "attention.v_lin", D, D)
            out += lin(p + "attention.out_lin", D, D) + ln(p + "sa_layer_norm") + lin(p + "ffn.lin1", F, D) + lin(p + "ffn.lin2", D, F, 0.15)
            out += ln(p + "output_layer_norm")
        else:
            p = pre + f"encoder.layer.{l}."
            out += lin(p + "attention.self.query", D, D) + lin(p + "attention.self.key", D, D) + lin(p + "attention.self.value", D, D)
            out += lin(p + "attention.output.dense", D, D) + ln(p + "attention.output.LayerNorm")
            out += lin(p + "intermediate.dense", F, D) + lin(p + "output.dense", D, F, 0.15) + ln(p + "output.LayerNorm")
    if o.get("pooler"):
        out += lin(pre + "pooler.dense", D, D)
    if o.get("mlm"):
        bias = n(V, s=0.1)
        if distil:
            out += lin("vocab_transform", D, D) + ln("vocab_layer_norm") + [("vocab_projector.weight", word), ("vocab_projector.bias", bias)]
        elif t == "roberta":
            out += lin("lm_head.dense", D, D) + ln("lm_head.layer_norm") + [("lm_head.bias", bias), ("lm_head.decoder.weight", word),
                                                                           ("lm_head.decoder.bias", bias)]
        else:
            out += lin("cls.predictions.transform.dense", D, D) + ln("cls.predictions.transform.LayerNorm") + [("cls.predictions.bias", bias)]
            if not o.get("no_decoder"):
                out += [("cls.predictions.decoder.weight", word), ("cls.predictions.decoder.bias", bias)]
    if o.get("nsp"):
        out += lin("cls.seq_relationship", 2, D)
    return out


def write_dir(out, variant, seed=2718):
    t, _, dtype, o = VARIANTS[variant]
    os.makedirs(out, exist_ok=True)
    cfg = config_for(variant)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    named = make_tensors(cfg, o, np.random.default_rng(seed))
    make_gpt2_dir.write_safetensors(os.path.join(out, "model.safetensors"), named,
                                    lambda name: "F32" if name.endswith("position_ids") else dtype, {"format": "pt"})
    if t == "roberta":
        tok = roberta_tokenizer_json(roberta_vocab())
    else:
        vocab = wordpiece_vocab()
        tok = bert_tokenizer_json(vocab, o.get("lower", True), template=o.get("tok") == "json")
    if o.get("tok") == "json":
        with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False)
    else:
        with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("".join(w + "\n" for w in wordpiece_vocab()))
        with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": o.get("lower", True), "tokenizer_class": "BertTokenizer"}, f)
    oracle = os.path.join(os.path.dirname(os.path.abspath(out)), os.path.basename(os.path.normpath(out)) + ".oracle-tokenizer.json")
    with open(oracle, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    return cfg


def main():
    reference_common.variants_main(__doc__, VARIANTS, write_dir, "bert_pretraining")


if __name__ == "__main__":
    sys.exit(main())
