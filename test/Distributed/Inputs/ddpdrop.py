"""Writes the models and data of the data-parallel dropout tests
(test/Distributed/dropout*.test); ddp.py compares the runs.

  ddpdrop.py model DIR B        DIR/d{B}.tg: dropout on [B, T, D], on
                                [B*T, D] (after a reshape) and on [B, D]
  ddpdrop.py unproven DIR B     DIR/u{B}.tg: dropout on a transposed [D, B]
                                activation (its layout is not proven)
  ddpdrop.py data DIR N         DIR/x.npy [N, 3, 8], DIR/y.npy [N]
"""
import os
import sys

import numpy as np


def model(d, b):
    with open(os.path.join(d, f"d{b}.tg"), "w") as f:
        f.write(f"""graph m(x: f32[{b}, 3, 8], labels: i32[{b}]) -> f32[] {{
  param w1: f32[8, 8] = normal(0.0, 0.4)
  param b1: f32[8]    = zeros
  param w2: f32[8, 8] = normal(0.0, 0.4)
  param w3: f32[8, 5] = normal(0.0, 0.4)
  h  = dropout(gelu(matmul(x, w1) + b1), p = 0.3)
  r  = dropout(relu(matmul(reshape(h, shape = [{3 * b}, 8]), w2)), p = 0.2)
  m  = mean(reshape(r, shape = [{b}, 3, 8]), dims = [1])
  pd = dropout(m, p = 0.25)
  logits = matmul(pd, w3)
  loss   = cross_entropy(logits, labels)
  minimize loss with sgd(lr = 0.1, momentum = 0.9)
  return loss
}}
""")


def unproven(d, b):
    with open(os.path.join(d, f"u{b}.tg"), "w") as f:
        f.write(f"""graph m(x: f32[{b}, 3, 8], labels: i32[{b}]) -> f32[] {{
  param w1: f32[8, 8] = normal(0.0, 0.4)
  param w3: f32[8, 5] = normal(0.0, 0.4)
  h  = relu(matmul(mean(x, dims = [1]), w1))
  t  = dropout(transpose(h), p = 0.3)
  logits = matmul(transpose(t), w3)
  loss   = cross_entropy(logits, labels)
  minimize loss with sgd(lr = 0.1, momentum = 0.9)
  return loss
}}
""")


def data(d, n):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, 3, 8)).astype(np.float32)
    y = rng.integers(0, 5, size=n).astype(np.int32)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "model":
        model(args[0], int(args[1]))
    elif cmd == "unproven":
        unproven(args[0], int(args[1]))
    elif cmd == "data":
        data(args[0], int(args[1]))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
