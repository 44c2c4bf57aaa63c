#!/usr/bin/env python3
"""ampc run against PyTorch eager on the CPU, side by side, in one run.

For each program it draws one set of inputs and parameters (.npy files),
then measures training steps per second of, in this order, interleaved:
  - `ampc run --amp=off` (ampc f32),
  - the PyTorch reference in f32 (tools/ampc-torch/ampc_torch.py: eager
    ops, autograd and torch.optim on the same program, the same data),
  - `ampc run --amp=bf16` (default fast policy),
  - the same PyTorch reference under real `torch.autocast("cpu",
    dtype=torch.bfloat16)` (ampc_torch.py --torch-autocast=bf16: parameters
    and optimizer in f32; ops of ampc's fp32 class, layer_norm and softmax
    among them, cast to f32 as CUDA autocast would; see that file),
  - `ampc run --amp=fp16` (dynamic loss scaling; PyTorch 1.13 has no f16
    CPU autocast, so fp16 is compared with ampc's own f32 only),
with the same thread count for both (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS
and torch.set_num_threads), keeping the median of --repeat runs of each.
Both count only the step loop (ampc: after compiling and initialising;
PyTorch: after reading the program and the data), every step reading its
loss back to the host. The table gives the five rates and the ratios
ampc f32 / PyTorch f32, ampc bf16 / PyTorch bf16 autocast, ampc bf16 /
ampc f32, ampc fp16 / ampc f32 (and PyTorch bf16 / PyTorch f32), each
with its geometric mean over the programs. The header names the processor
(lscpu's model name and which of the flags in FLAGS /proc/cpuinfo has) and
the units ampc ran on (the `cpu: ...` of `ampc run`'s summary line).

  /usr/bin/python3 bench/torch/side_by_side.py [--steps 100] [--repeat 5] [--threads 1]
  /usr/bin/python3 bench/torch/side_by_side.py --set models --steps 5 --repeat 3 \
      --threads 1,2 [--breakdown] [--ampc-env AMPC_CPU_ISA=avx2]

`--set examples` (default) runs examples/{mlp,cnn,transformer}.tg; `--set
models` the real-size programs of bench/models/ (encoder, llama, resnet,
mobilevit); `--examples a,b` picks programs of the set. `--threads` takes a
comma-separated list; each count is its own table (its own process).
`--ampc-env VAR=VALUE` (repeatable) sets a variable for the ampc runs only
(AMPC_CPU_ISA=avx2, AMPC_CPU_GEMM=openblas, ...), not for PyTorch.
`--baseline OLD/bin/ampc` measures a second ampc binary interleaved with the
first (f32, bf16 and fp16). `--breakdown` adds, per program, where ampc's
f32, bf16 and fp16 steps spend their time: a `perf record` of one `ampc
run`, self time grouped by kernel (GEMM library, oneDNN's JIT code, each CPU
backend entry point, libm, the rest).

`--opt-levels` measures ampc alone at the Apex presets instead: `--amp=bf16`
and `--amp=fp16`, each with `--opt-level=O1`, `O2` and `O3`, and the ratios
O2 / O1 and O3 / O1 (issue: the presets that keep more in 16 bits should not
be slower). The params then start from the program's own initial values
(O3 keeps them in 16 bits, which the f32 `.npy` files are not).

`--cpu-time` measures CPU time instead of wall time, for a machine other jobs
load (where a process gets a varying share of the cores): each rate is
(steps - 1) / (CPU seconds of a run of `--steps` steps - CPU seconds of a
run of 1 step), so compilation, start-up and the first step cancel out;
CPU seconds are user + system of the `ampc run` child, and the process CPU
time around the PyTorch reference's run (in-process).

`--targets` ends the run with the CPU targets of the AMP-on-the-CPU issue,
each with its measured value and "met" or "MISSED", judged by the units
ampc reported for `--amp=bf16` (an AMPC_CPU_ISA cap in --ampc-env counts):
  - with AMX (`avx512_core_amx`): ampc bf16 / ampc f32 >= 3 and ampc bf16
    / PyTorch bf16 >= 1.5 (geometric means; the latter >= 1 on every
    program), ampc f32 / PyTorch f32 >= 1.5;
  - without bf16 units (`avx2`, `avx512_core`): ampc bf16 / ampc f32 >= 1
    (geometric mean);
  - with AVX512-BF16 but no AMX the AMX targets are printed, not judged;
  - with `--threads 1,2`: 2 threads / 1 thread >= 1.7 for ampc f32 and
    bf16 on every program of `--set models` (the GEMM-heavy ones);
  - with `--opt-levels`: O2 / O1 and O3 / O1 >= 1 on every program, bf16
    and fp16.
Each target is judged on the medians. Next to each value it prints the
lowest and highest the ratio could be over the runs (lowest numerator over
highest denominator, and the reverse; geometric means of those for the
geometric-mean targets), and "within the runs' spread" where the target
lies between them: on a noisy machine such a verdict could go either way.
It exits 3 when a judged target is missed (after printing everything).

Run it with the interpreter that imports torch (Debian's python3-torch:
/usr/bin/python3).
"""

