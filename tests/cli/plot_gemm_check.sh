#!/usr/bin/env bash
# tools/plot/plot_gemm.py on a sample: three figures; a wrong schema version is one line, exit 2.
set -u
src="$1"
py=""
for c in "${KERNBENCH_PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$c" ] && "$c" -c 'import matplotlib' 2>/dev/null && { py="$c"; break; }
done
[ -n "$py" ] || { echo "skip: no Python with matplotlib"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$py" "$src/tools/plot/plot_gemm.py" --in "$src/tests/data/gemm_sweep_sample.json" --out "$out/figs" >/dev/null || exit 1
for f in gemm_latency_vs_roofline gemm_mac_util gemm_roofline; do
  [ -s "$out/figs/$f.png" ] || { echo "missing $f.png"; exit 1; }
done
sed 's/"schema_version": "1.0.0"/"schema_version": "2.0.0"/' "$src/tests/data/gemm_sweep_sample.json" > "$out/v2.json"
"$py" "$src/tools/plot/plot_gemm.py" --in "$out/v2.json" --out "$out/v2" 2>"$out/err"
rc=$?
[ "$rc" -eq 2 ] || { echo "expected exit 2, got $rc"; exit 1; }
[ "$(wc -l < "$out/err")" -eq 1 ] && grep -q '^error: .*schema_version' "$out/err" || { cat "$out/err"; exit 1; }
[ ! -e "$out/v2/gemm_roofline.png" ] || { echo "wrote a figure on error"; exit 1; }
echo ok
