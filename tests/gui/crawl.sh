#!/bin/sh
# crawl.sh: one state of the crawler test (`headmap --crawl`, app/script/crawl.h) at one
# window size, under its own Xvfb, with HOME, the XDG directories and the working directory
# in a fresh temporary directory (removed afterwards), so nothing the crawl does can touch a
# file outside it.
#
#   crawl.sh XVFB HEADMAP PYTHON MAKE_FAMILY MAKE_ENCODER STATE SIZE [KEYS]
#   STATE: default | random | family | encoder_pair | lesson | compare | generate
#   SIZE:  big (1600x1000, every action) | small (1024x768, font scale 1.5, each widget's primary action)
#   KEYS:  a file the big run writes the widgets it used to (--crawl-record); the small run
#          then uses only what its layout moved or scrolled away, and the tabs (--crawl-skip).
#          Without it, or before the big run wrote it, each run uses everything.
# Exit 77 (skipped) when numpy is missing for a state that needs a generated model.
set -u
xvfb=$1 app=$2 py=$3 make_family=$4 make_encoder=$5 state=$6 size=$7 keys=${8:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/headmap-crawl-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/home/.config" "$tmp/home/.local/share" "$tmp/cwd"
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" XDG_DATA_HOME="$tmp/home/.local/share"
cd "$tmp/cwd" || exit 1

case $size in
  big) screen=1600x1000 && set -- --size 1600x1000
       if [ -n "$keys" ]; then rm -f "$keys" && set -- "$@" --crawl-record "$keys"; fi ;;
  small) screen=1024x768 && set -- --size 1024x768 --font-scale 1.5 --crawl-primary  # every widget, its primary action
       if [ -n "$keys" ] && [ -f "$keys" ]; then set -- "$@" --crawl-skip "$keys"; fi ;;
  *) echo "crawl.sh: unknown size $size" >&2 && exit 2 ;;
esac
case $state in
  default) ;;
  random) set -- "$@" --random-init ;;
  # A decoder family's directory: Mistral, 4 query heads on 2 K/V heads (grouped-query), a
  # sliding window of 4 tokens, shorter than the text.
  family)
    "$py" "$make_family" "$tmp/mistral" --variant mistral_window > /dev/null 2>&1 || exit 77
    set -- "$@" --model "$tmp/mistral" --then "text=The cat sat on the mat because it was warm and soft" ;;
  encoder_pair)
    "$py" "$make_encoder" "$tmp/bert" --variant bert_pretraining > /dev/null 2>&1 || exit 77
    set -- "$@" --model "$tmp/bert" --then "text=The cat sat on the [MASK]." --then "pair=it was tired" ;;
  lesson) set -- "$@" --lesson 000 --then wait --then lesson_step=5 ;;
  compare) set -- "$@" --then panel=compare --then compare_b=shipped:d128-h2-l2 ;;
  generate) set -- "$@" --then generate=6 --then wait ;;
  *) echo "crawl.sh: unknown state $state" >&2 && exit 2 ;;
esac
"$xvfb" -s "-screen 0 ${screen}x24 -noreset" "$app" --crawl "$@"