import argparse
import json
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

# The /proc/cpuinfo flags the header reports (present or not).
FLAGS = ("amx_bf16", "amx_tile", "avx512_bf16", "avx512_fp16", "avx512f", "avx2", "f16c")

# The measured columns, in the order of the interleaving within a repeat:
# (key, heading, runner, argument).
COLUMNS = (
    ("off", "ampc f32", "ampc", "off"),
    ("torch", "PyTorch f32", "torch", "off"),
    ("bf16", "ampc bf16", "ampc", "bf16"),
    ("torch_bf16", "PyTorch bf16 autocast", "torch", "bf16"),
    ("fp16", "ampc fp16", "ampc", "fp16"),
)
# The ratios: (heading, numerator, denominator).
RATIOS = (
    ("ampc f32 / PyTorch f32", "off", "torch"),
    ("ampc bf16 / PyTorch bf16", "bf16", "torch_bf16"),
    ("ampc bf16 / ampc f32", "bf16", "off"),
    ("ampc fp16 / ampc f32", "fp16", "off"),
    ("PyTorch bf16 / PyTorch f32", "torch_bf16", "torch"),
)
BASELINE_MODES = ("off", "bf16", "fp16")
# --opt-levels: ampc alone at the Apex presets, each 16-bit type at O1, O2
# and O3 (an ampc mode "AMP:LEVEL" runs `--amp=AMP --opt-level=LEVEL`).
OPT_COLUMNS = tuple(("%s_%s" % (amp, lvl), "ampc %s %s" % (amp, lvl), "ampc",
                     "%s:%s" % (amp, lvl))
                    for amp in ("bf16", "fp16") for lvl in ("O1", "O2", "O3"))
OPT_RATIOS = tuple(("%s %s / O1" % (amp, lvl), "%s_%s" % (amp, lvl), amp + "_O1")
                   for amp in ("bf16", "fp16") for lvl in ("O2", "O3"))


def processor():
    """(lscpu's model name, [(flag, present)] of FLAGS)."""
    model = None
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        model = m.group(1).strip() if m else None
    except OSError:
        pass
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    if model is None:
                        continue
                    break
                if model is None and line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return model or "unknown", [(f, f in flags) for f in FLAGS]


