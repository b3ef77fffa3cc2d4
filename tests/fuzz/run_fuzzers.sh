#!/bin/sh
# run_fuzzers.sh BUILD_FUZZ_DIR SECONDS [PARALLEL] [NAME...]: runs each libFuzzer harness for
# SECONDS (PARALLEL at a time, 1 by default), from a copy of its seed corpus in
# BUILD_FUZZ_DIR/fuzz-work/NAME, and prints one line per harness: executions, seconds,
# executions per second, coverage, corpus size and whether it crashed. A crash leaves
# crash-* files in BUILD_FUZZ_DIR/fuzz-work/NAME: fix it, then add the file to
# tests/fuzz/crashes/NAME/ so every build replays it.
set -u
build=$1 seconds=$2 parallel=${3:-1}
shift 2; [ $# -gt 0 ] && shift
src=$(cd "$(dirname "$0")" && pwd)
names=${*:-"view settings presets lesson config_json checkpoint safetensors npy corpus hf_config hf_index hf_tokenizer"}
run_one() {
  n=$1 work="$build/fuzz-work/$1"
  mkdir -p "$work/corpus" && cp -n "$src/corpus/$n/"* "$work/corpus/" 2>/dev/null
  (cd "$work" && HEADMAP_MEMORY_BUDGET=256M OMP_NUM_THREADS=1 nice "$build/tests/fuzz/fuzz_$n" corpus -max_total_time="$seconds" \
     -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 > log.txt 2>&1)
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log.txt" | grep -o '[0-9]*$')
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$work/log.txt" | grep -o 'in [0-9]*' | grep -o '[0-9]*')
  cov=$(grep -o 'cov: [0-9]*' "$work/log.txt" | tail -1 | grep -o '[0-9]*')
  files=$(ls "$work/corpus" | wc -l)
  crashed=no; ls "$work"/crash-* > /dev/null 2>&1 && crashed=YES
  echo "$n: ${runs:-?} executions in ${secs:-?} s ($(( ${runs:-0} / (${secs:-1} > 0 ? ${secs:-1} : 1) ))/s), cov ${cov:-?}, corpus $files, exit $rc, crash $crashed"
}
running=0
for n in $names; do
  run_one "$n" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then wait; running=0; fi
done
wait
