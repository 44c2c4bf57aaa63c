#!/usr/bin/env bash
# Builds ampc with AddressSanitizer + UndefinedBehaviorSanitizer into its own
# build folder and runs every test under them:
#   - the whole lit suite (dialect, frontend, passes, driver, the `ampc run`
#     end-to-end tests of test/Run, the differential tests against PyTorch),
#   - the whole ctest suite (runtime unit tests, the installed-package test),
#   - the fuzz targets (clang, libFuzzer), each for a bounded time from its
#     checked-in seeds: the frontend (test/Frontend/fuzz-corpus), the ONNX
#     importer (test/ONNX/Fixtures), the .npy and checkpoint readers of
#     `ampc run` (test/Run/fuzz-corpus).
# Prints each runner's summary at the end and exits non-zero on any failure
# or sanitizer finding. See docs/sanitizers.md.
#
#   bash scripts/sanitize.sh                 # everything (build-asan/)
#   bash scripts/sanitize.sh --runtime-only  # the runtime alone, its unit tests
#   bash scripts/sanitize.sh --fuzz-only     # the fuzz targets alone (build-asan/)
#
# Environment: AMPC_SANITIZE_BUILD_DIR (default build-asan, or build-rt-asan
# with --runtime-only), AMPC_FUZZ_SECONDS (default 60: each of the frontend,
# .npy and checkpoint targets), AMPC_FUZZ_ONNX_SECONDS (default 180: the
# ONNX importer's target, the slowest per input), AMPC_SANITIZE_JOBS
# (default 2).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode=all
case "${1:-}" in
  "") ;;
  --runtime-only) mode=runtime ;;
  --fuzz-only) mode=fuzz ;;
  *) echo "usage: $0 [--runtime-only | --fuzz-only]" >&2; exit 2 ;;
esac
if [ "$mode" = runtime ]; then
  build=${AMPC_SANITIZE_BUILD_DIR:-build-rt-asan}
else
  build=${AMPC_SANITIZE_BUILD_DIR:-build-asan}
fi
jobs=${AMPC_SANITIZE_JOBS:-2}
fuzz_seconds=${AMPC_FUZZ_SECONDS:-60}
fuzz_onnx_seconds=${AMPC_FUZZ_ONNX_SECONDS:-180}

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

# Sanitizer options for every process the tests start (lit passes these
# variables through to its tests):
#  - allow_user_poisoning=0: Debian's libMLIR.so is not instrumented, and its
#    bump allocator's manual poisoning gives false use-after-poison reports;
#  - protect_shadow_gap=0: the CUDA runtime maps memory where ASan's shadow
#    gap would be (harmless without CUDA);
#  - detect_leaks=0: MLIR and LLVM keep global singletons (registries, the
#    command-line parser) alive until exit, which LeakSanitizer reports as
#    leaks of the uninstrumented libraries; leaks in the runtime are covered
#    by the runtime-only run, which enables leak detection;
#  - intercept_tls_get_addr=0 (runtime-only run, with leak detection):
#    LeakSanitizer's tracer otherwise reads a bogus dynamic-TLS entry of a
#    dlopen'ed library (oneDNN, its OpenMP runtime) at exit and dies of a
#    SIGSEGV after the test passed (GCC 12's sanitizer runtime, glibc 2.36);
#    see docs/sanitizers.md;
#  - allocator_may_return_null=1: an allocation too large to serve returns
#    NULL as it does without ASan, so that the program's own out-of-memory
#    path runs (Transforms/BufferPlanning/too-large.test expects ampc's
#    "out of memory", exit 3), not ASan's allocation-size-too-big abort.
asan_common="allocator_may_return_null=1:allow_user_poisoning=0:protect_shadow_gap=0:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
if [ "$mode" = runtime ]; then
  export ASAN_OPTIONS="$asan_common:detect_leaks=1:intercept_tls_get_addr=0"
else
  export ASAN_OPTIONS="$asan_common:detect_leaks=0"
fi
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Reports also go to files (log_path), one per process: a report from a
# process whose failure a test expects (`not ampc ...`) or whose output a
# passing test never shows is still seen, and fails the run.
san_logs=$(mktemp -d)
export ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$san_logs/asan"
export UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$san_logs/ubsan"

launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

echo "== sanitized build ($mode) in $build =="
if [ ! -f "$build/build.ninja" ]; then
  if [ "$mode" = runtime ]; then
    # The runtime alone (no MLIR), without the CUDA backend (nvcc code is not
    # instrumented by these sanitizers) and without the benchmarks.
    cmake -S runtime -B "$build" -G Ninja "${launcher[@]}" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
      -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
      -DAMPC_RUNTIME_ENABLE_CUDA=OFF -DAMPC_RUNTIME_BUILD_BENCH=OFF || exit 1
  else
    cmake -S . -B "$build" -G Ninja "${launcher[@]}" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
      -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
      -DMLIR_DIR="$(llvm-config-22 --cmakedir)/../mlir" \
      -DLLVM_DIR="$(llvm-config-22 --cmakedir)" \
      -DLLVM_EXTERNAL_LIT="$(command -v lit-22)" || exit 1
  fi
