"""make_overflow.py DIR: 96 samples (3 updates of 4 micro-batches of 8, in
file order) where one sample of update 2's third micro-batch holds 1e5 in
every feature: finite in f32, inf once cast to f16 for the matmul."""
import os
import sys

import numpy as np

out = sys.argv[1]
r = np.random.default_rng(3)
x = r.normal(size=(96, 12)).astype(np.float32)
x[8 * (4 * 1 + 2) + 3, :] = 1e5
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "labels.npy"), r.integers(0, 5, size=96).astype(np.int32))
