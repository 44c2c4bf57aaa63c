"""same_lines.py [--with-overflow] A.jsonl B.jsonl: the same log lines once
the "overflow" objects (which a run without the report lacks) are dropped;
with --with-overflow they must be the same too."""
import json
import sys

args = sys.argv[1:]
keep = args[0] == "--with-overflow"
if keep:
    args = args[1:]


def lines(path):
    out = []
    for l in open(path):
        if l.strip():
            r = json.loads(l)
            if not keep:
                r.pop("overflow", None)
            out.append(r)
    return out


a, b = lines(args[0]), lines(args[1])
if a != b:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            sys.exit(f"FAIL: line {i + 1}: {x} != {y}")
    sys.exit(f"FAIL: {len(a)} lines against {len(b)}")
print(f"OK {len(a)} lines the same")
