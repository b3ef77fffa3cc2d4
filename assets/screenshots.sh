#!/bin/sh
# assets/screenshots.sh [NAME...]: remakes the screenshots that README.md (and
# assets/lessons/README.md) show, each from a recorded `headmap --screenshot` run on a virtual
# display of its own (tests/gui/xvfb.sh), then reduces it to 64 colours (ImageMagick), and
# crops the Contributions ones to the panel the caption is about. With NAMEs (e.g. `screenshot
# contrib-rollout`), only those. Run from anywhere; needs Xvfb, ImageMagick's convert and, for
# the BERT and Gemma 2 shots, python3 with numpy (tests/reference/make_*_dir.py write the tiny
# random models into a temporary directory).
#   HEADMAP=path/to/headmap   the app to run (default: build/app/headmap)
# The app reads this tree's assets (HEADMAP_DATA_DIR), so a change to a checkpoint, a lesson or
# a preset shows here.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
app=${HEADMAP:-$root/build/app/headmap}
case $app in /*) ;; *) app=$PWD/$app ;; esac
cd "$root"
[ -x "$app" ] || { echo "screenshots.sh: no app at $app (build it, or set HEADMAP)" >&2; exit 2; }
HEADMAP_DATA_DIR=$root
tmp=$(mktemp -d "${TMPDIR:-/tmp}/headmap-shots-XXXXXX")
XDG_CACHE_HOME=$tmp/cache  # the corpus search's index: never the user's cache
export HEADMAP_DATA_DIR XDG_CACHE_HOME
trap 'rm -rf "$tmp"' EXIT

twice="My grandmother planted tomatoes in the garden. My grandmother planted tomatoes in the garden."
aunt="My aunt keeps three green parrots in the kitchen."
cat_="The cat sat on the mat because it was tired."

wanted() { [ -z "$only" ] || case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
only="$*"

# shot NAME WxH [APP ARGS...]: one run, at that window size on a screen of the same size.
shot() {
  name=$1 size=$2
  shift 2
  wanted "$name" || return 0
  echo "== assets/$name.png" >&2
  # In the temporary directory, so that a model there is named by its short relative path.
  (cd "$tmp" && "$root/tests/gui/xvfb.sh" -s "-screen 0 ${size}x24" "$app" --screenshot "$tmp/$name.png" --size "$size" "$@" > "$tmp/$name.log" 2>&1) ||
    { cat "$tmp/$name.log" >&2; echo "screenshots.sh: $name failed" >&2; exit 1; }
}
# keep NAME [CROP]: 64 colours, no dithering (the text stays crisp), no metadata (a rerun that
# draws the same writes the same bytes, but for the "ms" timings), optionally cropped (WxH+X+Y).
keep() {
  wanted "$1" || return 0
  convert "$tmp/$1.png" ${2:+-crop "$2" +repage} +dither -colors 64 -strip "assets/$1.png"
}

# The window as it opens on a sentence said twice: layer 1, the chip "m" of the second copy.
shot screenshot 1600x1000 --text "$twice" --then layer=1 --then select_token=14
keep screenshot
# The projector: the second copy stops at "the"; head 1.1 (induction) switched off.
shot classroom-projector 1024x768 --font-scale 1.5 \
  --text "My grandmother planted tomatoes in the garden. My grandmother planted tomatoes in the" \
  --then layer=1 --then ablate=1,1
keep classroom-projector
shot lesson-player 1024x768 --font-scale 1.5 --lesson 001 --then lesson_step=5
keep lesson-player
shot classroom-compare 1024x768 --font-scale 1.5 --text "$cat_" --panel compare --then pitfall=scale-d-model=on
keep classroom-compare
# Focus on head 2 with its slice of D unfolded and the concatenation enlarged.
shot classroom-focus 1024x768 --text "$cat_" --panel focus --then head=2 --then focus_step=8 --then show=slice
keep classroom-focus
shot classroom-focus-large 1024x768 --font-scale 1.5 --text "My grandmother planted tomatoes in the garden last spring." \
  --panel focus --then focus_step=6
keep classroom-focus-large
shot classroom-batch 1024x768 --font-scale 1.5 --text "$cat_" --text "The lawyer who the jury believed told the truth." \
  --text "The chicken didn't cross the road because it was too wide." --then sentence=2
keep classroom-batch
words=$(i=0; while [ $i -lt 2100 ]; do printf 'w%d ' $i; i=$((i + 1)); done)
shot classroom-long 1024x768 --random-init --d-model 64 --tokenizer word --context 2048 --text "$words"
keep classroom-long
# assets/lessons/README.md's: grouped-query attention in the passport.
shot classroom-gqa 1024x768 --text "$cat_" --panel passport --then kv_heads=2
keep classroom-gqa
if wanted encoder-pair; then
  /usr/bin/python3 tests/reference/make_encoder_dir.py "$tmp/bert" --variant bert_pretraining > /dev/null
  shot encoder-pair 1600x1000 --model bert --text "The cat sat on the [MASK]." --then "pair=it was tired" --then pair_filter=ab
  keep encoder-pair
fi
# The Contributions tab, cropped to the middle column.
shot contrib-patching 1600x1000 --text "$aunt My aunt keeps three" --then panel=contrib --then contrib_view=patching \
  --then "corrupted=My aunt keeps four green parrots in the kitchen. My aunt keeps three" --then patch_head=0,0
keep contrib-patching 750x420+379+30
shot contrib-detectors 1600x1000 --text "$aunt $aunt" --then panel=contrib --then contrib_view=detectors --then detector=painted \
  --input "click start from induction; wait"
keep contrib-detectors 750x640+379+30
shot contrib-rollout 1600x1000 --text "$aunt $aunt" --then panel=contrib --then contrib_view=rollout
keep contrib-rollout 750x700+379+30
# The corpus search: head 1.1 (the induction head) over the shipped corpus.
shot contrib-corpus 1600x1000 --text "$aunt" --then panel=contrib --then contrib_view=corpus --then layer=1 --then head=1 \
  --then corpus_search=shipped --then wait
keep contrib-corpus 750x700+379+30
# The views of issue 39 on a sentence said twice: each layer's prediction, the heads at a glance,
# attention by distance, and head 1.1's circuits from the weights.
for v in lens overview offsets circuits; do
  shot contrib-$v 1600x1000 --text "$twice" --then panel=contrib --then contrib_view=$v --then layer=1 --then head=1
  keep contrib-$v 750x700+379+30
done
if wanted contrib-attribution; then
  /usr/bin/python3 tests/reference/make_family_dir.py "$tmp/gemma2" --variant gemma2 > /dev/null
  shot contrib-attribution 1600x1000 --model gemma2 --text "The cat sat on the mat." --input "click next ·w; wait"
  keep contrib-attribution 1130x700+0+0
fi
