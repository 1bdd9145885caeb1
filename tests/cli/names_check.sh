#!/bin/sh
# No two source files in different folders share a basename (docs/adding-a-family.md): a
# name is one file, whatever folder a search, a stack trace or a compile log shows it in.
cd "$1" || exit 1
dupes=$(find src benches tests tools -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.py' -o -name '*.sh' \) \
          -not -path 'tests/fuzz/corpus/*' |
        sed 's|^\(.*\)/\([^/]*\)\.[^./]*$|\2 \1|' | sort -u | awk '{print $1}' | uniq -d)
if [ -n "$dupes" ]; then
  for b in $dupes; do
    echo "basename '$b' in several folders:"; find src benches tests tools -type f -name "$b.*" | sed 's/^/  /'
  done
  exit 1
fi
echo ok
