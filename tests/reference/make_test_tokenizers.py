#!/usr/bin/env python3
"""make_test_tokenizers.py: writes headmap's own small tokenizer.json files into
tests/data/tokenizers/, one per family the real files (npm, at test time) do not cover:
WordPiece (BERT-style, sentence pairs), Unigram with byte fallback and Metaspace, and a BPE
with end_of_word_suffix, unk and the remaining normalizers, pre-tokenizers, processors and
decoders. Every file is checked against Hugging Face's tokenizers like the real ones
(tests/hf_tokenizer_oracle.cmake). Deterministic: run it again and nothing changes.

    python3 tests/reference/make_test_tokenizers.py
"""
import collections
import json
import os
import unicodedata

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'tokenizers')

TEXT = """The cat sat on the mat because it was tired. The quick brown fox jumps over the lazy dog.
Attention heads in small transformers include previous token heads, induction heads and name
movers. Don't stop: it's what we're doing, and they've said I'm sure you'd like it, she'll say.
Naive cafe owners paid 12,000 for 3 kg of jalapenos in 1984. How old are you? I am six years old.
running jumped quickly slowly happiness unhappy reading readers token tokens tokenizer tokenization
注意力 世界 東京 hello world first second""".split()

SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']


def added(content, i, special=True, **flags):
    d = {'id': i, 'content': content, 'single_word': False, 'lstrip': False, 'rstrip': False,
         'normalized': False, 'special': special}
    d.update(flags)
    return d


def wordpiece():
    words = collections.Counter(w.lower().strip('.,:?!') for w in TEXT)
    vocab = list(SPECIALS)
    chars = sorted({c for w in words for c in w} | set('abcdefghijklmnopqrstuvwxyz0123456789'))
    vocab += [c for c in chars if c not in vocab]
    vocab += ['##' + c for c in chars]
    vocab += list('.,;:!?\'"()-[]<>/|@#$%^&*+=~`\\_{}')
    vocab += ['##ing', '##ed', '##s', '##ly', '##er', '##ers', '##ness', '##ion', '##ization', 'un', 'token', 'read', 'jump', 'run', '##n']
    vocab += [w for w, _ in words.most_common(60) if w and w not in vocab]
    vocab = list(dict.fromkeys(vocab))
    return {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [added(t, i) for i, t in enumerate(SPECIALS[:4])] +
                        [added('[MASK]', 4, lstrip=True)] + [added('hello world', len(vocab), special=False, normalized=True, single_word=True)],
        'normalizer': {'type': 'BertNormalizer', 'clean_text': True, 'handle_chinese_chars': True, 'strip_accents': None, 'lowercase': True},
        'pre_tokenizer': {'type': 'BertPreTokenizer'},
        'post_processor': {'type': 'TemplateProcessing',
                           'single': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                                      {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}],
                           'pair': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                                    {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}},
                                    {'SpecialToken': {'id': '[SEP]', 'type_id': 1}}],
                           'special_tokens': {'[CLS]': {'id': '[CLS]', 'ids': [2], 'tokens': ['[CLS]']},
                                              '[SEP]': {'id': '[SEP]', 'ids': [3], 'tokens': ['[SEP]']}}},
        'decoder': {'type': 'WordPiece', 'prefix': '##', 'cleanup': True},
        'model': {'type': 'WordPiece', 'unk_token': '[UNK]', 'continuing_subword_prefix': '##', 'max_input_chars_per_word': 30,
                  'vocab': {t: i for i, t in enumerate(vocab)}},
    }


