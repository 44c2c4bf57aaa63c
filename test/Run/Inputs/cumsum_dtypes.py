#!/usr/bin/env python3
"""cumsum of integer, bool and f64 tensors through `ampc run` against
torch.cumsum (test/Run/cumsum-dtypes.test).

  cumsum_dtypes.py AMPC WORKDIR [ampc run options...]

Integers and bool: every output must equal PyTorch's bit for bit, dtype
(i64) included, on values beyond 2^24 and 2^53 and sums that wrap around
int64. f64: the forward and the gradient of a loss through two cumsums must
agree with PyTorch float64 within 1e-12 relative. Prints one line per case;
exits 1 on any disagreement.
"""
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cumsum")


def main():
    ampc, work = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(5)
    inputs = {
        # Beyond 2^53, and 2^62 + 2^62 wraps to -2^63 (then back up).
        "c": np.array([[2**53 + 1, 1, 2**53 - 7, -(2**60)],
                       [2**62, 2**62, 2**62, -5]], np.int64),
        # i32 sums beyond 2^24 and 2^31 (the result is i64: no wrap at 32).
        "m": np.array([2**24 + 1, 2**31 - 1, 2**31 - 1, 3, -(2**31), 7], np.int32),
        "a": rng.integers(0, 256, (3, 5)).astype(np.uint8),
        "e": np.array([-128, -128, 127, 5, -1], np.int8),
        "h": np.array([32767, 32767, -32768, 2], np.int16),
        "k": np.array([True, False, True, True, False, True]),
        "x": rng.standard_normal((3, 4)) * 1e3 + 1.0 / 3.0,
        "w": rng.standard_normal((3, 4)),
    }
    args = [os.path.join(HERE, "cumsum_dtypes.tg"), "--outputs-out",
            os.path.join(work, "out")] + extra
    for name, v in inputs.items():
        path = os.path.join(work, name + ".npy")
        np.save(path, v)
        args += ["--input", "%s=%s" % (name, path)]
    r = subprocess.run([ampc, "run"] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stdout + r.stderr)
        print("ampc run failed (%d)" % r.returncode)
        return 1
    t = {k: torch.from_numpy(v) for k, v in inputs.items()}
    x = t["x"].clone().requires_grad_(True)
    y = torch.cumsum(x, dim=1)
    loss = (y * t["w"]).sum() + torch.cumsum(x * x, dim=0).sum()
    (gx,) = torch.autograd.grad(loss, x)
    ints = [torch.cumsum(t["c"], 1), torch.cumsum(t["c"], 0), torch.cumsum(t["m"], 0),
            torch.cumsum(t["a"], -1), torch.cumsum(t["e"], 0), torch.cumsum(t["h"], 0),
            torch.cumsum(t["k"], 0)]
    floats = [y.detach(), torch.cumsum(t["x"], 0), gx]
    bad = [0, 0]
    for i, want in enumerate(ints + floats):
        got = np.load(os.path.join(work, "out", "output_%d.npy" % i))
        w = want.numpy()
        exact = i < len(ints)
        if exact:
            ok = got.dtype == w.dtype and got.shape == w.shape and np.array_equal(got, w)
        else:
            ok = (got.dtype == np.float64 and got.shape == w.shape and
                  np.max(np.abs(got - w)) <= 1e-12 * max(np.max(np.abs(w)), 1e-300))
        if not ok:
            bad[0 if exact else 1] += 1
            print("output %d: ampc %s %r, torch %s %r" % (i, got.dtype, got, w.dtype, w))
    print("cumsum ints: %d outputs, %d differ" % (len(ints), bad[0]))
    print("cumsum f64: %d outputs, %d beyond 1e-12" % (len(floats), bad[1]))
    bad = sum(bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
