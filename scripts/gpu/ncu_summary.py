#!/usr/bin/env python3
"""Where a step's GPU time goes: Nsight Compute's per-kernel CSV, summed.

    ncu --csv --print-units base --metrics gpu__time_duration.sum \
        BINARY ARGS > kernels.csv
    scripts/gpu/ncu_summary.py kernels.csv [--top 30]

Groups the kernels by name (template arguments and parameter lists cut
off), and prints each group's launches, total and mean time and share of
the whole, largest first. Nsight Compute times each kernel alone (it
serialises them), so the total is the sum of kernel times, not the step's
wall-clock time: launch gaps and overlap are not in it.
"""
import argparse
import csv
import re
import sys


def short(name):
    # "void ampc::cuda::(anonymous namespace)::softmaxFusedKernel<1, 0>(bool,
    # ampc::Buf, ...)" -> "softmaxFusedKernel<1, 0>"
    name = re.sub(r"\(.*$", "", name.replace("(anonymous namespace)::", ""))
    name = re.sub(r"^void ", "", name)
    return name.split("::")[-1] if "<" not in name else \
        re.sub(r"^.*::(?=[^:<]*<)", "", name)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    groups = {}
    with open(a.csv, newline="") as fh:
        # ncu prints its own lines (==PROF==, the program's output) before
        # the table: start at the header.
        lines = [l for l in fh]
    start = next((i for i, l in enumerate(lines)
                  if l.startswith('"ID"')), None)
    if start is None:
        print(f"{a.csv}: no ncu CSV table in it", file=sys.stderr)
        return 1
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        ns = float(row["Metric Value"].replace(",", ""))
        g = groups.setdefault(short(row["Kernel Name"]), [0, 0.0])
        g[0] += 1
        g[1] += ns
    total = sum(g[1] for g in groups.values())
    if not total:
        print(f"{a.csv}: no kernel times", file=sys.stderr)
        return 1
    launches = sum(g[0] for g in groups.values())
    print(f"{launches} kernel launches, {total / 1e6:.2f} ms of kernel time")
    print(f"{'kernel':60} {'launches':>8} {'total ms':>9} {'mean us':>9} "
          f"{'share':>6}")
    for name, (n, ns) in sorted(groups.items(), key=lambda kv: -kv[1][1])[
            :a.top]:
        print(f"{name[:60]:60} {n:8d} {ns / 1e6:9.3f} {ns / n / 1e3:9.1f} "
              f"{100 * ns / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
