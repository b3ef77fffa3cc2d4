#!/bin/sh
# check_mime.sh MIME_XML WORK_DIR: headmap's MIME type for view files.
#   1. update-mime-database builds a database from the file alone, with no message (it
#      reports schema errors such as a <glob> without a pattern, yet exits 0);
#   2. the database has the glob, the magic and the parent type application/json;
#   3. when GIO's `gio` is installed: a *.headmap.json file and a view file without an
#      extension are application/x-headmap-view, and a view file named *.json stays
#      application/json (GIO trusts a single matching glob, so the glob is what counts).
set -eu
xml=$1 work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/mime/packages" "$work/files"
cp "$xml" "$work/mime/packages/"
err=$(XDG_DATA_DIRS=$work update-mime-database "$work/mime" 2>&1)
[ -z "$err" ] || fail "update-mime-database: $err"
grep -qx '[0-9]*:application/x-headmap-view:\*\.headmap\.json' "$work/mime/globs2" || fail "no glob *.headmap.json"
grep -q 'application/x-headmap-view' "$work/mime/magic" || fail "no magic"
grep -qx 'application/x-headmap-view application/json' "$work/mime/subclasses" || fail "not a subclass of application/json"
echo "-- the database has the glob, the magic and the parent type"

if command -v gio >/dev/null 2>&1; then
  # What File > Save view writes: nlohmann::json's dump(2), keys in order.
  printf '{\n  "batch": 0,\n  "checkpoint": "",\n  "format": "headmap-view",\n  "text": "x"\n}\n' > "$work/files/a.headmap.json"
  cp "$work/files/a.headmap.json" "$work/files/saved-view"
  cp "$work/files/a.headmap.json" "$work/files/view.json"
  type_of() { XDG_DATA_DIRS=$work:${XDG_DATA_DIRS:-/usr/local/share:/usr/share} gio info -a standard::content-type "$1" | sed -n 's/.*content-type: //p'; }
  for f in a.headmap.json:application/x-headmap-view saved-view:application/x-headmap-view view.json:application/json; do
    got=$(type_of "$work/files/${f%%:*}")
    echo "-- ${f%%:*}: $got"
    [ "$got" = "${f#*:}" ] || fail "${f%%:*} is $got, not ${f#*:}"
  done
else
  echo "-- gio not found: content types not checked"
fi
