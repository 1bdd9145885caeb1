#!/usr/bin/env bash
# GPU check: the CUDA backend built for sm_90, its parity tests (ctest label `gpu`), the
# throughput benchmark, milestone-1h-gemm and a 3.9 M-config `sweep gemm` (zipped shapes, a hardware axis) on the CUDA and
# OpenMP backends compared number for number, and a 198 M-config sweep on CUDA for its
# rate; then the other milestones (collective, decode, llm) on both backends, file for file,
# and a sweep of each of those families on both, with their rates; a short table is printed
# last.
#
#   tools/gpu-check.sh prepare   On a development machine with nvcc (no GPU needed): builds
#                                the sm_90 programs in build-gpu-bundle/ and packs gpu-bundle/:
#                                the GPU tests, the benchmark and the CLI, the shared libraries
#                                they load, and the Debian -dev packages (unpacked) needed to
#                                build from source on a machine that has none of them.
#   tools/gpu-check.sh [run]     On the GPU machine, from the repository root. With gpu-bundle/
#                                present it runs the bundled programs; if they cannot start
#                                there, it builds from source against gpu-bundle/deps. With no
#                                bundle it builds with the preset sm90 from installed packages.
#
# A GPU machine that cannot install packages gets the bundle with the working tree, e.g.
#   tools/gpu-check.sh prepare && <copy the tree and gpu-bundle.tar.xz over> && tools/gpu-check.sh
# prepare also packs gpu-bundle/ as gpu-bundle.tar.xz (about 40 MB: the programs are stripped;
# the folder itself is over 100 MB), which run unpacks where gpu-bundle/ is absent. The bundle
# holds a second benchmark program built with ptxas's fast compile (KERNBENCH_CUDA_FAST_COMPILE,
# the default preset's), and run measures both.
# Logs and JSON results go to $OUT (or ./gpu-check-out). Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bundle="$root/gpu-bundle"
deb_packages=(libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
              libbenchmark-dev libbenchmark1debian)

die() { echo "gpu-check: $*" >&2; exit 1; }