def wordpiece_cased():
    """Accents kept (NFKC only), Bert processing, punctuation and digits split one by one."""
    j = wordpiece()
    vocab = list(j['model']['vocab'])
    vocab += ['é', '##é', 'É', 'ü', '##ü', 'ñ', '##ñ', 'ﬁ', 'The', 'Don', 'I', 'T', 'C', 'A', 'N', 'H']
    vocab = list(dict.fromkeys(vocab))
    j['model']['vocab'] = {t: i for i, t in enumerate(vocab)}
    j['added_tokens'] = [added(t, i) for i, t in enumerate(SPECIALS)]
    j['normalizer'] = {'type': 'Sequence', 'normalizers': [{'type': 'NFKC'}, {'type': 'Strip', 'strip_left': True, 'strip_right': True},
                                                         {'type': 'Replace', 'pattern': {'Regex': '\\s{2,}'}, 'content': ' '}]}
    j['pre_tokenizer'] = {'type': 'Sequence', 'pretokenizers': [{'type': 'WhitespaceSplit'}, {'type': 'Punctuation', 'behavior': 'Isolated'},
                                                              {'type': 'Digits', 'individual_digits': True}]}
    j['post_processor'] = {'type': 'BertProcessing', 'sep': ['[SEP]', 3], 'cls': ['[CLS]', 2]}
    return j


def unigram():
    words = collections.Counter(unicodedata.normalize('NFKD', w.lower()) for w in TEXT)
    pieces = collections.Counter()
    for w, n in words.items():
        w = '\u2581' + ''.join(c for c in w if not unicodedata.combining(c))
        for a in range(len(w)):
            for b in range(a + 1, min(len(w), a + 6) + 1):
                pieces[w[a:b]] += n
    vocab = [['<unk>', 0.0], ['<s>', 0.0], ['</s>', 0.0]]
    vocab += [['<0x%02X>' % b, 0.0] for b in range(256)]
    for i, (p, n) in enumerate(sorted(pieces.items(), key=lambda kv: (-kv[1] * len(kv[0]), kv[0]))[:700]):
        vocab.append([p, round(-1.0 - 8.0 / (n * len(p)) - i * 1e-3, 6)])
    return {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [added('<unk>', 0), added('<s>', 1), added('</s>', 2)],
        'normalizer': {'type': 'Sequence', 'normalizers': [{'type': 'NFKD'}, {'type': 'StripAccents'}, {'type': 'Lowercase'},
                                                         {'type': 'Replace', 'pattern': {'String': '\t'}, 'content': ' '}]},
        'pre_tokenizer': {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'first', 'split': True},
        'post_processor': {'type': 'TemplateProcessing',
                           'single': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                                      {'SpecialToken': {'id': '</s>', 'type_id': 0}}],
                           'pair': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                                    {'SpecialToken': {'id': '</s>', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}},
                                    {'SpecialToken': {'id': '</s>', 'type_id': 1}}],
                           'special_tokens': {'<s>': {'id': '<s>', 'ids': [1], 'tokens': ['<s>']},
                                              '</s>': {'id': '</s>', 'ids': [2], 'tokens': ['</s>']}}},
        'decoder': {'type': 'Sequence', 'decoders': [{'type': 'ByteFallback'}, {'type': 'Metaspace', 'replacement': '\u2581',
                                                                                'prepend_scheme': 'first', 'split': True}]},
        'model': {'type': 'Unigram', 'unk_id': 0, 'byte_fallback': True, 'vocab': vocab},
    }


