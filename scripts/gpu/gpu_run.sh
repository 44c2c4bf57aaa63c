#!/usr/bin/env bash
# The one-shot GPU run of the ampc runtime's CUDA backend.
#
# On a bare GPU machine (CUDA toolkit, CMake, Ninja, PyTorch; no LLVM/MLIR,
# no OpenBLAS, no GoogleTest) this script
#   1. builds the runtime standalone with its CUDA backend, OpenBLAS and
#      GoogleTest taken from a carried prefix (made on a developer machine
#      with --prepare) or from the system;
#   2. runs every CUDA test (the Cuda.* and CudaFast.* GoogleTest cases and
#      the lazy-loading check) in its own process with a timeout, so a
#      device fault in one cannot poison the others;
#   3. times the runtime's kernels at GPT-2-small sizes (bench/cuda/
#      kernel_bench.cpp) and the same cases in PyTorch (bench/cuda/
#      torch_ref.py) in the same run;
#   4. writes everything to $OUT/gpu_run.json and a readable
#      $OUT/gpu_summary.txt.
#
#   scripts/gpu/gpu_run.sh --prepare DIR     # here: fill a carry prefix
#   scripts/gpu/gpu_run.sh [--carry DIR]     # there: the whole run
#   scripts/gpu/gpu_run.sh --dry-run [--runtime-build DIR]
#
# --dry-run does everything up to the first CUDA call: checks the tools,
# configures and builds (or reuses --runtime-build), lists every test and
# benchmark case with the command it would run, and writes the JSON and the
# summary marked "dry_run". Environment: OUT (results, default
# ./gpu-results), PYTHON (the one with torch, default python3), BUILD_DIR (default /tmp/ampc-gpu-build), CUDA_ARCHS
# (default 90), TEST_TIMEOUT (seconds per test, default 150).
#
# Not in this script yet: the emitted C++ of the examples and the
# GPT-2-small training step against PyTorch eager AMP (see docs/cuda.md).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DRY=0
CARRY=""
PREPARE=""
RT_BUILD=""
while [ $# -gt 0 ]; do
  case "$1" in
  --dry-run) DRY=1 ;;
  --carry) CARRY="$2"; shift ;;
  --prepare) PREPARE="$2"; shift ;;
  --runtime-build) RT_BUILD="$2"; shift ;;
  --out) OUT="$2"; shift ;;
  -h | --help) sed -n 2,30p "$0"; exit 0 ;;
  *) echo "gpu_run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "[gpu_run] $*" >&2; }

# ------------------------------------------------------------- --prepare --
if [ -n "$PREPARE" ]; then
  # OpenBLAS (with its Fortran runtime) and GoogleTest, in the layout their
  # CMake files expect, under PREFIX/usr.
  P="$PREPARE/usr"
  LIB=lib/x86_64-linux-gnu
  mkdir -p "$P/$LIB/cmake" "$P/include"
  for f in libopenblas.so.0 libgtest.a libgtest_main.a libgmock.a \
           libgmock_main.a; do
    [ -e "/usr/$LIB/$f" ] && cp -L "/usr/$LIB/$f" "$P/$LIB/$f"
  done
  # One copy of the 36 MB library (the carry must stay under 64 MB).
  ln -sf libopenblas.so.0 "$P/$LIB/libopenblas.so"
  for f in libgfortran.so.5 libquadmath.so.0; do
    [ -e "/$LIB/$f" ] && cp -L "/$LIB/$f" "$P/$LIB/$f"
  done
  cp -r /usr/$LIB/cmake/GTest "$P/$LIB/cmake/" 2>/dev/null
  cp -r /usr/include/gtest /usr/include/gmock "$P/include/" 2>/dev/null
  for f in /usr/include/x86_64-linux-gnu/cblas*.h \
           /usr/include/x86_64-linux-gnu/openblas_config.h \
           /usr/include/x86_64-linux-gnu/f77blas.h; do
    [ -e "$f" ] && cp -L "$f" "$P/include/"
  done
  du -sh "$PREPARE" >&2
  log "prepared $PREPARE (pass it with --carry)"
  exit 0
fi

OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD_DIR="${BUILD_DIR:-/tmp/ampc-gpu-build}"
ARCHS="${CUDA_ARCHS:-90}"
TEST_TIMEOUT="${TEST_TIMEOUT:-150}"
PY="${PYTHON:-python3}" # the Python that has torch
START=$(date +%s)
RECORDS="$OUT/records.jsonl" # one JSON object a line, merged at the end
: >"$RECORDS"
record() { echo "$1" >>"$RECORDS"; }
jstr() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

# ------------------------------------------------------------ environment --
GPU="$(nvidia-smi --query-gpu=name,driver_version,memory.total \
       --format=csv,noheader 2>/dev/null | head -1)"