prepare() {
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || die "prepare needs nvcc (the CUDA toolkit)"
  export PATH="$PATH:/usr/local/cuda/bin"
  local b="$root/build-gpu-bundle"
  # libstdc++ and libgcc are linked in, so the programs only need the C library there.
  cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=Release -DKERNBENCH_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DKERNBENCH_BUILD_PYTHON=OFF -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null || die "configure failed"
  cmake --build "$b" -j"$(nproc)" --target kb_gpu_tests kb_benchmarks kernbench-gpu || die "build failed"
  rm -rf "$bundle"
  mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/lib-compat" "$bundle/deps"
  cp "$b/tests/kb_gpu_tests" "$b/kb_benchmarks" "$b/kernbench-gpu" "$bundle/bin/"
  # The benchmark again with ptxas's fast compile (the default preset's): what it costs.
  local f="$root/build-gpu-bundle-fast"
  cmake -S . -B "$f" -DCMAKE_BUILD_TYPE=Release -DKERNBENCH_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DKERNBENCH_CUDA_FAST_COMPILE=ON -DKERNBENCH_BUILD_TESTS=OFF -DKERNBENCH_BUILD_PYTHON=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null || die "configure (fast compile) failed"
  cmake --build "$f" -j"$(nproc)" --target kb_benchmarks || die "build (fast compile) failed"
  mkdir -p "$bundle/bin-fast"
  cp "$f/kb_benchmarks" "$bundle/bin-fast/"
  strip "$bundle"/bin/* "$bundle"/bin-fast/*  # host symbols only: the GPU code stays
  # Every shared library they load except the C library's own and the driver's. The C++
  # runtime (needed by yaml-cpp and benchmark) is used only where the machine's own is too old.
  ldd "$bundle"/bin/* | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
    case "$name" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|linux-vdso*|libcuda.so*) ;;
      libstdc++.so*|libgcc_s.so*) cp -L "$path" "$bundle/lib-compat/$name" ;;
      *) cp -L "$path" "$bundle/lib/$name" ;;
    esac
  done
  bundle_graphviz
  # The -dev packages, unpacked, for a build from source where the programs cannot start.
  local debs
  debs="$(mktemp -d)"
  chmod 755 "$debs"  # apt's download user must be able to write there
  (cd "$debs" && apt-get download "${deb_packages[@]}" >/dev/null) || die "apt-get download failed"
  for f in "$debs"/*.deb; do dpkg -x "$f" "$bundle/deps"; done
  rm -rf "$debs" "$bundle/deps/usr/share/doc"
  {
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (uncommitted changes)')"
    echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(nvcc --version | tail -1)"
    echo "glibc needed: $(objdump -T "$bundle"/bin/* | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  } > "$bundle/MANIFEST"
  cat "$bundle/MANIFEST"
  tar -C "$root" -cJf "$root/gpu-bundle.tar.xz" gpu-bundle || die "packing gpu-bundle.tar.xz failed"
  echo "gpu-bundle/: $(du -sh "$bundle" | cut -f1); gpu-bundle.tar.xz: $(du -sh "$root/gpu-bundle.tar.xz" | cut -f1)"
}

# Graphviz, where this machine has it (milestone-1h-ccl draws its topologies with dot), for a
# GPU machine without it: gpu-bundle/graphviz/bin/dot runs the copied dot with its plugins, the
# libraries they load (C library aside) and one font, whatever the machine has.
bundle_graphviz() {
  local dot gv plug
  dot="$(command -v dot)" || { echo "gpu-check: no Graphviz here: the bundle has none"; return 0; }
  plug="$(dirname "$(ldd "$dot" | awk '/libgvc\.so/ {print $3}')")/graphviz"
  [ -f "$plug/config6a" ] || { echo "gpu-check: Graphviz's plugins are not in $plug: the bundle has no Graphviz"; return 0; }
  gv="$bundle/graphviz"
  mkdir -p "$gv/bin" "$gv/libexec" "$gv/lib" "$gv/plugins" "$gv/fonts"
  cp -L "$dot" "$gv/libexec/dot"
  # The layout and the PNG renderer (cairo, through the pango plugin) only: the gd plugin
  # alone would bring 40 MB of image codecs. Their list (config6a) is made again for them.
  local p
  for p in core dot_layout pango; do cp -L "$plug/libgvplugin_$p.so.6" "$gv/plugins/"; done
  ldd "$gv/libexec/dot" "$gv"/plugins/*.so.6 | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
    case "$name" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|linux-vdso*) ;;
      *) cp -L "$path" "$gv/lib/$name" ;;
    esac
  done
  local font
  font="$(fc-match -f '%{file}' sans 2>/dev/null)"
  [ -f "$font" ] && cp -L "$font" "$gv/fonts/"
  cat > "$gv/fonts.conf" <<'XML'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir prefix="relative">fonts</dir><cachedir>/tmp/kernbench-gpu-fontconfig</cachedir></fontconfig>
XML
  cat > "$gv/bin/dot" <<'SH'
#!/bin/sh
# The bundled Graphviz's dot, with its own libraries, plugins and font.
d="$(cd "$(dirname "$0")/.." && pwd)"
LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GVBINDIR="$d/plugins" FONTCONFIG_FILE="$d/fonts.conf" \
  exec "$d/libexec/dot" "$@"
SH
  chmod +x "$gv/bin/dot"
  "$gv/bin/dot" -c || { echo "gpu-check: the bundled dot cannot list its plugins: the bundle has no Graphviz"; rm -rf "$gv"; return 0; }
  echo "gpu-check: bundled Graphviz $("$gv/bin/dot" -V 2>&1 | head -1): $(du -sh "$gv" | cut -f1)"
}

# Builds from source with the preset sm90 (against gpu-bundle/deps when given); sets $bin.
build_here() {
  local extra=(-DKERNBENCH_BUILD_PYTHON=OFF)  # the GPU check needs no Python module
  if [ -n "${1:-}" ]; then
    extra+=(-DCMAKE_PREFIX_PATH="$1/usr;$1/usr/lib/x86_64-linux-gnu/cmake;$1/usr/share/cmake")
  fi
  # The presets use Ninja; a machine without it builds with make.
  command -v ninja >/dev/null || extra+=(-G "Unix Makefiles")
  cmake --preset sm90 "${extra[@]}" > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; die "configure failed"; }
  cmake --build --preset sm90 -j"$(nproc)" --target kb_gpu_tests kb_benchmarks kernbench-gpu \
    > "$work/build.log" 2>&1 || { tail -40 "$work/build.log"; die "build failed"; }
  bin_tests="$root/build-sm90/tests/kb_gpu_tests"
  bin_bench="$root/build-sm90/kb_benchmarks"
  bin_cli="$root/build-sm90/kernbench-gpu"
}

# Compares two JSON files, the top-level keys named after them left out: prints
# "identical" or "DIFFERENT", and fails in the second case.
same_json() {
  python3 - "$@" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    for key in sys.argv[3:]:
        d.pop(key, None)
print("identical" if a == b else "DIFFERENT")
sys.exit(0 if a == b else 1)
PY
}

# A bench on both backends: its CSV files byte for byte, its JSON files with "backend" left
# out; prints one line, and fails when they differ or a run fails.
bench_both() {
  local b="$1" d="$work/bench-$1" t0 cuda_ms omp_ms f rc=0 what=""
  rm -rf "$d-cuda" "$d-omp"
  t0=$(date +%s%N)
  "$bin_cli" run --bench "$b" --backend cuda --out "$d-cuda" > "$work/$b-cuda.log" 2>&1 || { rc=1; what="cuda failed: $(tail -1 "$work/$b-cuda.log")"; }
  cuda_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  t0=$(date +%s%N)
  "$bin_cli" run --bench "$b" --backend omp --out "$d-omp" > "$work/$b-omp.log" 2>&1 || { rc=1; what+=" omp failed: $(tail -1 "$work/$b-omp.log")"; }
  omp_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc -eq 0 ]; then
    local n=0
    for f in "$d-omp"/*.csv; do
      [ -f "$f" ] || continue
      n=$((n + 1))
      cmp -s "$f" "$d-cuda/${f##*/}" || { rc=1; what+=" ${f##*/} DIFFERENT"; }
    done
    for f in "$d-omp"/*.json; do
      [ -f "$f" ] || continue
      n=$((n + 1))
      same_json "$f" "$d-cuda/${f##*/}" backend > /dev/null 2>&1 || { rc=1; what+=" ${f##*/} DIFFERENT"; }
    done
    [ $rc -eq 0 ] && what="$n CSV and JSON files identical"
  fi
  echo "  $b: $what (wall: cuda $cuda_ms ms, omp $omp_ms ms)"
  return $rc
}

