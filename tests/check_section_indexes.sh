#!/bin/sh
# Long files open with "Sections: [a] [b] ..." and mark each section with "// ---- [a] ---".
# This checks that every index lists exactly its file's sections, in order, and that no
# file has sections without an index.
# Usage: check_section_indexes.sh SOURCE_DIR
status=0
for f in $(grep -rlE '^// (Sections:|---- \[)' "$1/core" "$1/app"); do
  index=$(awk '/^\/\/ Sections:/ {on = 1} on && !/^\/\// {exit} on {print}' "$f" | grep -o '\[[^]]*\]' | tr '\n' ' ')
  marks=$(grep -oE '^// ---- \[[^]]*\]' "$f" | sed 's#^// ---- ##' | tr '\n' ' ')
  if [ "$index" != "$marks" ]; then
    echo "$f: the index says \"$index\" but the sections are \"$marks\""
    status=1
  fi
done
exit $status
