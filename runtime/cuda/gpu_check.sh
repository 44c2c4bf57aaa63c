#!/usr/bin/env bash
# GPU check for the ampc runtime: on a machine with an NVIDIA GPU and the CUDA
# toolkit, builds the runtime (CPU + CUDA backends), runs the whole runtime
# test suite (the Cuda.* tests compare every kernel with the CPU backend), runs
# the GEMM / unscale benchmarks and writes ${OUT:-.}/gpu_summary.txt.
#
#   runtime/cuda/gpu_check.sh            # from anywhere inside the repo
#   OUT=/tmp/results BUILD_DIR=/tmp/b runtime/cuda/gpu_check.sh
#
# Exit status: 0 when every test passed and the CUDA tests really ran.
# The fuller run (each CUDA test in its own process, kernels against PyTorch,
# no GoogleTest/OpenBLAS needed on the GPU machine) is scripts/gpu/gpu_run.sh.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUNTIME="$(cd "$HERE/.." && pwd)"
OUT="${OUT:-.}"
BUILD_DIR="${BUILD_DIR:-$RUNTIME/../build-gpu-check}"
ARCHS="${CUDA_ARCHS:-80;90}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
SUMMARY="$OUT/gpu_summary.txt"
JOBS="$(nproc 2>/dev/null || echo 4)"

log() { echo "[gpu_check] $*"; }

{
  echo "ampc runtime GPU check — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git -C "$RUNTIME" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  if command -v nvidia-smi >/dev/null; then
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
  else
    echo "gpu: nvidia-smi not found"
  fi
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo 'not found')"
} >"$SUMMARY"

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
log "configuring in $BUILD_DIR (CUDA archs $ARCHS)"
if ! cmake -S "$RUNTIME" -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
     "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS" >"$OUT/gpu_build.log" 2>&1 ||
   ! cmake --build "$BUILD_DIR" -j "$JOBS" >>"$OUT/gpu_build.log" 2>&1; then
  echo "build: FAILED (see gpu_build.log)" >>"$SUMMARY"
  tail -30 "$OUT/gpu_build.log"
  cat "$SUMMARY"
  exit 1
fi
grep -q "CUDA backend ON" "$OUT/gpu_build.log" &&
  echo "build: ok, CUDA backend ON" >>"$SUMMARY" ||
  echo "build: ok, but the CUDA backend was NOT built" >>"$SUMMARY"

log "running the runtime tests"
"$BUILD_DIR/test/ampc_runtime_tests" --gtest_brief=0 >"$OUT/gpu_tests.log" 2>&1
TEST_RC=$?
passed=$(grep -c '^\[       OK \]' "$OUT/gpu_tests.log")
failed=$(grep -c '^\[  FAILED  \].*(' "$OUT/gpu_tests.log")
skipped=$(grep -c '^\[  SKIPPED \].*(' "$OUT/gpu_tests.log")
cuda_ok=$(grep -c '^\[       OK \] Cuda\.' "$OUT/gpu_tests.log")
echo "tests: $passed passed, $failed failed, $skipped skipped; Cuda.* passed: $cuda_ok" >>"$SUMMARY"
grep '^\[  FAILED  \].*(' "$OUT/gpu_tests.log" | sed 's/^/  /' >>"$SUMMARY"

log "running the benchmarks"
"$BUILD_DIR/bench/ampc_runtime_bench" \
  --benchmark_filter='Cuda|CpuGemmF16|CpuSgemm' \
  --benchmark_out="$OUT/gpu_bench.json" --benchmark_out_format=json \
  --benchmark_color=false >"$OUT/gpu_bench.log" 2>&1
sed 's/\x1b\[[0-9;]*m//g' "$OUT/gpu_bench.log" | grep 'sgemm_ratio' >>"$SUMMARY"

if command -v python3 >/dev/null; then
  python3 - "$OUT/gpu_bench.json" "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" >>"$SUMMARY" <<'PY'
import json, sys
# Dense f16 tensor-core peak (TFLOP/s) and HBM bandwidth (GB/s) by GPU name.
PEAKS = [("H200", 989.4, 4800), ("H100 PCIe", 756.0, 2000), ("H100", 989.4, 3350),
         ("A100-SXM4-80GB", 312.0, 2039), ("A100", 312.0, 1555), ("L40S", 362.0, 864)]
data = json.load(open(sys.argv[1]))
name = sys.argv[2]
peak = next(((t, b) for key, t, b in PEAKS if key in name), (None, None))
for bm in data.get("benchmarks", []):
    if bm.get("error_occurred"):
        print(f"{bm['name']}: skipped ({bm.get('error_message')})")
        continue
    if bm["name"].startswith("BM_CudaGemmF16"):
        tf = bm["FLOP/s"] / 1e12
        pct = f" = {100 * tf / peak[0]:.1f}% of {peak[0]} peak" if peak[0] else ""
        print(f"cuBLASLt f16 GEMM 8192^3: {tf:.1f} TFLOP/s{pct} (target >= 70%)")
    elif bm["name"].startswith("BM_CudaUnscale"):
        gb = bm["bytes_per_second"] / 1e9
        pct = f" = {100 * gb / peak[1]:.1f}% of {peak[1]} GB/s" if peak[1] else ""
        print(f"fused check-finite+unscale: {gb:.0f} GB/s{pct}")
PY
fi

cat "$SUMMARY"
if [ "$TEST_RC" -ne 0 ] || [ "$cuda_ok" -eq 0 ]; then
  exit 1
fi
exit 0
