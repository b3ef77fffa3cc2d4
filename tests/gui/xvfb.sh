#!/bin/sh
# xvfb.sh [-s "XVFB ARGS"] COMMAND [ARG...]: runs COMMAND on a virtual X display of its own
# and exits with COMMAND's status. What xvfb-run -a does, without its race: xvfb-run -a
# picks the first display number with no lock file, so two tests that start together can
# pick the same one and one of them fails. Here Xvfb chooses a free number itself and says
# which (-displayfd), so the GUI tests run side by side under ctest -j.
set -u
args="-screen 0 1600x1000x24"
if [ "${1:-}" = "-s" ]; then
  args=$2
  shift 2
fi
[ $# -gt 0 ] || { echo "usage: xvfb.sh [-s \"XVFB ARGS\"] COMMAND [ARG...]" >&2; exit 2; }
command -v Xvfb > /dev/null || { echo "xvfb.sh: Xvfb is not installed (Debian: apt install xvfb)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/headmap-xvfb-XXXXXX") || exit 2
xpid=""
cleanup() {
  [ -n "$xpid" ] && kill "$xpid" 2> /dev/null && wait "$xpid" 2> /dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
# shellcheck disable=SC2086  # the server's arguments are words
Xvfb -displayfd 3 -nolisten tcp $args 3> "$dir/display" 2> "$dir/log" &
xpid=$!
# Xvfb writes the number and a newline once it accepts clients; 10 s is far more than it takes.
i=0
until grep -q . "$dir/display" 2> /dev/null; do
  if ! kill -0 "$xpid" 2> /dev/null || [ $i -ge 200 ]; then
    echo "xvfb.sh: Xvfb did not start:" >&2
    cat "$dir/log" >&2
    exit 2
  fi
  sleep 0.05
  i=$((i + 1))
done
DISPLAY=:$(head -n 1 "$dir/display")
export DISPLAY
"$@"
rc=$?
exit $rc
