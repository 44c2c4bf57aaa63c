"""compare.py LOG_A DIR_A LOG_B DIR_B TOL: the losses (and "lr", "skipped")
of two logs line by line, and every NAME.npy of two parameter directories,
to a relative tolerance TOL (|a - b| <= TOL * max(1, |b|) elementwise).
Prints the line count and the worst relative differences; exits 1 when
they disagree."""
import json
import os
import sys

import numpy as np

log_a, dir_a, log_b, dir_b, tol = sys.argv[1:6]
tol = float(tol)
lines_a = [json.loads(l) for l in open(log_a)]
lines_b = [json.loads(l) for l in open(log_b)]
ok = len(lines_a) == len(lines_b) and lines_a
worst_loss = 0.0
for a, b in zip(lines_a, lines_b):
    worst_loss = max(worst_loss, abs(a["loss"] - b["loss"]) / max(1.0, abs(b["loss"])))
    for key in ("lr", "skipped", "step", "epoch"):
        if (key in a) != (key in b) or (key in a and key != "lr" and a[key] != b[key]):
            print("line %d: %s differs: %r vs %r" % (a["step"], key, a.get(key), b.get(key)))
            ok = False
        if key == "lr" and key in a and abs(a[key] - b[key]) > 1e-6 * abs(b[key]):
            print("line %d: lr differs: %r vs %r" % (a["step"], a[key], b[key]))
            ok = False
worst_param = 0.0
names = sorted(n for n in os.listdir(dir_b) if n.endswith(".npy"))
for n in names:
    a = np.load(os.path.join(dir_a, n)).astype(np.float64)
    b = np.load(os.path.join(dir_b, n)).astype(np.float64)
    if a.shape != b.shape:
        print("%s: shape %s vs %s" % (n, a.shape, b.shape))
        ok = False
        continue
    worst_param = max(worst_param, float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))))
ok = ok and worst_loss <= tol and worst_param <= tol and names
print("%d lines, %d params: %s (worst relative difference: losses %.2g, params %.2g)"
      % (len(lines_a), len(names), "agree" if ok else "DISAGREE", worst_loss, worst_param))
sys.exit(0 if ok else 1)
