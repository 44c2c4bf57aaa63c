"""Checks ampc's dropout masks against tools/ampc-torch/ampc_random.py.

  mask.py OUTPUTS_DIR SEED STEP   output_1 (key 0, p 0.3) and output_2 (key 1,
                                  p 0.6) of mask-probe.tg equal the
                                  reimplemented generator's factors
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.environ["AMPC_TORCH_DIR"])
import ampc_random  # noqa: E402

out, seed, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for index, key, p in ((1, 0, 0.3), (2, 1, 0.6)):
    got = np.load(os.path.join(out, "output_%d.npy" % index)).reshape(-1)
    want = ampc_random.dropout_factor(seed, key, step, got.size, p)
    if not np.array_equal(got, want):
        print("FAIL output_%d: %d of %d differ" % (index, int((got != want).sum()), got.size))
        sys.exit(1)
    print("output_%d: %d of %d kept, same bits" % (index, int((got != 0).sum()), got.size))
