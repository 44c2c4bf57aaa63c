#!/usr/bin/env python3
"""Runs the DOUBLE, UINT8, INT8 and INT16 fixtures (Fixtures/dtypes_*.onnx,
written by make_fixtures.py; dtypes_host_wrap folds u8 values at import)
through `ampc run` on .npy inputs and compares every output with NumPy's
value of the same model (test/ONNX/dtypes.test).

  check_dtypes.py AMPC FIXTURES WORKDIR

Integer outputs must equal NumPy's bit for bit (dtype and wrap-around
included); f64 outputs must have dtype float64 and agree within 1e-14
relative (f32 arithmetic would be off by about 1e-8). Prints one line per
model; exits 1 on any disagreement.
"""
import os
import subprocess
import sys

import numpy as np


def run(ampc, model, work, inputs):
    os.makedirs(work, exist_ok=True)
    args = [ampc, "run", model, "--outputs-out", os.path.join(work, "out")]
    for name, v in inputs.items():
        path = os.path.join(work, name + ".npy")
        np.save(path, v)
        args += ["--input", "%s=%s" % (name, path)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stdout + r.stderr)
        raise SystemExit("ampc run %s failed (%d)" % (model, r.returncode))
    return [np.load(os.path.join(work, "out", "output_%d.npy" % i)) for i in range(32)
            if os.path.exists(os.path.join(work, "out", "output_%d.npy" % i))]


def compare(name, got, want):
    bad = 0
    if len(got) != len(want):
        print("%s: %d outputs, expected %d" % (name, len(got), len(want)))
        return 1
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype or g.shape != w.shape:
            ok = False
        elif w.dtype == np.float64:
            ok = bool(np.all(np.abs(g - w) <= 1e-14 * np.abs(w)))
        else:
            ok = np.array_equal(g, w)
        if not ok:
            bad += 1
            print("%s output %d: ampc %s %r, numpy %s %r" % (name, i, g.dtype, g, w.dtype, w))
    print("%s: %d outputs, %d differ" % (name, len(want), bad))
    return bad


def main():
    ampc, fixtures, work = sys.argv[1:4]
    bad = 0
    # dtypes_double: y = cumsum(x @ w + c, axis=1), z = f64(f32(x)).
    x = np.array([[1.0 / 3.0, -2.5e-7, 3.0], [1e-3, 2.0 ** 30 / 3.0, -1.0]])
    w = np.array([1.0 / 3.0, 1.0, -1.0 / 3.0, 2.0 ** -40, 0.5, 1e280,
                  1e-300, -2.0, 7.0 / 3.0]).reshape(3, 3)
    c = np.array([1e-10, 2.0 ** -40, 1.0 / 7.0])
    h = np.zeros((2, 3))
    for i in range(2):
        for j in range(3):
            h[i, j] = x[i, 0] * w[0, j] + x[i, 1] * w[1, j] + x[i, 2] * w[2, j]
    y = np.cumsum(h + c, axis=1)
    z = x.astype(np.float32).astype(np.float64)
    got = run(ampc, os.path.join(fixtures, "dtypes_double.onnx"), os.path.join(work, "double"),
              {"x": x})
    bad += compare("dtypes_double", got, [y, z])

    # dtypes_ints: NumPy's integer arithmetic wraps in the operands' width.
    a = np.array([200, 100, 255, 0, 17], np.uint8)
    e = np.array([-128, 100, 127, -1, 5], np.int8)
    s = np.array([32767, -32768, 300, -2, 9], np.int16)
    k = np.array([100, 200, 1, 0, 255], np.uint8)
    cc = np.array([1000, -1000, 32767, 0, -32768], np.int16)
    with np.errstate(over="ignore"):
        want = [a + k, e.astype(np.int16) * s + cc, a.astype(np.int8), s.astype(np.uint8),
                e.astype(np.float64), np.cumsum(a.astype(np.int32), dtype=np.int32)]
    got = run(ampc, os.path.join(fixtures, "dtypes_ints.onnx"), os.path.join(work, "ints"),
              {"a": a, "e": e, "s": s})
    bad += compare("dtypes_ints", got, want)

    # dtypes_host_wrap: u8 200 + 100 folded at import wraps to 44, and
    # 44 < 50, as NumPy computes in u8.
    x = np.array([10, 250], np.uint8)
    c = np.array([200], np.uint8) + np.array([100], np.uint8)
    got = run(ampc, os.path.join(fixtures, "dtypes_host_wrap.onnx"), os.path.join(work, "wrap"),
              {"x": x})
    bad += compare("dtypes_host_wrap", got, [x + c, c < np.array([50], np.uint8)])
    # dtypes_int_pow: 3 ** 39 folded at import and x ** e on the device,
    # both exact in int64 (NumPy's integer power wraps alike).
    x = np.array([7, -3, 2, 10], np.int64)
    e = np.array([40, 5, 62, 18], np.int64)
    got = run(ampc, os.path.join(fixtures, "dtypes_int_pow.onnx"), os.path.join(work, "pow"),
              {"x": x, "e": e})
    bad += compare("dtypes_int_pow", got, [np.power(x, e), np.array([3], np.int64) ** 39])
    print("onnx dtypes: %s" % ("all agree" if bad == 0 else "%d disagreements" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
