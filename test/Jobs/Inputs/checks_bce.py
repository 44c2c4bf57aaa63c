"""checks_bce.py AMPC AMPC_TORCH WORK LOW

The binary cross-entropy losses with probabilities and logits near 0 and 1
under --amp=fp16|bf16 (LOW f16|bf16), against the PyTorch reference
(tools/ampc-torch/ampc_torch.py, same inputs).

The operands are cast to LOW in the program, the way values of a
mixed-precision model reach a loss; both losses are in the fp32 class, so
both ampc and the reference widen the same rounded operands exactly and
compute in f32. Rounding to LOW is the same round-to-nearest-even on both
sides (ampc's casts are checked on every f16 and bf16 bit pattern), so the
operands agree bit for bit and what remains is the f32 arithmetic of log,
log1p, exp and the mean: a few f32 ulps per element. The tolerances are
therefore the f32 ones of the differential tests (docs/pytorch.md): losses
1e-5 relative, gradients 1e-4 of their largest element; the fp16 class
(1e-3) would hide a real error here. Near the ends the rounding is large
(0.9995 is 1 - 2^-11 in f16 and 1.0 in bf16, so the loss sits on its -100
clamp in bf16): the test shows that both sides clamp, and differentiate, the
same way.

Probabilities made by a low-precision op in the program (sigmoid of f16
logits) are not compared here: a one-ulp difference of such a probability at
1 - 2^-11 moves -log(1 - p) from 7.6 to the clamp at 100, which no
tolerance covers; tgdiff's `binary_cross_entropy_edges` case runs that shape
with f32 operands only for that reason.
"""
import os
import subprocess
import sys

import numpy as np

ampc, ref, work, low = sys.argv[1:5]
mode = {"f16": "fp16", "bf16": "bf16"}[low]
os.makedirs(work, exist_ok=True)

# 4 x 8: probabilities and logits near both ends, hard and soft targets.
p = np.array([[1e-3, 5e-3, 0.02, 0.5, 0.98, 0.995, 0.999, 0.9995]] * 4, np.float32)
x = np.array([[-30.3, -12.7, -5.1, 0.3, 5.3, 12.9, 30.6, 61.2]] * 4, np.float32)
y = np.array([[0, 1, 0, 1, 0, 1, 0, 1], [1, 0, 1, 0, 1, 0, 1, 0],
              [1, 1, 1, 1, 1, 1, 1, 1], [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 0.0]],
             np.float32)
# Probabilities that round to exactly 0 or 1 in LOW (the clamp), forward only.
q = np.array([[0.0, 1e-9, 1e-30, 0.5, 0.99999, 1.0, 1.0 - 1e-7, 0.25]] * 4, np.float32)
for name, a in (("p", p), ("x", x), ("y", y), ("q", q)):
    np.save(os.path.join(work, name + ".npy"), a)

programs = {
    "grad": """graph bce_grad(p: f32[4, 8], x: f32[4, 8], y: f32[4, 8]) -> f32[], f32[], f32[4, 8], f32[4, 8] {
  p_l  = cast(p, to=LOW)
  x_l  = cast(x, to=LOW)
  a    = binary_cross_entropy(p_l, y)
  b    = binary_cross_entropy_with_logits(x_l, y)
  loss = a + b
  g_p, g_x = grad(loss, p, x)
  return a, b, g_p, g_x
}
""",
    "clamp": """graph bce_clamp(q: f32[4, 8], y: f32[4, 8]) -> f32[] {
  c = binary_cross_entropy(cast(q, to=LOW), y)
  return c
}
""",
}
inputs = {"grad": ["p", "x", "y"], "clamp": ["q", "y"]}
flags = ["--amp=" + mode, "--amp-policy=reference", "--loss-scale=none"]
env = dict(os.environ, AMPC=ampc)
ok = True
for kind, text in programs.items():
    path = os.path.join(work, "%s_%s.tg" % (kind, low))
    with open(path, "w") as f:
        f.write(text.replace("LOW", low))
    ins = sum((["--input", "%s=%s" % (n, os.path.join(work, n + ".npy"))] for n in inputs[kind]), [])
    out_a, out_r = os.path.join(work, kind + "-ampc"), os.path.join(work, kind + "-ref")
    subprocess.run([ampc, "run", path] + ins + flags + ["--outputs-out", out_a],
                   check=True, stdout=subprocess.DEVNULL, env=env)
    subprocess.run([sys.executable, ref, "run", path] + ins + flags +
                   ["--outputs-out", out_r, "--quiet"], check=True, stdout=subprocess.DEVNULL, env=env)
    for f in sorted(os.listdir(out_r)):
        a = np.load(os.path.join(out_a, f)).astype(np.float64)
        r = np.load(os.path.join(out_r, f)).astype(np.float64)
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(r))):
            print("FAIL %s %s: non-finite values" % (kind, f))
            ok = False
            continue
        if a.ndim == 0:
            err, tol = abs(a - r) / max(abs(r), 1e-30), 1e-5
        else:
            err, tol = np.max(np.abs(a - r)) / max(np.max(np.abs(r)), 1e-30), 1e-4
        print("%s %s %s: ampc %s, error %.2g (tolerance %g)" % (
            low, kind, f, ("%.9g" % a) if a.ndim == 0 else "max %.6g" % np.max(np.abs(a)), err, tol))
        ok &= err <= tol
print("OK" if ok else "FAIL")
sys.exit(0 if ok else 1)
