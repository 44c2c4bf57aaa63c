"""Drives side_by_side.check_targets on synthetic results (the test beside
this file says what it checks)."""
import argparse
import copy
import sys

sys.path.insert(0, sys.argv[1])
import side_by_side  # noqa: E402  (no torch imported at module level)

UNIT = "avx2 (oneDNN 2.6.3)"


def results(bf16, off, bf16_span, off_span):
    one = {"medians": {p: {"bf16": bf16, "off": off} for p in "ab"},
           "spreads": {p: {"bf16": bf16_span, "off": off_span} for p in "ab"},
           "bf16_units": {p: UNIT for p in "ab"}}
    two = copy.deepcopy(one)
    # Two threads: a's f32 1.8x one thread's median, b's bf16 2.0x.
    two["medians"]["a"]["off"] = off * 1.8
    two["spreads"]["a"]["off"] = (off_span[0] * 1.8, off_span[1] * 1.8)
    two["medians"]["b"]["bf16"] = bf16 * 2.0
    two["spreads"]["b"]["bf16"] = (bf16_span[0] * 2.0, bf16_span[1] * 2.0)
    return {1: one, 2: two}


args = argparse.Namespace(opt_levels=False, set="models")
cases = [
    ("noisy", results(9.6, 10.0, (9.0, 11.0), (10.0, 10.8))),
    ("quiet", results(11.0, 10.0, (10.8, 11.2), (9.7, 10.3))),
]
plain = results(9.6, 10.0, (9.0, 11.0), (10.0, 10.8))
for r in plain.values():
    del r["spreads"]
cases.append(("no spreads", plain))
for name, res in cases:
    print("== " + name)
    rc = side_by_side.check_targets(res, args)
    print("exit %d" % rc)
