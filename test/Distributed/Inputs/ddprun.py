"""Drives the data-parallel job tests (--data sharding, eval on rank 0,
--sync-batchnorm, saves): writes small models and datasets and compares
runs of `ampc run` (one process against W ranks).

  ddprun.py model DIR B [--bn] [--f64]   DIR/m{B}.tg: graph `m` (batch B)
                                 and an eval graph `ev` (batch 10); --bn
                                 puts a batch_norm (buffers rm, rv) on the
                                 hidden layer of both; --f64: x, the
                                 parameters, the buffers and the losses f64
  ddprun.py data DIR N [--f64]   DIR/x.npy, DIR/y.npy (N samples) and
                                 DIR/ex.npy, DIR/ey.npy (30 eval samples);
                                 --f64: x and ex f64
  ddprun.py same-log A B [--rtol R]   training lines: same step and epoch,
                                 losses within R; eval lines: same step,
                                 epoch and samples, values within R
  ddprun.py same-params DIR1 DIR2 [--rtol R]   every NAME.npy within R of
                                 its largest magnitude (at least 0.01)
  ddprun.py differ-params DIR1 DIR2 NAME   NAME.npy differs by > 1e-4
"""
import json
import os
import sys

import numpy as np


def model(d, b, bn, f64=False):
    norm = "batch_norm(matmul(x, w1) + b1, g, beta, rm, rv)" if bn else \
        "matmul(x, w1) + b1"
    state = """  param g: f32[12]      = ones
  param beta: f32[12]   = zeros
  buffer rm: f32[12]    = zeros
  buffer rv: f32[12]    = ones
""" if bn else ""
    decl = """  param g: f32[12]
  param beta: f32[12]
  buffer rm: f32[12]
  buffer rv: f32[12]
""" if bn else ""
    text = f"""graph m(x: f32[{b}, 16], labels: i32[{b}]) -> f32[] {{
  param w1: f32[16, 12] = normal(0.0, 0.3)
  param b1: f32[12]     = zeros
{state}  param w2: f32[12, 5]  = normal(0.0, 0.3)
  h      = relu({norm})
  logits = matmul(h, w2)
  loss   = cross_entropy(logits, labels)
  minimize loss with sgd(lr = 0.1, momentum = 0.9)
  return loss
}}

graph ev(x: f32[10, 16], labels: i32[10]) -> f32[], f32[] {{
  param w1: f32[16, 12]
  param b1: f32[12]
{decl}  param w2: f32[12, 5]
  h      = relu({norm})
  logits = matmul(h, w2)
  loss   = cross_entropy(logits, labels)
  acc    = mean(cast(equal(argmax(logits, dim=1), labels), to=f32))
  return loss, acc
}}
"""
    if f64:
        # Every f32 but the accuracy's (an f32 mean of a cast) becomes f64.
        text = text.replace("f32", "f64").replace("to=f64", "to=f32")
        text = text.replace("-> f64[], f64[]", "-> f64[], f32[]")
    with open(os.path.join(d, f"m{b}.tg"), "w") as f:
        f.write(text)


def data(d, n, f64=False):
    rng = np.random.default_rng(11)
    for prefix, rows in (("", n), ("e", 30)):
        x = (rng.standard_normal((rows, 16)) * 2.0 + 0.5).astype(
            np.float64 if f64 else np.float32)
        y = rng.integers(0, 5, size=rows).astype(np.int32)
        np.save(os.path.join(d, prefix + "x.npy"), x)
        np.save(os.path.join(d, prefix + "y.npy"), y)


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def close(a, b, rtol):
    return abs(a - b) <= rtol * max(abs(b), 1e-30)


def same_log(a, b, rtol):
    la, lb = read_log(a), read_log(b)
    assert len(la) == len(lb), f"{len(la)} lines against {len(lb)}"
    evals = 0
    for x, y in zip(la, lb):
        assert sorted(x) == sorted(y), f"fields {sorted(x)} vs {sorted(y)}"
        for k, v in x.items():
            if isinstance(v, (int, str, bool)) or k in ("step", "epoch"):
                assert v == y[k], f"line {x}: {k} {v} vs {y[k]}"
            else:
                assert close(v, y[k], rtol), f"line {x}: {k} {v} vs {y[k]}"
        evals += "eval" in x
    print(f"same log: {len(la)} lines ({evals} eval), within {rtol:g}")


def same_params(a, b, rtol):
    names = sorted(f for f in os.listdir(a) if f.endswith(".npy"))
    assert names == sorted(f for f in os.listdir(b) if f.endswith(".npy"))
    for n in names:
        # Relative to the tensor's largest magnitude (at least 0.01): a
        # bias that batch norm makes irrelevant keeps values near 0 whose
        # own relative error means nothing.
        x, y = np.load(os.path.join(a, n)), np.load(os.path.join(b, n))
        err = np.max(np.abs(x - y)) / max(np.max(np.abs(y)), 1e-2)
        assert err <= rtol, f"{n}: relative difference {err}"
    print(f"same params: {len(names)} ({', '.join(names)}) within {rtol:g}")


def differ_params(a, b, name):
    x = np.load(os.path.join(a, name + ".npy"))
    y = np.load(os.path.join(b, name + ".npy"))
    err = np.max(np.abs(x - y))
    assert err > 1e-4, f"{name}: differs by only {err}"
    print(f"{name} differs: {err:.3g}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    rtol = 1e-5
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    if cmd == "model":
        model(args[0], int(args[1]), "--bn" in args, "--f64" in args)
    elif cmd == "data":
        data(args[0], int(args[1]), "--f64" in args)
    elif cmd == "same-log":
        same_log(args[0], args[1], rtol)
    elif cmd == "same-params":
        same_params(args[0], args[1], rtol)
    elif cmd == "differ-params":
        differ_params(args[0], args[1], args[2])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
