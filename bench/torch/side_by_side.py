#!/usr/bin/env python3
"""ampc run against PyTorch eager on the CPU, side by side, in one run.

For each example it draws one set of inputs and parameters (.npy files), then
measures training steps per second of
  - `ampc run --amp=off` (the CPU runtime: OpenBLAS GEMMs, f32 kernels),
  - the PyTorch reference (tools/ampc-torch/ampc_torch.py: eager ops,
    autograd and torch.optim on the same program, the same data, f32),
  - `ampc run --amp=fp16` and `--amp=bf16` (default fast policy; fp16 with
    dynamic loss scaling),
with the same thread count for both (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS
and torch.set_num_threads), interleaving the runs and keeping the median of
--repeat runs of each. Both count only the step loop (ampc: after compiling
and initialising; PyTorch: after reading the program and the data), every
step reading its loss back to the host.

  python3 bench/torch/side_by_side.py [--steps 100] [--repeat 5] [--threads 1]
  python3 bench/torch/side_by_side.py --set models --steps 5 --repeat 3 \
      --threads 1,2 [--breakdown]

`--set examples` (default) runs examples/*.tg; `--set models` the real-size
programs of bench/models/ (encoder, llama, resnet, mobilevit). `--threads`
takes a comma-separated list; each count is its own table. `--breakdown`
adds, per program, where ampc's f32 (and fp16) step spends its time: a
`perf record` of one `ampc run`, self time grouped by kernel (OpenBLAS GEMM,
each CPU backend entry point, libm, the rest).

`--cpu-time` measures CPU time instead of wall time, for a machine other jobs
load (where a process gets a varying share of the cores): each rate is
(steps - 1) / (CPU seconds of a run of `--steps` steps - CPU seconds of a
run of 1 step), so compilation, start-up and the first step cancel out;
CPU seconds are user + system of the `ampc run` child, and the process CPU
time around the PyTorch reference's run (in-process).

Run it with the interpreter that imports torch (Debian's python3-torch:
/usr/bin/python3).
"""

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "ampc-torch"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", default="1",
                    help="comma-separated thread counts, e.g. 1,2")
    ap.add_argument("--baseline", default=None,
                    help="a second ampc binary (e.g. an older build) measured "
                         "interleaved with the first, --amp=off and fp16")
    ap.add_argument("--set", choices=["examples", "models"], default="examples")
    ap.add_argument("--breakdown", action="store_true",
                    help="per-kernel time breakdown of ampc's step (needs perf)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="rates from CPU time (difference of a --steps and a 1-step run)")
    ap.add_argument("--ampc", default=os.path.join(ROOT, "build", "bin", "ampc"))
    ap.add_argument("--examples", default=None,
                    help="comma-separated program names of the set")
    args = ap.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    if args.examples is None:
        args.examples = ("mlp,cnn,transformer" if args.set == "examples" else
                         "encoder,llama,resnet,mobilevit")
    folder = (os.path.join(ROOT, "examples") if args.set == "examples" else
              os.path.join(ROOT, "bench", "models"))
    if len(counts) > 1:
        # One process per thread count: torch's pools are sized at import.
        rc = 0
        for t in counts:
            cmd = [sys.executable, os.path.abspath(__file__), "--threads", str(t)]
            skip = False
            for a in sys.argv[1:]:
                if skip:
                    skip = False
                    continue
                if a == "--threads":
                    skip = True
                    continue
                if a.startswith("--threads="):
                    continue
                cmd.append(a)
            rc |= subprocess.run(cmd).returncode
        return rc
    args.threads = counts[0]

    # Thread counts before torch is imported, so its pools start that size.
    threads = str(args.threads)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = threads
    import numpy as np
    import torch
    import ampc_torch as ref
    import tgdiff
    torch.set_num_threads(args.threads)

    print("ampc run vs PyTorch %s eager, CPU, %d thread(s), %d steps, median of %d runs%s" %
          (torch.__version__, args.threads, args.steps, args.repeat,
           ", rates from CPU time" if args.cpu_time else ""))
    rows = []
    for name in args.examples.split(","):
        src = os.path.join(folder, name + ".tg")
        doc = ref.load_program_json(src, args.ampc)
        program = ref.Program(doc)
        work = tempfile.mkdtemp(prefix="sbs-")
        inputs, params = tgdiff.draw_data(program, np.random.default_rng(0), work)
        data = ["--params-in", params]
        for n, path in inputs.items():
            data += ["--input", "%s=%s" % (n, path)]

        def ampc_once(amp, binary, steps):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = subprocess.run([binary or args.ampc, "run", src, "--amp=" + amp, "--steps",
                                  str(steps)] + data, check=True, capture_output=True,
                                 text=True, env=os.environ).stdout
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            return float(re.search(r"([0-9.]+) steps/s", out).group(1)), cpu

        def ampc_rate(amp, binary=None):
            rate, cpu = ampc_once(amp, binary, args.steps)
            if not args.cpu_time:
                return rate
            _, cpu1 = ampc_once(amp, binary, 1)
            return (args.steps - 1) / max(cpu - cpu1, 1e-9)

        def torch_once(steps):
            ap2 = argparse.ArgumentParser()
            ref.add_run_arguments(ap2)
            run_args = ap2.parse_args([src, "--quiet", "--steps", str(steps),
                                       "--threads", threads] + data)
            start = time.process_time()
            rate = ref.run(run_args, doc)
            return rate, time.process_time() - start

        def torch_rate():
            rate, cpu = torch_once(args.steps)
            if not args.cpu_time:
                return rate
            _, cpu1 = torch_once(1)
            return (args.steps - 1) / max(cpu - cpu1, 1e-9)

        rates = {"off": [], "torch": [], "fp16": [], "bf16": []}
        if args.baseline:
            rates.update({"base_off": [], "base_fp16": []})
        for _ in range(args.repeat):
            if args.baseline:
                rates["base_off"].append(ampc_rate("off", args.baseline))
                rates["base_fp16"].append(ampc_rate("fp16", args.baseline))
            rates["off"].append(ampc_rate("off"))
            rates["torch"].append(torch_rate())
            rates["fp16"].append(ampc_rate("fp16"))
            rates["bf16"].append(ampc_rate("bf16"))
        med = {k: statistics.median(v) for k, v in rates.items()}
        spread = {k: (min(v), max(v)) for k, v in rates.items()}
        rows.append((name, med, spread))
        if args.breakdown:
            for amp in ("off", "fp16"):
                breakdown(args, src, data, amp)
                if args.baseline:
                    breakdown(args, src, data, amp, args.baseline)

    print()
    print("| program | threads | ampc off (steps/s) | PyTorch eager (steps/s) "
          "| ampc / PyTorch | ampc fp16 (steps/s) | ampc bf16 (steps/s) "
          "| fp16 / off | bf16 / off |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    ratios = []
    for name, med, _ in rows:
        ratios.append(med["off"] / med["torch"])
        print("| %s.tg | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            name, args.threads, med["off"], med["torch"], med["off"] / med["torch"],
            med["fp16"], med["bf16"], med["fp16"] / med["off"],
            med["bf16"] / med["off"]))
    if args.baseline:
        print()
        print("| program | threads | baseline off | ampc off | off speed-up "
              "| baseline fp16 | ampc fp16 | fp16 speed-up |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, med, _ in rows:
            print("| %s.tg | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                name, args.threads, med["base_off"], med["off"],
                med["off"] / med["base_off"], med["base_fp16"], med["fp16"],
                med["fp16"] / med["base_fp16"]))
    geo = 1.0
    for r in ratios:
        geo *= r
    print()
    print("geometric mean ampc / PyTorch: %.2f" % geo ** (1.0 / len(ratios)))
    print()
    print("min-max over the runs:")
    for name, _, spread in rows:
        print("  %s: " % name + ", ".join("%s %.1f-%.1f" % (k, lo, hi)
                                         for k, (lo, hi) in spread.items()))
    return 0


def group(sym, dso):
    """The kernel a perf symbol's self time is charged to."""
    if "libopenblas" in dso or "libblas" in dso or sym.startswith("sgemm") or \
            "gemm" in sym.lower() and "CpuBackend" not in sym:
        return "OpenBLAS GEMM"
    m = re.search(r"CpuBackend::(\w+)", sym)
    if m:
        return "cpu " + m.group(1)
    m = re.search(r"ampc::(?:(?:cpufast|cpukern|\(anonymous namespace\))::)*(\w+)", sym)
    if m:
        return "cpu " + m.group(1)
    if "libm" in dso:
        return "libm (" + sym.split("@")[0] + ")"
    if "libc" in dso:
        return "libc (memcpy, malloc, ...)"
    if "[kernel" in dso or sym.startswith("[k]"):
        return "kernel (page faults, ...)"
    return "other (compile, start-up, ...)"


def breakdown(args, src, data, amp, binary=None):
    """perf profile of one `ampc run`: self time grouped by kernel."""
    binary = binary or args.ampc
    steps = str(max(args.steps, 10))
    out = tempfile.mktemp(suffix=".perf")
    try:
        subprocess.run(["perf", "record", "-q", "-F", "999", "-o", out, "--",
                        binary, "run", src, "--amp=" + amp, "--steps", steps] + data,
                       check=True, capture_output=True, env=os.environ)
        rep = subprocess.run(["perf", "report", "-i", out, "--no-children", "--stdio",
                              "--sort", "dso,symbol", "--percent-limit", "0"],
                             check=True, capture_output=True, text=True).stdout
        # Samples per shared object, summed: the run's CPU time.
        per_dso = subprocess.run(["perf", "report", "-i", out, "--stdio", "-q", "--sort",
                                  "dso", "-n"], check=True, capture_output=True,
                                 text=True).stdout
        samples = sum(int(l.split()[1]) for l in per_dso.splitlines()
                      if len(l.split()) > 2 and l.split()[1].isdigit())
    except (OSError, subprocess.CalledProcessError) as e:
        print("  breakdown of %s --amp=%s: perf failed (%s)" % (src, amp, e))
        return
    finally:
        if os.path.exists(out):
            os.unlink(out)
    totals = {}
    for line in rep.splitlines():
        m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)$", line)
        if not m:
            continue
        pct, dso, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4)
        sym = re.sub(r"\s+-\s+-\s*$", "", sym).strip()
        key = group(sym, dso if kind != "k" else "[kernel")
        totals[key] = totals.get(key, 0.0) + pct
    print("  where the step goes, %s %s --amp=%s (%s steps, perf self time):" %
          (binary, os.path.basename(src), amp, steps))
    if samples:
        # CPU time (999 samples a second), compile and start-up included:
        # less disturbed by other processes than steps/s on a loaded machine.
        print("    CPU time of the whole run: about %.2f s (%s samples)" %
              (samples / 999.0, samples))
    for key, pct in sorted(totals.items(), key=lambda kv: -kv[1])[:12]:
        print("    %5.1f%%  %s" % (pct, key))
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
