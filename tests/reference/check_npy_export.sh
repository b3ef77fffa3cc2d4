#!/bin/sh
# ctest: headmap-cli --npy, recomputed independently in numpy (mha_reference.py), must agree
# to 1e-5. Skips (exit 77) when numpy is not installed.
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
