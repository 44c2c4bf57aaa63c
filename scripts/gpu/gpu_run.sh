#!/usr/bin/env bash
# The one-shot GPU run of the ampc runtime's CUDA backend.
#
# On a bare GPU machine (CUDA toolkit, CMake, Ninja, PyTorch; no LLVM/MLIR,
# no OpenBLAS, no GoogleTest) this script
#   1. builds the runtime standalone with its CUDA backend, OpenBLAS and
#      GoogleTest taken from a carried prefix (made on a developer machine
#      with --prepare) or from the system, and the C++ that ampc emitted
#      (carried too: there is no MLIR there) for the GPT-2-small-sized
#      training step in fp32, fp16 and bf16 and for every example;
#   2. runs every CUDA test (the Cuda*, CudaFast*, CudaFixes* and
#      HostRead.Cuda* GoogleTest cases and the lazy-loading check) in its
#      own process with a timeout, TEST_JOBS at a time, so a device fault in
#      one cannot poison the others, and the NCCL collectives against the
#      CPU collective (runtime/test/test_nccl.cpp: one rank, and two ranks
#      under mpirun where mpirun and 2 GPUs exist, else a note says why not);
#   3. times the emitted GPT-2 step (bench/cuda/step_bench.cpp; 8192
#      tokens, width 768, 12 layers) in fp32, fp16 and bf16 and the same
#      model in PyTorch eager AMP (bench/cuda/torch_gpt2.py), counting host
#      synchronisations inside the emitted steps;
#   4. times the runtime's kernels at GPT-2-small sizes (bench/cuda/
#      kernel_bench.cpp) and the same cases in PyTorch (bench/cuda/
#      torch_ref.py);
#   5. runs each example's emitted step a few times (a smoke run), and the
#      emitted data-parallel step of examples/mlp.tg on one rank through
#      NCCL (docs/examples/ddp_train.cpp) against the same step without the
#      all-reduce, bit for bit (fp32, fp16 with skips, bf16);
#   6. writes everything to $OUT/gpu_run.json and a readable
#      $OUT/gpu_summary.txt.
# Phases after the tests are skipped (and recorded as skipped) once the run
# has used BUDGET seconds (default 450), so it ends within 8 minutes.
#
#   scripts/gpu/gpu_run.sh --prepare DIR     # here: fill a carry prefix
#   scripts/gpu/gpu_run.sh [--carry DIR]     # there: the whole run
#   scripts/gpu/gpu_run.sh --dry-run [--runtime-build DIR]
#
# --dry-run does everything up to the first CUDA call: checks the tools,
# configures and builds (or reuses --runtime-build), emits the C++ (with
# the ampc of this tree, AMPC, when nothing is carried) and compiles it,
# runs a small configuration of the GPT-2 step through step_bench and
# torch_gpt2.py on the CPU, lists every test and benchmark case with the
# command it would run, and writes the JSON and the summary marked
# "dry_run". Environment: OUT (results, default ./gpu-results), PYTHON (the
# one with torch, default python3), AMPC (default build/bin/ampc), BUILD_DIR
# (default /tmp/ampc-gpu-build), CUDA_ARCHS (default 90), TEST_TIMEOUT
# (seconds per test, default 150), TEST_JOBS (default 4), BUDGET.
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
  -h | --help) sed -n 2,44p "$0"; exit 0 ;;
  *) echo "gpu_run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "[gpu_run] $*" >&2; }
