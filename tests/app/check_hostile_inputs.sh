#!/bin/sh
# check_hostile_inputs.sh XVFB HEADMAP WORKDIR (XVFB: tests/gui/xvfb.sh): the app's reproducers of issue 11.
# View files of the wrong types or absurd sizes ({"format":6} aborted the app with exit
# 134) give their message and exit 1 with --screenshot; `--then heads=-1 --then ablate=0,0`
# (a std::length_error abort) is a refused setting, and the screenshot is still taken.
#
# One virtual display for all the cases: the script runs itself under xvfb.sh once, and
# the verdict is the file it writes at the end, not the exit status of xvfb-run (which was 5
# when its own clean-up of its temporary directory fails, now and then on a busy machine).
set -u
xvfb=$1 app=$2 work=$3
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
mkdir -p "$work" && cd "$work" || exit 1
if [ -z "${HEADMAP_HOSTILE_INSIDE:-}" ]; then
  rm -f hostile.verdict
  HEADMAP_HOSTILE_INSIDE=1 "$xvfb" -s "-screen 0 1600x1000x24" sh "$self" "$@"
  rc=$?
  [ -f hostile.verdict ] || { echo "FAIL: the cases did not finish (xvfb.sh exit $rc)"; exit 1; }
  cat hostile.verdict
  grep -q '^all ok$' hostile.verdict
  exit $?
fi
exec > hostile.log 2>&1
trap 'cp hostile.log hostile.verdict' EXIT
for v in '{"format":6}' \
         '{"format":"headmap-view","version":"2"}' \
         '{"format":"headmap-view","version":1,"text":"a","config":{},"head":1e38}' \
         '{"format":"headmap-view","version":1,"text":"a","config":{"num_heads":46341,"num_layers":46341}}'; do
  printf '%s' "$v" > hostile-view.json
  "$app" --open hostile-view.json --screenshot hostile-view.png 2> hostile-view.err
  rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q 'is not a view file headmap can open' hostile-view.err; then
    echo "FAIL: exit $rc for $v"; cat hostile-view.err; exit 1
  fi
  echo "ok: $v"
done

"$app" --screenshot then.png --then heads=-1 --then ablate=0,0 2> then.err
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q 'heads must be from 1' then.err || [ ! -s then.png ]; then
  echo "FAIL: exit $rc for --then heads=-1 --then ablate=0,0"; cat then.err; exit 1
fi
echo "ok: --then heads=-1 --then ablate=0,0"
# Issue 35, F1: a lesson is data. Its steps try every setting that writes a file, aimed at
# a file of the reader's: the lesson is refused (in the window's Problem box, in the
# report, and on the terminal), exit 1 after the screenshot, and the file is byte-identical.
printf '{"mine": "do not touch"}\n' > victim.json
cp victim.json victim.orig
set_all=''
for k in export_heads export_head export_window export_npy export_json export_rollout save_view; do
  set_all="$set_all\"$k=$work/victim.json\","
done
printf '{"format": "headmap-lesson-1", "title": "T", "steps": [{"title": "a", "text": "b", "set": [%s"heads=2"]}, {"title": "c", "text": "d", "set": ["save_view=%s/victim.json"]}]}' \
  "$set_all" "$work" > writer-lesson.json
"$app" --lesson writer-lesson.json --screenshot writer-lesson.png --report writer-lesson-report.json --then lesson_step=2 --then wait 2> writer-lesson.err
rc=$?
if [ "$rc" -ne 1 ] || ! grep -q 'cannot be part of a lesson' writer-lesson.err || ! grep -q 'cannot be part of a lesson' writer-lesson-report.json \
   || ! cmp -s victim.json victim.orig; then
  echo "FAIL: exit $rc for a lesson whose steps write files"; cat writer-lesson.err; cmp victim.json victim.orig; exit 1
fi
echo "ok: a lesson whose steps write files is refused, the file untouched"
# Issue 35, F9: the app can give up. A view names a model whose read hangs (the loader's test
# stall, model_loader.h: no file can make a read hang, FIFOs are refused unopened); the person
# opens it in the window; --deadline still ends the run, with its message, and the process
# leaves at once instead of waiting on the read (before the fix: alive until the read ended).
printf '{"format":"headmap-view","version":1,"text":"a","config":{},"checkpoint":"%s/stalled-model"}' "$work" > stalled-view.json
HEADMAP_TEST_STALL_LOAD_S=3600 timeout 150 "$app" --open stalled-view.json --input "click Open model; wait" --deadline 20 \
  --screenshot stalled.png 2> stalled.err
rc=$?
if [ "$rc" -ne 1 ] || ! grep -q 'screenshot timed out' stalled.err || ! grep -q 'still being read' stalled.err; then
  echo "FAIL: exit $rc for a model read that hangs (124: the process did not leave)"; cat stalled.err; exit 1
fi
echo "ok: a read that hangs: --deadline ends the run and the process leaves"
# Issue 35, F16 in the app: File > Export lesson as PNGs is all or none, as lesson-export
# (core/io/staged_files.h). A folder stands where slide 2 goes: no slide is left in DIR
# (before: slide 1 stayed), and the message is in the terminal.
rm -rf slides-app && mkdir -p slides-app/004-02.png
"$app" --lesson 004 --screenshot slides-app.png --then export_lesson="$work/slides-app" --then wait 2> slides-app.err
rc=$?
left=$(ls -A slides-app | tr '\n' ' ')
if [ "$left" != "004-02.png " ] || ! grep -q '004-02.png' slides-app.err; then
  echo "FAIL: exit $rc, the app's lesson export left: $left"; cat slides-app.err; exit 1
fi
echo "ok: the app's lesson export writes all slides or none"
echo "all ok"
