#!/bin/sh
# Regenerates the golden fixtures: inputs and weights exported by headmap-cli, expected
# outputs computed by mha_reference.py (numpy only). Run from the repository root after a
# build:  tests/reference/make_fixtures.sh build/app/headmap-cli
# The C++ test (tests/test_golden.cpp) feeds the inputs to the core and compares with the
# expected outputs. headmap's own outputs are removed so nothing is compared with itself.
set -eu
cli=${1:-build/app/headmap-cli}
out=tests/reference/fixtures
rm -rf "$out"
mk() {
  name=$1; shift
  "$cli" "$@" --npy "$out/$name" >/dev/null
  /usr/bin/python3 tests/reference/mha_reference.py "$out/$name" --write "$out/$name" --randomize-biases 11
  rm -f "$out/$name/attention.npy" "$out/$name"/layer*.attn_out.npy
}
mk causal_padded_d24_h4 --d-model 24 --heads 4 --layers 2 --seed 3 \
  --text "The cat sat on the mat because it was tired." --text "It was tired."
mk bidirectional_d96_h6_t7 --d-model 96 --heads 6 --layers 1 --no-causal --text "a b c d e f g"
mk pitfalls_scale_interleaved_nowo_d32_h4 --d-model 32 --heads 4 --layers 1 \
  --pitfall-scale-d-model --pitfall-interleaved --pitfall-no-wo --text "The lawyer who the jury believed told the truth."
mk pitfalls_reversed_averaged_d16_h2 --d-model 16 --heads 2 --layers 1 --pitfall-reversed-mask --pitfall-head-averaged \
  --text "one two three four five" --text "six seven"