NVCC="$(nvcc --version 2>/dev/null | tail -1)"
TORCH="$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
record "{\"kind\": \"env\", \"gpu\": $(jstr "${GPU:-none}"), \"nvcc\": $(jstr "${NVCC:-none}"), \"cmake\": $(jstr "$(cmake --version 2>/dev/null | head -1)"), \"torch\": $(jstr "${TORCH:-none}"), \"commit\": $(jstr "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"), \"dry_run\": $([ $DRY = 1 ] && echo true || echo false)}"
for tool in cmake nvcc python3 timeout; do
  command -v $tool >/dev/null || { log "missing tool: $tool"; exit 1; }
done

# ------------------------------------------------------------------ build --
if [ -n "$RT_BUILD" ]; then
  B="$(cd "$RT_BUILD" && pwd)"
  log "reusing the runtime build in $B"
else
  B="$BUILD_DIR"
  GEN=()
  command -v ninja >/dev/null && GEN=(-G Ninja)
  PREFIX=()
  if [ -n "$CARRY" ]; then
    C="$(cd "$CARRY" && pwd)/usr"
    PREFIX=("-DCMAKE_PREFIX_PATH=$C" "-DAMPC_CBLAS_INCLUDE_DIR=$C/include")
    export LD_LIBRARY_PATH="$C/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  log "building the runtime in $B (CUDA archs $ARCHS)"
  t0=$(date +%s)
  if cmake -S "$ROOT/runtime" -B "$B" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
       "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS" -DAMPC_RUNTIME_BUILD_BENCH=OFF \
       -DAMPC_RUNTIME_INSTALL=OFF "${PREFIX[@]}" >"$OUT/build.log" 2>&1 &&
     cmake --build "$B" -j "$(nproc)" >>"$OUT/build.log" 2>&1; then
    cuda_on=$(grep -q "CUDA backend ON" "$OUT/build.log" && echo true || echo false)
    record "{\"kind\": \"build\", \"ok\": true, \"cuda_backend\": $cuda_on, \"seconds\": $(( $(date +%s) - t0 ))}"
  else
    record "{\"kind\": \"build\", \"ok\": false, \"seconds\": $(( $(date +%s) - t0 ))}"
    tail -30 "$OUT/build.log" >&2
    B=""
  fi
fi

# The kernel benchmark: a plain C++ program against the built runtime.
KB=""
if [ -n "$B" ] && [ -e "$B/libampc_runtime.so" ]; then
  KB="$B/kernel_bench"
  # BENCH_CXXFLAGS / BENCH_LDFLAGS: the runtime build's own flags (e.g. a
  # sanitizer build's), so the program links against that library.
  # shellcheck disable=SC2086
  if ! c++ -std=c++17 -O2 ${BENCH_CXXFLAGS:-} -I"$ROOT/runtime/include" \
       "$ROOT/bench/cuda/kernel_bench.cpp" -L"$B" -lampc_runtime \
       -Wl,-rpath,"$B" ${BENCH_LDFLAGS:-} -o "$KB" >>"$OUT/build.log" 2>&1; then
    record "{\"kind\": \"build_bench\", \"ok\": false}"
    KB=""
  fi
fi

# ------------------------------------------------------------------ tests --
TESTS="$B/test/ampc_runtime_tests"
if [ -n "$B" ] && [ -x "$TESTS" ]; then
  names=$("$TESTS" --gtest_list_tests --gtest_filter='Cuda*' |
          awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}')
  count=$(echo "$names" | grep -c .)
  log "$count CUDA test cases"
  for t in $names; do
    if [ $DRY = 1 ]; then
      echo "dry-run: would run timeout $TEST_TIMEOUT $TESTS --gtest_filter=$t"
      record "{\"kind\": \"test\", \"name\": $(jstr "$t"), \"status\": \"dry-run\"}"
      continue
    fi
    t0=$(date +%s.%N)
    timeout "$TEST_TIMEOUT" "$TESTS" --gtest_filter="$t" >"$OUT/test_$t.log" 2>&1
    rc=$?
    secs=$(python3 -c "import time; print(round(time.time() - $t0, 2))")
    if [ $rc = 124 ]; then status=timeout
    elif grep -q '^\[  SKIPPED \]' "$OUT/test_$t.log"; then status=skipped
    elif [ $rc = 0 ]; then status=passed
    else status=failed; fi
    record "{\"kind\": \"test\", \"name\": $(jstr "$t"), \"status\": \"$status\", \"seconds\": $secs}"
    log "$t: $status (${secs}s)"
  done
  if [ -x "$B/test/ampc_runtime_lazy_cuda" ]; then
    if [ $DRY = 1 ]; then
      echo "dry-run: would run $B/test/ampc_runtime_lazy_cuda --with-cuda"
    else
      timeout 60 "$B/test/ampc_runtime_lazy_cuda" --with-cuda \
        >"$OUT/test_lazy_cuda.log" 2>&1
      st=$(grep -q "OK: the CUDA query" "$OUT/test_lazy_cuda.log" && echo passed || echo failed)
      record "{\"kind\": \"test\", \"name\": \"lazy_cuda\", \"status\": \"$st\"}"
    fi
  fi
