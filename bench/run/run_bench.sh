#!/usr/bin/env bash
# `ampc run` on the CPU backend: steps/s with --amp=off vs --amp=fp16 for the
# three examples, and buffer planning's arena against one buffer per
# intermediate value (from --emit=report). Usage:
#   bash bench/run/run_bench.sh [STEPS]     (default 50; build first)
set -euo pipefail
cd "$(dirname "$0")/../.."
ampc=${AMPC:-build/bin/ampc}
steps=${1:-50}
printf "%-12s %12s %12s %8s   %14s %14s %8s\n" graph "off steps/s" "fp16 steps/s" ratio \
  "arena bytes" "sum of interm." saving
for g in mlp cnn transformer; do
  rate() {
    "$ampc" run "examples/$g.tg" --amp="$1" --steps "$steps" |
      sed -n 's/.*, \([0-9.]*\) steps\/s$/\1/p'
  }
  off=$(rate off)
  fp16=$(rate fp16)
  mem=$("$ampc" "examples/$g.tg" --emit=report --amp=fp16 |
    sed -n 's/.*"arena_bytes": \([0-9]*\), "intermediate_bytes": \([0-9]*\).*/\1 \2/p')
  set -- $mem
  python3 - "$g" "$off" "$fp16" "$1" "$2" <<'PY'
import sys
g, off, fp16, arena, total = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print("%-12s %12.1f %12.1f %8.2f   %14d %14d %7.1f%%" % (g, off, fp16, fp16 / off, arena, total, 100.0 * (1 - arena / total)))
PY
done
