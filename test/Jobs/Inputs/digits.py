"""digits.py AMPC DIR PROGRAM AMPC_TORCH MODE ABS REL

Trains examples/digits.tg with `ampc run` and with the PyTorch reference on
DIR's data (examples/digits_data.py prepare), same initial params, same
shuffled order, in AMP mode MODE (off, fp16, bf16; reference policy), then
compares the first epoch's losses (ABS, REL) and the test accuracies of the
two: ampc's from the `acc` of its last eval line (the eval graph's argmax,
equal, cast and mean on the 300 held-out samples), the reference's from the
same graph run by the reference; each also agrees with argmax of its logits.
"""
import json
import os
import subprocess
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
ampc, d, program, ref, mode, abs_tol, rel_tol = sys.argv[1:8]
amp = [] if mode == "off" else ["--amp=" + mode, "--amp-policy=reference"]
out = os.path.join(d, mode)
os.makedirs(out, exist_ok=True)
data = ["--data", "x=%s/train_x.npy" % d, "--data", "labels=%s/train_y.npy" % d]
test = ["--input", "x=%s/test_x.npy" % d, "--input", "labels=%s/test_y.npy" % d]
env = dict(os.environ, AMPC=ampc)


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)


# ampc: 5 epochs with an eval after each, then the eval graph's logits.
run([ampc, "run", program, "--params-in", d + "/init"] + data + amp +
    ["--epochs", "5", "--eval", "eval", "--eval-data", "x=%s/test_x.npy" % d,
     "--eval-data", "labels=%s/test_y.npy" % d, "--log", out + "/ampc.jsonl",
     "--params-out", out + "/ampc-params"])
run([ampc, "run", program, "--graph", "eval", "--params-in", out + "/ampc-params"] +
    test + amp + ["--outputs-out", out + "/ampc-out"])
# The reference, same data order.
run([sys.executable, ref, "run", program, "--graph", "train", "--params-in", d + "/init"] +
    data + amp + ["--epochs", "5", "--log", out + "/ref.jsonl", "--params-out",
                  out + "/ref-params", "--quiet"])
run([sys.executable, ref, "run", program, "--graph", "eval", "--params-in",
     out + "/ref-params"] + test + amp + ["--outputs-out", out + "/ref-out", "--quiet"])

subprocess.run([sys.executable, os.path.join(here, "jobs.py"), "losses", out + "/ampc.jsonl",
                out + "/ref.jsonl", "29", abs_tol, rel_tol], check=True)
subprocess.run([sys.executable, os.path.join(here, "jobs.py"), "strict", out + "/ampc.jsonl"],
               check=True, stdout=subprocess.DEVNULL)


def accuracy(path):
    z = np.load(path)
    if z.dtype == np.uint16:  # bf16 bit patterns
        z = (z.astype(np.uint32) << 16).view(np.float32)
    y = np.load(d + "/test_y.npy")
    return float((z.astype(np.float32).argmax(axis=1) == y).mean())


evals = [json.loads(line) for line in open(out + "/ampc.jsonl") if line.startswith('{"eval"')]
a = evals[-1]["acc"] if evals and "acc" in evals[-1] else float("nan")
b = float(np.load(out + "/ref-out/output_1.npy").astype(np.float32))
# Each accuracy is that of its own logits (300 samples: steps of 1/300).
for name, acc, logits in (("ampc", a, out + "/ampc-out/output_2.npy"),
                          ("reference", b, out + "/ref-out/output_2.npy")):
    if abs(acc - accuracy(logits)) > 1e-6:
        print("FAIL: %s accuracy %.6f is not that of its logits (%.6f)" % (name, acc, accuracy(logits)))
        sys.exit(1)
print("ampc accuracy %.4f (eval line), reference %.4f, %d eval lines" % (a, b, len(evals)))
if not abs(a - b) <= 0.01 or len(evals) != 5:
    print("FAIL: accuracies differ by more than 1 percentage point or evals missing")
    sys.exit(1)
print("OK")
