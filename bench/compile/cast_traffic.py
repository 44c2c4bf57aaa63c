#!/usr/bin/env python3
"""Cast traffic of the fast policy against reference on the examples.

  cast_traffic.py [--ampc build/bin/ampc] [FILE.tg ...]

For each program and low type, prints the standalone cast kernels and the
bytes they read plus write per graph execution (`casts` of the AMP report)
under `reference` and `fast`, and how many fewer bytes fast moves. Exits 1
if fast moves more than reference anywhere or, on the transformer example,
fewer than 50% less.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def report(ampc, path, amp, policy):
    out = subprocess.run([ampc, path, f"--amp={amp}", f"--amp-policy={policy}", "--emit=report"],
                         check=True, capture_output=True, text=True).stdout
    data = json.loads(out)
    graphs = data if isinstance(data, list) else [data]
    return sum(g["casts"]["count"] for g in graphs), sum(g["casts"]["bytes"] for g in graphs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ampc", default=os.path.join(ROOT, "build", "bin", "ampc"))
    parser.add_argument("files", nargs="*", default=[
        os.path.join(ROOT, "examples", f) for f in ("mlp.tg", "cnn.tg", "transformer.tg")])
    args = parser.parse_args()
    ok = True
    print(f"| program | amp | reference casts | reference bytes | fast casts | fast bytes | fewer bytes |")
    print(f"| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for path in args.files:
        for amp in ("fp16", "bf16"):
            rc, rb = report(args.ampc, path, amp, "reference")
            fc, fb = report(args.ampc, path, amp, "fast")
            saved = 100.0 * (rb - fb) / rb if rb else 0.0
            name = os.path.basename(path)
            print(f"| {name} | {amp} | {rc} | {rb:,} | {fc} | {fb:,} | {saved:.1f}% |")
            ok &= fb <= rb
            if name == "transformer.tg":
                ok &= saved >= 50.0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