# A sweep on both backends: the JSON with "backend" and "timing" left out, and the rates.
sweep_both() {
  local name="$1" d="$work/sweep-$1" rc=0 cmp
  shift
  "$bin_cli" sweep "$@" --recheck 0 --backend cuda --out "$d-cuda.json" > "$work/sweep-$name-cuda.log" 2>&1 || rc=1
  "$bin_cli" sweep "$@" --recheck 0 --backend omp --out "$d-omp.json" > "$work/sweep-$name-omp.log" 2>&1 || rc=1
  if [ $rc -ne 0 ]; then
    echo "  sweep $name: failed ($(tail -1 "$work/sweep-$name-cuda.log"); $(tail -1 "$work/sweep-$name-omp.log"))"
    return 1
  fi
  cmp=$(same_json "$d-cuda.json" "$d-omp.json" timing backend 2>&1) || rc=1
  python3 - "$name" "$cmp" "$d-cuda.json" "$d-omp.json" <<'PY'
import json, sys
name, cmp = sys.argv[1:3]
a, b = (json.load(open(p)) for p in sys.argv[3:5])
ca, cb = a["timing"]["configs_per_s"], b["timing"]["configs_per_s"]
deferred = a["backend"].get("deferred", "?") if isinstance(a["backend"], dict) else "?"
print(f"  sweep {name}: {cmp}, {a['space']['size']:,} configs: cuda {ca:.3g}/s (deferred {deferred}), "
      f"omp {cb:.3g}/s: {ca / cb if cb else 0:.2f}x")
PY
  return $rc
}

