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
"""
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
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="provenance-")
    log = os.path.join(work, "log.jsonl")
    print("| example | steps | loss-scale-init | skipped | reported | on (steps/s) "
          "| off (steps/s) | on / off | on CPU (s) | off CPU (s) | on / off |")
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
            on, off = max(rates[True]), max(rates[False])
            con, coff = min(cpus[True]), min(cpus[False])
            print("| %s | %d | %d | %d | %d | %.1f | %.1f | %.3f | %.2f | %.2f | %.3f |" % (
                example, steps, init, counts[True][0], counts[True][1], on, off, on / off,
                con, coff, con / coff))


if __name__ == "__main__":
    main()
