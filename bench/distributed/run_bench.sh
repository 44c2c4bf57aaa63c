#!/usr/bin/env bash
# Data-parallel benchmark (docs/distributed.md, "Benchmark"): steps/s of one
# process against 2 ranks under mpirun, the time each step waits in the
# gradient all-reduce, and the 2-rank step overlapped (buckets started as
# their last gradient exists, with MPI progress calls), overlapped without
# progress calls, and with --delay-allreduce, in interleaved rounds with
# paired ratios and medians (bench.py).
#   bash bench/distributed/run_bench.sh [STEPS] [ROUNDS] [BUILD_DIR] [BUCKET_MB]
# Rows: the transformer example (STEPS steps, BUCKET_MB MiB buckets, 0.05 by
# default), then, unless ENCODER=0, bench/models/encoder.tg at batch 2
# (ENCODER_STEPS steps, 40 by default; 1 MiB buckets).
set -euo pipefail
steps=${1:-2000}
rounds=${2:-9}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${3:-$root/build}
bucket=${4:-0.05}
ampc=$build/bin/ampc
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
"$py" "$root/bench/distributed/bench.py" "$ampc" "$root/examples/transformer.tg" \
  "$steps" "$rounds" "$bucket" transformer
if [ "${ENCODER:-1}" != 0 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # The encoder layer at batch 2 x 128 tokens per rank (the file has 8).
  sed -e 's/\[8, 128/[2, 128/g; s/i32\[1024\]/i32[256]/' \
    -e 's/shape = \[1024, 64\]/shape = [256, 64]/' \
    "$root/bench/models/encoder.tg" > "$tmp/encoder.tg"
  "$py" "$root/bench/distributed/bench.py" "$ampc" "$tmp/encoder.tg" \
    "${ENCODER_STEPS:-40}" "$rounds" 1 "encoder (batch 2)"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
