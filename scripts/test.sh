#!/usr/bin/env bash
# Runs every test of ampc: installs what is missing, builds, then runs the
# lit suite (dialect, frontend, driver, passes, the differential tests
# against PyTorch) and the ctest suite (runtime
# unit tests; CUDA tests report themselves skipped without a GPU), then the
# runtime's unit tests again in a runtime-only ASan+UBSan build
# (scripts/sanitize.sh --runtime-only, build-rt-asan/).
# Exits non-zero if anything fails; the last lines are the sanitized run's
# ctest summary.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${AMPC_BUILD_DIR:-build}

bash scripts/setup.sh || exit 1
bash scripts/build.sh || exit 1

status=0
echo "== lit =="
# The differential tests against PyTorch must run, not be skipped.
AMPC_REQUIRE_TORCH=1 lit-22 -sv --time-tests "$build/test" || status=1
# The fallback units on any processor (docs/runtime.md, "The CPU's GEMM
# engine"): the differential tests against PyTorch, the thread-count bits,
# the engine's and the convolution paths' tests again with every CPU kernel
# family capped at AVX2 (oneDNN's f32 kernels on widened bf16, the direct
# convolutions' and conversions' AVX2 paths).
echo "== lit, CPU units capped at AVX2 (AMPC_CPU_ISA=avx2) =="
# (Reference/fuzz.test's random programs run once, above.)
AMPC_CPU_ISA=avx2 AMPC_REQUIRE_TORCH=1 lit-22 -sv --filter-out 'fuzz\.test' \
  "$build/test/Reference" \
  "$build/test/Run/threads" "$build/test/Run/cpu-engine.test" \
  "$build/test/Ops/conv-cpu-paths.test" || status=1
# AVX-512 without bf16 units (Skylake-SP to Ice Lake Xeons): bf16 GEMMs on
# widened operands rather than oneDNN's emulation, the AVX-512 elementwise
# loops; on a processor without AVX-512 this repeats the AVX2 paths.
echo "== lit, CPU units capped at AVX-512 without bf16 (AMPC_CPU_ISA=avx512_core) =="
AMPC_CPU_ISA=avx512_core AMPC_REQUIRE_TORCH=1 lit-22 -sv \
  "$build/test/Reference/matmul-ops.test" "$build/test/Reference/conv-ops.test" \
  "$build/test/Reference/math-ops.test" "$build/test/Reference/examples.test" \
  "$build/test/Run/threads" "$build/test/Run/cpu-engine.test" \
  "$build/test/Ops/conv-cpu-paths.test" || status=1
echo "== ctest =="
ctest --test-dir "$build" --output-on-failure -j2 || status=1
echo "== runtime unit tests under ASan+UBSan =="
bash scripts/sanitize.sh --runtime-only || status=1
exit $status
