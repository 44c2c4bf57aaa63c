#!/usr/bin/env python3
"""Start-up cost of the compiler: `ampc --emit=mlir` on a tiny .tg file
against `mlir-opt-22` on a tiny .mlir file (each parses, verifies and prints
a one-op function), wall time and peak RSS over several runs, and the ratios.
The target is ampc within 2x of mlir-opt on both.

  python3 bench/startup/run_startup.py [--ampc build/bin/ampc] [--runs 20]

Also reports whether ampc mapped any CUDA library (LD_DEBUG=files), since the
CUDA backend is meant to be loaded only for a cuda context.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TINY_TG = """graph tiny(x: f32[4]) -> f32[4] {
  return relu(x)
}
"""

TINY_MLIR = """func.func @tiny(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.negf %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def measure(cmd, runs):
    """Median and min wall seconds and peak RSS (MiB) of `runs` runs."""
    walls, rss = [], []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode()
        proc.stderr.close()
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
        rss.append(usage.ru_maxrss / 1024.0)  # KiB on Linux
    return {
        "wall_median": statistics.median(walls),
        "wall_min": min(walls),
        "rss_median": statistics.median(rss),
    }


def mapped_cuda(cmd):
    env = dict(os.environ, LD_DEBUG="files")
    out = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, check=True).stderr.decode()
    libs = ("libcudart", "libcublas", "libampc_runtime_cuda")
    return sorted({lib for lib in libs if lib in out})


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ampc", default=os.path.join(root, "build", "bin", "ampc"))
    ap.add_argument("--mlir-opt", default="mlir-opt-22")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tg = os.path.join(tmp, "tiny.tg")
        mlir = os.path.join(tmp, "tiny.mlir")
        with open(tg, "w") as f:
            f.write(TINY_TG)
        with open(mlir, "w") as f:
            f.write(TINY_MLIR)
        ampc_cmd = [args.ampc, tg, "--emit=mlir", "-o", os.devnull]
        opt_cmd = [args.mlir_opt, mlir, "-o", os.devnull]
        # One warm-up run each, so both read their libraries from the page cache.
        measure(ampc_cmd, 1)
        measure(opt_cmd, 1)
        a = measure(ampc_cmd, args.runs)
        o = measure(opt_cmd, args.runs)
        cuda = mapped_cuda(ampc_cmd)

    print(f"runs: {args.runs} each (after one warm-up run)")
    print("| command | wall median (ms) | wall min (ms) | peak RSS median (MiB) |")
    print("| --- | ---: | ---: | ---: |")
    for name, r in (("ampc --emit=mlir tiny.tg", a), ("mlir-opt-22 tiny.mlir", o)):
        print(f"| `{name}` | {r['wall_median'] * 1e3:.1f} | {r['wall_min'] * 1e3:.1f} "
              f"| {r['rss_median']:.1f} |")
    wall_ratio = a["wall_median"] / o["wall_median"]
    rss_ratio = a["rss_median"] / o["rss_median"]
    print(f"ratio ampc / mlir-opt: wall {wall_ratio:.2f}x, RSS {rss_ratio:.2f}x "
          f"(target <= 2x)")
    print("CUDA libraries mapped by ampc: " + (", ".join(cuda) if cuda else "none"))
    return 0 if wall_ratio <= 2.0 and rss_ratio <= 2.0 and not cuda else 1


if __name__ == "__main__":
    sys.exit(main())