AMPC="${AMPC:-$ROOT/build/bin/ampc}"

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
  # The data-parallel step through NCCL (issue 14): examples/mlp.tg with and
  # without the gradient all-reduce, in three precisions (fp16 from a scale
  # of 1e9, so the scaler skips and backs off first).
  for p in fp32 fp16 bf16; do
    local flags=(--amp=off)
    [ $p = fp16 ] && flags=(--amp=fp16 --loss-scale-init=1.0e9 --loss-scale-interval=2)
    [ $p = bf16 ] && flags=(--amp=bf16)
    "$AMPC" "$ROOT/examples/mlp.tg" --emit=cpp --target=cuda --data-parallel \
      "${flags[@]}" -o "$d/ddp_$p.cpp" || ok=1
    "$AMPC" "$ROOT/examples/mlp.tg" --emit=cpp --target=cuda "${flags[@]}" \
      -o "$d/plain_$p.cpp" || ok=1
  done
  git -C "$ROOT" rev-parse --short HEAD >"$d/commit" 2>/dev/null
  return $ok
}

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
  emit_all "$PREPARE/emitted" || { log "emitting C++ with $AMPC failed"; exit 1; }
  # The sources the GPU machine builds, should only the carry reach it.
  tar czf "$PREPARE/sources.tar.gz" -C "$ROOT" runtime bench/cuda scripts/gpu \
    examples docs/examples
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
TEST_JOBS="${TEST_JOBS:-4}"
BUDGET="${BUDGET:-450}"
PY="${PYTHON:-python3}" # the Python that has torch
START=$(date +%s)
RECORDS="$OUT/records.jsonl" # one JSON object a line, merged at the end
: >"$RECORDS"
record() { echo "$1" >>"$RECORDS"; }
elapsed() { echo $(( $(date +%s) - START )); }
# Whether there is time for an optional phase; records a skip otherwise.
in_budget() { # PHASE
  if [ "$(elapsed)" -ge "$BUDGET" ]; then
    record "{\"kind\": \"phase\", \"name\": \"$1\", \"status\": \"skipped: budget ($BUDGET s) used\"}"
    log "skipping $1: the budget of $BUDGET s is used"
    return 1
  fi
  return 0
}
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
if [ ! -d "$ROOT/runtime" ] && [ -n "$CARRY" ] && [ -e "$CARRY/sources.tar.gz" ]; then
  tar xzf "$CARRY/sources.tar.gz" -C "$ROOT"
fi
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

# ------------------------------------------------ emitted C++ (compiling) --
# Built in the background while the tests run: the GPT-2 step in three
# precisions and each example, each linked with step_bench.cpp.
EMITTED=""
if [ -n "$CARRY" ] && [ -d "$CARRY/emitted" ]; then
  EMITTED="$(cd "$CARRY/emitted" && pwd)"
elif [ -x "$AMPC" ]; then
  EMITTED="$OUT/emitted"
  emit_all "$EMITTED" >"$OUT/emit.log" 2>&1 ||
    record "{\"kind\": \"emit\", \"ok\": false}"
else
  record "{\"kind\": \"emit\", \"ok\": false, \"why\": \"no carried emitted C++ and no ampc at $AMPC\"}"
