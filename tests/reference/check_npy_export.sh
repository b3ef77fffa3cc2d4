#!/bin/sh
# ctest: headmap-cli --npy, recomputed independently in numpy (mha_reference.py), must agree
# to 1e-5, with K/V sharing and the pitfalls too. Skips (exit 77) when numpy is not installed.
set -eu
cli=$1
here=$(dirname "$0")
/usr/bin/python3 -c "import numpy" 2>/dev/null || { echo "numpy is not installed: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$cli" --random-init --npy "$dir/a" --d-model 96 --heads 6 --layers 2 --text "The chicken didn't cross the road because it was too wide." --text "It was wide."
/usr/bin/python3 "$here/mha_reference.py" "$dir/a"
"$cli" --random-init --npy "$dir/b" --d-model 64 --heads 8 --no-causal --pitfall-interleaved --pitfall-scale-d-model --text "The lawyer who the jury believed told the truth."
/usr/bin/python3 "$here/mha_reference.py" "$dir/b"
# Grouped-query attention (W_K, W_V exported as (D, kv_heads*d_head)) and the forgotten transpose, with padding.
"$cli" --random-init --npy "$dir/c" --d-model 48 --heads 6 --kv-heads 2 --layers 2 --text "The cat sat on the mat because it was tired." --text "It was."
/usr/bin/python3 -c "import numpy as np, sys; s = np.load(sys.argv[1]).shape; assert s == (48, 16), s" "$dir/c/layer0.w_k.npy"
/usr/bin/python3 "$here/mha_reference.py" "$dir/c"
"$cli" --random-init --npy "$dir/d" --d-model 32 --heads 4 --kv-heads 1 --pitfall-no-transpose --text "The lawyer who the jury believed told the truth." --text "Yes."
/usr/bin/python3 "$here/mha_reference.py" "$dir/d"
