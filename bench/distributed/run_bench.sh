#!/usr/bin/env bash
# Data-parallel benchmark: the transformer example (per-rank batch as written)
# on 1 process and on 2 ranks under mpirun, CPU backend, one OpenBLAS thread
# per rank. The 2-rank step is compiled twice in the same run, with small
# buckets so there are several: overlapped (each bucket's all-reduce started
# as soon as its last gradient exists) and --delay-allreduce (every bucket
# started after the backward). The runs alternate ROUNDS times so a loaded
# machine slows both alike. Prints each run's summary line (steps/s, and for
# 2 ranks the seconds spent in the gradient all-reduce calls).
#   bash bench/distributed/run_bench.sh [STEPS] [ROUNDS] [BUILD_DIR] [BUCKET_MB]
set -euo pipefail
steps=${1:-200}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${3:-$root/build}
bucket=${4:-0.05}
ampc=$build/bin/ampc
model=$root/examples/transformer.tg
export OPENBLAS_NUM_THREADS=1
mpi=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
echo "buckets ($bucket MiB cap):"
"$ampc" "$model" --data-parallel --bucket-cap-mb "$bucket" --emit=mlir |
  grep -o 'buckets = [0-9]*' | head -1
for r in $(seq "$rounds"); do
  echo "round $r, 1 process:"
  "$ampc" run "$model" --steps "$steps" | tail -1
  echo "round $r, 2 ranks, overlapped:"
  "${mpi[@]}" "$ampc" run "$model" --steps "$steps" --bucket-cap-mb "$bucket" | tail -1
  echo "round $r, 2 ranks, --delay-allreduce:"
  "${mpi[@]}" "$ampc" run "$model" --steps "$steps" --bucket-cap-mb "$bucket" \
    --delay-allreduce | tail -1
done
