#!/usr/bin/env bash
# The one-shot GPU run of the ampc runtime's CUDA backend (docs/cuda.md).
#
# Written for a lent GPU machine: CUDA toolkit, CMake, Ninja and PyTorch, no
# LLVM/MLIR, OpenBLAS or GoogleTest; about 15 minutes in all, at most 600 s
# a command, and at most 8 files back from $OUT (16 MiB each, 2 folders
# deep, names of letters, digits, '.', '_', '-'). So this script
#   - builds the runtime standalone with its CUDA backend (OpenBLAS,
#     GoogleTest and the C++ ampc emitted come from a --prepare folder or
#     the repository; NCCL from the toolkit or the nvidia-nccl wheel of
#     PYTHON) and compiles the emitted steps in the background;
#   - correctness first, within BUDGET seconds (default 300) of work after
#     the build: every test case the test binary lists (--gtest_list_tests;
#     each in its own process, so a device fault poisons no other), the
#     lazy-loading check, NCCL against the CPU collective (1 rank, a unique
#     id, 2 ranks where there are 2 GPUs), and the emitted data-parallel
#     step of examples/mlp.tg through a one-rank NCCL communicator (its
#     gradient buckets taking the whole path) against the same step without
#     the all-reduce, bit for bit;
#   - timings after, while time is left: the GPT-2-small-sized step in fp32,
#     fp16 and bf16 against PyTorch eager AMP, the kernels against PyTorch,
#     each example's emitted step;
#   - caps every timeout by the time left (BUDGET, and DEADLINE seconds from
#     the start, default 540, for the whole command), keeps its scratch in
#     WORK (outside $OUT), and writes $OUT/gpu_run.json, $OUT/gpu_summary.txt
#     and $OUT/logs.tar.gz (under 16 MiB) after every phase and from an
#     EXIT/TERM/INT trap, so a run stopped midway leaves its summary. Nothing
#     else is written to $OUT.
#
#   scripts/gpu/gpu_run.sh --prepare DIR     # here: the carry folder (< 64 MiB)
#   scripts/gpu/gpu_run.sh [--carry DIR]     # there: the whole run
#   scripts/gpu/gpu_run.sh --dry-run [--runtime-build DIR]
#
# --dry-run does everything up to the first CUDA call: checks the tools,
# builds (or reuses --runtime-build), emits the C++ (with the ampc of this
# tree, AMPC, when nothing is carried) and compiles it, runs the data-
# parallel harness and a small GPT-2 step on the CPU, lists every test and
# benchmark case with the command it would run, and writes the three files
# marked "dry_run". Environment: OUT (default ./gpu-results), WORK (scratch,
# default a new folder under TMPDIR or /tmp), PYTHON (the one with torch,
# default python3), AMPC (default build/bin/ampc), BUILD_DIR (default
# WORK/build), CUDA_ARCHS (default 90), TEST_TIMEOUT (seconds per test,
# default 120), TEST_JOBS (default 8), BUDGET, DEADLINE.
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
  -h | --help) sed -n 2,43p "$0"; exit 0 ;;
  *) echo "gpu_run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

LOGS=""
# To stderr, and into logs/run.log once there is one.
log() {
  echo "[gpu_run] $*" >&2
  [ -n "$LOGS" ] && echo "[gpu_run] $(date +%T) $*" >>"$LOGS/run.log"
}
AMPC="${AMPC:-$ROOT/build/bin/ampc}"
PY="${PYTHON:-python3}" # the Python that has torch

