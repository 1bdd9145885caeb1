#!/usr/bin/env bash
# Sweep scale on this machine (docs/PERFORMANCE.md): a GEMM space of about 10^7 and one of
# about 10^8 configs in one process (wall time, configs/s, peak RSS), the 10^8 space as 2 MPI
# ranks, and as 4 shards run one after another and merged. Every run's summary must equal
# the single-process one (checksums, bests, top, fronts, histogram).
#   tools/benchmarks/sweep-scale.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-build}/kernbench-gpu"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
base="sweep gemm --m 16:8192:*2 --n 1024:32768:*2 --k 1024:32768:*2 --tile-m 16:256:*2 --tile-n 32:512:*2 \
--tile-k 64:1024:*2 --pes 1:8 --cubes 1:8:*2 --buffers 1,2 --dataflow os,ws,is --backend omp --recheck 0 --top 10"
small="$base --array-rows 32 --array-cols 32"
large="$base --array-rows 16,32,64 --array-cols 16,32,64,128"
timed() {  # label, then the command; prints label, wall s, peak RSS MiB, configs/s
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/$label.json"
  read -r wall rss < "$work/time"
  python3 - "$work/$label.json" "$label" "$wall" "$rss" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); wall = float(sys.argv[3])
print(f"| {sys.argv[2]} | {j['space']['size']:,} | {wall:.1f} s | {j['space']['size'] / wall / 1e6:.2f} M/s | {int(sys.argv[4]) / 1024:.0f} MiB |")
PY
}
echo "| run | configs | wall | configs/s | peak RSS |"
echo "| --- | --- | --- | --- | --- |"
timed one-small "$bin" $small --json
timed one-large "$bin" $large --json
if command -v mpirun >/dev/null; then
  OMP_NUM_THREADS=1 timed mpi2-large mpirun --allow-run-as-root --oversubscribe -np 2 "$bin" $large --json
fi
start=$(date +%s.%N)
for i in 0 1 2 3; do "$bin" $large --shard "$i/4" --out "$work/s$i.json" > /dev/null; done
timed merge4-large "$bin" merge "$work"/s0.json "$work"/s1.json "$work"/s2.json "$work"/s3.json --json
echo "(4 shards one after another, then the merge: $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s in all)"
python3 - "$work" <<'PY'
import json, sys, os
w = sys.argv[1]
def core(p):
    j = json.load(open(os.path.join(w, p)))
    for k in ("timing", "merged"): j.pop(k, None)
    return j
ref = core("one-large.json")
for p in ("mpi2-large.json", "merge4-large.json"):
    if os.path.exists(os.path.join(w, p)):
        print(f"{p}: {'identical to one process' if core(p) == ref else 'DIFFERENT'}")
PY