fi
# The ONNX importer's fuzz target is not part of `all` (it compiles the
# importer and the tg dialect again, with clang): named here when it exists.
targets=(all)
if [ "$mode" = fuzz ]; then
  targets=()
  for t in ampc-fuzz ampc-fuzz-onnx ampc-fuzz-npy ampc-fuzz-checkpoint; do
    ninja -C "$build" -t query "$t" > /dev/null 2>&1 && targets+=("$t")
  done
  [ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets (needs clang++ and libFuzzer)"; exit 1; }
elif [ "$mode" = all ] && ninja -C "$build" -t query ampc-fuzz-onnx > /dev/null 2>&1; then
  targets+=(ampc-fuzz-onnx)
fi
ninja -C "$build" -j"$jobs" "${targets[@]}" || exit 1

status=0
ctest_log=$(mktemp)
lit_log=$(mktemp)
fuzz_logs=$(mktemp -d)
trap 'rm -f "$ctest_log" "$lit_log"; rm -rf "${wrap:-}" "${fuzz_dir:-}" "$fuzz_logs" "$san_logs"' EXIT

if [ "$mode" = all ]; then
  # Tests that compile their own programs against the sanitized runtime
  # (test/Run's emitted C++) call `g++` from PATH: this wrapper adds the
  # sanitizer flags, so those programs link the sanitizer runtimes first, as
  # ASan requires, and are checked too.
  wrap=$(mktemp -d)
  real_gxx=$(command -v g++)
  printf '#!/bin/sh\nexec %s "$@" %s\n' "$real_gxx" "$san" > "$wrap/g++"
  chmod +x "$wrap/g++"
  echo "== lit (sanitized) =="
  PATH="$wrap:$PATH" AMPC_REQUIRE_TORCH=1 lit-22 -sv --time-tests "$build/test" \
    2>&1 | tee "$lit_log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if [ "$mode" != fuzz ]; then
  echo "== ctest (sanitized) =="
  ctest --test-dir "$build" --output-on-failure -j"$jobs" 2>&1 | tee "$ctest_log"
  ctest_rc=${PIPESTATUS[0]}
  [ "$ctest_rc" -eq 0 ] || status=1
fi

# run_fuzzer NAME SECONDS SEED-DIR...: runs build/bin/NAME for SECONDS
# seconds from the seeds; its log is $fuzz_logs/NAME.log.
run_fuzzer() {
  local name=$1 seconds=$2
  shift 2
  local log="$fuzz_logs/$name.log"
  echo "== fuzz target $name (${seconds}s) =="
  if [ ! -x "$build/bin/$name" ]; then
    echo "$name not built (needs clang++ and libFuzzer): fuzzing skipped" \
      | tee "$log"
    status=1
    return
  fi
  # New inputs go to a scratch corpus (the first directory), never into the
  # checked-in seeds.
  fuzz_dir=$(mktemp -d)
  # libFuzzer reads the report from stderr: no log_path here. A single
  # allocation over -malloc_limit_mb (the -rss_limit_mb, 4 GiB) is a
  # finding: sizes read from a file must be checked before they allocate.
  ASAN_OPTIONS="${ASAN_OPTIONS%:log_path=*}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS%:log_path=*}" \
    "$build/bin/$name" -max_total_time="$seconds" -max_len=4096 \
    -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 "$fuzz_dir" \
    "$@" > "$log" 2>&1
  local rc=$?
  tail -n 20 "$log"
  rm -rf "$fuzz_dir"
  [ "$rc" -eq 0 ] || status=1
}

if [ "$mode" != runtime ]; then
  run_fuzzer ampc-fuzz "$fuzz_seconds" test/Frontend/fuzz-corpus test/Frontend/bad
  run_fuzzer ampc-fuzz-onnx "$fuzz_onnx_seconds" test/ONNX/Fixtures
  run_fuzzer ampc-fuzz-npy "$fuzz_seconds" test/Run/fuzz-corpus/npy
  run_fuzzer ampc-fuzz-checkpoint "$fuzz_seconds" test/Run/fuzz-corpus/checkpoint
fi

# Any sanitizer report fails the run, also where a test ignored it.
# With allocator_may_return_null=1 an allocation too large to serve leaves
# one line, "WARNING: AddressSanitizer failed to allocate 0x... bytes", and
# returns NULL to the program, whose own out-of-memory path is the test:
# such a file alone is not a finding.
for f in $(find "$san_logs" -type f); do
  if ! grep -v -E '^==[0-9]+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes$' "$f" | grep -q .; then
    echo "-- expected allocation failure (allocator_may_return_null): $(cat "$f")"
    rm -f "$f"
  fi
done
reports=$(find "$san_logs" -type f | sort)
if [ -n "$reports" ]; then
  echo "== sanitizer reports ($(echo "$reports" | wc -l) processes) =="
  for f in $reports; do
    echo "-- $f"
    head -n 40 "$f"
  done
  status=1
fi
if grep -l -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" \
     "$lit_log" "$ctest_log" "$fuzz_logs"/* > /dev/null 2>&1; then
  echo "sanitizer findings in the output above"
  status=1
fi

echo "== summary =="
echo "-- sanitizer report files: $(find "$san_logs" -type f | wc -l)"
if [ "$mode" = all ]; then
  echo "-- lit:"
  grep -E "^(Total Discovered Tests|  (Passed|Failed|Unsupported|Expectedly Failed|Unexpectedly Passed|Unresolved|Timed Out|Skipped|Excluded))" "$lit_log" \
    || tail -n 5 "$lit_log"
fi
if [ "$mode" != fuzz ]; then
  echo "-- ctest:"
  grep -E "tests passed|tests failed|Total Test time" "$ctest_log" || tail -n 3 "$ctest_log"
fi
if [ "$mode" != runtime ]; then
  for log in "$fuzz_logs"/*.log; do
    echo "-- fuzz target $(basename "$log" .log):"
    grep -E "^Done [0-9]+ runs|stat::number_of_executed_units|ERROR|contract broken|skipped" "$log" \
      || tail -n 3 "$log"
  done
fi
[ $status -eq 0 ] && echo "sanitizers: clean" || echo "sanitizers: FAILED"
exit $status
