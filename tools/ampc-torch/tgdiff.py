#!/usr/bin/env python3
"""tgdiff: differential tests of `ampc run` against the PyTorch reference.

  tgdiff.py check PROGRAM.tg... [--amp=off|fp16|bf16] [--steps N] [ampc flags]
  tgdiff.py ops [--amp=...]            every op of the language, alone: a
                                       forward+grad program and a training step
  tgdiff.py matmul-ops [--amp=...]     the same for `@` chains, mm, bmm, mv
                                       and chain_matmul
  tgdiff.py conv-ops [--amp=...]       the same for conv1d and conv_transpose2d
  tgdiff.py math-ops [--amp=...]       the same for log1p, expm1, reciprocal
  tgdiff.py cases FILE.py [--amp=...]  the same for the cases a Python file
                                       defines (CASES, in OPS' format)
  tgdiff.py fuzz [--count N] [--seed S] [--amp=...]
                                       random valid programs (tggen.py); a
                                       disagreement is shrunk to a minimal
                                       reproducer, printed and saved

For each program it draws inputs and parameters from a seeded NumPy
generator, writes them as .npy files, runs `ampc run --params-in --input
--log --params-out --outputs-out` and ampc_torch.py on the same files, and
compares per-step losses, the loss-scale/skipped sequence, final parameters
and outputs. The tolerance class is the run's AMP mode or the lowest float
type the program holds, whichever is less precise; docs/pytorch.md gives
each tolerance, why, and the errors measured against it:

                 one pass (forward + grad)   20 training steps
  f32            losses 1e-5, tensors 1e-4  losses 1e-5, tensors 1e-3
  fp16           1e-3                        2e-2, 3e-2
  bf16           8e-3                        5e-2, 5e-2

Losses are relative (floored at a tenth of the first step's loss), tensors
are max |ampc - torch| over the larger of their own largest element and the
largest of their kind in the program. loss_scale and skipped must be equal,
for data that stay more than 1% away from the f16 overflow threshold (a
case closer than that is reported as ambiguous, not as agreement).
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ampc_torch as ref  # noqa: E402

# (loss, tensor) tolerances by AMP mode and by kind of program: "step" runs
# once (forward + grad), "train" runs 20 optimizer steps.
TOLERANCES = {
    ("off", "step"): (1e-5, 1e-4), ("off", "train"): (1e-5, 1e-3),
    ("fp16", "step"): (1e-3, 1e-3), ("fp16", "train"): (2e-2, 3e-2),
    ("bf16", "step"): (8e-3, 8e-3), ("bf16", "train"): (5e-2, 5e-2),
    # Programs whose floats are all f64, without AMP: torch's float64.
    ("f64", "step"): (1e-9, 1e-9), ("f64", "train"): (1e-9, 1e-9),
}
MARGIN = 1e-2  # closest allowed approach to the f16 overflow threshold
NOISE_GRADIENT = 1e-5  # a parameter's gradient this small is rounding noise


class Case:
    """A program and the ampc flags to run it with."""

    def __init__(self, name, source, flags=(), steps=20, seed=0):
        self.name, self.source, self.flags = name, source, list(flags)
        self.steps, self.seed = steps, seed


def draw_data(program, rng, work):
    """Inputs and parameters for `program` (an ampc_torch.Program) as .npy
    files under work/inputs and work/params."""
    inputs, params = os.path.join(work, "inputs"), os.path.join(work, "params")
    os.makedirs(inputs, exist_ok=True)
    os.makedirs(params, exist_ok=True)
    files = {}
    for a in program.inputs:
        shape, dtype = a["shape"], a["type"]
        if dtype == "f64":
            arr = rng.standard_normal(shape)
        elif dtype in ref.FLOATS:
            arr = rng.standard_normal(shape).astype(np.float32)
        elif dtype == "bool":
            arr = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            arr = rng.integers(0, program.int_range(a), shape).astype(ref.NUMPY_DTYPES[dtype])
        path = os.path.join(inputs, a["name"] + ".npy")
        np.save(path, to_storage(arr, dtype))
        files[a["name"]] = path
    # Buffers too (both sides read them from --params-in when there), so a
    # randomly initialised buffer is the same on both sides.
    for a in program.params + program.buffers:
        init = a["attrs"].get("tg.init", {"kind": "zeros"})
        shape, kind = a["shape"], init["kind"]
        if ref.file_value(a) is not None:
            # An imported model's initializer: the file's values.
            arr = ref.file_value(a).numpy()
        elif kind == "normal":
            arr = rng.normal(init["mean"], init["std"], shape)
        elif kind == "uniform":
            arr = rng.uniform(init["low"], init["high"], shape)
        elif kind == "ones":
            arr = np.ones(shape)
        elif kind == "full":
            arr = np.full(shape, init["value"])
        else:
            arr = np.zeros(shape)
        np.save(os.path.join(params, a["name"] + ".npy"), to_storage(arr, a["type"]))
    return files, params


def to_storage(arr, dtype):
    """A float64/float32 array as the .npy of `dtype` (bf16: bit patterns)."""
    if dtype == "bf16":
        import torch
        t = torch.from_numpy(np.asarray(arr, dtype=np.float32)).to(torch.bfloat16)
        return t.view(torch.int16).numpy().view(np.uint16)
    return np.asarray(arr).astype(ref.NUMPY_DTYPES[dtype])


def from_storage(arr, dtype):
    if dtype == "bf16":
        bits = np.asarray(arr).reshape(-1).astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64).reshape(np.shape(arr))
    return arr.astype(np.float64)


def read_log(path):
    # A graph whose first output is not a scalar has no loss: ampc leaves it
    # out of the line, the reference writes NaN; both compare as NaN.
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    for line in lines:
        if "step" in line and "eval" not in line:
            line.setdefault("loss", float("nan"))
    return lines


def read_dir(path):
    return {f[:-4]: np.load(os.path.join(path, f)) for f in sorted(os.listdir(path))
            if f.endswith(".npy")}


def run_both(ampc, case, work, amp_flags):
    """Runs one case through ampc and the reference. Returns (ampc result,
    reference result, program) with each result {"log", "params",
    "outputs"}, or raises RuntimeError with ampc's message."""
    src = os.path.join(work, "program.tg")
    with open(src, "w") as f:
        f.write(case.source)
    doc = ref.load_program_json(src, ampc)
    program = ref.Program(doc)
    rng = np.random.default_rng(case.seed)
    inputs, params = draw_data(program, rng, work)
    flags = list(case.flags) + list(amp_flags)
    if not program.training and amp_mode(flags) == "fp16" and \
            not any(f.startswith("--loss-scale") for f in flags):
        # One forward + grad pass: compare the gradients themselves (a
        # dynamic scaler's first step at 65536 overflows most of them).
        flags.append("--loss-scale=none")
    common = ["--steps", str(case.steps), "--params-in", params]
    for name, path in inputs.items():
        common += ["--input", "%s=%s" % (name, path)]
    results = {}
    for who in ("ampc", "torch"):
        out = os.path.join(work, who)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        files = ["--log", os.path.join(out, "log.jsonl"),
                 "--params-out", os.path.join(out, "params"),
                 "--outputs-out", os.path.join(out, "outputs")]
        if who == "ampc":
            proc = subprocess.run([ampc, "run", src] + common + files + flags,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError("ampc run failed (exit %d): %s" %
                                   (proc.returncode, proc.stderr.strip()))
        else:
            ap = argparse.ArgumentParser()
            ref.add_run_arguments(ap)
            args = ap.parse_args([src, "--ampc", ampc, "--quiet", "--overflow-margin",
                                  "--grad-stats",
                                  os.path.join(out, "grad_stats.json")] + common + files +
                                 [f for f in flags if ref_accepts(f)])
            ref.run(args, doc)
        results[who] = {"log": read_log(os.path.join(out, "log.jsonl")),
                        "params": read_dir(os.path.join(out, "params")),
                        "outputs": read_dir(os.path.join(out, "outputs"))}
    return results["ampc"], results["torch"], program


def ref_accepts(flag):
    """The flags that mean the same to the reference (which emulates the
    reference policy whatever ampc's --amp-policy is)."""
    return flag.split("=")[0] in ("--amp", "--amp-fp32", "--amp-lower", "--amp-follow") or \
        flag.startswith("--loss-scale")


def precision(program, amp):
    """The tolerance class of a run: its AMP mode, or the lowest float type
    the program itself holds (explicit casts, f16/bf16 inputs, autocast
    blocks), whichever is less precise ("off" < "fp16" < "bf16")."""
    types = {a["type"] for a in program.args}
    regions = set()
    for op in program.ops:
        types.update(r["type"] for r in op["results"])
        # An autocast block computes in its low type whatever --amp is.
        regions.add({"fp16": "f16", "bf16": "bf16"}.get(op["attrs"].get("tg.region"), "f32"))
    floats = types & set(ref.FLOATS)
    if amp == "off" and floats == {"f64"} and regions <= {"f32"}:
        return "f64"  # every float is f64 (AMP never casts f64)
    types |= regions
    level = amp
    if "f16" in types and level == "off":
        level = "fp16"
    if "bf16" in types:
        level = "bf16"
    return level


def amp_mode(flags):
    for f in flags:
        if f.startswith("--amp="):
            return f.split("=", 1)[1]
    return "off"


def tensor_error(a, b, scale=0.0):
    """max |a - b| relative to the larger of max |b| and `scale` (the
    largest magnitude among the program's tensors of the same kind): a
    tensor far smaller than the quantities it is computed from (a gradient
    that cancels, a normalisation of a constant) is known only to within
    their rounding. 0 when equal; non-finite elements must sit at the same
    places with the same values (any NaN matches any NaN)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return math.inf
    fa, fb = np.isfinite(a), np.isfinite(b)
    if (fa != fb).any():
        return math.inf
    na, nb = a[~fa], b[~fb]
    if not ((na == nb) | (np.isnan(na) & np.isnan(nb))).all():
        return math.inf
    if not fa.any():
        return 0.0
    diff = np.abs(a[fa] - b[fb]).max()
    if diff == 0:
        return 0.0
    return diff / max(np.abs(b[fb]).max(), scale, 1e-30)


def finite_max(arr):
    arr = np.asarray(arr, np.float64)
    arr = arr[np.isfinite(arr)]
    return float(np.abs(arr).max()) if arr.size else 0.0


def loss_error(x, y, first):
    """|x - y| relative to |y|, but never to less than a tenth of the first
    step's loss: a loss that has fallen to 1e-5 is known only to within an
    f32 ulp of the terms it is computed from (cross-entropy's log(1 + 1e-5)),
    so below that it is compared absolutely, at the scale it started at."""
    x, y = float(x), float(y)
    if not (math.isfinite(x) and math.isfinite(y)):
        return 0.0 if (math.isnan(x) and math.isnan(y)) or x == y else math.inf
    diff = abs(x - y)
    return 0.0 if diff == 0 else diff / max(abs(y), 0.1 * abs(first), 1e-30)


class Comparison:
    """Every difference between ampc's run and the reference's, as numbers:
    `loss` (worst step), `tensors` {"param w": error, "output 0": error},
    `scaler` (steps whose loss_scale or skipped differ), `skipped` (params
    not compared, with the reason)."""

    def __init__(self, got, want, program, grad_ratio):
        self.loss = 0.0
        self.worst_step = None
        self.scaler = []
        self.tensors = {}
        self.skipped = {}
        self.structure = []
        la, lb = got["log"], want["log"]
        if len(la) != len(lb):
            self.structure.append("%d log records from ampc, %d from torch" % (len(la), len(lb)))
        first = lb[0]["loss"] if lb else 0.0
        self.skips = None
        if lb and "skipped" in lb[0]:
            self.skips = (sum(bool(r["skipped"]) for r in lb), len(lb))
        for ra, rb in zip(la, lb):
            e = loss_error(ra["loss"], rb["loss"], first if math.isfinite(first) else 0.0)
            if e > self.loss:
                self.loss, self.worst_step = e, (ra["step"], ra["loss"], rb["loss"])
            for key in ("loss_scale", "skipped"):
                if (key in ra) != (key in rb) or ra.get(key) != rb.get(key):
                    self.scaler.append("step %d: %s %r vs torch %r" %
                                       (ra["step"], key, ra.get(key), rb.get(key)))
            # A schedule's rate: the same formula on both sides, in f64.
            if ("lr" in ra) != ("lr" in rb) or (
                    "lr" in ra and not math.isclose(ra["lr"], rb["lr"], rel_tol=1e-7)):
                self.scaler.append("step %d: lr %r vs torch %r" %
                                   (ra["step"], ra.get("lr"), rb.get("lr")))
        dtypes = {"params": {p["name"]: p["type"] for p in program.params},
                  "outputs": {"output_%d" % r["index"]: r["type"] for r in program.outputs}}
        for kind in ("params", "outputs"):
            a, b = got[kind], want[kind]
            if sorted(a) != sorted(b):
                self.structure.append("%s: ampc wrote %s, torch %s" % (kind, sorted(a), sorted(b)))
                continue
            scale = max((finite_max(from_storage(b[n], dtypes[kind].get(n, "f32")))
                         for n in b), default=0.0)
            for name in sorted(a):
                label = "%s %s" % (kind[:-1], name)
                if kind == "params" and name in grad_ratio and grad_ratio[name] <= NOISE_GRADIENT:
                    self.skipped[label] = ("its gradient is at most %.1g of the largest "
                                           "(rounding noise)" % grad_ratio[name])
                    continue
                dt = dtypes[kind].get(name, "f32")
                x, y = from_storage(a[name], dt), from_storage(b[name], dt)
                if kind == "outputs" and program.training and y.size == 1:
                    # The last step's loss: compared as a loss.
                    self.tensors[label] = loss_error(x.item(), y.item(), first)
                else:
                    self.tensors[label] = tensor_error(x, y, scale)
                if y.size and not np.isfinite(y).any():
                    self.structure.append("%s: no finite values to compare (an overflow "
                                          "everywhere)" % label)

    def problems(self, tolerance):
        loss_tol, tensor_tol = tolerance
        out = list(self.structure)
        if self.loss > loss_tol:
            step, x, y = self.worst_step
            out.append("step %d: loss %.9g vs torch %.9g (error %.3g > %.3g)" %
                       (step, x, y, self.loss, loss_tol))
        out += self.scaler
        for label, err in self.tensors.items():
            if err > tensor_tol:
                out.append("%s: max |ampc - torch| / max |torch| = %.3g > %.3g" %
                           (label, err, tensor_tol))
        return out

    def summary(self):
        worst = max(self.tensors.items(), key=lambda kv: kv[1], default=("-", 0.0))
        text = "loss %.2g, worst tensor %s %.2g" % (self.loss, worst[0], worst[1])
        if self.skips:
            text += ", skipped %d of %d steps" % self.skips
        return text


def check_case(ampc, case, amp_flags, keep=None):
    """(Comparison, tolerance, f16 margin) of one case."""
    work = tempfile.mkdtemp(prefix="tgdiff-")
    try:
        got, want, program = run_both(ampc, case, work, amp_flags)
        ratio_path = os.path.join(work, "torch", "grad_stats.json")
        grad_ratio = {}
        if os.path.exists(ratio_path):
            with open(ratio_path) as f:
                grad_ratio = json.load(f)
        cmp = Comparison(got, want, program, grad_ratio)
        margins = [r.get("f16_margin") for r in want["log"]]
        margin = min((m for m in margins if m is not None), default=math.inf)
        tol = TOLERANCES[(precision(program, amp_mode(list(case.flags) + list(amp_flags))),
                          "train" if program.training else "step")]
        return cmp, tol, margin
    finally:
        if keep:
            shutil.copytree(work, keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------
# Single-op programs: every op of the language, forward + grad and trained.
# ---------------------------------------------------------------------------

# name: (inputs [(name, type, shape)], expression). Elementwise ops of
# `ampc --list-ops` that have no case here get one of their own (all_ops).
OPS = {
    "matmul": ([("a", "f32", [4, 6]), ("b", "f32", [6, 5])], "matmul(a, b)"),
    "matmul_batched": ([("a", "f32", [2, 4, 6]), ("b", "f32", [6, 5])], "matmul(a, b)"),
    "linear": ([("x", "f32", [4, 6]), ("w", "f32", [5, 6]), ("b", "f32", [5])], "linear(x, w, b)"),
    "linear_nobias": ([("x", "f32", [2, 3, 6]), ("w", "f32", [5, 6])], "linear(x, w)"),
    "conv2d": ([("x", "f32", [2, 3, 6, 6]), ("w", "f32", [4, 3, 3, 3]), ("b", "f32", [4])],
               "conv2d(x, w, b, padding=1)"),
    "conv2d_strided": ([("x", "f32", [1, 4, 7, 7]), ("w", "f32", [4, 2, 3, 3])],
                       "conv2d(x, w, stride=2, dilation=1, groups=2)"),
    "add": ([("a", "f32", [4, 6]), ("b", "f32", [6])], "a + b"),
    "sub": ([("a", "f32", [4, 6]), ("b", "f32", [4, 1])], "a - b"),
    "mul": ([("a", "f32", [4, 6]), ("b", "f32", [6])], "a * b"),
    "div": ([("a", "f32", [4, 6]), ("b", "f32", [4, 6])], "a / (b * b + 1.0)"),
    "maximum": ([("a", "f32", [4, 6]), ("b", "f32", [4, 6])], "maximum(a, b)"),
    "minimum": ([("a", "f32", [4, 6]), ("b", "f32", [6])], "minimum(a, b)"),
    "pow": ([("a", "f32", [4, 6]), ("b", "f32", [4, 6])], "pow(a * a + 0.5, b)"),
    "neg": ([("x", "f32", [4, 6])], "-x"),
    "abs": ([("x", "f32", [4, 6])], "abs(x)"),
    "exp": ([("x", "f32", [4, 6])], "exp(x)"),
    "log": ([("x", "f32", [4, 6])], "log(x * x + 0.5)"),
    "sqrt": ([("x", "f32", [4, 6])], "sqrt(x * x + 0.5)"),
    "rsqrt": ([("x", "f32", [4, 6])], "rsqrt(x * x + 0.5)"),
    "relu": ([("x", "f32", [4, 6])], "relu(x)"),
    "gelu": ([("x", "f32", [4, 6])], "gelu(x)"),
    "gelu_tanh": ([("x", "f32", [4, 6])], 'gelu(x, approximate="tanh")'),
    "silu": ([("x", "f32", [4, 6])], "silu(x)"),
    "sigmoid": ([("x", "f32", [4, 6])], "sigmoid(x)"),
    "tanh": ([("x", "f32", [4, 6])], "tanh(x)"),
    "sum": ([("x", "f32", [4, 6])], "sum(x, dims=[1])"),
    "sum_all": ([("x", "f32", [3, 4, 5])], "sum(x)"),
    "mean": ([("x", "f32", [4, 6])], "mean(x, dims=[0], keepdim=true)"),
    "max": ([("x", "f32", [4, 6])], "max(x, dims=[1])"),
    "softmax": ([("x", "f32", [4, 6])], "softmax(x)"),
    "log_softmax": ([("x", "f32", [4, 6])], "log_softmax(x, dim=0)"),
    "layer_norm": ([("x", "f32", [4, 6]), ("w", "f32", [6]), ("b", "f32", [6])],
                   "layer_norm(x, w, b)"),
    "rms_norm": ([("x", "f32", [4, 6]), ("w", "f32", [6])], "rms_norm(x, w, eps=1e-5)"),
    "max_pool2d": ([("x", "f32", [2, 2, 6, 6])], "max_pool2d(x, kernel=[2, 2])"),
    "max_pool2d_pad": ([("x", "f32", [1, 2, 5, 5])],
                       "max_pool2d(x, kernel=[3, 3], stride=[2, 2], padding=[1, 1])"),
    "avg_pool2d": ([("x", "f32", [2, 2, 6, 6])], "avg_pool2d(x, kernel=[2, 2])"),
    "avg_pool2d_pad": ([("x", "f32", [1, 2, 5, 5])],
                       "avg_pool2d(x, kernel=[3, 3], stride=[1, 1], padding=[1, 1])"),
    "reshape": ([("x", "f32", [4, 6])], "reshape(x, shape=[3, -1])"),
    "transpose": ([("x", "f32", [4, 6])], "transpose(x)"),
    "transpose_perm": ([("x", "f32", [2, 3, 4])], "transpose(x, perm=[2, 0, 1])"),
    "concat": ([("a", "f32", [4, 6]), ("b", "f32", [2, 6])], "concat(a, b, dim=0)"),
    "slice": ([("x", "f32", [4, 6])], "slice(x, dim=1, start=1, end=5)"),
    "embedding": ([("t", "f32", [7, 5]), ("ids", "i32", [4, 3])], "embedding(t, ids)"),
    "cross_entropy": ([("z", "f32", [6, 5]), ("labels", "i32", [6])], "cross_entropy(z, labels)"),
    "mse_loss": ([("a", "f32", [4, 6]), ("b", "f32", [4, 6])], "mse_loss(a, b)"),
    "cast": ([("x", "f32", [4, 6])], "cast(cast(x, to=f16), to=f32)"),
}

# Training jobs (docs/jobs.md): comparisons give bool, so the case casts the mask
# back to f32 and multiplies, which differentiates through the float operand
# (and compares the mask through the forward result).
for _cmp in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    OPS[_cmp] = ([("a", "f32", [4, 6]), ("b", "f32", [6])],
                 "cast(%s(a, b), to=f32) * a" % _cmp)
# Random floats are never equal: compare with a value equal in about half.
OPS["equal"] = ([("a", "f32", [4, 6]), ("b", "f32", [6])],
                "cast(equal(a, maximum(a, b)), to=f32) * a")
# Integer and mixed operands (a label mask, an int/float comparison).
OPS["equal_int"] = ([("x", "f32", [6, 4]), ("labels", "i32", [6])],
                    "x * cast(reshape(equal(labels, 2), shape=[6, 1]), to=f32)")
OPS["less_mixed"] = ([("x", "f32", [6]), ("labels", "i32", [6])],
                     "x * cast(less(x, labels), to=f32)")
OPS["where"] = ([("a", "f32", [4, 6]), ("b", "f32", [6])], "where(greater(a, b), a, b * 2.0)")
OPS["where_scalar"] = ([("x", "f32", [4, 6])], "where(less(x, 0.0), 0.0, x)")
OPS["binary_cross_entropy"] = ([("a", "f32", [4, 6]), ("t", "f32", [4, 6])],
                               "binary_cross_entropy(sigmoid(a), sigmoid(t))")
# Probabilities near 0 and 1 (sigmoid of large logits), hard 0/1 targets.
OPS["binary_cross_entropy_edges"] = ([("a", "f32", [4, 6]), ("t", "f32", [4, 6])],
                                     "binary_cross_entropy(sigmoid(a * 8.0), "
                                     "cast(greater(t, 0.0), to=f32))")
# Read in a 16-bit type, those probabilities round to exactly 0 or 1, where
# the loss sits on its -100 clamp and a one-ulp difference in sigmoid moves
# it by 100/N: the case is compared with f32 operands only (also under AMP).
F32_OPERANDS_ONLY = {"binary_cross_entropy_edges"}
OPS["binary_cross_entropy_with_logits"] = (
    [("a", "f32", [4, 6]), ("t", "f32", [4, 6])],
    "binary_cross_entropy_with_logits(a * 4.0, sigmoid(t))")
# argmax gives i32: the case weighs a float reduction by the index.
OPS["argmax"] = ([("x", "f32", [4, 6])],
                 "sum(x, dims=[1]) * cast(argmax(x), to=f32)")
OPS["argmax_keepdim"] = ([("x", "f32", [4, 6])],
                         "x * cast(argmax(x, dim=0, keepdim=true), to=f32)")
OPS["cast_int"] = ([("x", "f32", [4, 6])],
                   "x * cast(cast(x * 3.0, to=i32), to=f32)")
OPS["cast_bool"] = ([("x", "f32", [4, 6])], "x * cast(cast(relu(x), to=bool), to=f32)")
# The matrix products: `@` chains, mm, bmm, mv, chain_matmul (`matmul-ops`;
# test/Reference/matmul-ops.test). Odd sizes on purpose.
MATMUL_OPS = {
    "matmul_at": ([("a", "f32", [4, 6]), ("b", "f32", [6, 5])], "a @ b"),
    "matmul_at_chain": ([("a", "f32", [3, 4]), ("b", "f32", [4, 5]), ("c", "f32", [5])],
                        "a @ b @ c * 2.0"),
    "mm": ([("a", "f32", [5, 7]), ("b", "f32", [7, 3])], "mm(a, b)"),
    "bmm": ([("a", "f32", [3, 4, 5]), ("b", "f32", [3, 5, 2])], "bmm(a, b)"),
    "mv": ([("a", "f32", [5, 7]), ("v", "f32", [7])], "mv(a, v)"),
    "chain_matmul": ([("a", "f32", [3, 4]), ("b", "f32", [4, 5]), ("c", "f32", [5, 2])],
                     "chain_matmul(a, b, c)"),
}
# The convolutions beyond conv2d (`conv-ops`; test/Reference/conv-ops.test).
CONV_OPS = {
    "conv1d": ([("x", "f32", [2, 3, 9]), ("w", "f32", [4, 3, 3]), ("b", "f32", [4])],
               "conv1d(x, w, b, padding=1)"),
    "conv1d_strided": ([("x", "f32", [1, 4, 11]), ("w", "f32", [6, 2, 3])],
                       "conv1d(x, w, stride=2, padding=2, dilation=2, groups=2)"),
    "conv_transpose2d": ([("x", "f32", [2, 4, 3, 4]), ("w", "f32", [4, 3, 3, 3]),
                          ("b", "f32", [3])], "conv_transpose2d(x, w, b, padding=1)"),
    "conv_transpose2d_strided": (
        [("x", "f32", [1, 4, 3, 5]), ("w", "f32", [4, 3, 3, 2])],
        "conv_transpose2d(x, w, stride=[2, 3], padding=[1, 0], output_padding=[1, 2], "
        "groups=2, dilation=[1, 2])"),
}
# The unary math functions log1p, expm1, reciprocal (`math-ops`;
# test/Reference/math-ops.test).
MATH_OPS = {
    "log1p": ([("x", "f32", [4, 6])], "log1p(x * x)"),
    "log1p_neg": ([("x", "f32", [5, 3])], "log1p(0.5 * tanh(x))"),
    "expm1": ([("x", "f32", [4, 6])], "expm1(x)"),
    "reciprocal": ([("x", "f32", [4, 6])], "reciprocal(x * x + 0.5)"),
}
# The commands that run one family's cases alone.
FAMILY_OPS = {"matmul-ops": MATMUL_OPS, "conv-ops": CONV_OPS, "math-ops": MATH_OPS}


def all_ops(ampc):
    """OPS, plus a case for every elementwise op of the dialect it lacks: the
    op with its default keyword attributes on a [4, 6] input (and a [6]
    second operand for a binary op)."""
    cases = dict(OPS)
    for record in ref.load_op_list(ampc).values():
        name, kind = record["language"], record["elementwise"]
        if not name or not kind or any(name in f for f in FAMILY_OPS.values()) or \
                any(k == name or k.startswith(name + "_") for k in cases):
            continue
        if kind == "unary":
            cases[name] = ([("x", "f32", [4, 6])], "%s(x)" % name)
        else:
            cases[name] = ([("a", "f32", [4, 6]), ("b", "f32", [6])], "%s(a, b)" % name)
    return cases


def type_text(dtype, shape):
    return "%s[%s]" % (dtype, ", ".join(map(str, shape)))


def op_programs(name, low=None, ops=None):
    """(forward+grad program, training program) of one op. With `low`
    (f16 or bf16), every float operand is first cast to it, so the op reads
    low-precision values (and its class decides what it computes in)."""
    inputs, expr = (ops or OPS)[name]
    floats = [n for n, t, _ in inputs if t in ref.FLOATS]
    body = ""
    if low:
        body = "".join("  %s_l = cast(%s, to=%s)\n" % (n, n, low) for n in floats)
        expr = re.sub(r"\b(%s)\b" % "|".join(floats), r"\1_l", expr)
    scalar_loss = name in ("cross_entropy", "mse_loss", "sum_all") or \
        name.startswith("binary_cross_entropy")
    loss = "y" if scalar_loss else "mean(y * y)"
    tag = name + ("_" + low if low else "")
    sig = ", ".join("%s: %s" % (n, type_text(t, s)) for n, t, s in inputs)
    grads = ", ".join("g_" + n for n in floats)
    fwd = ("graph %s(%s) {\n%s  y = %s\n  loss = %s\n  %s = grad(loss, %s)\n"
           "  return loss, y, %s\n}\n" % (tag, sig, body, expr, loss, grads, ", ".join(floats),
                                          grads))
    # The training step: the float operands become parameters.
    ins = [(n, t, s) for n, t, s in inputs if t not in ref.FLOATS]
    params = "".join("  param %s: %s = normal(0.0, 1.0)\n" % (n, type_text(t, s))
                     for n, t, s in inputs if t in ref.FLOATS)
    opt = "adamw(lr = 0.01)" if len(name) % 2 else "sgd(lr = 0.05, momentum = 0.9)"
    train = ("graph %s_train(%s) {\n%s%s  y = %s\n  loss = %s\n"
             "  minimize loss with %s\n  return loss\n}\n" % (
                 tag, ", ".join("%s: %s" % (n, type_text(t, s)) for n, t, s in ins),
                 params, body, expr, loss, opt))
    return fwd, train


def op_cases(ampc, low=None, ops=None, low_only=False):
    """Every op alone (forward + grad once, and 20 training steps); with
    `low`, also every op reading operands cast to that type (`low_only`:
    only those). `ops`: the cases (default: every op of the first set,
    all_ops)."""
    cases = []
    ops = ops or all_ops(ampc)
    for variant in ([low] if low and low_only else [None, low] if low else [None]):
        for name in ops:
            if variant and name in F32_OPERANDS_ONLY:
                continue
            fwd, train = op_programs(name, variant, ops)
            tag = name + ("_" + variant if variant else "")
            cases.append(Case(tag, fwd, steps=1))
            cases.append(Case(tag + "_train", train, steps=20))
    return cases


def example_cases(src_root):
    cases = []
    for name in ("mlp", "cnn", "transformer"):
        with open(os.path.join(src_root, "examples", name + ".tg")) as f:
            cases.append(Case(name, f.read(), steps=20))
    return cases


# ---------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------

def report(cases, ampc, amp_flags, verbose=False):
    failed = ambiguous = 0
    for case in cases:
        tag = " ".join(list(case.flags) + list(amp_flags)) or "--amp=off"
        try:
            cmp, tol, margin = check_case(ampc, case, amp_flags)
            problems = cmp.problems(tol)
        except (RuntimeError, ref.InputError, ref.UsageError) as e:
            cmp, problems, margin = None, [str(e)], math.inf
        except Exception as e:  # the reference itself failed: report, go on
            cmp, problems, margin = None, ["crash: %s: %s" % (type(e).__name__, e)], math.inf
        if problems and margin < MARGIN:
            ambiguous += 1
            print("AMBIGUOUS %s [%s]: a value came within %.2g%% of the f16 overflow "
                  "threshold" % (case.name, tag, 100 * margin))
        elif problems:
            failed += 1
            print("FAIL %s [%s]" % (case.name, tag))
            for p in problems[:10]:
                print("  " + p)
        elif verbose:
            print("ok %s [%s]: %s" % (case.name, tag, cmp.summary()))
        if cmp is not None and verbose:
            for label, why in cmp.skipped.items():
                print("  not compared: %s: %s" % (label, why))
    print("%d programs, %d disagreements, %d ambiguous" % (len(cases), failed, ambiguous))
    return failed == 0 and ambiguous == 0

# Reductions, norms and losses of PyTorch's fp32 autocast list (the
# `reduce-loss-ops` command, test/Ops/reduce-loss-ops.test). Odd sizes,
# negative dims, every reduction; rows of zeros for the norms' gradient at 0.
REDUCE_LOSS_OPS = {
    "logsumexp": ([("x", "f32", [5, 7])], "logsumexp(x, dims=[1])"),
    "logsumexp_keepdim": ([("x", "f32", [3, 4, 5])],
                          "logsumexp(x * 30.0, dims=[-1, 0], keepdim=true)"),
    "logsumexp_all": ([("x", "f32", [3, 5])], "logsumexp(x)"),
    "cumsum": ([("x", "f32", [5, 7])], "cumsum(x, dim=1)"),
    "cumsum_neg": ([("x", "f32", [3, 4, 5])], "cumsum(x, dim=-3)"),
    "norm": ([("x", "f32", [5, 7])], "norm(x, dims=[1])"),
    "norm_p1": ([("x", "f32", [3, 4, 5])], "norm(x, p=1.0, dims=[0], keepdim=true)"),
    "norm_inf": ([("x", "f32", [5, 7])], "norm(x, p=inf, dims=[-1])"),
    "norm_p3": ([("x", "f32", [3, 5])], "norm(x, p=3.0)"),
    "norm_zero": ([("x", "f32", [3, 4])],
                  "sum(norm(concat(x, x * 0.0, dim=0), dims=[1]))"),
    "norm_p1_zero": ([("x", "f32", [3, 4])],
                     "sum(norm(concat(x, x * 0.0, dim=0), p=1.0, dims=[1]))"),
    "norm_inf_zero": ([("x", "f32", [3, 4])],
                      "sum(norm(concat(x, x * 0.0, dim=0), p=inf, dims=[1]))"),
    "group_norm": ([("x", "f32", [2, 6, 3, 5]), ("w", "f32", [6]), ("b", "f32", [6])],
                   "group_norm(x, w, b, groups=3)"),
    "group_norm_1d": ([("x", "f32", [3, 4, 7]), ("w", "f32", [4]), ("b", "f32", [4])],
                      "group_norm(x * 3.0, w, b, groups=2, eps=0.001)"),
    "group_norm_2d": ([("x", "f32", [4, 6]), ("w", "f32", [6]), ("b", "f32", [6])],
                      "group_norm(x, w, b, groups=2)"),
    "cosine_similarity": ([("a", "f32", [5, 7]), ("b", "f32", [5, 7])],
                          "cosine_similarity(a, b)"),
    "cosine_similarity_bcast": ([("a", "f32", [3, 4, 5]), ("b", "f32", [4, 5])],
                                "cosine_similarity(a, b, dim=-1)"),
    "cosine_similarity_eps": ([("a", "f32", [3, 4]), ("b", "f32", [3, 4])],
                              "cosine_similarity(a * 0.01, b, dim=0, eps=0.1)"),
    "l1_loss": ([("a", "f32", [5, 7]), ("b", "f32", [5, 7])], "l1_loss(a, b)"),
    "l1_loss_sum": ([("a", "f32", [3, 4, 5]), ("b", "f32", [3, 4, 5])],
                    "l1_loss(a, b, reduction=\"sum\")"),
    "l1_loss_none": ([("a", "f32", [4, 3]), ("b", "f32", [4, 3])],
                     "l1_loss(a, b, reduction=\"none\")"),
    "smooth_l1_loss": ([("a", "f32", [5, 7]), ("b", "f32", [5, 7])],
                       "smooth_l1_loss(a * 2.0, b)"),
    "smooth_l1_loss_beta": ([("a", "f32", [3, 5]), ("b", "f32", [3, 5])],
                            "smooth_l1_loss(a, b, beta=0.5, reduction=\"sum\")"),
    "smooth_l1_loss_l1": ([("a", "f32", [4, 3]), ("b", "f32", [4, 3])],
                          "smooth_l1_loss(a, b, beta=0.0, reduction=\"none\")"),
    "kl_div": ([("a", "f32", [5, 7]), ("b", "f32", [5, 7])],
               "kl_div(log_softmax(a, dim=1), softmax(b, dim=1))"),
    "kl_div_mean": ([("a", "f32", [3, 4, 5]), ("b", "f32", [3, 4, 5])],
                    "kl_div(log_softmax(a), softmax(b), reduction=\"mean\")"),
    "kl_div_log_target": ([("a", "f32", [4, 6]), ("b", "f32", [4, 6])],
                          "kl_div(log_softmax(a), log_softmax(b), reduction=\"sum\", "
                          "log_target=true)"),
    "kl_div_none": ([("a", "f32", [4, 3]), ("b", "f32", [4, 3])],
                    "kl_div(log_softmax(a), softmax(b), reduction=\"none\")"),
    "nll_loss": ([("z", "f32", [7, 5]), ("labels", "i32", [7])],
                 "nll_loss(log_softmax(z), labels)"),
    "nll_loss_sum": ([("z", "f32", [6, 4]), ("labels", "i64", [6])],
                     "nll_loss(log_softmax(z), labels, reduction=\"sum\")"),
    "nll_loss_ignore": ([("z", "f32", [9, 3]), ("labels", "i32", [9])],
                        "nll_loss(log_softmax(z), labels, ignore_index=1)"),
    "nll_loss_none": ([("z", "f32", [5, 4]), ("labels", "i32", [5])],
                      "nll_loss(log_softmax(z), labels, ignore_index=0, reduction=\"none\")"),
}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tgdiff.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ampc", help="the ampc binary")
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check")
    c.add_argument("programs", nargs="+")
    c.add_argument("--steps", type=int, default=20)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--keep", help="copy the work directory (data, both outputs) here")
    sub.add_parser("ops")
    for family in FAMILY_OPS:
        sub.add_parser(family)
    cf = sub.add_parser("cases")
    cf.add_argument("file")
    sub.add_parser("reduce-loss-ops")
    e = sub.add_parser("examples")
    e.add_argument("--steps", type=int, default=20)
    f = sub.add_parser("fuzz")
    f.add_argument("--count", type=int, default=100)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--save", help="write each minimal reproducer here")
    args, extra = ap.parse_known_args(argv)
    bad = [x for x in extra if not x.startswith("--")]
    if bad:
        ap.error("unrecognized arguments: %s" % " ".join(bad))
    ampc = ref.find_ampc(args.ampc)
    here = os.path.dirname(os.path.abspath(__file__))
    src_root = os.path.normpath(os.path.join(here, "..", ".."))
    if args.command == "check":
        cases = []
        for path in args.programs:
            with open(path) as fh:
                cases.append(Case(os.path.basename(path), fh.read(), steps=args.steps,
                                  seed=args.seed))
        if args.keep and len(cases) == 1:
            cmp, tol, _ = check_case(ampc, cases[0], extra, keep=args.keep)
            problems = cmp.problems(tol)
            print("\n".join(problems) or "agree: " + cmp.summary())
            return 1 if problems else 0
        return 0 if report(cases, ampc, extra, args.verbose) else 1
    if args.command == "ops":
        low = {"fp16": "f16", "bf16": "bf16"}.get(amp_mode(extra))
        return 0 if report(op_cases(ampc, low), ampc, extra, args.verbose) else 1
    if args.command in FAMILY_OPS:
        low = {"fp16": "f16", "bf16": "bf16"}.get(amp_mode(extra))
        return 0 if report(op_cases(ampc, low, FAMILY_OPS[args.command]), ampc, extra,
                           args.verbose) else 1
    if args.command == "cases":
        low = {"fp16": "f16", "bf16": "bf16"}.get(amp_mode(extra))
        scope = {}
        with open(args.file) as fh:
            exec(compile(fh.read(), args.file, "exec"), scope)
        return 0 if report(op_cases(ampc, low, scope["CASES"]), ampc, extra,
                           args.verbose) else 1
    if args.command == "reduce-loss-ops":
        low = {"fp16": "f16", "bf16": "bf16"}.get(amp_mode(extra))
        # Under AMP only the cases reading low-precision operands: with f32
        # operands these fp32-class ops compute what they do without AMP.
        return 0 if report(op_cases(ampc, low, REDUCE_LOSS_OPS, low_only=True), ampc,
                           extra, args.verbose) else 1
    if args.command == "examples":
        cases = example_cases(src_root)
        for cs in cases:
            cs.steps = args.steps
        return 0 if report(cases, ampc, extra, args.verbose) else 1
    import tggen
    return tggen.fuzz(ampc, args.count, args.seed, extra, args.save, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