# The C++ every GPU run builds, emitted here (ampc needs MLIR): the GPT-2
# step in three precisions and each example in fp16, all for --target=cuda.
emit_all() { # DIR
  local d="$1" ok=0
  mkdir -p "$d"
  for p in fp32 fp16 bf16; do
    local amp=$p
    [ $p = fp32 ] && amp=off
    "$AMPC" "$ROOT/bench/cuda/gpt2_step.tg" --emit=cpp --target=cuda \
      --amp=$amp -o "$d/gpt2_$p.cpp" || ok=1
  done
  for f in "$ROOT"/examples/*.tg; do
    "$AMPC" "$f" --emit=cpp --target=cuda --amp=fp16 \
      -o "$d/ex_$(basename "$f" .tg).cpp" || ok=1
  done
  # The data-parallel step through NCCL: examples/mlp.tg with and without
  # the gradient all-reduce, in three precisions (fp16 from a scale of 1e9,
  # so the scaler skips and backs off first).
  for p in fp32 fp16 bf16; do
    local flags=(--amp=off)
    [ $p = fp16 ] && flags=(--amp=fp16 --loss-scale-init=1.0e9 --loss-scale-interval=2)
    [ $p = bf16 ] && flags=(--amp=bf16)
    "$AMPC" "$ROOT/examples/mlp.tg" --emit=cpp --target=cuda --data-parallel \
      "${flags[@]}" -o "$d/ddp_$p.cpp" || ok=1
    "$AMPC" "$ROOT/examples/mlp.tg" --emit=cpp --target=cuda "${flags[@]}" \
      -o "$d/plain_$p.cpp" || ok=1
    # The same program for the CPU backend: the CUDA step's losses must
    # follow the CPU's.
    "$AMPC" "$ROOT/examples/mlp.tg" --emit=cpp --target=cpu "${flags[@]}" \
      -o "$d/cpuplain_$p.cpp" || ok=1
  done
  # "-dirty" when the tree that emitted this had uncommitted changes.
  git -C "$ROOT" describe --always --dirty >"$d/commit" 2>/dev/null
  return $ok
}

# ------------------------------------------------------------- --prepare --
CARRY_LIMIT=$((64 * 1024 * 1024))
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
  # One copy of the 36 MB library (the carry must stay under 64 MiB).
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
  emit_all "$PREPARE/emitted" || { log "emitting C++ with $AMPC failed"; exit 1; }
  # The sources the GPU machine builds, should only the carry reach it.
  tar czf "$PREPARE/sources.tar.gz" -C "$ROOT" runtime bench/cuda scripts/gpu \
    examples docs/examples include/ampc/Pipelines/CudaCapability.h \
    lib/Pipelines/CudaCapability.cpp
  bytes=$(du -sb "$PREPARE" | cut -f1)
  if [ "$bytes" -ge "$CARRY_LIMIT" ]; then
    log "$PREPARE holds $bytes bytes, over the 64 MiB a device run carries"
    exit 1
  fi
  log "prepared $PREPARE: $bytes bytes (pass it with --carry)"
  exit 0
fi

# ------------------------------------------------------ time and results --
START=$(date +%s)
BUDGET="${BUDGET:-300}"
DEADLINE="${DEADLINE:-540}"
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
rm -f "$OUT/gpu_run.json" "$OUT/gpu_summary.txt" "$OUT/logs.tar.gz"
WORK_MADE=0
if [ -z "${WORK:-}" ]; then
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/ampc-gpu-run.XXXXXX")"
  WORK_MADE=1
fi
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
case "$WORK/" in "$OUT"/*)
  log "WORK ($WORK) must not be inside OUT ($OUT)"; exit 2 ;;
esac
LOGS="$WORK/logs" # everything in it goes into logs.tar.gz
SB="$WORK/bin"    # compiled emitted steps
mkdir -p "$LOGS" "$SB"
log "started: OUT=$OUT WORK=$WORK BUDGET=$BUDGET DEADLINE=$DEADLINE"
BUILD_DIR="${BUILD_DIR:-$WORK/build}"
ARCHS="${CUDA_ARCHS:-90}"
TEST_TIMEOUT="${TEST_TIMEOUT:-120}"
TEST_JOBS="${TEST_JOBS:-8}"
RECORDS="$WORK/records.jsonl" # one JSON object a line
: >"$RECORDS"
WORK_START="" # set when the build is done: BUDGET counts from there
record() { echo "$1" >>"$RECORDS"; }
jstr() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
# Seconds left: the least of the whole command's DEADLINE and, after the
# build, the BUDGET of work.
left() {
  local now l b
  now=$(date +%s)
  l=$((DEADLINE - (now - START)))
  if [ -n "$WORK_START" ]; then
    b=$((BUDGET - (now - WORK_START)))
    [ "$b" -lt "$l" ] && l=$b
  fi
  echo "$l"
}
# A timeout of at most $1 seconds and at most the time left (at least 1).
cap() {
  local l
  l=$(left)
  [ "$l" -lt "$1" ] && { [ "$l" -lt 1 ] && echo 1 || echo "$l"; } || echo "$1"
}
# Whether there are at least $2 seconds left for phase $1; records a skip
# otherwise.
in_budget() { # PHASE MIN_SECONDS
  local l
  l=$(left)
  if [ "$l" -lt "${2:-10}" ]; then
    record "{\"kind\": \"phase\", \"name\": \"$1\", \"status\": \"skipped: ${l} s left\"}"
    log "skipping $1: $l s left"
    return 1
  fi
  return 0
}

# The report: gpu_run.json, gpu_summary.txt and logs.tar.gz, each written as
# NAME.part in OUT and renamed (so OUT never holds a half-written file).
# Called after every phase, and from the EXIT trap (which a TERM or INT
# reaches through on_signal).
STOPPED=""
report() { # [--print]
  python3 "$HERE/gpu_report.py" --work "$WORK" --out "$OUT" \
    --seconds "$(($(date +%s) - START))" --stopped "$STOPPED" "$@" >&2 ||
    log "writing the report failed"
}
kill_tree() { # PID
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
  kill -TERM "$1" 2>/dev/null
}
on_signal() { # SIGNAL
  STOPPED="$1"
  trap - TERM INT
  log "stopped by SIG$1 after $(($(date +%s) - START)) s"
  record "{\"kind\": \"stopped\", \"signal\": \"$1\", \"seconds\": $(($(date +%s) - START))}"
  # Our own background jobs and everything under them, leaves first (a
  # timeout runs its command in a process group of its own, which a signal
  # to ours would miss).
  local p
  for p in $(jobs -p); do kill_tree "$p"; done
  exit $((128 + $(kill -l "$1")))
}
on_exit() {
  local rc=$?
  trap - EXIT
  trap '' TERM INT # a second signal must not cut the report short
  report --print
  # Scratch this run made goes (KEEP_WORK=1 keeps it).
  [ "$WORK_MADE" = 1 ] && [ -z "${KEEP_WORK:-}" ] && rm -rf "$WORK"
  exit $rc
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
trap on_exit EXIT
# Runs a command in the background and waits for it, so a signal's trap
# runs at once instead of after the command.
fg_wait() {
  "$@" &
  wait $!
}

# ------------------------------------------------------------ environment --
# The commit the run is of: the carry's (written by --prepare where the
# sources and the emitted C++ were made) before the tree's own git, which on
# a lent machine can be a copy of another commit's metadata.
COMMIT() {
  cat "${CARRY:-/nonexistent}/emitted/commit" 2>/dev/null ||
    git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown
}
GPU="$(nvidia-smi --query-gpu=name,driver_version,memory.total \
       --format=csv,noheader 2>/dev/null | head -1)"
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
NVCC="$(nvcc --version 2>/dev/null | tail -1)"
TORCH="$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
record "{\"kind\": \"env\", \"gpu\": $(jstr "${GPU:-none}"), \"gpus\": ${GPUS:-0}, \"nvcc\": $(jstr "${NVCC:-none}"), \"cmake\": $(jstr "$(cmake --version 2>/dev/null | head -1)"), \"torch\": $(jstr "${TORCH:-none}"), \"commit\": $(jstr "$(COMMIT)"), \"dry_run\": $([ $DRY = 1 ] && echo true || echo false), \"budget\": $BUDGET, \"deadline\": $DEADLINE}"
for tool in cmake nvcc python3 timeout; do
  command -v $tool >/dev/null || { log "missing tool: $tool"; exit 1; }
done

# ------------------------------------------------------------------ build --
if [ ! -d "$ROOT/runtime" ] && [ -n "$CARRY" ] && [ -e "$CARRY/sources.tar.gz" ]; then
  tar xzf "$CARRY/sources.tar.gz" -C "$ROOT"
fi
B=""
if [ -n "$RT_BUILD" ]; then
  B="$(cd "$RT_BUILD" && pwd)"
  log "reusing the runtime build in $B"
  nccl_on=$([ -e "$B/libampc_runtime_nccl.so" ] && echo true || echo false)
  record "{\"kind\": \"build\", \"ok\": true, \"reused\": true, \"nccl\": $nccl_on, \"seconds\": 0}"
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
  BL="$LOGS/build.log"
  if fg_wait timeout "$(cap 420)" cmake -S "$ROOT/runtime" -B "$B" "${GEN[@]}" \
       -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS" \
       -DAMPC_RUNTIME_BUILD_BENCH=OFF -DAMPC_RUNTIME_INSTALL=OFF \
       "-DAMPC_NCCL_PYTHON=$PY" "${PREFIX[@]}" >"$BL" 2>&1 &&
     fg_wait timeout "$(cap 420)" cmake --build "$B" -j "$(nproc)" >>"$BL" 2>&1; then
    cuda_on=$(grep -q "CUDA backend ON" "$BL" && echo true || echo false)
    nccl_on=$(grep -q "NCCL collectives ON" "$BL" && echo true || echo false)
    record "{\"kind\": \"build\", \"ok\": true, \"cuda_backend\": $cuda_on, \"nccl\": $nccl_on, \"seconds\": $(( $(date +%s) - t0 ))}"
  else
    record "{\"kind\": \"build\", \"ok\": false, \"seconds\": $(( $(date +%s) - t0 ))}"
    tail -30 "$BL" >&2
    B=""
  fi
fi

# The kernel benchmark: a plain C++ program against the built runtime.
KB=""
if [ -n "$B" ] && [ -e "$B/libampc_runtime.so" ]; then
  KB="$SB/kernel_bench"
  # BENCH_CXXFLAGS / BENCH_LDFLAGS: the runtime build's own flags (e.g. a
  # sanitizer build's), so the program links against that library.
  # shellcheck disable=SC2086
  if ! fg_wait c++ -std=c++17 -O2 ${BENCH_CXXFLAGS:-} -I"$ROOT/runtime/include" \
       "$ROOT/bench/cuda/kernel_bench.cpp" -L"$B" -lampc_runtime \
       -Wl,-rpath,"$B" ${BENCH_LDFLAGS:-} -o "$KB" >>"$LOGS/build.log" 2>&1; then
    record "{\"kind\": \"build_bench\", \"ok\": false}"
    KB=""
  fi
fi
WORK_START=$(date +%s)
report

# ------------------------------------------------ emitted C++ (compiling) --
# Built in the background while the tests run: the GPT-2 step in three
# precisions and each example, each linked with step_bench.cpp, and the
# data-parallel pair linked with docs/examples/ddp_train.cpp.
EMITTED=""
if [ -n "$CARRY" ] && [ -d "$CARRY/emitted" ]; then
  EMITTED="$(cd "$CARRY/emitted" && pwd)"
elif [ -x "$AMPC" ]; then
  EMITTED="$WORK/emitted"
  fg_wait emit_all "$EMITTED" >"$LOGS/emit.log" 2>&1 ||
    record "{\"kind\": \"emit\", \"ok\": false}"
else
  record "{\"kind\": \"emit\", \"ok\": false, \"why\": $(jstr "no carried emitted C++ and no ampc at $AMPC")}"
fi
# The dry run only proves the emitted C++ compiles and links: -O0 is enough.
STEP_OPT=-O2
[ $DRY = 1 ] && STEP_OPT=-O0
mkdir -p "$LOGS/compile"
compile_with() { # MAIN NAME GRAPH CPP
  # shellcheck disable=SC2086
  timeout "$(cap 300)" c++ -std=c++17 "$STEP_OPT" ${BENCH_CXXFLAGS:-} \
    -I"$ROOT/runtime/include" -I"$(dirname "$4")" -DGRAPH="$3" \
    "-DGRAPH_HEADER=\"$(basename "$4" .cpp).h\"" "$4" "$1" -L"$B" \
    -lampc_runtime -Wl,-rpath,"$B" ${BENCH_LDFLAGS:-} -o "$SB/$2" \
    >"$LOGS/compile/$2.log" 2>&1
}
compile_step() { compile_with "$ROOT/bench/cuda/step_bench.cpp" "$@"; }
compile_ddp() { compile_with "$ROOT/docs/examples/ddp_train.cpp" "$1" mlp "$2"; }
COMPILE_PIDS=()
if [ -n "$EMITTED" ] && [ -n "$B" ] && [ -e "$B/libampc_runtime.so" ]; then
  for p in fp32 fp16 bf16; do
    for k in ddp plain cpuplain; do
      [ -e "$EMITTED/${k}_$p.cpp" ] || continue
      compile_ddp "${k}_$p" "$EMITTED/${k}_$p.cpp" & COMPILE_PIDS+=($!)
    done
  done
  for p in fp32 fp16 bf16; do
    [ -e "$EMITTED/gpt2_$p.cpp" ] || continue
    compile_step "gpt2_$p" gpt2 "$EMITTED/gpt2_$p.cpp" & COMPILE_PIDS+=($!)
  done
  for f in "$EMITTED"/ex_*.cpp; do
    [ -e "$f" ] || continue
    n=$(basename "$f" .cpp)
    g=$(sed -n 's/.* from graph .\([A-Za-z0-9_]*\).\..*/\1/p' "${f%.cpp}.h" | head -1)
    compile_step "$n" "$g" "$f" & COMPILE_PIDS+=($!)
  done
fi

# ------------------------------------------------------------------ tests --
# Every case the test binary lists, each in its own process: the CUDA cases
# are not picked by a name pattern (one missed 8 of them), and the CPU cases
# are cheap. On a GPU a case that skips for want of a device is a failure
# of the run (gpu_report.py).
TESTS="$B/test/ampc_runtime_tests"
mkdir -p "$LOGS/tests"
run_one_test() { # NAME
  local t="$1" t0 rc secs status lg l
  lg="$LOGS/tests/$(echo "$t" | tr -c 'A-Za-z0-9._\n-' '_').log"
  l=$(left)
  if [ "$l" -lt 2 ]; then
    echo "{\"kind\": \"test\", \"name\": \"$t\", \"status\": \"not run: no time left\"}" >>"$RECORDS"
    return
  fi
  [ "$l" -gt "$TEST_TIMEOUT" ] && l=$TEST_TIMEOUT
  t0=$(date +%s.%N)
  timeout "$l" "$TESTS" --gtest_filter="$t" >"$lg" 2>&1
  rc=$?
  secs=$(python3 -c "import time; print(round(time.time() - $t0, 2))")
  if [ $rc = 124 ]; then status=timeout
  elif grep -q '^\[  SKIPPED \]' "$lg"; then
    if grep -q 'no usable CUDA device' "$lg"; then status="skipped: no GPU"
    else status=skipped; fi
  elif [ $rc = 0 ]; then status=passed
  else status=failed; fi
  echo "{\"kind\": \"test\", \"name\": \"$t\", \"status\": \"$status\", \"seconds\": $secs}" >>"$RECORDS"
  log "$t: $status (${secs}s)"
}
if [ -n "$B" ] && [ -x "$TESTS" ]; then
  "$TESTS" --gtest_list_tests >"$LOGS/gtest_list_tests.txt" 2>&1
  # All of them; those with Cuda in their name first, so that a run short
  # of time has run the GPU's cases (an order, not a selection).
  mapfile -t names < <(awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}' \
                         "$LOGS/gtest_list_tests.txt" |
                       awk '{print (index($0, "Cuda") ? 0 : 1) "\t" $0}' |
                       sort -s -k1,1n | cut -f2)
  record "{\"kind\": \"test_list\", \"count\": ${#names[@]}}"
  log "${#names[@]} test cases, $TEST_JOBS at a time"
  if [ $DRY = 1 ]; then
    for t in "${names[@]}"; do
      echo "dry-run: would run timeout $TEST_TIMEOUT $TESTS --gtest_filter=$t"
      record "{\"kind\": \"test\", \"name\": \"$t\", \"status\": \"dry-run\"}"
    done
  else
    # TEST_JOBS at a time; `wait -n -p` (bash 5.1) waits for one of these
    # cases only, not for the compiles running beside them.
    declare -A running=()
    for t in "${names[@]}"; do
      while [ "${#running[@]}" -ge "$TEST_JOBS" ]; do
        done_pid=""
        wait -n -p done_pid "${!running[@]}" 2>/dev/null
        if [ -n "$done_pid" ]; then
          unset "running[$done_pid]"
        else # none of them is a job any more: keep those still running
          live=" $(jobs -pr | tr '\n' ' ') "
          for pid in "${!running[@]}"; do
            [[ "$live" == *" $pid "* ]] || unset "running[$pid]"
          done
        fi
      done
      run_one_test "$t" &
      running[$!]=1
    done
    for pid in "${!running[@]}"; do wait "$pid"; done
  fi
  if [ -x "$B/test/ampc_runtime_lazy_cuda" ]; then
    if [ $DRY = 1 ]; then
      echo "dry-run: would run $B/test/ampc_runtime_lazy_cuda --with-cuda"
    elif [ "$(left)" -lt 2 ]; then
      record "{\"kind\": \"test\", \"name\": \"lazy_cuda\", \"status\": \"not run: no time left\"}"
    else
      fg_wait timeout "$(cap 60)" "$B/test/ampc_runtime_lazy_cuda" --with-cuda \
        >"$LOGS/tests/lazy_cuda.log" 2>&1
      st=$(grep -q "OK: the CUDA query" "$LOGS/tests/lazy_cuda.log" && echo passed || echo failed)
      record "{\"kind\": \"test\", \"name\": \"lazy_cuda\", \"status\": \"$st\"}"
    fi
  fi
  # ampc's own reading of the GPU's compute capability (what `ampc run
  # --device=cuda --amp=auto` decides by; lib/Pipelines/CudaCapability.cpp,
  # which needs no LLVM) against nvidia-smi's.
  CAP="$SB/cuda_capability"
  if ! fg_wait c++ -std=c++17 -O1 -I"$ROOT/include" \
       "$ROOT/lib/Pipelines/CudaCapability.cpp" "$HERE/cuda_capability_main.cpp" \
       -ldl -o "$CAP" >>"$LOGS/build.log" 2>&1; then
    record "{\"kind\": \"test\", \"name\": \"cuda_capability\", \"status\": \"failed\", \"why\": \"did not build\"}"
  elif [ $DRY = 1 ]; then
    # No GPU here: a clean error (or an answer) is what must come out.
    got=$("$CAP" 2>&1)
    ok=$(case "$got" in sm_* | "error: "*) echo true ;; *) echo false ;; esac)
    record "{\"kind\": \"dry_capability\", \"ok\": $ok, \"output\": $(jstr "$got")}"
    echo "dry-run: would compare $CAP ($got) with nvidia-smi's compute_cap"
  else
    got=$(timeout "$(cap 30)" "$CAP" 2>&1)
    want=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
           head -1 | tr -d '. ')
    st=$([ -n "$want" ] && [ "$got" = "sm_$want" ] && echo passed || echo failed)
    record "{\"kind\": \"test\", \"name\": \"cuda_capability\", \"status\": \"$st\", \"got\": $(jstr "$got"), \"nvidia_smi\": $(jstr "$want")}"
    log "cuda_capability: $st ($got; nvidia-smi says $want)"
  fi
  # NCCL collectives against the CPU collective, bit for bit: one rank
  # (ampc_comm_create_self, then a communicator of ampc_comm_create_rank
  # whose unique id holds an NCCL id), then two ranks under mpirun where
  # mpirun and 2 GPUs exist. A build without the NCCL module is a failure,
  # not a silence.
  NT="$B/test/ampc_runtime_nccl_test"
  export AMPC_NCCL_TIMEOUT_S=60 # a failed collective ends as an error
  if [ ! -x "$NT" ]; then
    record "{\"kind\": \"test\", \"name\": \"nccl_module_built\", \"status\": \"failed\", \"why\": \"no NCCL found (toolkit, AMPC_NCCL_ROOT, nvidia-nccl wheel of $PY)\"}"
  else
    nccl_cmds=("nccl_vs_cpu|$NT" "nccl_vs_cpu_unique_id|$NT --unique-id")
    if ! command -v mpirun >/dev/null; then
      record "{\"kind\": \"note\", \"text\": \"NCCL on 2 ranks not run: no mpirun\"}"
    elif [ $DRY = 1 ] || [ "${GPUS:-0}" -ge 2 ]; then
      nccl_cmds+=("nccl_vs_cpu_2ranks|mpirun --allow-run-as-root --oversubscribe -np 2 $NT --ranks=2")
    else
      record "{\"kind\": \"note\", \"text\": \"NCCL on 2 ranks not run: ${GPUS:-0} GPU(s), 2 needed\"}"
    fi
    for entry in "${nccl_cmds[@]}"; do
      n="${entry%%|*}" cmd="${entry#*|}"
      if [ $DRY = 1 ]; then
        echo "dry-run: would run timeout $TEST_TIMEOUT $cmd"
        record "{\"kind\": \"test\", \"name\": \"$n\", \"status\": \"dry-run\"}"
        continue
      fi
      if [ "$(left)" -lt 2 ]; then
        record "{\"kind\": \"test\", \"name\": \"$n\", \"status\": \"not run: no time left\"}"
        continue
      fi
      # shellcheck disable=SC2086
      fg_wait timeout "$(cap "$TEST_TIMEOUT")" $cmd >"$LOGS/tests/$n.log" 2>&1
      rc=$?
      if [ $rc = 124 ]; then st=timeout
      elif [ $rc = 77 ]; then st="skipped: no GPU" # 2 ranks run only with 2
      elif [ $rc = 0 ] && grep -q "^OK: NCCL" "$LOGS/tests/$n.log"; then st=passed
      else st=failed; fi
      record "{\"kind\": \"test\", \"name\": \"$n\", \"status\": \"$st\"}"
      log "$n: $st"
    done
  fi
