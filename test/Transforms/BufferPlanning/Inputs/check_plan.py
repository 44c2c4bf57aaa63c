#!/usr/bin/env python3
"""Checks a buffer plan read from `ampc --emit=json` of planned IR: no two
buffers that are live at the same time share a byte, every buffer lies in
the arena, and offsets are 256-byte aligned.

A result of an op that computes in place (optimizer and scaler updates,
unscaling, clipping) or of a reshape (a view) whose offset equals the offset
of one of the op's operands shares that operand's buffer; such values are
one buffer, live from the first definition to the last use. Prints one line:
`ok: N buffers, arena A bytes, peak live P bytes`.
"""
import json
import sys

IN_PLACE = {"tg.sgd_update", "tg.adamw_update", "tg.check_finite_and_unscale",
            "tg.clip_grad_norm", "tg.update_scale", "tg.reshape", "tg.lr_schedule"}
BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "bool": 1}


def main():
    doc = json.load(sys.stdin)
    for graph in doc["graphs"]:
        ops = graph["ops"]
        end = len(ops)
        parent = {}

        def find(v):
            while parent[v] != v:
                parent[v] = parent[parent[v]]
                v = parent[v]
            return v

        offset, size, begin, last = {}, {}, {}, {}
        for i, op in enumerate(ops):
            offs = op["attrs"].get("tg.offsets")
            for v in op["operands"]:
                last[v] = i
            if offs is None:
                continue
            operand_offsets = {offset.get(v): v for v in op["operands"] if offset.get(v, -1) >= 0}
            for r, off in zip(op["results"], offs):
                v = r["value"]
                parent[v] = v
                if off < 0:
                    continue
                n = BYTES[r["type"]]
                for d in r["shape"]:
                    n *= d
                offset[v], size[v], begin[v] = off, n, i
                if off in operand_offsets and op["op"] in IN_PLACE:
                    parent[v] = find(operand_offsets[off])
        for r in graph["results"]:
            last[r["value"]] = end
        groups = {}
        for v in offset:
            g = find(v)
            lo, hi, off, sz = groups.get(g, (begin[v], begin[v], offset[v], 0))
            groups[g] = (min(lo, begin[v]), max(hi, last.get(v, begin[v])), off, max(sz, size[v]))
        arena = graph["attrs"]["tg.arena_size"]
        items = sorted(groups.values())
        for lo, hi, off, sz in items:
            if off % 256 or off + sz > arena:
                sys.exit(f"buffer at {off} (+{sz}) misaligned or outside the arena of {arena}")
        # Sweep in time: live buffers must not share bytes.
        peak = 0
        for i, (lo, hi, off, sz) in enumerate(items):
            for lo2, hi2, off2, sz2 in items[i + 1:]:
                if lo2 > hi:
                    break
                if off < off2 + sz2 and off2 < off + sz:
                    sys.exit(f"buffers at {off} (+{sz}, ops {lo}-{hi}) and {off2} (+{sz2}, ops {lo2}-{hi2}) overlap")
            peak = max(peak, sum(s for l, h, o, s in items if l <= lo <= h))
        print(f"ok: {len(items)} buffers, arena {arena} bytes, peak live {peak} bytes")


if __name__ == "__main__":
    main()
