"""Drives returned-grads.test: a model that returns the gradients of a
`grad` statement (a parameter's and an input's), its data, and comparisons
of the `--outputs-out` files of one process and of W ranks.

  ddpgrad.py model DIR B [--no-minimize]  DIR/g{B}.tg (DIR/n{B}.tg without
                                          the optimizer): returns loss,
                                          grad w1, grad b1, grad x
  ddpgrad.py data DIR N            DIR/x.npy, DIR/y.npy with N rows
  ddpgrad.py swap DIR              DIR/xs.npy, DIR/ys.npy: rows 2j and 2j+1
                                   exchanged (rank 0 of 2 then takes the
                                   rows rank 1 took)
  ddpgrad.py averaged ONE MANY [--rtol R]
        the parameters' gradients (output_1, output_2) of MANY (W ranks of
        batch B) against ONE (one process of batch W*B), element-wise
        within R of each tensor's largest magnitude
  ddpgrad.py local ONE MANY W [--rtol R]
        MANY's input gradient (output_3, rank 0's batch: rows j*W of the
        one process's) is the rank's own: W times ONE's rows j*W (the
        one-process loss is the mean over W times as many rows); the
        average over the ranks would not be
  ddpgrad.py same-bits A B NAME...   A/NAME and B/NAME equal bit for bit
  ddpgrad.py differ A B NAME         A/NAME and B/NAME differ (somewhere)
"""
import os
import sys

import numpy as np


def model(d, b, minimize):
    name = f"g{b}" if minimize else f"n{b}"
    opt = "  minimize loss with sgd(lr = 0.1, momentum = 0.9)\n" if minimize else ""
    with open(os.path.join(d, name + ".tg"), "w") as f:
        f.write(f"""graph m(x: f32[{b}, 16], labels: i32[{b}]) -> f32[], f32[16, 12], f32[12], f32[{b}, 16] {{
  param w1: f32[16, 12] = normal(0.0, 0.3)
  param b1: f32[12]     = normal(0.0, 0.1)
  param w2: f32[12, 5]  = normal(0.0, 0.3)
  h      = relu(matmul(x, w1) + b1)
  logits = matmul(h, w2)
  loss   = cross_entropy(logits, labels)
  gw1, gb1, gx = grad(loss, w1, b1, x)
{opt}  return loss, gw1, gb1, gx
}}
""")


def data(d, n):
    rng = np.random.default_rng(11)
    np.save(os.path.join(d, "x.npy"),
            rng.standard_normal((n, 16)).astype(np.float32))
    np.save(os.path.join(d, "y.npy"),
            rng.integers(0, 5, size=n).astype(np.int32))


def swap(d):
    for src, dst in (("x.npy", "xs.npy"), ("y.npy", "ys.npy")):
        a = np.load(os.path.join(d, src))
        s = a.copy()
        s[0::2], s[1::2] = a[1::2], a[0::2]
        np.save(os.path.join(d, dst), s)


def load(d, i):
    return np.load(os.path.join(d, f"output_{i}.npy"))


def close(x, y, rtol, what):
    assert x.shape == y.shape, f"{what}: shape {x.shape} vs {y.shape}"
    err = float(np.max(np.abs(x - y)) / max(float(np.max(np.abs(y))), 1e-30))
    assert err <= rtol, f"{what}: difference {err:.3g} of the largest magnitude"
    return err


def averaged(one, many, rtol):
    for i in (1, 2):
        err = close(load(many, i), load(one, i), rtol, f"output_{i}")
        print(f"output_{i}: the one-process gradient within {err:.2g}")
    print(f"averaged: within {rtol:g}")


def local(one, many, w, rtol):
    gx, ref = load(many, 3), load(one, 3)
    err = close(gx, w * ref[0::w], rtol, "output_3")
    # What an average over the ranks would give is far from it.
    avg = sum(ref[r::w] for r in range(w))
    far = float(np.max(np.abs(gx - avg)) / float(np.max(np.abs(avg))))
    assert far > 0.3, f"output_3 looks averaged ({far:.3g})"
    print(f"local: rank 0's own input gradient within {err:.2g}")


def same_bits(a, b, names):
    for n in names:
        x, y = np.load(os.path.join(a, n)), np.load(os.path.join(b, n))
        assert x.dtype == y.dtype and x.shape == y.shape, n
        assert x.tobytes() == y.tobytes(), f"{n}: not the same bits"
    print(f"same bits: {' '.join(names)}")


def differ(a, b, name):
    x, y = np.load(os.path.join(a, name)), np.load(os.path.join(b, name))
    assert x.tobytes() != y.tobytes(), f"{name}: the same bits"
    print(f"differ: {name}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    rtol = 1e-5
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    if cmd == "model":
        model(args[0], int(args[1]), "--no-minimize" not in args)
    elif cmd == "data":
        data(args[0], int(args[1]))
    elif cmd == "swap":
        swap(args[0])
    elif cmd == "averaged":
        averaged(args[0], args[1], rtol)
    elif cmd == "local":
        local(args[0], args[1], int(args[2]), rtol)
    elif cmd == "same-bits":
        same_bits(args[0], args[1], args[2:])
    elif cmd == "differ":
        differ(args[0], args[1], args[2])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