fi
SB="$OUT/step_bin"
# The dry run only proves the emitted C++ compiles and links: -O0 is enough.
STEP_OPT=-O2
[ $DRY = 1 ] && STEP_OPT=-O0
mkdir -p "$SB"
compile_step() { # NAME GRAPH CPP
  # shellcheck disable=SC2086
  c++ -std=c++17 "$STEP_OPT" ${BENCH_CXXFLAGS:-} -I"$ROOT/runtime/include" \
    -I"$(dirname "$3")" -DGRAPH="$2" "-DGRAPH_HEADER=\"$(basename "$3" .cpp).h\"" \
    "$3" "$ROOT/bench/cuda/step_bench.cpp" -L"$B" -lampc_runtime \
    -Wl,-rpath,"$B" ${BENCH_LDFLAGS:-} -o "$SB/$1" >"$SB/$1.log" 2>&1
}
compile_ddp() { # NAME CPP: the step with docs/examples/ddp_train.cpp
  # shellcheck disable=SC2086
  c++ -std=c++17 "$STEP_OPT" ${BENCH_CXXFLAGS:-} -I"$ROOT/runtime/include" \
    -I"$(dirname "$2")" -DGRAPH=mlp "-DGRAPH_HEADER=\"$(basename "$2" .cpp).h\"" \
    "$2" "$ROOT/docs/examples/ddp_train.cpp" -L"$B" -lampc_runtime \
    -Wl,-rpath,"$B" ${BENCH_LDFLAGS:-} -o "$SB/$1" >"$SB/$1.log" 2>&1
}
COMPILE_PIDS=()
if [ -n "$EMITTED" ] && [ -n "$B" ] && [ -e "$B/libampc_runtime.so" ]; then
  for p in fp32 fp16 bf16; do
    for k in ddp plain; do
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
TESTS="$B/test/ampc_runtime_tests"
run_one_test() { # NAME: one process, one record line
  local t="$1" t0 rc secs status
  t0=$(date +%s.%N)
  timeout "$TEST_TIMEOUT" "$TESTS" --gtest_filter="$t" >"$OUT/test_$t.log" 2>&1
  rc=$?
  secs=$(python3 -c "import time; print(round(time.time() - $t0, 2))")
  if [ $rc = 124 ]; then status=timeout
  elif grep -q '^\[  SKIPPED \]' "$OUT/test_$t.log"; then status=skipped
  elif [ $rc = 0 ]; then status=passed
  else status=failed; fi
  echo "{\"kind\": \"test\", \"name\": \"$t\", \"status\": \"$status\", \"seconds\": $secs}" >>"$RECORDS"
  echo "[gpu_run] $t: $status (${secs}s)" >&2
}
export -f run_one_test
export TESTS OUT RECORDS TEST_TIMEOUT
if [ -n "$B" ] && [ -x "$TESTS" ]; then
  names=$("$TESTS" --gtest_list_tests --gtest_filter='Cuda*:HostRead.Cuda*' |
          awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}')
  count=$(echo "$names" | grep -c .)
  log "$count CUDA test cases, $TEST_JOBS at a time"
  if [ $DRY = 1 ]; then
    for t in $names; do
      echo "dry-run: would run timeout $TEST_TIMEOUT $TESTS --gtest_filter=$t"
      record "{\"kind\": \"test\", \"name\": $(jstr "$t"), \"status\": \"dry-run\"}"
    done
  else
    echo "$names" | grep . | xargs -P "$TEST_JOBS" -I{} bash -c 'run_one_test "$1"' _ {}
  fi
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
  # NCCL collectives against the CPU collective, bit for bit: one rank
  # (ampc_comm_create_self, then a communicator of ampc_comm_create_rank
  # whose unique id holds an NCCL id), then two ranks under mpirun where mpirun
  # exists (the program skips, exit 77, unless there are 2 GPUs).
  NT="$B/test/ampc_runtime_nccl_test"
  if [ -x "$NT" ]; then
    nccl_cmds=("nccl_vs_cpu|$NT" "nccl_vs_cpu_unique_id|$NT --unique-id")
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if ! command -v mpirun >/dev/null; then
      record "{\"kind\": \"note\", \"text\": \"NCCL on 2 ranks not run: no mpirun\"}"
    elif [ $DRY = 1 ] || [ "$gpus" -ge 2 ]; then
      nccl_cmds+=("nccl_vs_cpu_2ranks|mpirun --allow-run-as-root --oversubscribe -np 2 $NT --ranks=2")
    else
      record "{\"kind\": \"note\", \"text\": \"NCCL on 2 ranks not run: $gpus GPU(s), 2 needed\"}"
    fi
    for entry in "${nccl_cmds[@]}"; do
      n="${entry%%|*}" cmd="${entry#*|}"
      if [ $DRY = 1 ]; then
        echo "dry-run: would run timeout $TEST_TIMEOUT $cmd"
        record "{\"kind\": \"test\", \"name\": \"$n\", \"status\": \"dry-run\"}"
        continue
      fi
      # shellcheck disable=SC2086
      timeout "$TEST_TIMEOUT" $cmd >"$OUT/test_$n.log" 2>&1
      rc=$?
      if [ $rc = 124 ]; then st=timeout
      elif [ $rc = 77 ]; then st=skipped
      elif [ $rc = 0 ] && grep -q "^OK: NCCL" "$OUT/test_$n.log"; then st=passed
      else st=failed; fi
      record "{\"kind\": \"test\", \"name\": \"$n\", \"status\": \"$st\"}"
      log "$n: $st"
    done
  fi
else
  record "{\"kind\": \"tests\", \"status\": \"not built\"}"
