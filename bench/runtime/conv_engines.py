#!/usr/bin/env python3
"""The CPU's convolution paths side by side, in one run.

Runs `ampc_runtime_bench --benchmark_filter=BM_CpuConvStep/` (a 3x3,
padding-1 convolution's forward, input gradient and weight gradient over 32
images at the three stages of bench/models/resnet.tg; x, w and dy f32 or
bf16, results f32; one thread) once per setting and prints milliseconds of
CPU time per step, with each setting's ratio to the direct kernels on the
same operands, under a header naming the processor and the units used:

  default   AMPC_CPU_CONV unset (what ampc uses: oneDNN's convolution
            primitives, bf16 on its bf16 kernels where the processor has
            bf16 units, else on widened operands in f32; docs/runtime.md)
  direct    AMPC_CPU_CONV=direct (the backend's own direct kernels, f32 on
            widened operands: where every convolution ran before)
  gemm      AMPC_CPU_CONV=gemm (im2col or per-tap GEMMs on the GEMM engine)
  plain     AMPC_CPU_CONV_LAYOUT=plain (oneDNN's primitives asked for ampc's
            plain layouts, so no reorders: whether the reorders pay)

An AMPC_CPU_ISA in the environment (e.g. avx2) caps the units of all three.

  /usr/bin/python3 bench/runtime/conv_engines.py
      [--bench build/bin/ampc_runtime_bench] [--min-time 0.3]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from gemm_engines import DTYPES, processor, run_benchmark  # noqa: E402

SETTINGS = [
    ("default", {}),
    ("direct", {"AMPC_CPU_CONV": "direct"}),
    ("gemm", {"AMPC_CPU_CONV": "gemm"}),
    ("plain", {"AMPC_CPU_CONV_LAYOUT": "plain"}),
]


def run(bench, env, min_time):
    rows = {}
    for b in run_benchmark(bench, "BM_CpuConvStep", env, min_time):
        parts = b["name"].split("/")
        c, dt = int(parts[1]), DTYPES.get(int(parts[2]), parts[2])
        # Milliseconds of CPU time per iteration (the bench's unit is ms).
        rows[(c, dt)] = (b["cpu_time"], b.get("label", ""))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bin",
                                                    "ampc_runtime_bench"))
    ap.add_argument("--min-time", default="0.3")
    args = ap.parse_args()
    model, units = processor()
    cap = os.environ.get("AMPC_CPU_ISA")
    print("CPU convolution paths, one thread: %s; units: %s%s" %
          (model, " ".join(units), "; AMPC_CPU_ISA=" + cap if cap else ""))
    results = {name: run(args.bench, env, args.min_time)
               for name, env in SETTINGS}
    for name, _ in SETTINGS:
        labels = sorted({label for _, label in results[name].values()})
        print("  %-8s %s" % (name, " | ".join(labels)))
    print()
    print("| channels x size | operands | " +
          " | ".join("%s ms" % name for name, _ in SETTINGS) +
          " | direct / default | gemm / default | plain / default |"
          " bf16 / f32 (default) |")
    print("| ---: | --- |" + " ---: |" * (len(SETTINGS) + 4))
    for c in sorted({k[0] for k in results["default"]}):
        for dt in ("f32", "bf16"):
            if (c, dt) not in results["default"]:
                continue
            vals = [results[name][(c, dt)][0] for name, _ in SETTINGS]
            f32 = results["default"].get((c, "f32"), (None,))[0]
            gain = "%.2f" % (f32 / vals[0]) if dt == "bf16" and f32 else ""
            print("| %d x %d^2 | %s | %s | %.2f | %.2f | %.2f | %s |" % (
                c, 512 // c, dt, " | ".join("%.2f" % v for v in vals),
                vals[1] / vals[0], vals[2] / vals[0], vals[3] / vals[0],
                gain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
