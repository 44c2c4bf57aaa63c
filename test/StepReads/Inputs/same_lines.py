"""same_lines.py A.jsonl B.jsonl: the same log lines once A's "overflow"
objects (which only a replay at once can give) are dropped."""
import json
import sys


def lines(path):
    out = []
    for l in open(path):
        if l.strip():
            r = json.loads(l)
            r.pop("overflow", None)
            out.append(r)
    return out


a, b = lines(sys.argv[1]), lines(sys.argv[2])
if a != b:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            sys.exit(f"FAIL: line {i + 1}: {x} != {y}")
    sys.exit(f"FAIL: {len(a)} lines against {len(b)}")
print(f"OK {len(a)} lines the same")
