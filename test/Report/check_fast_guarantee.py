#!/usr/bin/env python3
"""Checks the fast policy's guarantee against reference, op by op.

Usage: check_fast_guarantee.py REFERENCE.json FAST.json

Both files are `ampc --emit=report` outputs of the same program and low type.
For every source op (matched by op name and location, in program order):
  - `compute` is the same (so every `lower` op still computes in low);
  - every operand is read with at least the precision it has under reference
    (`reads`: equal, or f32 where reference reads f16/bf16);
and fast moves no more cast bytes and runs no more cast kernels.
Prints one line per graph and exits 1 on the first violation.
"""
import json
import sys


def graphs(path):
    data = json.load(open(path))
    return data if isinstance(data, list) else [data]


def at_least(fast, ref):
    return fast == ref or (fast == "f32" and ref in ("f16", "bf16"))


def main():
    ref_graphs, fast_graphs = graphs(sys.argv[1]), graphs(sys.argv[2])
    assert len(ref_graphs) == len(fast_graphs), "different graph counts"
    for ref, fast in zip(ref_graphs, fast_graphs):
        name = ref["graph"]
        assert ref["policy"] == "reference" and fast["policy"] == "fast", name
        keys = lambda g: [(o["op"], o["loc"]) for o in g["ops"]]
        if keys(ref) != keys(fast):
            sys.exit(f"{name}: the source ops differ:\n{keys(ref)}\n{keys(fast)}")
        for r, f in zip(ref["ops"], fast["ops"]):
            where = f"{name}: {r['op']} at {r['loc']}"
            if r["compute"] != f["compute"]:
                sys.exit(f"{where}: computes in {f['compute']}, reference {r['compute']}")
            for i, (rr, fr) in enumerate(zip(r["reads"], f["reads"])):
                if not at_least(fr, rr):
                    sys.exit(f"{where}: operand {i} read as {fr}, reference {rr}")
        rc, fc = ref["casts"], fast["casts"]
        if fc["bytes"] > rc["bytes"] or fc["count"] > rc["count"]:
            sys.exit(f"{name}: fast moves {fc} cast traffic, reference {rc}")
        saved = 100.0 * (rc["bytes"] - fc["bytes"]) / rc["bytes"] if rc["bytes"] else 0.0
        print(f"{name} {ref['amp']}: guarantee holds on {len(ref['ops'])} ops; "
              f"cast bytes {rc['bytes']} -> {fc['bytes']} ({saved:.1f}% fewer), "
              f"casts {rc['count']} -> {fc['count']}")


if __name__ == "__main__":
    main()
