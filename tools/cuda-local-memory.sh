#!/usr/bin/env bash
# Local memory per CUDA thread of each family's kernels, as ptxas reports it for real sm_90
# code: the stack frame (the model's state lives there), spill stores and registers of the
# sweep's EvalIndex kernel and eval's EvalOne kernel (the larger of its own frame and the
# cumulative stack size with its callees); for a family evaluated in two stages, its first
# stage's (EvalIndexSmall, EvalSmall) and its second's (RedoIndex, RedoOne). Needs nvcc, not
# a GPU.
#
#   tools/cuda-local-memory.sh [FAMILY ...]    FAMILY: gemm, allreduce, decode, llm (default: all)
#
# Each family's unit is compiled as the CUDA backend compiles it (src/device/backends/
# cuda_family.cuh), one after the other; allreduce and llm take minutes each on 2 cores.
# docs/PERFORMANCE.md records the figures (issue: a config's state at most 16 KiB).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "cuda-local-memory: needs nvcc (the CUDA toolkit)" >&2; exit 1; }
families=("$@")
[ ${#families[@]} -gt 0 ] || families=(gemm allreduce decode llm)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-10s %-10s %12s %12s %10s\n' family kernel "stack bytes" "spill bytes" registers
for f in "${families[@]}"; do
  model=$(sed -n 's/.*X('"$f"', \(::kb::[A-Za-z0-9_]*\)).*/\1/p' src/device/models/families.h)
  [ -n "$model" ] || { echo "cuda-local-memory: no family '$f' in src/device/models/families.h" >&2; exit 2; }
  printf '#include "device/backends/cuda_family.cuh"\nKB_CUDA_FAMILY_UNIT(%s)\n' "$model" > "$tmp/$f.cu"
  "$nvcc" -DKB_HAVE_CUDA=1 -I"$PWD/src" -O3 -DNDEBUG --expt-relaxed-constexpr -std=c++17 \
    '--generate-code=arch=compute_90,code=[sm_90]' -Xptxas -v -c "$tmp/$f.cu" -o "$tmp/$f.o" > "$tmp/$f.log" 2>&1 ||
    { cat "$tmp/$f.log" >&2; exit 1; }
  python3 - "$f" "$tmp/$f.log" <<'EOF'
import re, sys
family, log = sys.argv[1], open(sys.argv[2]).read().split("\n")
KERNELS = ("RedoIndex", "RedoOne", "EvalIndexSmall", "EvalSmall", "EvalIndex", "EvalOne")
rows = {}
kernel = None
for i, line in enumerate(log):
    m = re.search(r"Function properties for (\S+)", line)
    if m:
        name = m.group(1)
        # Two-stage families (src/device/sweep/two_stage.h): the small first stage, and the
        # second (Redo*, the full state for the deferred configs) whose name holds EvalIndex too.
        kernel = next((k for k in KERNELS if k in name), None)
        if kernel and i + 1 < len(log):
            s = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", log[i + 1])
            if not s:
                sys.exit(f"cuda-local-memory: no stack frame line after {name[:60]}...")
            stack, regs = int(s.group(1)), None
            for later in log[i + 2:]:  # this kernel's "Used N registers, ..., M bytes cumulative stack size"
                if "Function properties" in later or "Compiling entry" in later:
                    break
                r = re.search(r"Used (\d+) registers", later)
                if r:
                    regs = int(r.group(1))
                    cum = re.search(r"(\d+) bytes cumulative stack size", later)
                    stack = max(stack, int(cum.group(1))) if cum else stack
                    break
            old = rows.get(kernel)
            new = (stack, int(s.group(2)), regs)
            rows[kernel] = new if old is None or new[0] > old[0] else old
for kernel in KERNELS:
    if kernel in rows:
        stack, spill, regs = rows[kernel]
        print(f"{family:<10} {kernel:<10} {stack:>12,} {spill:>12,} {regs if regs is not None else '?':>10}")
if not rows:
    sys.exit(f"cuda-local-memory: ptxas reported no evaluation kernel for {family}")
EOF
done
