#!/usr/bin/env python3
"""Seed inputs of the .npy and checkpoint fuzz targets (ampc-fuzz-npy,
ampc-fuzz-checkpoint; docs/sanitizers.md).

  make_fuzz_seeds.py DIR
      writes DIR/npy/*.npy and DIR/checkpoint/*.ckpt.

The checked-in copies are test/Run/fuzz-corpus; regenerate them with

  /usr/bin/python3 test/Run/Inputs/make_fuzz_seeds.py test/Run/fuzz-corpus

The .npy seeds are written by NumPy itself (every dtype `ampc run` reads,
format versions 1 and 2, a Fortran-order array); the checkpoints follow the
format of include/ampc/Executor/Checkpoint.h (versions 1 and 2).
"""
import io
import os
import struct
import sys

import numpy as np


def npy_seeds():
    arrays = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f16": np.ones((4,), dtype=np.float16),
        "u2": np.arange(3, dtype=np.uint16),
        "i32": np.array([[1, -2]], dtype=np.int32),
        "i64": np.array(7, dtype=np.int64),
        "bool": np.array([True, False, True]),
        "empty": np.zeros((0, 5), dtype=np.float32),
        "fortran": np.asfortranarray(np.zeros((2, 2), dtype=np.float32)),
    }
    out = {}
    for name, a in arrays.items():
        buf = io.BytesIO()
        np.lib.format.write_array(buf, a, version=(1, 0))
        out[name + ".npy"] = buf.getvalue()
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arrays["f32"], version=(2, 0))
    out["f32_v2.npy"] = buf.getvalue()
    return out


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def checkpoint(version, entries, steps=3, epoch=1, batch=2):
    s = b"AMPCCKPT" + struct.pack("<IQq", version, 0x1234, steps)
    if version >= 2:
        s += struct.pack("<qq", epoch, batch)
    s += struct.pack("<I", len(entries))
    for name, dtype, data in entries:
        s += struct.pack("<I", len(name)) + name.encode()
        s += struct.pack("<iq", dtype, len(data)) + data
    return s + struct.pack("<Q", fnv1a(s))


def checkpoint_seeds():
    w = np.arange(6, dtype=np.float32).tobytes()
    return {
        "v2.ckpt": checkpoint(2, [("w", 0, w), ("b", 0, w[:8]),
                                  ("loss_scale.scale", 0, w[:4])]),
        "v1.ckpt": checkpoint(1, [("w", 0, w)]),
        "empty.ckpt": checkpoint(2, []),
    }


def main():
    root = sys.argv[1]
    for sub, seeds in (("npy", npy_seeds()), ("checkpoint", checkpoint_seeds())):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(root, sub, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
