"""ampc's counter-based random streams, reimplemented for the reference.

`philox4x32_10` is runtime/src/philox.h (Salmon et al., SC'11) on numpy
uint32/uint64 arrays; `dropout_factor` is the mask of ampc's `dropout`
(runtime/src/dropout_ops.h, docs/language.md): element i of dropout op
`key` at step `step` of a run with seed `seed` is kept, and multiplied by
1 / (1 - p), when the 24-bit uniform of lane i % 4 of
philox4x32_10(counter = (i // 4, 2^63 + key * 2^32 + step), key = seed) is
>= p (p and the factor in f32).
"""

import numpy as np

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint32(0x9E3779B9)
_W1 = np.uint32(0xBB67AE85)
_LO = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def philox4x32_10(counter_lo, counter_hi, key):
    """The four 32-bit words of each block: counter_lo an array of uint64,
    counter_hi and key Python ints (64-bit)."""
    counter_lo = np.asarray(counter_lo, dtype=np.uint64)
    c0 = (counter_lo & _LO).astype(np.uint32)
    c1 = (counter_lo >> _32).astype(np.uint32)
    c2 = np.full_like(c0, np.uint32(counter_hi & 0xFFFFFFFF))
    c3 = np.full_like(c0, np.uint32((counter_hi >> 32) & 0xFFFFFFFF))
    k0 = np.uint32(key & 0xFFFFFFFF)
    k1 = np.uint32((key >> 32) & 0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for _ in range(10):
            p0 = c0.astype(np.uint64) * _M0
            p1 = c2.astype(np.uint64) * _M1
            hi0, lo0 = (p0 >> _32).astype(np.uint32), (p0 & _LO).astype(np.uint32)
            hi1, lo1 = (p1 >> _32).astype(np.uint32), (p1 & _LO).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
            k0 = np.uint32(k0 + _W0)
            k1 = np.uint32(k1 + _W1)
    return c0, c1, c2, c3


def dropout_stream(key, step):
    return (1 << 63) | (key << 32) | (step & 0xFFFFFFFF)


def dropout_factor(seed, key, step, numel, p, wide=False):
    """A float32 array of numel factors: 0 or 1 / (1 - p). `wide`: the f64
    kernel's factors, a float64 array with the same zeros and 1 / (1 - p)
    computed in f64 from the exact p."""
    i = np.arange(numel, dtype=np.uint64)
    words = philox4x32_10(i >> np.uint64(2), dropout_stream(key, step),
                          seed & 0xFFFFFFFFFFFFFFFF)
    lane = (i & np.uint64(3)).astype(np.int64)
    bits = np.choose(lane, words)
    u = (bits >> np.uint32(8)).astype(np.float64) * (1.0 / 16777216.0)
    p32 = np.float32(p)
    if wide:
        return np.where(u >= np.float64(p32), 1.0 / (1.0 - float(p)), 0.0)
    scale = np.float32(1.0) / (np.float32(1.0) - p32)
    return np.where(u >= np.float64(p32), scale, np.float32(0.0)).astype(np.float32)
