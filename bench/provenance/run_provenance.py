#!/usr/bin/env python3
"""Steps/s of `ampc run` with the overflow report on and off (docs/jobs.md,
"The overflow report"), on the examples under --amp=fp16.

  run_provenance.py [--ampc build/bin/ampc] [--repeat 3]

For each example and each initial loss scale (the default 65536, where no
step is skipped, and 2^24, where the first steps overflow and are skipped,
so the report replays each of them), it runs the same command with
--overflow-report=true and =false, alternating (which one first alternates
too), --repeat times each, and
prints the best steps/s of each (from the run's summary line; the best of
the repeats is the least disturbed by other load), their ratio, and how
many steps were skipped and reported. On a loaded machine wall-clock rates
are noisy; the process's CPU time (user + system, compile included, the
least of the repeats) is printed too.

Robustness to a loaded machine: the on and off runs of each repeat run back
to back (the order alternates), so each repeat gives one on/off ratio under
nearly the same load; the table's "on / off" columns are the MEDIAN of those
paired ratios (wall clock and CPU time), next to the median and best rates.
--check PCT exits 1 unless every median paired wall-clock ratio at the
default scale (no step skipped, so the report costs nothing) is within PCT
percent of 1.
"""
import statistics
import argparse
import json
import os
import re
import resource
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STEPS = {"mlp": 600, "cnn": 40, "transformer": 400}


def run(ampc, example, steps, init, report, log):
    cmd = [ampc, "run", os.path.join(ROOT, "examples", example + ".tg"), "--amp=fp16",
           "--steps", str(steps), "--loss-scale-init", str(init),
           "--overflow-report=" + ("true" if report else "false"), "--log", log]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rate = float(re.search(r"([0-9.]+) steps/s", out).group(1))
    lines = [json.loads(line) for line in open(log)]
    skipped = sum(1 for r in lines if r.get("skipped"))
    reported = sum(1 for r in lines if "overflow" in r)
    return rate, cpu, skipped, reported


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ampc", default=os.path.join(ROOT, "build", "bin", "ampc"))
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--check", type=float, default=None, metavar="PCT",
                    help="fail unless the median paired on/off ratio at the default "
                         "scale is within PCT percent of 1")
    args = ap.parse_args()
    failures = []
    work = tempfile.mkdtemp(prefix="provenance-")
    log = os.path.join(work, "log.jsonl")
    print("| example | steps | loss-scale-init | skipped | reported | on median (best) steps/s "
          "| off median (best) steps/s | on / off (median of pairs) | on CPU (s) | off CPU (s) "
          "| on / off CPU (median of pairs) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for example, steps in STEPS.items():
        for init in (65536, 2 ** 24):
            rates = {True: [], False: []}
            cpus = {True: [], False: []}
            counts = {}
            for k in range(args.repeat):
                # Alternate which setting runs first: the machine's state
                # (caches, other load) favours neither.
                for report in ((True, False) if k % 2 == 0 else (False, True)):
                    rate, cpu, skipped, reported = run(args.ampc, example, steps, init,
                                                       report, log)
                    rates[report].append(rate)
                    cpus[report].append(cpu)
                    counts[report] = (skipped, reported)
            # Repeat k's on and off ran back to back: one ratio per pair.
            pair = statistics.median(a / b for a, b in zip(rates[True], rates[False]))
            cpair = statistics.median(a / b for a, b in zip(cpus[True], cpus[False]))
            print("| %s | %d | %d | %d | %d | %.1f (%.1f) | %.1f (%.1f) | %.3f | %.2f | %.2f | %.3f |"
                  % (example, steps, init, counts[True][0], counts[True][1],
                     statistics.median(rates[True]), max(rates[True]),
                     statistics.median(rates[False]), max(rates[False]), pair,
                     statistics.median(cpus[True]), statistics.median(cpus[False]), cpair),
                  flush=True)
            if args.check is not None and init == 65536 and abs(pair - 1) > args.check / 100:
                failures.append("%s: on/off %.3f" % (example, pair))
    if failures:
        print("not within %g%%: %s" % (args.check, ", ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
