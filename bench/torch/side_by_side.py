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

Run it with the interpreter that imports torch (Debian's python3-torch:
/usr/bin/python3).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "ampc-torch"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ampc", default=os.path.join(ROOT, "build", "bin", "ampc"))
    ap.add_argument("--examples", default="mlp,cnn,transformer")
    args = ap.parse_args()

    # Thread counts before torch is imported, so its pools start that size.
    threads = str(args.threads)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = threads
    import numpy as np
    import torch
    import ampc_torch as ref
    import tgdiff
    torch.set_num_threads(args.threads)

    print("ampc run vs PyTorch %s eager, CPU, %d thread(s), %d steps, median of %d runs" %
          (torch.__version__, args.threads, args.steps, args.repeat))
    rows = []
    for name in args.examples.split(","):
        src = os.path.join(ROOT, "examples", name + ".tg")
        doc = ref.load_program_json(src, args.ampc)
        program = ref.Program(doc)
        work = tempfile.mkdtemp(prefix="sbs-")
        inputs, params = tgdiff.draw_data(program, np.random.default_rng(0), work)
        data = ["--params-in", params]
        for n, path in inputs.items():
            data += ["--input", "%s=%s" % (n, path)]

        def ampc_rate(amp):
            out = subprocess.run([args.ampc, "run", src, "--amp=" + amp, "--steps",
                                  str(args.steps)] + data, check=True, capture_output=True,
                                 text=True, env=os.environ).stdout
            return float(re.search(r"([0-9.]+) steps/s", out).group(1))

        def torch_rate():
            ap2 = argparse.ArgumentParser()
            ref.add_run_arguments(ap2)
            run_args = ap2.parse_args([src, "--quiet", "--steps", str(args.steps),
                                       "--threads", threads] + data)
            return ref.run(run_args, doc)

        rates = {"off": [], "torch": [], "fp16": [], "bf16": []}
        for _ in range(args.repeat):
            rates["off"].append(ampc_rate("off"))
            rates["torch"].append(torch_rate())
            rates["fp16"].append(ampc_rate("fp16"))
            rates["bf16"].append(ampc_rate("bf16"))
        med = {k: statistics.median(v) for k, v in rates.items()}
        spread = {k: (min(v), max(v)) for k, v in rates.items()}
        rows.append((name, med, spread))

    print()
    print("| example | ampc off (steps/s) | PyTorch eager (steps/s) | ampc / PyTorch "
          "| ampc fp16 (steps/s) | ampc bf16 (steps/s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, med, _ in rows:
        print("| %s.tg | %.1f | %.1f | %.2f | %.1f | %.1f |" % (
            name, med["off"], med["torch"], med["off"] / med["torch"], med["fp16"],
            med["bf16"]))
    print()
    print("min-max over the runs:")
    for name, _, spread in rows:
        print("  %s: " % name + ", ".join("%s %.1f-%.1f" % (k, lo, hi)
                                         for k, (lo, hi) in spread.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
