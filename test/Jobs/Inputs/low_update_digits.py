"""Pure bf16 training on scikit-learn's digits under --low-update
(docs/optimizer.md, "Updates of 16-bit params").

  low_update_digits.py AMPC DATA PROGRAM EPOCHS

Trains PROGRAM (bench/lowupdate/digits_adamw.tg: AdamW, lr 3e-4) from
DATA/init (f32) at O0, and from those params rounded to bf16 at
--opt-level=O3 --amp=bf16 with bf16 moments under each --low-update mode,
prints each held-out accuracy (the last eval line's `acc`), and checks that
round-to-nearest falls short of f32 by more than 1.5 points while
stochastic rounding and Kahan compensation come within 1.5 points.
"""
import json
import os
import subprocess
import sys

import numpy as np

ampc, data, program, epochs = sys.argv[1:5]

init16 = os.path.join(data, "init_bf16")
os.makedirs(init16, exist_ok=True)
for name in os.listdir(os.path.join(data, "init")):
    a = np.load(os.path.join(data, "init", name)).astype(np.float32)
    b = a.view(np.uint32).astype(np.uint64)
    np.save(os.path.join(init16, name),
            ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16))

O3 = ["--opt-level=O3", "--amp=bf16", "--optimizer-state-dtype=bf16"]
modes = [("f32", "init", ["--opt-level=O0"]),
         ("nearest", "init_bf16", O3),
         ("stochastic", "init_bf16", O3 + ["--low-update=stochastic"]),
         ("kahan", "init_bf16", O3 + ["--low-update=kahan"])]
acc = {}
for name, init, flags in modes:
    log = os.path.join(data, name + ".jsonl")
    subprocess.run([ampc, "run", program, "--params-in", os.path.join(data, init),
                    "--data", "x=%s/train_x.npy" % data,
                    "--data", "labels=%s/train_y.npy" % data,
                    "--epochs", epochs, "--eval", "eval",
                    "--eval-data", "x=%s/test_x.npy" % data,
                    "--eval-data", "labels=%s/test_y.npy" % data,
                    "--log", log] + flags,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    evals = [json.loads(l) for l in open(log) if l.startswith('{"eval"')]
    acc[name] = 100.0 * evals[-1]["acc"]
    print("%s accuracy %.2f%%" % (name, acc[name]))
ok = True
if not acc["nearest"] < acc["f32"] - 1.5:
    print("FAIL: nearest is within 1.5 points of f32")
    ok = False
for name in ("stochastic", "kahan"):
    if not acc[name] >= acc["f32"] - 1.5:
        print("FAIL: %s is %.2f points below f32" % (name, acc["f32"] - acc[name]))
        ok = False
print("OK" if ok else "FAIL")
sys.exit(0 if ok else 1)
