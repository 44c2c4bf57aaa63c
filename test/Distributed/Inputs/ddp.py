"""Drives the data-parallel tests: writes a small model at a given batch,
its data, and compares runs of `ampc run` (one process against W ranks).

  ddp.py model DIR B [--amp]   DIR/m{B}.tg: an MLP with batch B
  ddp.py bias-model DIR B      DIR/b{B}.tg: an MLP whose bias gradient is
                               a 16-bit sum over the batch under --amp
  ddp.py f64-model DIR B       DIR/f{B}.tg: an f64 MLP with addmm, dropout
                               and a matmul (f64 gradients all-reduced)
  ddp.py data DIR N [--spike ROW] [--f64]   DIR/x.npy, DIR/y.npy with N
                                            rows (x f64 with --f64)
  ddp.py same-log A B [--rtol R]    losses within R relative, scales and
                                    skips identical, as many lines
  ddp.py same-params DIR1 DIR2 [--rtol R]   every NAME.npy within R of
                                            its largest magnitude
  ddp.py count-skips LOG            prints the number of skipped steps
  ddp.py kill [--when-exists PATH] ...   see kill()
  ddp.py term DELAY|one|twice|self ...         see term()
"""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np


def model(d, b):
    with open(os.path.join(d, f"m{b}.tg"), "w") as f:
        f.write(f"""graph m(x: f32[{b}, 16], labels: i32[{b}]) -> f32[] {{
  param w1: f32[16, 12] = normal(0.0, 0.3)
  param b1: f32[12]     = zeros
  param w2: f32[12, 5]  = normal(0.0, 0.3)
  h      = relu(matmul(x, w1) + b1)
  logits = matmul(h, w2)
  loss   = cross_entropy(logits, labels)
  minimize loss with sgd(lr = 0.1, momentum = 0.9)
  return loss
}}
""")


def bias_model(d, b):
    with open(os.path.join(d, f"b{b}.tg"), "w") as f:
        f.write(f"""graph m(x: f32[{b}, 16], labels: i32[{b}]) -> f32[] {{
  param w1: f32[16, 32] = normal(0.0, 0.3)
  param b1: f32[32]     = zeros
  param w2: f32[32, 5]  = normal(0.0, 0.3)
  h    = gelu(matmul(x, w1) + b1)
  loss = cross_entropy(matmul(h, w2), labels)
  minimize loss with sgd(lr = 0.1, momentum = 0.9, nesterov = true)
  return loss
}}
""")


def f64_model(d, b):
    with open(os.path.join(d, f"f{b}.tg"), "w") as f:
        f.write(f"""graph m(x: f64[{b}, 16], labels: i32[{b}]) -> f64[] {{
  param w1: f64[16, 12] = normal(0.0, 0.3)
  param b1: f64[12]     = normal(0.0, 0.1)
  param w2: f64[12, 5]  = normal(0.0, 0.3)
  h      = tanh(addmm(b1, dropout(x, p=0.25), w1, beta=0.7, alpha=1.3))
  logits = matmul(h, w2)
  loss   = cross_entropy(logits, labels)
  minimize loss with sgd(lr = 0.1, momentum = 0.9)
  return loss
}}
""")


def data(d, n, spike=None, f64=False):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, 16)).astype(np.float64 if f64 else np.float32)
    if spike is not None:
        x[spike, :] = 1.0e6  # beyond f16: an overflow in that row's rank only
    y = rng.integers(0, 5, size=n).astype(np.int32)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def same_log(a, b, rtol):
    la, lb = read_log(a), read_log(b)
    assert len(la) == len(lb), f"{len(la)} lines against {len(lb)}"
    for x, y in zip(la, lb):
        assert x["step"] == y["step"]
        rel = abs(x["loss"] - y["loss"]) / max(abs(y["loss"]), 1e-30)
        assert rel <= rtol, f"step {x['step']}: loss {x['loss']} vs {y['loss']}"
        for k in ("loss_scale", "skipped"):
            assert x.get(k) == y.get(k), f"step {x['step']}: {k} differs"
    print(f"same log: {len(la)} steps, losses within {rtol:g}")


