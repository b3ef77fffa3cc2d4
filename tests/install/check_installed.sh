#!/bin/sh
# check_installed.sh: installs headmap and runs the installed programs away from the source.
#
#   check_installed.sh prefix SOURCE_DIR BUILD_DIR WORK_DIR   cmake --install into a prefix,
#                                                             then move the prefix elsewhere
#   check_installed.sh deb    SOURCE_DIR BUILD_DIR WORK_DIR   cpack -G DEB, then dpkg-deb -x
#
# Then, on the installed tree:
#   1. the expected files are there, and assets/ matches the source's (less the screenshot);
#   2. no installed file contains the source or build directory's path;
#   3. from another working directory, with $HEADMAP_DATA_DIR unset and the source tree
#      hidden (a private mount namespace with an empty tmpfs over it, when this user may
#      make one), headmap-cli --version names the installed data, headmap-cli runs on a
#      shipped checkpoint and writes a PNG, and headmap --screenshot draws the trained
#      model under Xvfb;
#   4. the man pages render without warnings.
# The deb mode also checks the control fields and writes the .deb to WORK_DIR/deb for the
# lintian test (the logs stay in WORK_DIR too). Exit status 0 when every check holds.
set -eu
mode=$1 src=$(cd "$2" && pwd) build=$(cd "$3" && pwd) work=$4
unset HEADMAP_DATA_DIR

fail() { echo "FAIL: $*" >&2; exit 1; }
say() { echo "-- $*"; }

# WORK_DIR keeps the logs and the .deb; the installed trees go to a temporary directory
# outside the source tree, which step 3 hides.
rm -rf "$work"
mkdir -p "$work"
out=$(cd "$work" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/headmap-install-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
case "$work/" in "$src/"*|"$build/"*) fail "TMPDIR is inside the source or build tree" ;; esac

# ---- install -------------------------------------------------------------------------
case "$mode" in
  prefix)
    cmake --install "$build" --prefix "$work/first" >"$out/install.log"
    # Relocatable: move the whole prefix; nothing may remember where it was installed.
    mv "$work/first" "$work/moved"
    root=$work/moved ;;
  deb)
    (cd "$build" && cpack -G DEB -B "$out/deb" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; fail "cpack"; }
    deb=$(ls "$out"/deb/headmap_*.deb)
    say "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
    dpkg-deb --info "$deb" > "$out/control.txt"
    cat "$out/control.txt"
    for field in "Section: science" "Priority: optional" "Maintainer:" "Description:" "Homepage:"; do
      grep -q "^ $field" "$out/control.txt" || fail "the control file has no '$field'"
    done
    # dpkg-shlibdeps found the shared libraries the binaries link to.
    for lib in libc6 libstdc++6 libglfw3 libfontconfig1; do
      grep "^ Depends:" "$out/control.txt" | grep -q "$lib" || fail "Depends lacks $lib"
    done
    # OpenMP's runtime: GCC's libgomp1, or LLVM's libomp5 in a clang build.
    grep "^ Depends:" "$out/control.txt" | grep -qE "libgomp1|libomp5" || fail "Depends lacks an OpenMP runtime (libgomp1 or libomp5)"
    # The fonts for scripts DejaVu Sans lacks (app/common/fonts.h).
    for font in fonts-noto-cjk fonts-noto-core fonts-symbola; do
      grep "^ Recommends:" "$out/control.txt" | grep -q "$font" || fail "Recommends lacks $font"
    done
    dpkg-deb -x "$deb" "$work/extracted"
    # The metainfo together with the desktop entry and the icons it names.
    if command -v appstreamcli >/dev/null 2>&1; then
      appstreamcli validate-tree --no-net "$work/extracted" || fail "appstreamcli validate-tree"
    fi
    root=$work/extracted/usr ;;
  *) echo "usage: check_installed.sh prefix|deb SOURCE_DIR BUILD_DIR WORK_DIR" >&2; exit 2 ;;
esac