else
  record "{\"kind\": \"tests\", \"status\": \"not built\"}"
fi
for pid in "${COMPILE_PIDS[@]}"; do wait "$pid"; done
for f in "$LOGS"/compile/*.log; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .log)
  if [ -x "$SB/$n" ]; then
    record "{\"kind\": \"build_step\", \"name\": \"$n\", \"ok\": true}"
  else
    record "{\"kind\": \"build_step\", \"name\": \"$n\", \"ok\": false}"
    tail -5 "$f" >&2
  fi
done
report

# ------------------------------- the data-parallel step through NCCL --
# One rank, no MPI (ampc_comm_create_self): the emitted --data-parallel step
# of examples/mlp.tg on a CUDA context, its gradient buckets taking the
# whole path (AMPC_GRAD_BUCKETS_ONE_RANK=1: staging, the NCCL all-reduce,
# the copy back), against the same step emitted without the all-reduce. On
# one rank the CPU collective leaves every gradient as it is, so NCCL must
# too: the 20 losses and the final checkpoint's state must be equal bit
# for bit.
ddp_pair() { # NAME DEVICE DDP_BIN PLAIN_BIN DIR [DDP FLAGS]: 0 when equal
  local n="$1" dev="$2" dp="$3" pl="$4" d="$5" extra="${6:-}"
  # shellcheck disable=SC2086
  AMPC_GRAD_BUCKETS_ONE_RANK=1 fg_wait timeout "$(cap 120)" "$dp" \
    --device="$dev" $extra --save "$d/$n.ddp.ckpt" "$d/x.npy" \
    "$d/labels.npy" 20 >"$d/$n.ddp.jsonl" 2>"$LOGS/ddp/$n.ddp.log" &&
  fg_wait timeout "$(cap 120)" "$pl" --device="$dev" --save "$d/$n.plain.ckpt" \
    "$d/x.npy" "$d/labels.npy" 20 >"$d/$n.plain.jsonl" 2>"$LOGS/ddp/$n.plain.log" &&
  [ "$(wc -l <"$d/$n.ddp.jsonl")" = 20 ] &&
  cmp "$d/$n.ddp.jsonl" "$d/$n.plain.jsonl" >>"$LOGS/ddp/$n.compare.log" 2>&1 &&
  python3 "$ROOT/scripts/gpu/same_checkpoint.py" "$d/$n.ddp.ckpt" \
    "$d/$n.plain.ckpt" >>"$LOGS/ddp/$n.compare.log" 2>&1
}
DD="$WORK/ddp"
mkdir -p "$DD" "$LOGS/ddp"
"$PY" -c "import numpy as np; r = np.random.default_rng(0)
np.save('$DD/x.npy', r.standard_normal((64, 784), dtype=np.float32))
np.save('$DD/labels.npy', r.integers(0, 10, 64, dtype=np.int32))" ||
  record "{\"kind\": \"ddp_inputs\", \"ok\": false}"
if [ $DRY = 1 ]; then
  for p in fp32 fp16 bf16; do
    echo "dry-run: would compare $SB/ddp_$p and $SB/plain_$p --device=cuda"
  done
  # The harness end to end on the CPU: the same pair emitted for the CPU.
  if [ -x "$AMPC" ] && [ -n "$B" ]; then
    "$AMPC" "$ROOT/examples/mlp.tg" --emit=cpp --target=cpu --data-parallel \
      --amp=fp16 --loss-scale-init=1.0e9 --loss-scale-interval=2 \
      -o "$DD/cpu_ddp.cpp" &&
    "$AMPC" "$ROOT/examples/mlp.tg" --emit=cpp --target=cpu \
      --amp=fp16 --loss-scale-init=1.0e9 --loss-scale-interval=2 \
      -o "$DD/cpu_plain.cpp" &&
    fg_wait compile_ddp cpu_ddp "$DD/cpu_ddp.cpp" &&
    fg_wait compile_ddp cpu_plain "$DD/cpu_plain.cpp" &&
    ddp_pair cpu_fp16 cpu "$SB/cpu_ddp" "$SB/cpu_plain" "$DD"
    st=$?
    record "{\"kind\": \"dry_ddp\", \"ok\": $([ $st = 0 ] && echo true || echo false)}"
    log "ddp harness on the CPU: $([ $st = 0 ] && echo same || echo FAILED)"
  fi
else
  for p in fp32 fp16 bf16; do
    [ -x "$SB/ddp_$p" ] && [ -x "$SB/plain_$p" ] || continue
    if in_budget "nccl_ddp_step_$p" 5; then
      ddp_pair "$p" cuda "$SB/ddp_$p" "$SB/plain_$p" "$DD"
      st=$([ $? = 0 ] && echo passed || echo failed)
    else
      st="not run: no time left"
    fi
    record "{\"kind\": \"test\", \"name\": \"nccl_ddp_step_$p\", \"status\": \"$st\"}"
    log "nccl_ddp_step_$p: $st"
  done
  # The CUDA step against the CPU backend's: the same program emitted for
  # each, 20 steps on the same data. Different GEMM and reduction orders,
  # so the losses agree to a tolerance (close_losses.py), not in bits; in
  # fp16 the first steps skip on both (a scale of 1e9).
  for p in fp32 fp16 bf16; do
    [ -x "$SB/cpuplain_$p" ] && [ -s "$DD/$p.plain.jsonl" ] || continue
    if in_budget "cpu_vs_cuda_step_$p" 5; then
      tol=1e-4
      [ $p != fp32 ] && tol=2e-2
      fg_wait timeout "$(cap 120)" "$SB/cpuplain_$p" --device=cpu "$DD/x.npy" \
        "$DD/labels.npy" 20 >"$DD/$p.cpu.jsonl" 2>"$LOGS/ddp/$p.cpu.log" &&
      python3 "$HERE/close_losses.py" --tol $tol "$DD/$p.cpu.jsonl" \
        "$DD/$p.plain.jsonl" >"$LOGS/ddp/$p.cpu_vs_cuda.log" 2>&1
      st=$([ $? = 0 ] && echo passed || echo failed)
    else
      st="not run: no time left"
    fi
    record "{\"kind\": \"test\", \"name\": \"cpu_vs_cuda_step_$p\", \"status\": \"$st\"}"
    log "cpu_vs_cuda_step_$p: $st"
  done
  # The same in fp32 on a communicator of a unique id handed over as a file
  # (ampc_comm_create_rank; NCCL joins the id's NCCL id).
  if [ -x "$SB/ddp_fp32" ] && [ -x "$SB/plain_fp32" ] &&
     in_budget nccl_ddp_step_fp32_unique_id 5; then
    rm -f "$DD/uid.id"
    ddp_pair fp32_uid cuda "$SB/ddp_fp32" "$SB/plain_fp32" "$DD" \
      "--id-file $DD/uid.id --rank 0 --world 1"
    st=$([ $? = 0 ] && echo passed || echo failed)
    record "{\"kind\": \"test\", \"name\": \"nccl_ddp_step_fp32_unique_id\", \"status\": \"$st\"}"
    log "nccl_ddp_step_fp32_unique_id: $st"
  fi
fi
report

# ------------------------------------------------ the GPT-2 training step --
VOCAB=50304
if [ $DRY = 1 ]; then
  for p in fp32 fp16 bf16; do
    [ -x "$SB/gpt2_$p" ] && "$SB/gpt2_$p" --label "$p" --vocab $VOCAB --dry-run
  done
  # The harness end to end on the CPU: a small configuration of the same
  # program, emitted for the CPU, stepped by step_bench, and the PyTorch
  # model's dry run.
  if [ -x "$AMPC" ] && [ -n "$B" ]; then
    mkdir -p "$WORK/small"
    python3 "$ROOT/bench/cuda/gpt2_gen.py" --layers 1 --batch 2 --seq 16 \
      --width 64 --heads 4 --vocab 128 -o "$WORK/small/gpt2_small.tg" &&
    "$AMPC" "$WORK/small/gpt2_small.tg" --emit=cpp --target=cpu --amp=fp16 \
      -o "$WORK/small/gpt2_small.cpp" &&
    fg_wait compile_step gpt2_small gpt2 "$WORK/small/gpt2_small.cpp" &&
    "$SB/gpt2_small" --label small-fp16-cpu --vocab 128 --backend cpu \
      --warmup 1 --steps 3 --out "$WORK/small_step.json"
    st=$?
    record "{\"kind\": \"dry_step\", \"ok\": $([ $st = 0 ] && echo true || echo false)}"
  fi
  fg_wait "$PY" "$ROOT/bench/cuda/torch_gpt2.py" --dry-run ||
    record "{\"kind\": \"torch_gpt2\", \"status\": \"dry-run failed\"}"
else
  for p in fp32 fp16 bf16; do
    if [ -x "$SB/gpt2_$p" ] && in_budget "gpt2_step_$p" 20; then
      fg_wait timeout "$(cap 120)" "$SB/gpt2_$p" --label "$p" --vocab $VOCAB \
        --warmup 3 --steps 10 --out "$WORK/step_$p.json" 2>"$LOGS/step_$p.log"
      record "{\"kind\": \"step_rc\", \"name\": \"gpt2_$p\", \"rc\": $?}"
    fi
  done
  if in_budget torch_gpt2 30; then
    fg_wait timeout "$(cap 180)" "$PY" "$ROOT/bench/cuda/torch_gpt2.py" \
      --warmup 3 --steps 10 --out "$WORK/torch_gpt2.json" 2>"$LOGS/torch_gpt2.log"
    record "{\"kind\": \"step_rc\", \"name\": \"torch_gpt2\", \"rc\": $?}"
  fi
fi
report

# ------------------------------------------------------------- benchmarks --
if [ -n "$KB" ]; then
  if [ $DRY = 1 ]; then
    "$KB" --dry-run || record "{\"kind\": \"bench\", \"status\": \"dry-run failed\"}"
  elif in_budget kernel_bench 20; then
    fg_wait timeout "$(cap 120)" "$KB" --out "$WORK/kernel_bench.json" \
      2>"$LOGS/kernel_bench.log"
    record "{\"kind\": \"bench_rc\", \"ampc\": $?}"
  fi
fi
if [ $DRY = 1 ]; then
  fg_wait "$PY" "$ROOT/bench/cuda/torch_ref.py" --dry-run ||
    record "{\"kind\": \"torch\", \"status\": \"dry-run failed\"}"
elif in_budget torch_kernels 20; then
  fg_wait timeout "$(cap 120)" "$PY" "$ROOT/bench/cuda/torch_ref.py" \
    --out "$WORK/torch_ref.json" 2>"$LOGS/torch_ref.log"
  record "{\"kind\": \"bench_rc\", \"torch\": $?}"
fi
report

# ------------------------------------------- the examples' emitted steps --
for x in "$SB"/ex_*; do
  [ -x "$x" ] || continue
  n=$(basename "$x")
  if [ $DRY = 1 ]; then
    "$x" --label "$n" --warmup 1 --steps 3 --dry-run
  elif in_budget "$n" 5; then
    fg_wait timeout "$(cap 60)" "$x" --label "$n" --warmup 1 --steps 3 \
      --out "$WORK/$n.json" 2>"$LOGS/$n.log"
    record "{\"kind\": \"example_rc\", \"name\": \"$n\", \"rc\": $?}"
  fi
done

# The report (from the EXIT trap) decides the exit status too: 0 only when
# every test really ran and passed and every emitted step exited 0.
if [ $DRY = 1 ]; then
  echo "gpu_run: dry-run complete (results in $OUT)"
  exit 0
fi
python3 "$HERE/gpu_report.py" --work "$WORK" --verdict
