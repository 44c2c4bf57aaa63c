#!/usr/bin/env python3
"""Data for examples/digits.tg (needs numpy and scikit-learn).

  digits_data.py prepare DIR      DIR/{train,test}_{x,y}.npy: load_digits()
                                  with pixels / 16, a held-out split of 300
                                  samples (a fixed permutation),
                                  DIR/init/*.npy, initial params, and
                                  DIR/init_bn/*.npy, those of digits_bn.tg
  digits_data.py accuracy LOGITS.npy LABELS.npy
                                  prints the accuracy of argmax(logits)
"""
import os
import sys

try:
    import numpy as np
except ModuleNotFoundError:
    # `python3` on PATH may be another interpreter than the system's, which
    # has numpy and scikit-learn (python3-numpy, python3-sklearn): run this
    # script with that one.
    system = "/usr/bin/python3"
    if os.path.exists(system) and os.path.realpath(sys.executable) != \
            os.path.realpath(system):
        os.execv(system, [system] + sys.argv)
    raise


def prepare(out):
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int32)
    perm = np.random.default_rng(0).permutation(len(y))
    test, train = perm[:300], perm[300:]
    os.makedirs(os.path.join(out, "init"), exist_ok=True)
    np.save(os.path.join(out, "train_x.npy"), x[train])
    np.save(os.path.join(out, "train_y.npy"), y[train])
    np.save(os.path.join(out, "test_x.npy"), x[test])
    np.save(os.path.join(out, "test_y.npy"), y[test])
    rng = np.random.default_rng(1)
    init = {"w1": rng.normal(0.0, 0.1, (64, 64)), "b1": np.zeros(64),
            "w2": rng.normal(0.0, 0.1, (64, 10)), "b2": np.zeros(10)}
    for name, a in init.items():
        np.save(os.path.join(out, "init", name + ".npy"), a.astype(np.float32))
    # digits_bn.tg: the same, and the batch norm's weight and bias.
    os.makedirs(os.path.join(out, "init_bn"), exist_ok=True)
    init.update(g=np.ones(64), beta=np.zeros(64))
    for name, a in init.items():
        np.save(os.path.join(out, "init_bn", name + ".npy"), a.astype(np.float32))
    print("train %d samples, test %d samples" % (len(train), len(test)))


def accuracy(logits, labels):
    z = np.load(logits)
    if z.dtype == np.uint16:  # bf16 bit patterns
        z = (z.astype(np.uint32) << 16).view(np.float32)
    z = z.astype(np.float32)
    y = np.load(labels)
    print("%.4f" % float((z.argmax(axis=1) == y).mean()))


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2])
    elif sys.argv[1] == "accuracy":
        accuracy(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
