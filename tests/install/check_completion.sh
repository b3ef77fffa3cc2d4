#!/bin/bash
# check_completion.sh COMPLETION_FILE HEADMAP_CLI: bash completes headmap-cli's subcommands,
# options (taken from its --help) and option values.
set -u
source "$1"
prog=$2
failed=0

# Prints what bash would offer for the words given (the last one is being typed).
offers() {
  COMP_WORDS=("$prog" "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _headmap_cli
  printf '%s\n' "${COMPREPLY[@]}"
}
expect() {  # expect WANTED WORDS...: WANTED must be among the offers
  local wanted=$1
  shift
  if offers "$@" | grep -qxF -- "$wanted"; then echo "ok: '$*' offers $wanted"
  else echo "FAIL: '$*' does not offer $wanted; it offers: $(offers "$@" | tr '\n' ' ')"; failed=1; fi
}
refuse() {  # refuse UNWANTED WORDS...
  local unwanted=$1
  shift
  if offers "$@" | grep -qxF -- "$unwanted"; then echo "FAIL: '$*' offers $unwanted"; failed=1
  else echo "ok: '$*' does not offer $unwanted"; fi
}

complete -p headmap-cli | grep -q _headmap_cli || { echo "FAIL: headmap-cli has no completion"; exit 1; }
expect train tr
expect make-corpus make
expect --checkpoint --chec
expect --d-model --d
expect --no-causal --no-c
expect --version --ver
expect --steps train --st
expect --eval-tokens train --eval-t
refuse --steps --st                      # a training option is not offered without train
expect magma --colormap ma
expect char --tokenizer c
expect tokenize tok
expect --pair tokenize --pa
refuse char tokenize --tokenizer c       # tokenize's --tokenizer is a file or a directory
refuse --layers --heads -                # a number is wanted after --heads, not an option

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
touch "$dir/model.safetensors" "$dir/notes.txt"
expect "$dir/model.safetensors" --checkpoint "$dir/"
refuse "$dir/notes.txt" --checkpoint "$dir/"
expect "$dir/notes.txt" --corpus "$dir/"
exit $failed