# ---- 1. the files --------------------------------------------------------------------
data=$root/share/headmap
for f in bin/headmap bin/headmap-cli share/headmap/assets/presets.json share/headmap/assets/fonts/DejaVuSans.ttf \
         share/man/man1/headmap.1.gz share/man/man1/headmap-cli.1.gz \
         share/bash-completion/completions/headmap-cli share/doc/headmap/copyright share/doc/headmap/changelog.gz \
         share/icons/hicolor/scalable/apps/*.svg share/icons/hicolor/16x16/apps/*.png \
         share/icons/hicolor/256x256/apps/*.png share/applications/*.desktop share/metainfo/*.metainfo.xml \
         share/mime/packages/*.xml; do
  # shellcheck disable=SC2086
  ls $root/$f >/dev/null 2>&1 || fail "not installed: $f"
done
[ ! -e "$data/assets/screenshot.png" ] && [ ! -e "$data/assets/screenshots.sh" ] || fail "the README's screenshots or their script were installed"
# The whole of assets/ (new checkpoints included) but the README's screenshots, and nothing else.
(cd "$src/assets" && find . -type f ! -name '*.png' ! -name screenshots.sh | sort) > "$work/assets.src"
(cd "$data/assets" && find . -type f | sort) > "$work/assets.installed"
diff "$work/assets.src" "$work/assets.installed" || fail "installed assets/ differs from the source's"
for f in $(cat "$work/assets.src"); do
  cmp -s "$src/assets/$f" "$data/assets/$f" || fail "installed $f differs from the source's"
done
say "$(wc -l < "$work/assets.installed") asset files installed"

# ---- 2. no compiled-in path -----------------------------------------------------------
for dir in "$src" "$build"; do
  if grep -rlF "$dir" "$root"; then fail "the files above contain $dir"; fi
done
say "no installed file names $src or $build"

# ---- 3. run the installed programs away from the source -------------------------------
ckpt=$(ls "$data"/assets/checkpoints/*.safetensors | head -n 1)
[ -n "$ckpt" ] || fail "no shipped checkpoint installed"
mkdir -p "$work/elsewhere"
# The virtual display's script, copied out of the source tree that run.sh runs without.
cp "$src/tests/gui/xvfb.sh" "$work/xvfb.sh"
cat > "$work/run.sh" <<EOF
set -eu
cd "$work/elsewhere"
if [ -e "$src/CMakeLists.txt" ]; then echo "-- the source tree is still reachable"; else echo "-- the source tree is hidden"; fi
"$root/bin/headmap-cli" --version > version.txt
cat version.txt
grep -qxF "data: $data (installed, ../share/headmap from the executable)" version.txt
"$root/bin/headmap" --version | grep -qxF "data: $data (installed, ../share/headmap from the executable)"
"$root/bin/headmap-cli" --checkpoint "$ckpt" --text "The cat sat on the mat because it was tired." \
    --json run.json --png heads.png > cli.txt
grep -q '"trained (' run.json
file heads.png | grep -q "PNG image data"
echo "-- headmap-cli ran on \$(basename "$ckpt") and drew heads.png"
sh "$work/xvfb.sh" -s "-screen 0 1600x1000x24" "$root/bin/headmap" --screenshot shot.png --report drawn.json
file shot.png | grep -q "PNG image data, 1600 x 1000"
grep -q '"trained": true' drawn.json
grep -q '"heatmaps_drawn": [1-9]' drawn.json
echo "-- headmap --screenshot drew the trained model"
# The desktop entry runs \`headmap %f\`: a view file as the only argument opens it.
printf '{"format": "headmap-view", "version": 1, "text": "A view file opened from a file manager.", "config": {"d_model": 24, "num_heads": 6, "num_layers": 1}}' > opened.headmap.json
sh "$work/xvfb.sh" -s "-screen 0 1600x1000x24" "$root/bin/headmap" --screenshot view.png --report view.json opened.headmap.json
grep -q '"heatmaps_drawn": 6' view.json
echo "-- headmap FILE opened a view file"
EOF
if unshare --mount true 2>/dev/null; then
  # Hide the source tree (and the build tree inside it) behind an empty tmpfs.
  unshare --mount sh -c "mount --make-rprivate / && mount -t tmpfs tmpfs '$src' && sh '$work/run.sh'" \
    || fail "the installed programs failed (source tree hidden)"
  case "$build/" in "$src/"*) ;; *) say "the build tree is outside the source tree and stays visible" ;; esac
else
  say "cannot make a mount namespace here: the source tree stays reachable (step 2 covers compiled-in paths)"
  sh "$work/run.sh" || fail "the installed programs failed"
fi

# ---- 4. man pages --------------------------------------------------------------------
for page in "$root"/share/man/man1/*.1.gz; do
  warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
  [ -z "$warnings" ] || fail "$(basename "$page"): $warnings"
done
say "man pages render without warnings"
say "every check holds ($mode)"
