#!/usr/bin/env python3
"""The CPU's GEMM engines side by side, in one run.

Runs `ampc_runtime_bench --benchmark_filter=BM_CpuGemm/` (square f32
results of f32, bf16 and f16 operands, one thread) once per engine setting
and prints GFLOP/s per size and dtype with each setting's ratio to OpenBLAS
on the same operands, under a header naming the processor and the units:

  default     AMPC_CPU_GEMM=auto (what ampc uses: see docs/runtime.md)
  onednn      AMPC_CPU_GEMM=onednn (every product on oneDNN)
  onednn-avx2 AMPC_CPU_GEMM=onednn AMPC_CPU_ISA=avx2 (a processor without
              AVX-512, on this one)
  openblas    AMPC_CPU_GEMM=openblas (cblas_sgemm on widened operands)

  python3 bench/runtime/gemm_engines.py [--bench build/bin/ampc_runtime_bench]
      [--min-time 0.2]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SETTINGS = [
    ("default", {}),
    ("onednn", {"AMPC_CPU_GEMM": "onednn"}),
    ("onednn-avx2", {"AMPC_CPU_GEMM": "onednn", "AMPC_CPU_ISA": "avx2"}),
    ("openblas", {"AMPC_CPU_GEMM": "openblas"}),
]
DTYPES = {0: "f32", 1: "f16", 2: "bf16"}  # ampc_dtype values


def processor():
    model, flags = "?", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    units = [f for f in ("amx_bf16", "amx_tile", "avx512_bf16", "avx512_fp16",
                         "avx512f", "avx2", "f16c") if f in flags]
    return model, units


def run_benchmark(bench, name, env, min_time):
    """The JSON entries of one `--benchmark_filter=NAME/` run, one thread,
    with `env` added to the environment."""
    e = dict(os.environ)
    e.update(env)
    e["AMPC_NUM_THREADS"] = "1"
    # The binary's console reporter is its own: the JSON goes to a file.
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([bench, "--benchmark_filter=%s/" % name,
                        "--benchmark_out=" + out.name,
                        "--benchmark_out_format=json",
                        "--benchmark_min_time=%s" % min_time],
                       capture_output=True, text=True, env=e, check=True)
        return json.load(open(out.name))["benchmarks"]


def run(bench, env, min_time):
    rows = {}
    for b in run_benchmark(bench, "BM_CpuGemm", env, min_time):
        parts = b["name"].split("/")
        n, dt = int(parts[1]), DTYPES.get(int(parts[2]), parts[2])
        rows[(n, dt)] = (b["FLOP/s"] / 1e9, b.get("label", ""))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bin",
                                                    "ampc_runtime_bench"))
    ap.add_argument("--min-time", default="0.2")
    args = ap.parse_args()
    model, units = processor()
    print("CPU GEMM engines, one thread: %s; units: %s" % (model, " ".join(units)))
    results = {name: run(args.bench, env, args.min_time) for name, env in SETTINGS}
    for name, _ in SETTINGS:
        labels = sorted({label for _, label in results[name].values()})
        print("  %-12s %s" % (name, " | ".join(labels)))
    print()
    print("| n (n x n x n) | operands | " +
          " | ".join("%s GFLOP/s" % name for name, _ in SETTINGS) +
          " | default / openblas |")
    print("| ---: | --- |" + " ---: |" * (len(SETTINGS) + 1))
    keys = sorted(results["default"], key=lambda k: (["f32", "bf16", "f16"].index(k[1])
                                                     if k[1] in ("f32", "bf16", "f16") else 9, k[0]))
    for key in keys:
        vals = [results[name][key][0] for name, _ in SETTINGS]
        print("| %d | %s | %s | %.2f |" % (key[0], key[1],
                                           " | ".join("%.1f" % v for v in vals),
                                           vals[0] / vals[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
