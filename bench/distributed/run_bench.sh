#!/usr/bin/env bash
# Data-parallel benchmark: the transformer example (per-rank batch as written)
# on 1 process and on 2 ranks under mpirun, CPU backend, one OpenBLAS thread
# per rank. Prints each run's summary line (steps/s, and for 2 ranks the
# seconds spent waiting in the gradient all-reduce).
#   bash bench/distributed/run_bench.sh [STEPS] [BUILD_DIR]
set -euo pipefail
steps=${1:-200}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build}
ampc=$build/bin/ampc
model=$root/examples/transformer.tg
export OPENBLAS_NUM_THREADS=1
mpi=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
echo "1 process:"
"$ampc" run "$model" --steps "$steps"
echo "2 ranks:"
"${mpi[@]}" "$ampc" run "$model" --steps "$steps"