# The milestones of collective, decode, llm and MoE llm, and a sweep of each family, on both backends.
other_families() {
  local rc=0 b
  for b in milestone-1h-ccl milestone-gqa-decode-4cases milestone-llm-inference milestone-moe-inference; do
    bench_both "$b" || rc=1
  done
  sweep_both collective collective --bytes 2:2147483648:*2 --level pe,cube,sip,hier --algo ring,hd,tree,mesh2d,root \
    --ranks 2:8 --buffer sram,hbm --chunks 1,2,4,8,16,32 --op allreduce,allgather,reducescatter,alltoall \
    --topology "$root/topologies/ring8.yaml" || rc=1
  sweep_both decode decode --case 1,2,3,4 --s-kv 1024:1048576:*2 --batch 1:256 \
    --hw cube.hbm.bandwidth_gbps=410,819,1638 --hw cube.ipcq.bandwidth_gbps=64,128,256,512 \
    --hw pe.dma.bandwidth_gbps=64,128,256 --hw sip.cube_rows=2,4 || rc=1
  sweep_both llm llm --model llama-3.1-70b --topology "$root/topologies/ring8.yaml" --batch 1:256 \
    --context 1024:131072:*2 --tp 8 --tp-level sip --pp 1 --hw cube.hbm.bandwidth_gbps=410,819,1638 || rc=1
  return $rc
}

collect_logs() {
  local f
  for f in "$work"/*.log "$work"/*.txt; do
    [ -f "$f" ] && { echo "===== ${f##*/}"; cat "$f"; }
  done > "$out/logs.txt"
  rm -rf "$work"
}

