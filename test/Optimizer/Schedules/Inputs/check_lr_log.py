"""Checks the "lr" field of an ampc run log against the schedule's formula
(docs/optimizer.md), counting only the updates that were not skipped:
check_lr_log.py LOG KIND LR WARMUP TOTAL MIN_LR STEP_SIZE GAMMA.
Prints the number of lines, skipped lines and distinct rates."""
import json
import math
import sys

log, kind = sys.argv[1], sys.argv[2]
lr, w, T, m, k, g = (float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
                     float(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8]))


def rate(t):
    if t < w:
        return lr * (t + 1) / w
    if kind == "linear":
        return m + (lr - m) * max(0.0, (T - t) / (T - w))
    if kind == "cosine":
        return m + (lr - m) * 0.5 * (1 + math.cos(math.pi * min(1.0, (t - w) / (T - w))))
    if kind == "step":
        return lr * g ** math.floor((t - w) / k)
    return lr


t = 0
lines = skipped = 0
rates = set()
for line in open(log):
    r = json.loads(line)
    if "step" not in r:
        continue
    lines += 1
    want = rate(t)
    if not math.isclose(r["lr"], want, rel_tol=1e-7):
        sys.exit("step %d: lr %r, the formula at t = %d gives %r" % (r["step"], r["lr"], t, want))
    rates.add(r["lr"])
    if r.get("skipped"):
        skipped += 1
    else:
        t += 1
print("%d lines, %d skipped, %d rates" % (lines, skipped, len(rates)))