else
  record "{\"kind\": \"tests\", \"status\": \"not built\"}"
fi

# ------------------------------------------------------------- benchmarks --
if [ -n "$KB" ]; then
  if [ $DRY = 1 ]; then
    "$KB" --dry-run || record "{\"kind\": \"bench\", \"status\": \"dry-run failed\"}"
  else
    timeout 240 "$KB" --out "$OUT/kernel_bench.json" 2>"$OUT/kernel_bench.log"
    record "{\"kind\": \"bench_rc\", \"ampc\": $?}"
  fi
fi
if [ $DRY = 1 ]; then
  "$PY" "$ROOT/bench/cuda/torch_ref.py" --dry-run ||
    record "{\"kind\": \"torch\", \"status\": \"dry-run failed\"}"
else
  timeout 240 "$PY" "$ROOT/bench/cuda/torch_ref.py" --out "$OUT/torch_ref.json" \
    2>"$OUT/torch_ref.log"
  record "{\"kind\": \"bench_rc\", \"torch\": $?}"
fi

# ---------------------------------------------------------------- summary --
python3 - "$OUT" "$(( $(date +%s) - START ))" <<'PY'
import json, os, sys
out, secs = sys.argv[1], int(sys.argv[2])
recs = [json.loads(l) for l in open(os.path.join(out, "records.jsonl")) if l.strip()]
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else None
ampc, torch = load("kernel_bench.json"), load("torch_ref.json")
env = next(r for r in recs if r["kind"] == "env")
tests = [r for r in recs if r["kind"] == "test"]
result = {"env": env, "seconds": secs, "records": recs,
          "ampc_kernels": ampc, "torch_kernels": torch}
lines = [f"ampc CUDA run{' (DRY RUN: nothing ran on a GPU)' if env['dry_run'] else ''}",
         f"gpu: {env['gpu']}", f"nvcc: {env['nvcc']}", f"torch: {env['torch']}",
         f"commit: {env['commit']}, {secs} s"]
for r in recs:
    if r["kind"] == "build":
        lines.append(f"build: {'ok' if r['ok'] else 'FAILED'}"
                     f"{', CUDA backend ' + ('ON' if r.get('cuda_backend') else 'OFF') if r['ok'] else ''}"
                     f" ({r['seconds']} s)")
for r in recs:
    if "failed" in str(r.get("status", "")) or r.get("ok") is False:
        lines.append(f"FAILED step: {json.dumps(r)}")
counts = {}
for t in tests:
    counts[t["status"]] = counts.get(t["status"], 0) + 1
lines.append("tests: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
for t in tests:
    if t["status"] in ("failed", "timeout"):
        lines.append(f"  {t['status']}: {t['name']}")
if ampc:
    tmap = {c["name"]: c for c in (torch or {}).get("cases", [])}
    lines.append(f"{'kernel':44s} {'ampc us':>10s} {'torch us':>10s} {'torch/ampc':>10s}")
    ratios = {}
    for c in ampc["cases"]:
        t = tmap.get(c["name"], {})
        a, b = c.get("us_per_call"), t.get("us_per_call")
        ratio = f"{b / a:.2f}" if a and b else "-"
        if a and b:
            ratios[c["name"]] = b / a
        lines.append(f"{c['name']:44s} {a if a else 'FAILED':>10} {b if b else '-':>10} {ratio:>10}")
    result["speed_vs_torch"] = ratios
    g = ratios.get("gemm_8192^3_f16")
    if g is not None:
        lines.append(f"target f16 GEMM 8192^3 >= 0.97x torch: {g:.3f}x "
                     f"({'met' if g >= 0.97 else 'NOT met'})")
lines.append("not measured by this script: the emitted transformer step "
             "(fp32/fp16/bf16) against PyTorch eager AMP")
json.dump(result, open(os.path.join(out, "gpu_run.json"), "w"), indent=1)
open(os.path.join(out, "gpu_summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
if [ $DRY = 1 ]; then
  echo "gpu_run: dry-run complete (results in $OUT)"
  exit 0
fi
# Exit 0 only when every CUDA test really ran and passed.
python3 - "$OUT/records.jsonl" <<'PY'
import json, sys
tests = [json.loads(l) for l in open(sys.argv[1]) if '"kind": "test"' in l]
sys.exit(0 if tests and all(t["status"] == "passed" for t in tests) else 1)
PY