run_checks() {
  # At most a handful of files land in $out (a device machine returns only a few);
  # everything else goes to a scratch folder whose logs are appended to $out/logs.txt.
  out="${OUT:-$root/gpu-check-out}"
  work="$(mktemp -d)"
  mkdir -p "$out"
  trap 'collect_logs' EXIT
  export KERNBENCH_SOURCE_DIR="$root"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$work/gpu.txt" 2>&1 \
    || echo "nvidia-smi failed" > "$work/gpu.txt"

  local how="" base="${LD_LIBRARY_PATH:-}" libs
  if [ ! -d "$bundle" ] && [ -f "$root/gpu-bundle.tar.xz" ]; then
    tar -C "$root" -xJf "$root/gpu-bundle.tar.xz" || die "unpacking gpu-bundle.tar.xz failed"
  fi
  if [ -x "$bundle/bin/kb_gpu_tests" ]; then
    for libs in "$bundle/lib" "$bundle/lib:$bundle/lib-compat"; do
      export LD_LIBRARY_PATH="$libs${base:+:$base}"
      if "$bundle/bin/kb_gpu_tests" --gtest_list_tests > /dev/null 2> "$work/bundle-start.log"; then
        bin_tests="$bundle/bin/kb_gpu_tests"
        bin_bench="$bundle/bin/kb_benchmarks"
        bin_cli="$bundle/bin/kernbench-gpu"
        how="bundled programs ($(head -1 "$bundle/MANIFEST"); libraries ${libs//$root\//})"
        break
      fi
    done
    if [ -z "$how" ]; then
      export LD_LIBRARY_PATH="$base"
      echo "gpu-check: the bundled programs do not start here ($(head -1 "$work/bundle-start.log")); building from source"
      build_here "$bundle/deps"
      how="built here against gpu-bundle/deps"
    fi
  else
    build_here ""
    how="built here (preset sm90)"
  fi

  # Graphviz from the bundle where the machine has none (milestone-1h-ccl needs dot).
  local graphviz="installed"
  if ! command -v dot >/dev/null; then
    if [ -x "$bundle/graphviz/bin/dot" ] && "$bundle/graphviz/bin/dot" -V > "$work/graphviz.log" 2>&1; then
      export PATH="$bundle/graphviz/bin:$PATH"
      graphviz="bundled"
    else
      graphviz="absent"
    fi
  fi

  "$bin_tests" --gtest_filter='*/cuda:GemmCuda.*' > "$out/gpu-tests.log" 2>&1
  local tests_rc=$?
  "$bin_bench" --benchmark_filter='Cuda|Omp' --benchmark_min_time=0.5 \
    --benchmark_format=json --benchmark_out="$out/benchmarks.json" > "$work/benchmarks.txt" 2>&1
  local bench_rc=$?
  # The same benchmarks built with ptxas's fast compile, where the bundle has them.
  local fast_bench="$bundle/bin-fast/kb_benchmarks"
  if [ -x "$fast_bench" ] && [ "$bin_bench" = "$bundle/bin/kb_benchmarks" ]; then
    "$fast_bench" --benchmark_filter='Cuda' --benchmark_min_time=0.5 \
      --benchmark_format=json --benchmark_out="$work/benchmarks-fast.json" > "$work/benchmarks-fast.txt" 2>&1 || bench_rc=1
  fi

  # milestone-1h-gemm on both backends: every number must agree (only "backend" differs).
  local m="$work/milestone" ms_rc=0 ms_result cuda_s omp_s t0
  rm -rf "$m-cuda" "$m-omp"
  t0=$(date +%s%N)
  "$bin_cli" run --bench milestone-1h-gemm --backend cuda --out "$m-cuda" > "$work/milestone-cuda.log" 2>&1 || ms_rc=1
  cuda_s=$(( ($(date +%s%N) - t0) / 1000000 ))
  t0=$(date +%s%N)
  "$bin_cli" run --bench milestone-1h-gemm --backend omp --out "$m-omp" > "$work/milestone-omp.log" 2>&1 || ms_rc=1
  omp_s=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $ms_rc -ne 0 ] && grep -q "no usable CUDA device\|no CUDA device is present\|has no CUDA backend" "$work/milestone-cuda.log"; then
    ms_rc=0
    ms_result="not run: $(tail -1 "$work/milestone-cuda.log")"
  else
    same_json "$m-cuda/gemm_sweep.json" "$m-omp/gemm_sweep.json" backend > "$work/milestone-compare.txt" 2>&1 || ms_rc=1
    ms_result="$(tail -1 "$work/milestone-compare.txt") (wall: cuda ${cuda_s} ms, omp ${omp_s} ms)"
  fi
  cp "$m-cuda/gemm_sweep.json" "$out/milestone-cuda.json" 2>/dev/null

  # sweep gemm with every reduction, zipped shapes and a hardware axis: 3.9 M configs on both
  # backends (same answers), then
  # 198 M configs on CUDA alone for the rate.
  local sw_rc=0 sw_result big_result
  local axes=(--tile-m 16:512:*2 --tile-n 16:512:*2 --tile-k 16:1024:*2 --pes 1:8 --cubes 1:8 --buffers 1,2
              --dataflow os,ws,is --array-rows 16,32 --array-cols 32,64 --top 100 --pareto pes)
  if grep -q "^not run" <<< "$ms_result"; then
    sw_result="not run (no device)"
    big_result="not run (no device)"
  else
    local small=(--zip m,n,k=1024/1024/1024,1024/8192/8192,8192/1024/8192,8192/8192/1024,8192/8192/8192 "${axes[@]}" --hw cube.hbm.bandwidth_gbps=410,819)
    "$bin_cli" sweep gemm "${small[@]}" --backend cuda --out "$out/sweep-cuda.json" > "$work/sweep-cuda.log" 2>&1 || sw_rc=1
    "$bin_cli" sweep gemm "${small[@]}" --backend omp --out "$work/sweep-omp.json" > "$work/sweep-omp.log" 2>&1 || sw_rc=1
    sw_result=$(same_json "$out/sweep-cuda.json" "$work/sweep-omp.json" timing backend 2>&1) || sw_rc=1
    sw_result+=", $(python3 -c 'import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print(f"""{a["space"]["size"]:,} configs: cuda {a["timing"]["configs_per_s"]:.3g}/s, omp {b["timing"]["configs_per_s"]:.3g}/s""")' \
      "$out/sweep-cuda.json" "$work/sweep-omp.json" 2>&1)"
    local big=(--m 1024:8192:+1024 --n 1024:8192:+1024 --k 1024:8192:+1024 "${axes[@]}")
    "$bin_cli" sweep gemm "${big[@]}" --backend cuda > "$work/sweep-big.log" 2>&1 || sw_rc=1
    big_result=$(sed -n 1,3p "$work/sweep-big.log" | tr -s ' ' | paste -sd ';')
  fi

  # Every other family on both backends: each milestone's CSV files byte for byte and its JSON
  # with "backend" left out, and a sweep of each family (JSON with "backend" and "timing" left
  # out), with the two rates and their ratio (the target: CUDA at 10x the OpenMP threads here).
  local fam_rc=0 fam_result=""
  if grep -q "^not run" <<< "$ms_result"; then
    fam_result="  not run (no device)"
  else
    fam_result="$(other_families)" || fam_rc=1
  fi

  {
    echo "== gpu: $(cat "$work/gpu.txt")"
    echo "== programs: $how; Graphviz $graphviz"
    echo "== gpu tests (rc=$tests_rc)"
    grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) +\]" "$out/gpu-tests.log" | sed 's/^/  /' | tail -8
    grep -m1 -E "CUDA backend not run" "$out/gpu-tests.log" | sed 's/^/  /'
    echo "== milestone-1h-gemm, cuda vs omp: $ms_result"
    echo "== sweep gemm, cuda vs omp: $sw_result"
    echo "== sweep gemm, large: $big_result"
    echo "== the other families, cuda vs omp (rc=$fam_rc)"
    echo "$fam_result"
    echo "== throughput (rc=$bench_rc); fast: the same kernels built with ptxas -Ofc=mid"
    printf '%-34s %16s %16s\n' benchmark configs/s fast
    python3 - "$out/benchmarks.json" "$work/benchmarks-fast.json" <<'PY' || grep -E "^BM_" "$work/benchmarks.txt"
import json, os, sys
fast = {}
if os.path.exists(sys.argv[2]):
    fast = {b["name"]: b.get("configs/s") for b in json.load(open(sys.argv[2]))["benchmarks"]}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    rate, f = b.get("configs/s"), fast.get(b["name"])
    other = f"{f:16.4g}" if f else f'{"-":>16}'
    print(f'{b["name"]:<34} {rate:16.4g} {other}' if rate else f'{b["name"]:<34} {b.get("error_message", "-"):>16}')
PY
  } | tee "$out/summary.txt"
  exit $(( tests_rc != 0 || bench_rc != 0 || ms_rc != 0 || sw_rc != 0 || fam_rc != 0 ))
}

case "${1:-run}" in
  prepare) prepare ;;
  run) run_checks ;;
  *) die "usage: tools/gpu-check.sh [prepare|run]" ;;
esac