def same_params(a, b, rtol):
    names = sorted(f for f in os.listdir(a) if f.endswith(".npy"))
    assert names == sorted(f for f in os.listdir(b) if f.endswith(".npy"))
    for n in names:
        # Relative to the tensor's largest magnitude (at least 0.01), as
        # ddprun.py's: an element that cancels to near 0 carries the
        # absolute rounding of its O(1) terms, so its own relative error
        # says nothing (3 ranks against 1 process: w1 differs by at most
        # 1.2e-7 of its largest value, but by 2e-5 of an element of 3.9e-4,
        # on an OpenBLAS kernel that adds in another order).
        x, y = np.load(os.path.join(a, n)), np.load(os.path.join(b, n))
        err = np.max(np.abs(x - y)) / max(np.max(np.abs(y)), 1e-2)
        assert err <= rtol, f"{n}: relative difference {err}"
    print(f"same params: {len(names)} within {rtol:g}")


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(p))
        except OSError:
            pass
    return out


def kill(cmd):
    """Starts CMD (an mpirun job), kills one of its ranks after 1.5 s (with
    `--when-exists PATH` first: once PATH exists, waiting up to 120 s, so
    that a slow start, e.g. under sanitizers on a loaded machine, still
    gets there), and requires the job to end non-zero within 30 s."""
    wait_for = None
    if cmd[:1] == ["--when-exists"]:
        wait_for, cmd = cmd[1], cmd[2:]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if wait_for:
        deadline = time.time() + 120
        while not os.path.exists(wait_for):
            if job.poll() is not None or time.time() > deadline:
                job.kill()
                sys.exit(f"{wait_for} did not appear (job exit {job.poll()})")
            time.sleep(0.05)
    else:
        time.sleep(1.5)
    ranks = children(job.pid)
    assert ranks, "no rank started"
    os.kill(ranks[-1], signal.SIGKILL)
    t0 = time.time()
    try:
        out, _ = job.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        job.kill()
        sys.exit("the job did not end within 30 s of a rank's death")
    print(out.decode(errors="replace"))
    print(f"exit {job.returncode} after {time.time() - t0:.1f} s")
    assert job.returncode != 0


def term(how, cmd):
    """Starts CMD (a job with --log FILE) and, once FILE has a line (every
    rank is training), sends SIGTERM: to its ranks DELAY seconds apart (so
    they receive it at different steps), to `one` rank only, `twice` to
    each rank at once, or to the job's own process (`self`: `ampc run
    --nproc`). Prints the job's
    stderr, its stdout and its exit code."""
    log = cmd[cmd.index("--log") + 1]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.time()
    while not (os.path.exists(log) and os.path.getsize(log) > 0):
        assert time.time() - t0 < 30 and job.poll() is None, "no step logged"
        time.sleep(0.05)
    time.sleep(0.2)
    if how == "self":
        os.kill(job.pid, signal.SIGTERM)
    else:
        ranks = []
        for r in children(job.pid):
            try:
                with open(f"/proc/{r}/comm") as f:
                    if f.read().strip() == "ampc":
                        ranks.append(r)
            except OSError:
                pass
        assert len(ranks) > 1, "the ranks did not start"
        for r in ranks[-1:] if how == "one" else ranks:
            try:
                os.kill(r, signal.SIGTERM)
                if how == "twice":
                    os.kill(r, signal.SIGTERM)
            except ProcessLookupError:
                pass  # the job stopped on the first signal already
            if how not in ("one", "twice"):
                time.sleep(float(how))
    try:
        out, err = job.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        job.kill()
        sys.exit("the job did not end within 30 s of the signal")
    print(err.decode(errors="replace"))
    print(out.decode(errors="replace"))
    print(f"exit {job.returncode}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    rtol = 1e-5
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    if cmd == "model":
        model(args[0], int(args[1]))
    elif cmd == "bias-model":
        bias_model(args[0], int(args[1]))
    elif cmd == "f64-model":
        f64_model(args[0], int(args[1]))
    elif cmd == "data":
        f64 = "--f64" in args
        if f64:
            args.remove("--f64")
        spike = int(args[3]) if len(args) > 3 and args[2] == "--spike" else None
        data(args[0], int(args[1]), spike, f64)
    elif cmd == "same-log":
        same_log(args[0], args[1], rtol)
    elif cmd == "same-params":
        same_params(args[0], args[1], rtol)
    elif cmd == "count-skips":
        print(f"skips: {sum(1 for l in read_log(args[0]) if l.get('skipped'))}")
    elif cmd == "kill":
        kill(args)
    elif cmd == "term":
        term(args[0], args[1:])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
