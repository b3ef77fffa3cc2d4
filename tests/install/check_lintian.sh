#!/bin/sh
# check_lintian.sh DEB EXPLAINED: runs lintian on the .deb and prints everything it says,
# informational tags included. Fails on any error, and on any warning whose tag the file
# EXPLAINED does not list (with its reason).
set -eu
deb=$1 explained=$2
out=$(lintian --display-info "$deb" 2>&1) || true
echo "$out"
echo "$out" | grep -q '^E: ' && { echo "FAIL: lintian reports errors"; exit 1; }
unexplained=$(echo "$out" | sed -n 's/^W: [^ ]* \([^ ]*\).*/\1/p' | sort -u | while read -r tag; do
  grep -q "^$tag " "$explained" || echo "$tag"
done)
[ -z "$unexplained" ] || { echo "FAIL: warnings without an explanation in $explained: $unexplained"; exit 1; }
echo "-- no errors; every warning is explained in $(basename "$explained")"