def bpe_suffix():
    """BPE learned here with end_of_word_suffix, an unk token (fused), merges as pairs."""
    words = collections.Counter(unicodedata.normalize('NFC', w.lower()) for w in TEXT)
    seqs = {w: [c for c in w[:-1]] + [w[-1] + '</w>'] for w in words if w}
    vocab = ['<unk>', '<s>', '</s>', '<pad>', '<mask>']
    for s in seqs.values():
        vocab += [c for c in s if c not in vocab]
    merges = []
    for _ in range(250):
        pairs = collections.Counter()
        for w, s in seqs.items():
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += words[w]
        if not pairs:
            break
        (a, b), n = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        if n < 2:
            break
        merges.append([a, b])
        if a + b not in vocab:
            vocab.append(a + b)
        for w, s in seqs.items():
            o, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    o.append(a + b)
                    i += 2
                else:
                    o.append(s[i])
                    i += 1
            seqs[w] = o
    return {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [added(t, i) for i, t in enumerate(vocab[:4])] + [added('<mask>', 4, lstrip=True, rstrip=True)],
        'normalizer': {'type': 'Sequence', 'normalizers': [{'type': 'NFC'}, {'type': 'Lowercase'}]},
        'pre_tokenizer': {'type': 'Whitespace'},
        'post_processor': {'type': 'RobertaProcessing', 'sep': ['</s>', 2], 'cls': ['<s>', 1], 'trim_offsets': False, 'add_prefix_space': False},
        'decoder': {'type': 'Sequence', 'decoders': [{'type': 'Replace', 'pattern': {'String': '</w>'}, 'content': ' '},
                                                     {'type': 'Strip', 'content': ' ', 'start': 0, 'stop': 1}]},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': '<unk>', 'continuing_subword_prefix': None, 'end_of_word_suffix': '</w>',
                  'fuse_unk': True, 'byte_fallback': False, 'ignore_merges': False,
                  'vocab': {t: i for i, t in enumerate(vocab)}, 'merges': merges},
    }


def bytes_to_unicode():
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def bpe_bytelevel_trim():
    """Byte-level BPE as RoBERTa writes it: a prefix space, offsets trimmed, a BOS template
    after the ByteLevel processor (a processor Sequence); merges learned here."""
    spell = bytes_to_unicode()
    words = collections.Counter(''.join(spell[b] for b in (' ' + w).encode('utf-8')) for w in TEXT)
    vocab = ['<s>', '</s>', '<unk>'] + [spell[b] for b in range(256)]
    seqs = {w: list(w) for w in words}
    merges = []
    for _ in range(200):
        pairs = collections.Counter()
        for w, s in seqs.items():
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += words[w]
        if not pairs:
            break
        (a, b), n = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        if n < 2:
            break
        merges.append(a + ' ' + b)
        if a + b not in vocab:
            vocab.append(a + b)
        for w, s in seqs.items():
            o, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    o.append(a + b)
                    i += 2
                else:
                    o.append(s[i])
                    i += 1
            seqs[w] = o
    return {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [added('<s>', 0), added('</s>', 1), added('<unk>', 2)],
        'normalizer': None,
        'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
        'post_processor': {'type': 'Sequence', 'processors': [
            {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
            {'type': 'TemplateProcessing',
             'single': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}}],
             'pair': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                      {'SpecialToken': {'id': '</s>', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}}],
             'special_tokens': {'<s>': {'id': '<s>', 'ids': [0], 'tokens': ['<s>']}, '</s>': {'id': '</s>', 'ids': [1], 'tokens': ['</s>']}}}]},
        'decoder': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None, 'end_of_word_suffix': None,
                  'fuse_unk': False, 'byte_fallback': False, 'vocab': {t: i for i, t in enumerate(vocab)}, 'merges': merges},
    }


def roberta_trim():
    """RobertaProcessing with trim_offsets, over the same byte-level BPE."""
    j = bpe_bytelevel_trim()
    j['post_processor'] = {'type': 'RobertaProcessing', 'sep': ['</s>', 1], 'cls': ['<s>', 0], 'trim_offsets': True, 'add_prefix_space': True}
    return j


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, j in [('wordpiece_bert', wordpiece()), ('wordpiece_cased', wordpiece_cased()), ('unigram_metaspace', unigram()),
                    ('bpe_suffix', bpe_suffix()), ('bpe_bytelevel_trim', bpe_bytelevel_trim()), ('roberta_trim', roberta_trim())]:
        with open(os.path.join(OUT, name + '.json'), 'w', encoding='utf-8') as f:
            json.dump(j, f, ensure_ascii=False, indent=1)
            f.write('\n')


if __name__ == '__main__':
    main()