fi
for pid in "${COMPILE_PIDS[@]}"; do wait "$pid"; done
for f in "$SB"/*.log; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .log)
  if [ -x "$SB/$n" ]; then
    record "{\"kind\": \"build_step\", \"name\": \"$n\", \"ok\": true}"
  else
    record "{\"kind\": \"build_step\", \"name\": \"$n\", \"ok\": false}"
    tail -5 "$f" >&2
  fi
done

# ------------------------------- the data-parallel step through NCCL (14) --
# One rank, no MPI (ampc_comm_create_self): the emitted --data-parallel step
# of examples/mlp.tg on a CUDA context, its gradient all-reduce through a
# one-rank NCCL communicator, against the same step emitted without the
# all-reduce. On one rank the CPU collective leaves every gradient as it is
# (the sum of one buffer, the mean divided by 1, the 16-bit pre-division by
# 1), so NCCL must too: the 20 losses and the final checkpoint's state
# (parameters, momenta, scaler) must be equal bit for bit.
ddp_pair() { # NAME DEVICE DDP_BIN PLAIN_BIN DIR [DDP FLAGS]: 0 when equal
  local n="$1" dev="$2" dp="$3" pl="$4" d="$5" extra="${6:-}"
  # shellcheck disable=SC2086
  timeout 120 "$dp" --device="$dev" $extra --save "$d/$n.ddp.ckpt" "$d/x.npy" \
    "$d/labels.npy" 20 >"$d/$n.ddp.jsonl" 2>"$d/$n.ddp.log" &&
  timeout 120 "$pl" --device="$dev" --save "$d/$n.plain.ckpt" "$d/x.npy" \
    "$d/labels.npy" 20 >"$d/$n.plain.jsonl" 2>"$d/$n.plain.log" &&
  [ "$(wc -l <"$d/$n.ddp.jsonl")" = 20 ] &&
  cmp "$d/$n.ddp.jsonl" "$d/$n.plain.jsonl" >>"$d/$n.compare.log" 2>&1 &&
  python3 "$ROOT/scripts/gpu/same_checkpoint.py" "$d/$n.ddp.ckpt" \
    "$d/$n.plain.ckpt" >>"$d/$n.compare.log" 2>&1
}
DD="$OUT/ddp"
mkdir -p "$DD"
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
    compile_ddp cpu_ddp "$DD/cpu_ddp.cpp" && compile_ddp cpu_plain "$DD/cpu_plain.cpp" &&
    ddp_pair cpu_fp16 cpu "$SB/cpu_ddp" "$SB/cpu_plain" "$DD"
    st=$?
    record "{\"kind\": \"dry_ddp\", \"ok\": $([ $st = 0 ] && echo true || echo false)}"
    log "ddp harness on the CPU: $([ $st = 0 ] && echo same || echo FAILED)"
  fi
else
  for p in fp32 fp16 bf16; do
    [ -x "$SB/ddp_$p" ] && [ -x "$SB/plain_$p" ] || continue
    ddp_pair "$p" cuda "$SB/ddp_$p" "$SB/plain_$p" "$DD"
    st=$([ $? = 0 ] && echo passed || echo failed)
    record "{\"kind\": \"test\", \"name\": \"nccl_ddp_step_$p\", \"status\": \"$st\"}"
    log "nccl_ddp_step_$p: $st"
  done
  # The same in fp32 on a communicator of a unique id handed over as a file
  # (ampc_comm_create_rank; NCCL joins the id's NCCL id).
  if [ -x "$SB/ddp_fp32" ] && [ -x "$SB/plain_fp32" ]; then
    rm -f "$DD/uid.id"
    ddp_pair fp32_uid cuda "$SB/ddp_fp32" "$SB/plain_fp32" "$DD" \
      "--id-file $DD/uid.id --rank 0 --world 1"
    st=$([ $? = 0 ] && echo passed || echo failed)
    record "{\"kind\": \"test\", \"name\": \"nccl_ddp_step_fp32_unique_id\", \"status\": \"$st\"}"
    log "nccl_ddp_step_fp32_unique_id: $st"
  fi
fi

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
    mkdir -p "$OUT/small"
    python3 "$ROOT/bench/cuda/gpt2_gen.py" --layers 1 --batch 2 --seq 16 \
      --width 64 --heads 4 --vocab 128 -o "$OUT/small/gpt2_small.tg" &&
    "$AMPC" "$OUT/small/gpt2_small.tg" --emit=cpp --target=cpu --amp=fp16 \
      -o "$OUT/small/gpt2_small.cpp" &&
    compile_step gpt2_small gpt2 "$OUT/small/gpt2_small.cpp" &&
    "$SB/gpt2_small" --label small-fp16-cpu --vocab 128 --backend cpu \
      --warmup 1 --steps 3 --out "$OUT/small/step.json"
    st=$?
    record "{\"kind\": \"dry_step\", \"ok\": $([ $st = 0 ] && echo true || echo false)}"
  fi
  "$PY" "$ROOT/bench/cuda/torch_gpt2.py" --dry-run ||
    record "{\"kind\": \"torch_gpt2\", \"status\": \"dry-run failed\"}"
elif in_budget gpt2_step; then
  for p in fp32 fp16 bf16; do
    if [ -x "$SB/gpt2_$p" ]; then
      timeout 150 "$SB/gpt2_$p" --label "$p" --vocab $VOCAB --warmup 3 \
        --steps 10 --out "$OUT/step_$p.json" 2>"$OUT/step_$p.log"
      record "{\"kind\": \"step_rc\", \"name\": \"gpt2_$p\", \"rc\": $?}"
    fi
  done
  timeout 240 "$PY" "$ROOT/bench/cuda/torch_gpt2.py" --warmup 3 --steps 10 \
    --out "$OUT/torch_gpt2.json" 2>"$OUT/torch_gpt2.log"
  record "{\"kind\": \"step_rc\", \"name\": \"torch_gpt2\", \"rc\": $?}"
fi

# ------------------------------------------------------------- benchmarks --
if [ -n "$KB" ] && { [ $DRY = 1 ] || in_budget kernel_bench; }; then
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
elif in_budget torch_kernels; then
  timeout 240 "$PY" "$ROOT/bench/cuda/torch_ref.py" --out "$OUT/torch_ref.json" \
    2>"$OUT/torch_ref.log"
  record "{\"kind\": \"bench_rc\", \"torch\": $?}"
fi

# ------------------------------------------- the examples' emitted steps --
for x in "$SB"/ex_*; do
  [ -x "$x" ] || continue
  n=$(basename "$x")
  if [ $DRY = 1 ]; then
    "$x" --label "$n" --warmup 1 --steps 3 --dry-run
  elif in_budget "$n"; then
    timeout 60 "$x" --label "$n" --warmup 1 --steps 3 --out "$OUT/$n.json" \
      2>"$OUT/$n.log"
    record "{\"kind\": \"example_rc\", \"name\": \"$n\", \"rc\": $?}"
  fi
done

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
    if ("failed" in str(r.get("status", "")) or r.get("ok") is False or
            r.get("rc") not in (None, 0)):
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
steps = {p: load(f"step_{p}.json") for p in ("fp32", "fp16", "bf16")}
tg = load("torch_gpt2.json") or {}
tsteps = {c["label"]: c for c in tg.get("cases", [])}
result["gpt2_step"] = {"ampc": steps, "torch": tg}
if any(steps.values()) or tsteps:
    lines.append("GPT-2-small-sized training step (8192 tokens, width 768, "
                 "12 layers), ms per step:")
    lines.append(f"{'precision':10s} {'ampc':>10s} {'torch':>10s} "
                 f"{'torch/ampc':>10s} {'syncs in steps':>15s}")
    for p in ("fp32", "fp16", "bf16"):
        a = (steps[p] or {}).get("ms_per_step")
        b = tsteps.get(p, {}).get("ms_per_step")
        sy = (steps[p] or {}).get("host_syncs_inside_steps", "-")
        lines.append(f"{p:10s} {a if a else 'FAILED':>10} {b if b else 'FAILED':>10} "
                     f"{(f'{b / a:.2f}' if a and b else '-'):>10} {sy:>15}")
    a16, a32 = (steps["fp16"] or {}).get("ms_per_step"), (steps["fp32"] or {}).get("ms_per_step")
    t16 = tsteps.get("fp16", {}).get("ms_per_step")
    if a16 and t16:
        lines.append(f"target fp16 step >= 1.3x PyTorch eager AMP: {t16 / a16:.2f}x "
                     f"({'met' if t16 / a16 >= 1.3 else 'NOT met'})")
    if a16 and a32:
        lines.append(f"target fp16 step >= 2x ampc f32: {a32 / a16:.2f}x "
                     f"({'met' if a32 / a16 >= 2 else 'NOT met'})")
    syncs = [s.get("host_syncs_inside_steps") for s in steps.values() if s]
    if syncs:
        lines.append(f"target 0 host synchronisations inside emitted steps: "
                     f"{'met' if all(x == 0 for x in syncs) else 'NOT met'}")
for r in recs:
    if r["kind"] == "phase":
        lines.append(f"phase {r['name']}: {r['status']}")
small = load(os.path.join("small", "step.json"))
if small:
    lines.append(f"dry run: the small GPT-2 configuration stepped on the CPU "
                 f"through the emitted C++: loss {small['losses'][0]:.4f} -> "
                 f"{small['losses'][-1]:.4f}, {small['host_syncs_inside_steps']} "
                 f"host syncs inside steps")
json.dump(result, open(os.path.join(out, "gpu_run.json"), "w"), indent=1)
open(os.path.join(out, "gpu_summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
if [ $DRY = 1 ]; then
  echo "gpu_run: dry-run complete (results in $OUT)"
  exit 0
fi
# Exit 0 only when every CUDA test really ran and passed and every emitted
# step that ran exited 0 (which includes 0 host syncs inside its steps).
python3 - "$OUT/records.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
tests = [r for r in recs if r["kind"] == "test"]
rcs = [r["rc"] for r in recs if r["kind"] in ("step_rc", "example_rc")]
ok = tests and all(t["status"] == "passed" for t in tests) and \
    all(rc == 0 for rc in rcs)
sys.exit(0 if ok else 1)
PY