def geomean(values):
    values = [v for v in values if v > 0]
    if not values:
        return float("nan")
    prod = 1.0
    for v in values:
        prod *= v
    return prod ** (1.0 / len(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", default="1",
                    help="comma-separated thread counts, e.g. 1,2")
    ap.add_argument("--baseline", default=None,
                    help="a second ampc binary (e.g. an older build) measured "
                         "interleaved with the first, --amp=off, bf16 and fp16")
    ap.add_argument("--set", choices=["examples", "models"], default="examples")
    ap.add_argument("--breakdown", action="store_true",
                    help="per-kernel time breakdown of ampc's step (needs perf)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="rates from CPU time (difference of a --steps and a 1-step run)")
    ap.add_argument("--ampc", default=os.path.join(ROOT, "build", "bin", "ampc"))
    ap.add_argument("--ampc-env", action="append", default=[], metavar="VAR=VALUE",
                    help="an environment variable for the ampc runs only, e.g. "
                         "AMPC_CPU_ISA=avx2 (repeatable)")
    ap.add_argument("--examples", default=None,
                    help="comma-separated program names of the set")
    ap.add_argument("--opt-levels", action="store_true",
                    help="ampc alone, bf16 and fp16 at --opt-level=O1, O2, O3")
    ap.add_argument("--targets", action="store_true",
                    help="check the CPU AMP targets at the end; exit 3 if one is missed")
    # Internal: where a one-thread-count child writes its medians and units.
    ap.add_argument("--results-json", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.opt_levels and (args.baseline or args.breakdown):
        ap.error("--opt-levels does not take --baseline or --breakdown")
    columns, ratios = (OPT_COLUMNS, OPT_RATIOS) if args.opt_levels else (COLUMNS, RATIOS)
    counts = [int(t) for t in args.threads.split(",")]
    if args.examples is None:
        args.examples = ("mlp,cnn,transformer" if args.set == "examples" else
                         "encoder,llama,resnet,mobilevit")
    folder = (os.path.join(ROOT, "examples") if args.set == "examples" else
              os.path.join(ROOT, "bench", "models"))
    ampc_env_extra = {}
    for spec in args.ampc_env:
        var, eq, value = spec.partition("=")
        if not eq or not var:
            ap.error("--ampc-env expects VAR=VALUE, got '%s'" % spec)
        ampc_env_extra[var] = value
    if len(counts) > 1:
        # One process per thread count: torch's pools are sized at import.
        rc = 0
        results = {}
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
                if a.startswith("--threads=") or a == "--targets":
                    continue
                cmd.append(a)
            out = None
            if args.targets:
                fd, out = tempfile.mkstemp(suffix=".json", prefix="sbs-")
                os.close(fd)
                cmd += ["--results-json", out]
            rc |= subprocess.run(cmd).returncode
            if out:
                with open(out) as f:
                    text = f.read()
                os.unlink(out)
                if text:
                    results[t] = json.loads(text)
        if args.targets and rc == 0:
            return check_targets(results, args)
        return rc
    args.threads = counts[0]

    # Thread counts before torch is imported, so its pools start that size.
    threads = str(args.threads)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = threads
    ampc_env = dict(os.environ, **ampc_env_extra)
    import numpy as np
    import torch
    import ampc_torch as ref
    import tgdiff
    torch.set_num_threads(args.threads)

    model, flags = processor()
    print("ampc run vs PyTorch %s eager, CPU, %d thread(s), %d steps, median of %d runs%s" %
          (torch.__version__, args.threads, args.steps, args.repeat,
           ", rates from CPU time" if args.cpu_time else ""))
    print("processor: %s; flags: %s; not: %s" % (
        model, " ".join(f for f, on in flags if on) or "none",
        " ".join(f for f, on in flags if not on) or "none"))
    if ampc_env_extra:
        print("ampc runs with: %s" % " ".join("%s=%s" % kv for kv in ampc_env_extra.items()))
    sys.stdout.flush()
    rows = []
    # The units of each (binary label, program, mode): `cpu: ...` of the summary.
    units = {}
    for name in args.examples.split(","):
        src = os.path.join(folder, name + ".tg")
        doc = ref.load_program_json(src, args.ampc)
        program = ref.Program(doc)
        work = tempfile.mkdtemp(prefix="sbs-")
        inputs, params = tgdiff.draw_data(program, np.random.default_rng(0), work)
        data = ["--params-in", params]
        for n, path in inputs.items():
            data += ["--input", "%s=%s" % (n, path)]

        def ampc_once(mode, binary, steps):
            amp, _, level = mode.partition(":")
            # At an opt level the params are the program's own initial
            # values (O3 stores them in 16 bits, which f32 .npy files are
            # not): the data are the same, the starting point each level's.
            given = data[2:] if level else data
            cmd = [binary or args.ampc, "run", src, "--amp=" + amp, "--steps", str(steps)] + given
            if level:
                cmd.append("--opt-level=" + level)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=ampc_env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0:
                sys.exit("side_by_side: `%s` failed (exit %d):\n%s" %
                         (" ".join(cmd), proc.returncode, proc.stderr.rstrip()))
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            summary = [l for l in proc.stdout.splitlines() if " steps/s" in l]
            if not summary:
                sys.exit("side_by_side: no steps/s in the output of `%s`:\n%s" %
                         (" ".join(cmd), proc.stdout.rstrip()))
            m = re.search(r", cpu: (.*)$", summary[-1])
            unit = m.group(1).strip() if m else "(not reported)"
            rate = float(re.search(r"([0-9.]+) steps/s", summary[-1]).group(1))
            return rate, cpu, unit

        def ampc_rate(amp, binary=None):
            rate, cpu, unit = ampc_once(amp, binary, args.steps)
            units[("baseline" if binary else "ampc", name, amp)] = unit
            if not args.cpu_time:
                return rate
            _, cpu1, _ = ampc_once(amp, binary, 1)
            return (args.steps - 1) / max(cpu - cpu1, 1e-9)

        def torch_once(autocast, steps):
            ap2 = argparse.ArgumentParser()
            ref.add_run_arguments(ap2)
            run_args = ap2.parse_args([src, "--quiet", "--steps", str(steps),
                                       "--threads", threads, "--ampc", args.ampc,
                                       "--torch-autocast=" + autocast] + data)
            start = time.process_time()
            rate = ref.run(run_args, doc)
            return rate, time.process_time() - start

        def torch_rate(autocast):
            rate, cpu = torch_once(autocast, args.steps)
            if not args.cpu_time:
                return rate
            _, cpu1 = torch_once(autocast, 1)
            return (args.steps - 1) / max(cpu - cpu1, 1e-9)

        rates = {key: [] for key, _, _, _ in columns}
        if args.baseline:
            rates.update({"base_" + m: [] for m in BASELINE_MODES})
        for _ in range(args.repeat):
            for key, _, runner, mode in columns:
                if args.baseline and runner == "ampc":
                    rates["base_" + mode].append(ampc_rate(mode, args.baseline))
                rates[key].append(ampc_rate(mode) if runner == "ampc" else torch_rate(mode))
        med = {k: statistics.median(v) for k, v in rates.items()}
        spread = {k: (min(v), max(v)) for k, v in rates.items()}
        rows.append((name, med, spread))
        if args.breakdown:
            for amp in BASELINE_MODES:
                breakdown(args, src, data, amp, env=ampc_env)
                if args.baseline:
                    breakdown(args, src, data, amp, args.baseline, env=ampc_env)

    print()
    print_units(units, [name for name, _, _ in rows])
    print()
    def row(cells):
        print("| " + " | ".join(cells) + " |")

    row(["program", "threads"] + ["%s (steps/s)" % h for _, h, _, _ in columns] +
        [h for h, _, _ in ratios])
    row(["---", "---:"] + ["---:"] * (len(columns) + len(ratios)))
    for name, med, _ in rows:
        row(["%s.tg" % name, str(args.threads)] + ["%.2f" % med[k] for k, _, _, _ in columns] +
            ["%.2f" % (med[a] / med[b]) for _, a, b in ratios])
    row(["geometric mean", str(args.threads)] + [""] * len(columns) +
        ["%.2f" % geomean([med[a] / med[b] for _, med, _ in rows]) for _, a, b in ratios])
    if args.baseline:
        print()
        row(["program", "threads"] + ["%s %s" % (who, m) if who else "%s speed-up" % m
                                      for m in BASELINE_MODES
                                      for who in ("baseline", "ampc", None)])
        row(["---", "---:"] + ["---:"] * (3 * len(BASELINE_MODES)))
        for name, med, _ in rows:
            row(["%s.tg" % name, str(args.threads)] +
                ["%.2f" % v for m in BASELINE_MODES
                 for v in (med["base_" + m], med[m], med[m] / med["base_" + m])])
        row(["geometric mean", str(args.threads)] +
            [c for m in BASELINE_MODES
             for c in ("", "", "%.2f" % geomean([med[m] / med["base_" + m]
                                                  for _, med, _ in rows]))])
    print()
    print("geometric means: " + ", ".join(
        "%s %.2f" % (h, geomean([med[a] / med[b] for _, med, _ in rows]))
        for h, a, b in ratios))
    print()
    print("min-max over the runs:")
    for name, _, spread in rows:
        print("  %s: " % name + ", ".join("%s %.1f-%.1f" % (k, lo, hi)
                                         for k, (lo, hi) in spread.items()))
    result = {"medians": {name: med for name, med, _ in rows},
              "spreads": {name: spread for name, _, spread in rows},
              "bf16_units": {n: u for (who, n, mode), u in units.items()
                             if who == "ampc" and mode.partition(":")[0] == "bf16"}}
    if args.results_json:
        with open(args.results_json, "w") as f:
            json.dump(result, f)
    if args.targets:
        sys.stdout.flush()
        return check_targets({args.threads: result}, args)
    return 0


def units_class(unit):
    """'amx', 'bf16' (AVX512-BF16 without AMX) or 'none' (no bf16 units),
    from the `cpu: ...` ampc reported for a bf16 run."""
    name = unit.split()[0] if unit else ""
    if name.startswith("avx512_core_amx"):
        return "amx"
    if name.startswith("avx512_core_bf16"):
        return "bf16"
    return "none"


def ratio_bounds(num, den):
    """The lowest and highest a ratio of two columns could be over the runs:
    (lowest numerator / highest denominator, highest / lowest), from each
    column's (min, max); for several programs, the geometric means of those."""
    los = [n[0] / d[1] for n, d in zip(num, den)]
    his = [n[1] / d[0] for n, d in zip(num, den)]
    return geomean(los), geomean(his)


def check_targets(results, args):
    """Prints the issue's CPU targets against `results` ({threads: {medians:
    {program: {column: rate}}, spreads: {program: {column: (min, max)}},
    bf16_units: {program: unit}}}); 3 if a judged one is missed, else 0.
    A target is judged on the medians; where the runs' spread puts the
    target between the lowest and highest ratio the runs allow, the line
    says so (the verdict is then the medians' alone)."""
    missed = []
    print()

    def line(what, value, goal, judged=True, span=None):
        ok = value >= goal
        state = ("met" if ok else "MISSED") if judged else "not judged"
        runs = ""
        if span:
            runs = "  runs %.3f-%.3f" % span
            if judged and span[0] < goal <= span[1]:
                state += ", within the runs' spread"
        print("  %-58s %6.3f%s  (target >= %.1f: %s)" % (what, value, runs, goal, state))
        if judged and not ok:
            missed.append(what)

    one = results.get(1) or results[min(results)]
    meds = one["medians"]
    spreads = one.get("spreads")
    names = list(meds)

    def bounds(a, b, only=None):
        """ratio_bounds of columns a / b, over one program or all of them."""
        if not spreads:
            return None
        progs = [only] if only else names
        return ratio_bounds([spreads[n][a] for n in progs],
                            [spreads[n][b] for n in progs])

    if args.opt_levels:
        print("targets (opt levels, %d thread(s)): every program, O2 and O3 at least "
              "as fast as O1" % (1 if 1 in results else min(results)))
        for amp in ("bf16", "fp16"):
            for lvl in ("O2", "O3"):
                for n in names:
                    col = "%s_%s" % (amp, lvl)
                    line("%s %s %s / O1" % (n, amp, lvl),
                         meds[n][col] / meds[n][amp + "_O1"], 1.0, True,
                         bounds(col, amp + "_O1", n))
    else:
        classes = {units_class(u) for u in one["bf16_units"].values()}
        cls = classes.pop() if len(classes) == 1 else "mixed"
        print("targets (bf16 units: %s; %s)" % (
            {"amx": "AMX", "bf16": "AVX512-BF16, no AMX", "none": "none",
             "mixed": "differ between programs"}[cls],
            ", ".join(sorted(set(one["bf16_units"].values())))))
        amx = cls == "amx"
        ratio = lambda a, b: geomean([meds[n][a] / meds[n][b] for n in names])
        if cls in ("amx", "bf16"):
            if not amx:
                print("  (the targets below are for a processor with AMX)")
            line("ampc bf16 / ampc f32, geometric mean", ratio("bf16", "off"), 3.0, amx,
                 bounds("bf16", "off"))
            line("ampc bf16 / PyTorch bf16 autocast, geometric mean",
                 ratio("bf16", "torch_bf16"), 1.5, amx, bounds("bf16", "torch_bf16"))
            for n in names:
                line("  %s: ampc bf16 / PyTorch bf16 autocast" % n,
                     meds[n]["bf16"] / meds[n]["torch_bf16"], 1.0, amx,
                     bounds("bf16", "torch_bf16", n))
            line("ampc f32 / PyTorch f32, geometric mean", ratio("off", "torch"), 1.5, amx,
                 bounds("off", "torch"))
        if cls == "none":
            line("ampc bf16 / ampc f32 without bf16 units, geometric mean",
                 ratio("bf16", "off"), 1.0, True, bounds("bf16", "off"))
        if 1 in results and 2 in results and args.set == "models":
            s1, s2 = results[1].get("spreads"), results[2].get("spreads")
            for mode, label in (("off", "f32"), ("bf16", "bf16")):
                for n in names:
                    line("  %s: ampc %s, 2 threads / 1 thread" % (n, label),
                         results[2]["medians"][n][mode] / results[1]["medians"][n][mode],
                         1.7, True,
                         ratio_bounds([s2[n][mode]], [s1[n][mode]]) if s1 and s2 else None)
        else:
            print("  two threads / one: not measured (needs --set models --threads 1,2)")
    print("targets missed: %s" % (", ".join(m.strip() for m in missed) if missed else "none"))
    return 3 if missed else 0


def print_units(units, names):
    """The units ampc ran on: one line where every run agrees, else one per
    mode, and per program where the programs of a mode differ."""
    for label in ("ampc", "baseline"):
        mine = {k[1:]: v for k, v in units.items() if k[0] == label}
        if not mine:
            continue
        who = "ampc" if label == "ampc" else "baseline"
        if len(set(mine.values())) == 1:
            print("%s units: cpu: %s" % (who, next(iter(mine.values()))))
            continue
        for mode in sorted({m for _, m in mine}):
            per = {n: mine[(n, mode)] for n in names if (n, mode) in mine}
            flags = "--amp=%s" % mode.replace(":", " --opt-level=")
            if len(set(per.values())) == 1:
                print("%s %s units: cpu: %s" % (who, flags, next(iter(per.values()))))
            else:
                for n, v in per.items():
                    print("%s %s %s.tg units: cpu: %s" % (who, flags, n, v))


def group(sym, dso):
    """The kernel a perf symbol's self time is charged to."""
    if "dnnl" in dso:
        return "oneDNN (library code: reorders, drivers, ...)"
    if dso.startswith(("[JIT]", "[unknown", "//anon", "[anon", "jitted")):
        # Code generated at run time: oneDNN's JIT kernels (GEMM, conv, ...).
        return "JIT code (oneDNN's kernels)"
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


def breakdown(args, src, data, amp, binary=None, env=None):
    """perf profile of one `ampc run`: self time grouped by kernel."""
    binary = binary or args.ampc
    steps = str(max(args.steps, 10))
    out = tempfile.mktemp(suffix=".perf")
    try:
        subprocess.run(["perf", "record", "-q", "-F", "999", "-o", out, "--",
                        binary, "run", src, "--amp=" + amp, "--steps", steps] + data,
                       check=True, capture_output=True, env=env or os.environ)
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
        # (a dso may hold spaces: "[JIT] tid 1234")
        m = re.match(r"\s*([0-9.]+)%\s+(.+?)\s+\[(.)\]\s+(.*)$", line)
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
