#!/usr/bin/env python3
"""Cast traffic of the opt levels on the examples (docs/optimizer.md).

For every example that trains, compiles it with --emit=report at each
--opt-level and prints the bytes standalone cast kernels read and write per
step ("casts.bytes" of the training graph), and the params' master/model
types. With --check, exits 1 unless O2's bytes are below O1's on every
example.

    python3 bench/optlevels/cast_bytes.py [--ampc build/bin/ampc] [--check]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEVELS = ["O0", "O1", "O2", "O3"]


def report(ampc, path, level):
    out = subprocess.run([ampc, path, "--emit=report", "--opt-level=" + level],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def training_graphs(path):
    """Names of the graphs of a .tg file that hold a `minimize`."""
    names = []
    for chunk in re.split(r"^graph\s+", open(path).read(), flags=re.M)[1:]:
        if "minimize" in chunk:
            names.append(re.match(r"\w+", chunk).group(0))
    return names


def training_graph(rep, names):
    graphs = rep if isinstance(rep, list) else rep.get("graphs", [rep])
    for g in graphs:
        if g["graph"] in names:
            return g
    raise SystemExit("no training graph in the report")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ampc", default=os.path.join(ROOT, "build", "bin", "ampc"))
    ap.add_argument("--check", action="store_true",
                    help="fail unless O2 < O1 on every example")
    args = ap.parse_args()
    examples = sorted(p for p in glob.glob(os.path.join(ROOT, "examples", "*.tg"))
                      if "minimize" in open(p).read())
    print("| example | " + " | ".join(LEVELS) + " | O2 params (master/model) |")
    print("| --- | " + " | ".join("---:" for _ in LEVELS) + " | --- |")
    bad = []
    for path in examples:
        row, o2params = {}, ""
        for level in LEVELS:
            g = training_graph(report(args.ampc, path, level),
                               training_graphs(path))
            row[level] = g["casts"]["bytes"]
            if level == "O2":
                kinds = sorted({"%s/%s" % (p["master"], p["model"])
                                for p in g["params"]})
                o2params = ", ".join(kinds)
        name = os.path.basename(path)[:-3]
        print("| %s | %s | %s |" % (name, " | ".join(
            "{:,}".format(row[l]) for l in LEVELS), o2params))
        if not row["O2"] < row["O1"]:
            bad.append(name)
    if args.check and bad:
        print("O2 cast bytes not below O1's on: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
