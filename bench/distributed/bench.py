"""The data-parallel benchmark's driver (run_bench.sh passes its arguments).

For each model row it runs, ROUNDS times and in an order that rotates from
round to round, five runs on the CPU backend with one OpenBLAS thread per
process:

  1p       one process (no data parallel),
  2x1p     two independent single processes started together (no MPI, no
           communication): each one's steps/s, averaged; the rate two ranks
           would reach on this machine if the all-reduce cost nothing, the
           ceiling for any overlap,
  overlap  2 ranks, each bucket started right after its last gradient, with
           the runtime's MPI progress calls between the step's calls,
  noprog   2 ranks, the same placement without progress calls
           (AMPC_COMM_PROGRESS_US=off: a bucket moves only in its wait),
  delay    2 ranks, --delay-allreduce (every bucket started after the
           backward).

It prints each run's steps/s, the time per step spent waiting in the
gradient all-reduce and the share of buckets that had arrived by their
wait, then the medians over the rounds and the medians of the per-round
ratios (paired: the runs of a round ran back to back, so a load that
changes slowly affects them alike).
"""
import os
import re
import statistics
import subprocess
import sys

SUMMARY = re.compile(r"([0-9.]+) steps/s(?:, 2 ranks, ([0-9.]+) s in gradient "
                     r"all-reduce \((\d+) calls\), ([0-9.]+) s waiting, "
                     r"(\d+) of (\d+) buckets)?")


def run(cmd, env, copies=1):
    """Runs `copies` instances of cmd at once; the summary of the first, with
    its steps/s replaced by the mean of every instance's steps/s."""
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for _ in range(copies)]
    outs = [p.communicate()[0] for p in procs]
    for p, out in zip(procs, outs):
        if p.returncode:
            sys.exit("bench: %s exited %d:\n%s" % (cmd, p.returncode, out))
    if copies > 1:
        rates = [parse(out, cmd)[0] for out in outs]
        return (sum(rates) / len(rates),) + parse(outs[0], cmd)[1:]
    return parse(outs[0], cmd)


def parse(out, cmd):
    m = SUMMARY.search(out.strip().splitlines()[-1])
    if not m:
        sys.exit("bench: no summary in the output of %s:\n%s" % (cmd, out))
    rate = float(m.group(1))
    if m.group(2) is None:
        return rate, None, None
    steps = int(m.group(3))
    return rate, float(m.group(4)) / steps * 1e3, int(m.group(5)) / max(
        int(m.group(6)), 1)


def main():
    ampc, model, steps, rounds, bucket, label = sys.argv[1:7]
    steps, rounds = int(steps), int(rounds)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    mpi = ["mpirun", "-np", "2", "--oversubscribe", "-x",
           "OPENBLAS_NUM_THREADS"]
    if os.getuid() == 0:
        mpi.append("--allow-run-as-root")
    common = [ampc, "run", model, "--steps", str(steps)]
    dp = common + ["--bucket-cap-mb", bucket]
    variants = {
        "1p": (common, {}),
        "2x1p": (common, {}, 2),
        "overlap": (mpi + dp, {}),
        "noprog": (mpi[:4] + ["-x", "AMPC_COMM_PROGRESS_US=off"] + mpi[4:] +
                   dp, {}),
        "delay": (mpi + dp + ["--delay-allreduce"], {}),
    }
    names = list(variants)
    ir = subprocess.run([ampc, model, "--data-parallel", "--bucket-cap-mb",
                         bucket, "--emit=mlir"], check=True,
                        stdout=subprocess.PIPE, text=True).stdout
    nb = re.search(r"buckets = (\d+)", ir)
    print("== %s: %d steps per run, %d rounds, %s MiB buckets (%s buckets)"
          % (label, steps, rounds, bucket, nb.group(1) if nb else "?"))
    print("round  run      steps/s  wait ms/step  arrived")
    res = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            cmd, extra, copies = (variants[n] + (1,))[:3]
            rate, wait, arrived = run(cmd, dict(env, **extra), copies)
            res[n].append((rate, wait, arrived))
            print("%5d  %-7s  %7.1f  %12s  %7s" % (
                r + 1, n, rate, "-" if wait is None else "%.3f" % wait,
                "-" if arrived is None else "%.0f%%" % (arrived * 100)))
    med = statistics.median
    print("-- %s, medians over %d rounds" % (label, rounds))
    for n in names:
        rates = [x[0] for x in res[n]]
        line = "%-8s %8.1f steps/s" % (n, med(rates))
        if res[n][0][1] is not None:
            line += ", waiting %.3f ms/step, %.0f%% of buckets arrived " \
                    "before their wait" % (med([x[1] for x in res[n]]),
                                           100 * med([x[2] for x in res[n]]))
        print(line)

    def ratio(a, b):
        per = [x[0] / y[0] for x, y in zip(res[a], res[b])]
        faster = sum(p > 1 for p in per)
        print("%-18s median %.3f (per round: %s; >1 in %d of %d)" % (
            a + " / " + b, med(per), " ".join("%.3f" % p for p in per),
            faster, len(per)))
    ratio("overlap", "delay")
    ratio("overlap", "noprog")
    ratio("overlap", "1p")
    ratio("overlap", "2x1p")
    ratio("delay", "2x1p")


if __name__ == "__main__":
    main()
