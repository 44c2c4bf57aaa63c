#!/usr/bin/env python3
"""Pure 16-bit training: accuracy and memory of --low-update's modes.

  run_lowupdate.py [--ampc PATH] [--epochs N] [--seeds S] [--out DIR]

1. Accuracy. bench/lowupdate/digits_adamw.tg (a two-layer MLP, AdamW at lr
   3e-4) trains on scikit-learn's digits (examples/digits_data.py: 1497
   samples, 300 held out) for N epochs (default 20) from the same initial
   params, in each mode below, and the held-out accuracy of the last eval
   line is printed (the mean over S seeds of the shuffle and the stochastic
   rounding, default 3):
     f32                    --opt-level=O0
     O3 nearest             --opt-level=O3 --amp=bf16 (bf16 params, f32 moments)
     O3 nearest bf16-moments  ... --optimizer-state-dtype=bf16
     O3 stochastic bf16-moments  ... --low-update=stochastic
     O3 kahan bf16-moments       ... --low-update=kahan
2. Memory and speed. bench/lowupdate/wide_adamw.tg (8.4M params) runs 6
   steps at one thread (AMPC_NUM_THREADS=1) in each mode; the report's
   bytes_per_element, the process's peak RSS (ru_maxrss of the child, MiB)
   with its difference from the f32 run, and the run's steps/s are printed.

Needs numpy and scikit-learn (/usr/bin/python3 has both).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

MODES = [
    ("f32", ["--opt-level=O0"]),
    ("O3 nearest", ["--opt-level=O3", "--amp=bf16"]),
    ("O3 nearest bf16-moments",
     ["--opt-level=O3", "--amp=bf16", "--optimizer-state-dtype=bf16"]),
    ("O3 stochastic bf16-moments",
     ["--opt-level=O3", "--amp=bf16", "--optimizer-state-dtype=bf16",
      "--low-update=stochastic"]),
    ("O3 kahan bf16-moments",
     ["--opt-level=O3", "--amp=bf16", "--optimizer-state-dtype=bf16",
      "--low-update=kahan"]),
]


def run_peak(cmd):
    """Runs cmd; returns (stdout + stderr, its peak RSS in MiB)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # os.wait4 gives this child's own resource usage.
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(err.decode())
        raise SystemExit("failed: " + " ".join(cmd))
    return out.decode() + err.decode(), usage.ru_maxrss / 1024.0


def bf16_init(data):
    """DIR/init_bf16: the initial params rounded to bf16 (to nearest even),
    as O3 stores them (bf16 bit patterns, uint16)."""
    import numpy as np
    out = os.path.join(data, "init_bf16")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(os.path.join(data, "init")):
        a = np.load(os.path.join(data, "init", name)).astype(np.float32)
        b = a.view(np.uint32).astype(np.uint64)
        r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
        np.save(os.path.join(out, name), r)


def accuracy(ampc, data, flags, epochs, seed, log):
    init = "init_bf16" if "--opt-level=O3" in flags else "init"
    cmd = [ampc, "run", os.path.join(HERE, "digits_adamw.tg"),
           "--params-in", os.path.join(data, init),
           "--data", "x=%s/train_x.npy" % data,
           "--data", "labels=%s/train_y.npy" % data,
           "--epochs", str(epochs), "--seed", str(seed),
           "--eval", "eval",
           "--eval-data", "x=%s/test_x.npy" % data,
           "--eval-data", "labels=%s/test_y.npy" % data,
           "--log", log] + flags
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    evals = [json.loads(line) for line in open(log) if line.startswith('{"eval"')]
    return float(evals[-1]["acc"])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ampc", default=os.path.join(ROOT, "build", "bin", "ampc"))
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-accuracy", action="store_true")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="ampc-lowupdate-")
    data = os.path.join(out, "digits")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "digits_data.py"),
                    "prepare", data], check=True, stdout=subprocess.DEVNULL)
    bf16_init(data)
    try:
        cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = [l.split(":", 1)[1].strip() for l in cpu.splitlines()
                 if l.startswith("Model name")]
        print("machine: %s" % (model[0] if model else "?"))
    except OSError:
        pass

    base = None
    if not args.skip_accuracy:
        print("digits, AdamW lr 3e-4, %d epochs, held-out accuracy (mean of %d seeds)"
              % (args.epochs, args.seeds))
        print("%-28s %10s %s" % ("mode", "accuracy", "per seed"))
    for name, flags in ([] if args.skip_accuracy else MODES):
        accs = []
        for seed in range(args.seeds):
            log = os.path.join(out, "%s-%d.jsonl" % (name.replace(" ", "_"), seed))
            accs.append(accuracy(args.ampc, data, flags, args.epochs, seed, log))
        mean = sum(accs) / len(accs)
        if base is None:
            base = mean
        print("%-28s %9.2f%% %s  (%+.2f points)" % (
            name, 100 * mean, " ".join("%.4f" % a for a in accs),
            100 * (mean - base)), flush=True)

    if args.skip_memory:
        return
    print()
    print("wide MLP (8.4M params), AdamW, 6 steps at one thread: training state, "
          "peak RSS, steps/s")
    print("%-28s %8s %14s %12s %9s" % ("mode", "bytes/el", "peak RSS MiB",
                                      "vs f32 MiB", "steps/s"))
    wide = os.path.join(HERE, "wide_adamw.tg")
    f32_rss = None
    for name, flags in MODES:
        report = json.loads(subprocess.run(
            [args.ampc, wide, "--emit=report"] + flags, check=True,
            capture_output=True, text=True).stdout)
        graphs = report["graphs"] if "graphs" in report else [report]
        params = graphs[0]["params"]
        per = {p["bytes_per_element"] for p in params}
        os.environ["AMPC_NUM_THREADS"] = "1"
        text, rss = run_peak([args.ampc, "run", wide, "--steps", "6"] + flags)
        rate = re.search(r"([0-9.]+) steps/s", text)
        if f32_rss is None:
            f32_rss = rss
        print("%-28s %8s %14.0f %+12.0f %9s" % (
            name, "/".join(str(b) for b in sorted(per)), rss, rss - f32_rss,
            rate.group(1) if rate else "?"), flush=True)


if __name__ == "__main__":
    main()
