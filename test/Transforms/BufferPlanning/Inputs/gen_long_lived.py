#!/usr/bin/env python3
"""A graph of N values that all live to the end of the step (all returned):
N * (N - 1) / 2 conflicts, more than the greedy placement's budget for
N >= 200, so the planner falls back to its linear scan."""
import sys

n = int(sys.argv[1])
types = ", ".join(["tensor<64xf32>"] * n)
print(f"func.func @long_lived(%x: tensor<64xf32> {{tg.input = \"x\"}}) -> ({types}) {{")
prev = "%x"
for i in range(n):
    op = "tg.relu" if i % 2 else "tg.neg"
    print(f"  %v{i} = {op} {prev} : tensor<64xf32>")
    prev = f"%v{i}"
print("  return " + ", ".join(f"%v{i}" for i in range(n)) + " : " + types)
print("}")
