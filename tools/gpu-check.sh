#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build the CUDA backend for sm_90, run the GPU-labelled
# tests and the throughput benchmark, and print a short table last. Results also go to
# $OUT (or ./gpu-check-out) as files.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1 || true

./tools/setup.sh
cmake --preset sm90 > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build --preset sm90 -j"$(nproc)" > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }

ctest --test-dir build-sm90 -L gpu --output-on-failure > "$out/gpu-tests.log" 2>&1
tests_rc=$?
./build-sm90/kb_benchmarks --benchmark_filter='Cuda|Omp' --benchmark_min_time=0.5 \
  --benchmark_format=json --benchmark_out="$out/benchmarks.json" > "$out/benchmarks.txt" 2>&1
bench_rc=$?

echo "== gpu: $(cat "$out/gpu.txt")"
echo "== gpu tests (rc=$tests_rc)"
grep -E "tests passed|tests failed|Skipped|Failed|Passed" "$out/gpu-tests.log" | tail -8
echo "== throughput (rc=$bench_rc)"
printf '%-34s %16s\n' benchmark configs/s
python3 - "$out/benchmarks.json" <<'PY' || grep -E "^BM_" "$out/benchmarks.txt"
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    rate = b.get("configs/s")
    print(f'{b["name"]:<34} {rate:16.4g}' if rate else f'{b["name"]:<34} {b.get("error_message", "-"):>16}')
PY
exit $(( tests_rc != 0 || bench_rc != 0 ))
