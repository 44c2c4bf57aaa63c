"""Runs `ampc run PROGRAM --amp=AMP --steps N --params-out DIR` under several
thread settings and checks that every parameter file is byte-identical to the
one-thread run's (the CPU backend's results do not depend on the thread
count), and that training changed the parameters.

  same_params.py AMPC OUTDIR PROGRAM AMP STEPS
"""
import os
import subprocess
import sys

SETTINGS = [
    # The reference: one thread everywhere.
    {"OPENBLAS_NUM_THREADS": "1"},
    {"AMPC_NUM_THREADS": "2"},
    {"AMPC_NUM_THREADS": "3"},
    # No AMPC_NUM_THREADS: the pool takes OPENBLAS_NUM_THREADS, and OpenBLAS
    # itself must stay single-threaded inside the runtime.
    {"OPENBLAS_NUM_THREADS": "2"},
    # AMPC_NUM_THREADS wins; OpenBLAS still runs on one thread.
    {"AMPC_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "4"},
    # None set: the default, one thread per CPU the process may run on.
    {},
]
VARS = ("AMPC_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def params(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = f.read()
    return out


def label(setting):
    return " ".join("%s=%s" % kv for kv in sorted(setting.items()))


def run(ampc, out, program, amp, steps, setting):
    env = {k: v for k, v in os.environ.items() if k not in VARS}
    env.update(setting)
    folder = os.path.join(out, "%s-%s-%s-%s" % (os.path.basename(program), amp, steps,
                                                label(setting).replace(" ", "-")))
    args = [ampc, "run", program, "--amp=" + amp, "--steps", str(steps), "--params-out", folder]
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    return params(folder)


def main():
    ampc, out, program, amp, steps = sys.argv[1:6]
    os.makedirs(out, exist_ok=True)
    name = os.path.basename(program)
    ref = run(ampc, out, program, amp, steps, SETTINGS[0])
    if not ref:
        print("FAIL: %s: no parameters written" % name)
        return 1
    for setting in SETTINGS[1:]:
        got = run(ampc, out, program, amp, steps, setting)
        if sorted(got) != sorted(ref):
            print("FAIL: %s %s %s: other parameter files" % (name, amp, label(setting)))
            return 1
        for f in ref:
            if got[f] != ref[f]:
                print("FAIL: %s %s %s: %s differs from one thread" % (name, amp, label(setting), f))
                return 1
    # One step less gives other parameters: the files record training.
    fewer = run(ampc, out, program, amp, int(steps) - 1, SETTINGS[1])
    if all(fewer[f] == ref[f] for f in ref):
        print("FAIL: %s %s: the parameters do not change with a step" % (name, amp))
        return 1
    print("%s %s: %d parameters identical in %d thread settings" % (name, amp, len(ref),
                                                                   len(SETTINGS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
