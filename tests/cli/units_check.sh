#!/bin/sh
# Small units: no function in src/ longer than 120 lines or with a cyclomatic complexity over
# 40, as lizard (PyPI) measures them. Skipped, saying so, where lizard is not installed.
src="$1"
python3 -c "import lizard" 2>/dev/null || { echo "skip: lizard is not installed (python3 -m pip install lizard)"; exit 77; }
out=$(python3 -m lizard "$src/src" -l cpp -L 120 -C 40 -w 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
  echo "functions over 120 lines or a cyclomatic complexity of 40 (lizard):"
  echo "$out"
  exit 1
fi
echo "every function in src/ is within 120 lines and a cyclomatic complexity of 40"
