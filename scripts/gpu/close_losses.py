#!/usr/bin/env python3
"""Two runs' logged losses, step by step, within a tolerance.

    close_losses.py --tol T WANT.jsonl GOT.jsonl

Each file holds one JSON object a line with "step" and "loss" (what
docs/examples/ddp_train.cpp prints). Exit 0 when both have the same steps
and every |got - want| <= T * max(1, |want|); prints the largest
difference either way.
"""
import argparse
import json
import math
import sys


def losses(path):
    with open(path) as fh:
        return [(r["step"], float(r["loss"]))
                for r in map(json.loads, filter(str.strip, fh))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tol", type=float, required=True)
    ap.add_argument("want")
    ap.add_argument("got")
    a = ap.parse_args()
    want, got = losses(a.want), losses(a.got)
    if not want or [s for s, _ in want] != [s for s, _ in got]:
        print(f"different steps: {len(want)} in {a.want}, {len(got)} in "
              f"{a.got}")
        return 1
    worst = (0.0, None)
    for (step, w), (_, g) in zip(want, got):
        d = abs(g - w) / max(1.0, abs(w)) if math.isfinite(w) and \
            math.isfinite(g) else (0.0 if repr(w) == repr(g) else math.inf)
        if d > worst[0] or worst[1] is None:
            worst = (d, step)
    ok = worst[0] <= a.tol
    print(f"{len(want)} steps, largest relative difference {worst[0]:.3g} "
          f"at step {worst[1]} (tolerance {a.tol:g}): "
          f"{'within' if ok else 'OUTSIDE'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
