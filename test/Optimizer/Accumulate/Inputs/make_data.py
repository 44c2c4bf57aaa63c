"""make_data.py DIR N: a classification dataset DIR/x.npy [N, 12] f32 and
DIR/labels.npy [N] i32 (5 classes), and initial parameters DIR/params/
(w1, b1, w2, b2) for the programs of this folder, so ampc and the PyTorch
reference start from the same values (--params-in)."""
import os
import sys

import numpy as np

out, n = sys.argv[1], int(sys.argv[2])
r = np.random.default_rng(7)
x = r.normal(size=(n, 12)).astype(np.float32)
w = r.normal(size=(12, 5)).astype(np.float32)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "labels.npy"), np.argmax(x @ w, axis=1).astype(np.int32))
params = os.path.join(out, "params")
os.makedirs(params, exist_ok=True)
np.save(os.path.join(params, "w1.npy"), (0.3 * r.normal(size=(12, 16))).astype(np.float32))
np.save(os.path.join(params, "b1.npy"), (0.1 * r.normal(size=(16,))).astype(np.float32))
np.save(os.path.join(params, "w2.npy"), (0.3 * r.normal(size=(16, 5))).astype(np.float32))
np.save(os.path.join(params, "b2.npy"), (0.1 * r.normal(size=(5,))).astype(np.float32))
