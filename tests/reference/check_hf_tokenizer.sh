#!/bin/sh
# check_hf_tokenizer.sh NODE_MODULES TOKENIZER_JSON CHECKER OUT_JSON: the official answers
# for every case (hf_tokenizer_oracle.mjs), then headmap's, compared (check_hf_tokenizer).
set -eu
modules=$1 file=$2 checker=$3 out=$4
command -v node >/dev/null || { echo "node is missing: .ci/setup installs it"; exit 77; }
[ -d "$modules/tokenizers" ] || { echo "$modules/tokenizers is missing: the hf_tokenizer_oracle_setup test installs it"; exit 77; }
node "$(dirname "$0")/hf_tokenizer_oracle.mjs" "$modules" "$file" > "$out"
exec "$checker" "$file" "$out"
