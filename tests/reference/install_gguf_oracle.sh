#!/bin/sh
# install_gguf_oracle.sh DIR PACKAGE...: llama.cpp for the GGUF oracle tests, as npm ships it
# prebuilt (node-llama-cpp and its linux-x64 CPU binaries), installed into DIR/node_modules
# once, with --omit=optional (the CUDA and Vulkan builds are left out).
# Exit 0: installed (or already there). Exit 77 (ctest: skipped), with the reason printed,
# only when node or npm is missing or the npm registry cannot be reached; any other failure
# fails the test, so the oracle never passes silently.
set -u
dir=$1
shift
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "SKIPPED: node and npm are missing (.ci/setup installs them); the llama.cpp oracle tests cannot run"
  exit 77
fi
installed() { [ -f "$dir/node_modules/node-llama-cpp/package.json" ] && [ -d "$dir/node_modules/@node-llama-cpp/linux-x64/bins" ]; }
installed && { echo "llama.cpp's npm packages are in $dir/node_modules"; exit 0; }
registry=$(npm config get registry 2>/dev/null)
log=$(npm install --no-audit --no-fund --omit=optional --loglevel=error --fetch-retries=1 --fetch-timeout=60000 --prefix "$dir" "$@" 2>&1)
status=$?
if [ $status -ne 0 ]; then
  echo "$log"
  if echo "$log" | grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network'; then
    echo "SKIPPED: the npm registry ($registry) cannot be reached; the llama.cpp oracle tests need it once, to install: $*"
    exit 77
  fi
  echo "npm install failed (exit $status) with the registry reachable: the llama.cpp oracle tests fail"
  exit 1
fi
installed || { echo "npm install finished but $dir/node_modules lacks node-llama-cpp or its linux-x64 binaries"; exit 1; }
echo "installed into $dir/node_modules: $*"
