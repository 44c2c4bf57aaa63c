#!/usr/bin/env python3
"""ampc-torch: PyTorch as the reference for ampc programs.

Runs a `.tg` training or inference step with PyTorch eager ops, autograd and
torch.optim (SGD, AdamW), from the same parameters and inputs as `ampc run`,
and writes the same outputs (a JSONL log, parameters and outputs as .npy).
The program comes from `ampc PROGRAM --emit=json --pipeline=false` (the
program as written; docs/json.md), never from a second parser.

  ampc_torch.py run PROGRAM.tg|PROGRAM.json [--steps N] [--params-in DIR]
      [--input NAME=FILE.npy]... [--log FILE.jsonl] [--params-out DIR]
      [--outputs-out DIR] [--amp=off|fp16|bf16 --amp-policy=reference]
      [--loss-scale=...] [--threads N]
      [--data NAME=FILE.npy]... [--epochs E] [--shuffle=true|false]
      [--torch-autocast=off|bf16|fp16]

--data/--epochs/--shuffle mean what they mean for `ampc run` (docs/jobs.md):
each step takes the next batch of the epoch's order, which with shuffling is
ampc's permutation of (seed, epoch) (epoch_order below), so both train on the
same data in the same order.

The ops, their AMP classes and the PyTorch function of each come from
`ampc --list-ops` (the op records of the dialect); only the ops whose meaning
needs code have a rule here (OPS).

With --amp=fp16|bf16 it emulates ampc's reference policy (docs/amp.md:
torch.autocast's op classes, with `mean` in f32) on the CPU: every value is
held in f32 and rounded to its autocast type with torch's round-to-nearest-
even conversions, so a low-precision GEMM is its inputs rounded to low,
widened exactly, multiplied with f32 accumulation and its result rounded
once. Gradients get the dtype autograd gives them under autocast: the
gradient flowing into a low-precision value is rounded to that type (each
use's contribution, and their sum). Loss scaling follows PyTorch's
GradScaler (seed = scale, one unscale by the f32 reciprocal, skip on inf or
NaN, amp.md's update with optional hysteresis). docs/pytorch.md has the
details and the deliberate differences.

--torch-autocast=bf16 is not an emulation but what a PyTorch user gets: the
step runs in eager mode under real `torch.autocast("cpu", dtype=
torch.bfloat16)`, values in the dtype PyTorch gives them (bf16 out of the
GEMMs), parameters and the optimizer in f32, backward outside the region. It
is for speed comparisons (bench/torch/side_by_side.py), not a bit-level
reference. PyTorch 1.13's CPU autocast lowers only matmul, mm, linear,
addmm, bmm, baddbmm, addbmm and conv1d/2d/3d (not conv_transpose*, mv,
addmv, addr, prelu) and its CPU fp32 list holds the losses (cross_entropy,
nll_loss, mse_loss, l1/smooth_l1, kl_div, binary_cross_entropy*), but not
layer_norm or group_norm (which then fail on a bf16 input with f32 weights),
softmax, log_softmax, sums, exp/log/pow or the other norms: those would
follow their bf16 input. As CUDA autocast would, every op of ampc's `fp32`
class (CUDA autocast's fp32 list, with mean, rms_norm and batch_norm;
`ampc --list-ops`) therefore gets its float operands cast to f32 and runs
outside autocast (Runner.autocast_op). PyTorch 1.13 refuses float16 on the
CPU ("AutocastCPU only support Bfloat16"): --torch-autocast=fp16 is an error
there, and with a PyTorch that takes it, f16 gets dynamic loss scaling as
with --amp=fp16. It needs --amp=off (it replaces the emulation).
"""

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ampc_random  # noqa: E402
import tgops  # noqa: E402

# f64 computes in float64 (torch's own f64 arithmetic); the others in f32,
# rounded to their type.
FLOATS = ("f32", "f16", "bf16", "f64")
LOW_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
NUMPY_DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16,
                "f64": np.float64, "i32": np.int32, "i64": np.int64, "i16": np.int16,
                "i8": np.int8, "u8": np.uint8, "bool": np.bool_}
# f32 values at or beyond this magnitude round to inf in f16 (RNE: 65504 is
# the largest finite f16; the midpoint to the next binade rounds up).
F16_OVERFLOW = 65520.0


class UsageError(Exception):
    """A bad command line (exit code 2)."""


class InputError(Exception):
    """A bad program or data file (exit code 1)."""


def schedule_factor(s, lr, t):
    """The LambdaLR factor of ampc's learning-rate schedules (docs/optimizer.md)
    after t applied updates, written from the formulas."""
    w, T, m = s["warmup_steps"], s["total_steps"], s["min_lr"]
    if t < w:
        return (t + 1) / w
    if s["kind"] == "linear":
        return (m + (lr - m) * max(0.0, (T - t) / (T - w))) / lr
    if s["kind"] == "cosine":
        return (m + (lr - m) * 0.5 * (1 + math.cos(math.pi * min(1.0, (t - w) / (T - w))))) / lr
    if s["kind"] == "step":
        return s["gamma"] ** math.floor((t - w) / s["step_size"])
    return 1.0


def as_float(x, dtype):
    """A float tensor as the reference holds `dtype`: float64 for f64,
    float32 for the others."""
    return x.double() if dtype == "f64" else x.float()


def round_to(x, dtype):
    """x (f32) rounded to `dtype` and widened back exactly."""
    if dtype not in LOW_DTYPES:
        return x
    return x.to(LOW_DTYPES[dtype]).to(torch.float32)


class OverflowMonitor:
    """How close a step came to deciding f16 overflow the other way. A step
    is skipped when some value rounded to f16 reaches the overflow threshold,
    so what decides it is the largest finite magnitude about to be rounded to
    f16, over every rounding of the step, forward and backward, relative to
    65520 (values already inf or NaN were decided upstream). The margin is
    | largest / 65520 - 1 |: a skip sequence is only a meaningful comparison
    when it stays well above the relative difference between two
    implementations."""

    def __init__(self):
        self.largest = 0.0

    def reset(self):
        self.largest = 0.0

    def observe(self, t):
        a = t.detach().abs()
        a = a[torch.isfinite(a)]
        if a.numel():
            self.largest = max(self.largest, float(a.max()) / F16_OVERFLOW)

    def margin(self):
        return abs(self.largest - 1.0) if self.largest > 0 else None


class _Round(torch.autograd.Function):
    """Rounds to a dtype; the gradient is rounded to the same dtype (the
    gradient of a tensor has the tensor's dtype)."""

    @staticmethod
    def forward(ctx, x, dtype, monitor):
        ctx.dtype = dtype
        ctx.monitor = monitor
        if monitor is not None and dtype == "f16":
            monitor.observe(x)
        return round_to(x, dtype)

    @staticmethod
    def backward(ctx, g):
        if ctx.monitor is not None and ctx.dtype == "f16":
            ctx.monitor.observe(g)
        return round_to(g, ctx.dtype), None, None


def quantize(x, dtype, monitor):
    if dtype not in LOW_DTYPES or not torch.is_floating_point(x):
        return x
    if x.requires_grad:
        return _Round.apply(x, dtype, monitor)
    if monitor is not None and dtype == "f16":
        monitor.observe(x)
    return round_to(x, dtype)


# ---------------------------------------------------------------------------
# The program (the JSON of `ampc --emit=json --pipeline=false`).
# ---------------------------------------------------------------------------

def find_ampc(explicit=None):
    exe = tgops.find_ampc(explicit)
    if exe is None:
        raise UsageError("cannot find ampc: pass --ampc PATH or set $AMPC")
    return exe


def load_op_list(ampc=None):
    """The op records of the dialect, `ampc --list-ops`: the ops, their
    operands and keyword attributes, AMP classes and PyTorch equivalents.
    {"tg.NAME": record}."""
    try:
        return tgops.load_op_list(find_ampc(ampc))
    except RuntimeError as e:
        raise InputError(str(e))


def default_classes(op_list):
    """The default AMP class of every op, by name without `tg.`."""
    return {name[3:]: op["amp_class"] for name, op in op_list.items()}


def load_program_json(path, ampc=None):
    """The JSON document of a .json file, or of `ampc PATH --emit=json
    --pipeline=false` for a .tg or .mlir file."""
    if path.endswith(".json"):
        try:
            with open(path) as f:
                return json.load(f)
        except OSError as e:
            raise InputError("cannot read '%s': %s" % (path, e.strerror))
        except ValueError as e:
            raise InputError("'%s' is not JSON: %s" % (path, e))
    proc = subprocess.run([find_ampc(ampc), path, "--emit=json", "--pipeline=false"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError("ampc could not compile '%s' (exit %d):\n%s" %
                         (path, proc.returncode, proc.stderr.rstrip()))
    return json.loads(proc.stdout)


def file_value(arg):
    """The initial value an argument carries (`tg.init_value`: an imported
    ONNX initializer) as an f32 tensor, or None."""
    v = arg["attrs"].get("tg.init_value")
    if v is None:
        return None
    if "splat" in v:
        return torch.full(v["shape"], float(v["splat"]))
    return torch.tensor(v["values"], dtype=torch.float32).reshape(v["shape"])


class Program:
    """One graph of the document."""

    def __init__(self, doc, graph=None):
        if doc.get("format") != "ampc-graph" or doc.get("version") != 1:
            raise InputError("not an ampc-graph version 1 document")
        graphs = doc["graphs"]
        if not graphs:
            raise InputError("the program has no graph")
        if graph is None:
            self.graph = graphs[0]
        else:
            match = [g for g in graphs if g["name"] == graph]
            if not match:
                raise UsageError("no graph '%s' (graphs: %s)" %
                                 (graph, ", ".join(g["name"] for g in graphs)))
            self.graph = match[0]
        g = self.graph
        self.name = g["name"]
        self.args = g["args"]
        self.ops = g["ops"]
        self.results = g["results"]
        self.inputs = [a for a in self.args if a.get("role") == "input"]
        self.params = [a for a in self.args if a.get("role") == "param"]
        # Non-trainable state (`buffer` declarations: torch's registered
        # buffers) and the new values a training step gives them.
        self.buffers = [a for a in self.args if a.get("role") == "buffer"]
        self.buffer_outs = [r for r in self.results if r.get("role") == "buffer_out"]
        self.outputs = sorted((r for r in self.results if r.get("role") == "output"),
                              key=lambda r: r["index"])
        self.minimize = next((op for op in self.ops if op["op"] == "tg.minimize"), None)
        self.training = self.minimize is not None
        self.has_grad = any(op["op"] == "tg.grad" for op in self.ops)
        self.producer = {}
        for op in self.ops:
            for r in op["results"]:
                self.producer[r["value"]] = op
        self.type_of = {a["value"]: a for a in self.args}
        for op in self.ops:
            for r in op["results"]:
                self.type_of[r["value"]] = r
        # Arguments we differentiate with respect to (grad and minimize).
        self.wrt = set()
        for op in self.ops:
            if op["op"] in ("tg.grad", "tg.minimize"):
                self.wrt.update(op["operands"][1:])

    def reaches(self, value, targets):
        """The values of `targets` that `value` depends on."""
        seen, stack, found = set(), [value], set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in targets:
                found.add(v)
            op = self.producer.get(v)
            if op is not None:
                stack.extend(op["operands"])
        return found

    def has_fp16_region(self):
        """Whether an op is in an `autocast(fp16)` block: such a training step
        gets the dynamic loss scaler by default, as under --amp=fp16."""
        return any(op["attrs"].get("tg.region") == "fp16" for op in self.ops)

    def has_gradients(self):
        """Whether the step computes any gradient: a `minimize` whose loss
        reaches a parameter, or a `grad` whose loss reaches what it
        differentiates (ampc adds no scaler to a step without one)."""
        for op in self.ops:
            if op["op"] in ("tg.minimize", "tg.grad") and \
                    self.reaches(op["operands"][0], set(op["operands"][1:])):
                return True
        return False

    def int_range(self, arg):
        """The exclusive bound of valid values of an integer input, from its
        consumer (cross_entropy labels < C, embedding ids < V), else 2."""
        for op in self.ops:
            ops = op["operands"]
            if op["op"] == "tg.cross_entropy" and ops[1] == arg["value"]:
                return self.type_of[ops[0]]["shape"][1]
            if op["op"] == "tg.embedding" and ops[1] == arg["value"]:
                return self.type_of[ops[0]]["shape"][0]
        return 2


# ---------------------------------------------------------------------------
# Ops, computed on f32 storage (integers on int64).
# ---------------------------------------------------------------------------

def _reduce(fn):
    def run(x, a):
        dims = a.get("dims", list(range(x.dim())))
        if not dims:
            return x.clone()
        return fn(x, dim=dims, keepdim=bool(a.get("keepdim", False)))
    return run


def _rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


# The ops whose record names no PyTorch function to call with the operands
# and keyword attributes (the `torch` field of `ampc --list-ops`): their
# meaning needs code. Every other op is computed by `torch_rule`.
OPS = {
    "conv2d": lambda xs, a: F.conv2d(xs[0], xs[1], xs[2] if len(xs) > 2 else None,
                                     stride=tuple(a["stride"]), padding=tuple(a["padding"]),
                                     dilation=tuple(a["dilation"]), groups=a["groups"]),
    "conv_transpose2d": lambda xs, a: F.conv_transpose2d(
        xs[0], xs[1], xs[2] if len(xs) > 2 else None, stride=tuple(a["stride"]),
        padding=tuple(a["padding"]), output_padding=tuple(a["output_padding"]),
        groups=a["groups"], dilation=tuple(a["dilation"])),
    "sum": lambda xs, a: _reduce(torch.sum)(xs[0], a),
    "mean": lambda xs, a: _reduce(torch.mean)(xs[0], a),
    "max": lambda xs, a: _reduce(torch.amax)(xs[0], a),
    "layer_norm": lambda xs, a: F.layer_norm(xs[0], (xs[0].shape[-1],), xs[1], xs[2], a["eps"]),
    "rms_norm": lambda xs, a: _rms_norm(xs[0], xs[1], a["eps"]),
    "max_pool2d": lambda xs, a: F.max_pool2d(xs[0], tuple(a["kernel"]), tuple(a["stride"]),
                                             tuple(a["padding"])),
    "avg_pool2d": lambda xs, a: F.avg_pool2d(xs[0], tuple(a["kernel"]), tuple(a["stride"]),
                                             tuple(a["padding"])),
    "reshape": lambda xs, a: xs[0].reshape(a["shape"]),
    "transpose": lambda xs, a: xs[0].permute(a["perm"]),
    "concat": lambda xs, a: torch.cat(xs, dim=a["dim"]),
    "slice": lambda xs, a: xs[0].narrow(a["dim"], a["start"], a["end"] - a["start"]),
    "embedding": lambda xs, a: F.embedding(xs[1], xs[0]),
    # Reductions, norms and losses of the fp32 autocast list.
    "logsumexp": lambda xs, a: _reduce(torch.logsumexp)(xs[0], a),
    "norm": lambda xs, a: _reduce(
        lambda x, dim, keepdim: torch.norm(x, p=float(a["p"]), dim=dim, keepdim=keepdim))(
            xs[0], a),
    "group_norm": lambda xs, a: F.group_norm(xs[0], a["groups"], xs[1], xs[2], a["eps"]),
    # batch_norm: the batch statistics with `training` (the running ones are
    # updated by batch_norm_update, as F.batch_norm updates them in place).
    "batch_norm": lambda xs, a: (
        F.batch_norm(xs[0], None, None, xs[1], xs[2], training=True, eps=a["eps"])
        if a.get("training") else
        F.batch_norm(xs[0], xs[3], xs[4], xs[1], xs[2], training=False, eps=a["eps"])),
    "batch_norm_update": lambda xs, a: _batch_norm_update(xs[0], xs[1], xs[2],
                                                          a["momentum"]),
    "counter_next": lambda xs, a: xs[0] + 1,
}


def _batch_norm_update(x, running_mean, running_var, momentum):
    """The running statistics F.batch_norm(training=True) leaves behind."""
    m, v = running_mean.detach().clone(), running_var.detach().clone()
    with torch.no_grad():
        F.batch_norm(x.detach(), m, v, training=True, momentum=momentum)
    return m, v


def dropout_rule(seed):
    """ampc's dropout with ampc's mask (ampc_random.py) for run seed `seed`:
    the same elements are kept, so autograd's backward uses that mask."""
    def run(xs, a):
        x, step = xs[0], int(xs[1])
        wide = x.dtype == torch.float64
        factor = ampc_random.dropout_factor(seed, int(a["key"]), step, x.numel(), a["p"],
                                            wide=wide)
        # (the factor in x's dtype: f32, except under --torch-autocast; an
        # f64 x takes the f64 kernel's factor, 1 / (1 - p) in f64)
        return x * torch.from_numpy(factor).reshape(x.shape).to(x.dtype)
    return run


def torch_rule(record):
    """The rule of an op whose record names its PyTorch function: that
    function of the operands, with the op's keyword attributes (by the same
    names) as keyword arguments."""
    fn = torch
    for part in record["torch"].split(".")[1:]:
        fn = getattr(fn, part)
    names = [a["name"] for a in record["attributes"]]

    def run(xs, a):
        return fn(*xs, **{n: a[n] for n in names if n in a})
    return run


def op_rule(record):
    """How the reference computes an op: its PyTorch function, or code."""
    name = record["name"][3:]
    if name in OPS:
        return OPS[name]
    if record.get("torch"):
        return torch_rule(record)
    return None

# Ops whose operands all take part in type promotion (amp.md's `promote`
# rules, and any op reading several float tensors).
_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                 "f64": torch.float64}
_FROM_TORCH = {v: k for k, v in _TORCH_DTYPES.items()}


def promote(operands):
    """The type torch's promotion gives float operands [(dtype, rank,
    is_bare_number)]: a bare number never widens a tensor, and a rank-0
    tensor only widens other rank-0 operands (torch.result_type's
    categories, folded pairwise)."""
    acc = None
    for dtype, rank, bare in operands:
        if bare:
            continue
        probe = torch.empty((1,) if rank else (), dtype=_TORCH_DTYPES[dtype])
        if acc is None:
            acc = probe
            continue
        dt = torch.result_type(acc, probe)
        acc = torch.empty((1,) if max(acc.dim(), probe.dim()) else (), dtype=dt)
    return operands[0][0] if acc is None else _FROM_TORCH[acc.dtype]


class AmpConfig:
    def __init__(self, mode="off", fp32=(), lower=(), follow=(), classes=None):
        self.mode = mode
        self.low = {"fp16": "f16", "bf16": "bf16"}.get(mode)
        self.classes = dict(classes or {})
        for names, cls in ((fp32, "fp32"), (lower, "lower"), (follow, "follow")):
            for n in names:
                self.classes[n[3:] if n.startswith("tg.") else n] = cls

    def op_class(self, name):
        return self.classes.get(name, "follow")


class ScalerConfig:
    """amp.md's loss scaling: mode 'none', 'static' or 'dynamic'."""

    def __init__(self, mode="none", init=65536.0, growth=2.0, backoff=0.5, interval=2000,
                 hysteresis=1, min_scale=0.0, max_scale=0.0):
        self.mode, self.init, self.growth, self.backoff = mode, init, growth, backoff
        self.interval, self.hysteresis = interval, hysteresis
        self.min_scale, self.max_scale = min_scale, max_scale


class Scaler:
    """The scaler state (f32 scale, i32 counters) and PyTorch's rules."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.scale = np.float32(cfg.init)
        self.growth_tracker = 0
        self.hysteresis_left = cfg.hysteresis

    def update(self, found_inf):
        c = self.cfg
        if c.mode != "dynamic":
            return
        if found_inf:
            self.growth_tracker = 0
            self.hysteresis_left -= 1
            if self.hysteresis_left <= 0:
                s = np.float32(self.scale * np.float32(c.backoff))
                if c.min_scale > 0:
                    s = max(s, np.float32(c.min_scale))
                self.scale = np.float32(s)
        else:
            self.growth_tracker += 1
            if self.growth_tracker == c.interval:
                self.growth_tracker = 0
                self.hysteresis_left = c.hysteresis
                with np.errstate(over="ignore"):
                    s = np.float32(self.scale * np.float32(c.growth))
                if np.isfinite(s) and not (c.max_scale > 0 and s > c.max_scale):
                    self.scale = s


# ---------------------------------------------------------------------------
# The interpreter.
# ---------------------------------------------------------------------------

class Runner:
    def __init__(self, program, amp=None, scaler=None, monitor=False, track_gradients=False,
                 op_list=None):
        self.p = program
        self.rules = {}
        for name, record in (op_list or {}).items():
            rule = op_rule(record)
            if rule is not None:
                self.rules[name[3:]] = rule
        self.track_gradients = track_gradients
        self.param_of_value = {a["value"]: a["name"] for a in program.params}
        self.amp = amp or AmpConfig()
        self.scaler_cfg = scaler or ScalerConfig()
        self.monitor = OverflowMonitor() if monitor else None
        self.params = {}  # name -> leaf f32 tensor
        self.param_dtype = {}
        self.buffers = {}  # name -> f32 tensor (no gradient)
        self.steps_done = 0  # the `dropout.step` state: updates applied
        self.inputs = {}
        self.optimizer = None
        self.scheduler = None
        self.scaler = Scaler(self.scaler_cfg) if self.scaler_cfg.mode != "none" else None
        self.last_outputs = None
        self.grad_ratio = {}
        # --torch-autocast: the torch dtype of the autocast region, or None
        # (the f32 emulation of ampc's policy).
        self.autocast = None

    # -- data -------------------------------------------------------------
    @staticmethod
    def to_tensor(array, dtype):
        if dtype == "bf16":
            bits = torch.from_numpy(array.astype(np.uint16).view(np.int16).copy())
            return bits.view(torch.bfloat16).to(torch.float32)
        if dtype == "f64":
            return torch.from_numpy(array.astype(np.float64))
        if dtype in FLOATS:
            return torch.from_numpy(array.astype(np.float32))
        if dtype == "bool":
            return torch.from_numpy(array.astype(np.bool_))
        return torch.from_numpy(array.astype(np.int64))

    @staticmethod
    def to_numpy(t, dtype):
        t = t.detach()
        if dtype == "bf16":
            return t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        if dtype == "f16":
            return t.to(torch.float16).numpy()
        return t.numpy().astype(NUMPY_DTYPES[dtype])

    def load_array(self, path, arg, what):
        try:
            a = np.load(path, allow_pickle=False)
        except OSError as e:
            raise InputError("cannot read '%s': %s" % (path, e.strerror or e))
        except ValueError as e:
            raise InputError("'%s' is not a .npy file: %s" % (path, e))
        want = np.dtype(NUMPY_DTYPES[arg["type"]])
        if a.dtype != want:
            raise InputError("%s from '%s': dtype '%s', expected '%s'" %
                             (what, path, a.dtype.str, want.str))
        if list(a.shape) != list(arg["shape"]):
            raise InputError("%s from '%s': shape %s, expected %s" %
                             (what, path, list(a.shape), list(arg["shape"])))
        return self.to_tensor(a, arg["type"])

    def set_inputs(self, files, seed):
        gen = torch.Generator().manual_seed(seed)
        by_name = {a["name"]: a for a in self.p.inputs}
        for name in files:
            if name not in by_name:
                raise UsageError("--input: graph '%s' has no input '%s' (its inputs: %s)" %
                                 (self.p.name, name, ", ".join(by_name)))
        for a in self.p.inputs:
            if a["name"] in files:
                t = self.load_array(files[a["name"]], a, "input '%s'" % a["name"])
            elif a["type"] in FLOATS:
                t = as_float(round_to(torch.randn(a["shape"], generator=gen), a["type"]),
                             a["type"])
            else:
                t = torch.randint(0, self.p.int_range(a), a["shape"], generator=gen)
            self.inputs[a["name"]] = t

    def set_seed(self, seed):
        """The run's seed, which ampc's dropout mask depends on."""
        self.rules["dropout"] = dropout_rule(seed)

    def set_params(self, directory, seed):
        self.set_seed(seed)
        gen = torch.Generator().manual_seed(seed + 1)
        if directory is not None:
            if not os.path.isdir(directory):
                raise InputError("--params-in: '%s' is not a directory" % directory)
            names = [a["name"] for a in self.p.params]
            for a in self.p.params:
                path = os.path.join(directory, a["name"] + ".npy")
                if not os.path.exists(path):
                    raise InputError("--params-in: '%s' is missing (graph '%s' has parameters: %s)"
                                     % (path, self.p.name, ", ".join(names) or "none"))
            known = names + [a["name"] for a in self.p.buffers]
            for f in sorted(os.listdir(directory)):
                if f.endswith(".npy") and f[:-4] not in known:
                    raise InputError("--params-in: '%s' is not a parameter of graph '%s' "
                                     "(its parameters: %s)" % (os.path.join(directory, f),
                                                               self.p.name, ", ".join(names)))
        for a in self.p.params:
            if directory is not None:
                t = self.load_array(os.path.join(directory, a["name"] + ".npy"), a,
                                    "parameter '%s'" % a["name"])
            elif file_value(a) is not None:
                t = round_to(file_value(a), a["type"])
            else:
                init = a["attrs"].get("tg.init", {"kind": "zeros"})
                kind = init["kind"]
                shape = a["shape"]
                if kind == "normal":
                    t = torch.randn(shape, generator=gen) * init["std"] + init["mean"]
                elif kind == "uniform":
                    t = torch.rand(shape, generator=gen) * (init["high"] - init["low"]) + init["low"]
                elif kind == "ones":
                    t = torch.ones(shape)
                elif kind == "full":
                    t = torch.full(shape, float(init["value"]))
                else:
                    t = torch.zeros(shape)
                if a["type"] in FLOATS:
                    t = as_float(round_to(t.float(), a["type"]), a["type"])
                else:
                    t = t.long()
            if a["type"] in FLOATS:
                t = t.clone().requires_grad_(True)
            self.params[a["name"]] = t
            self.param_dtype[a["name"]] = a["type"]
        # Buffers: from DIR/NAME.npy when there, else their initialiser.
        for a in self.p.buffers:
            path = os.path.join(directory, a["name"] + ".npy") if directory else None
            if path and os.path.exists(path):
                t = self.load_array(path, a, "buffer '%s'" % a["name"])
            elif file_value(a) is not None:
                t = round_to(file_value(a), a["type"])
            else:
                init = a["attrs"].get("tg.init", {"kind": "zeros"})
                if init["kind"] == "normal":
                    t = torch.randn(a["shape"], generator=gen) * init["std"] + init["mean"]
                elif init["kind"] == "uniform":
                    t = torch.rand(a["shape"], generator=gen) * \
                        (init["high"] - init["low"]) + init["low"]
                elif init["kind"] == "ones":
                    t = torch.ones(a["shape"])
                else:
                    t = torch.zeros(a["shape"])
                t = as_float(round_to(t.float(), a["type"]), a["type"])
            self.buffers[a["name"]] = t

    # -- types ------------------------------------------------------------
    def compute_type(self, op, name, float_ins):
        """The type a float op computes (and stores) in under AMP, from its
        pin or class and its float operands [(dtype, rank, bare)]."""
        # An autocast block (tg.region) decides instead of --amp: `off` as if
        # pinned f32, `fp16`/`bf16` the classes with that low type; a pin
        # wins over it.
        region = op["attrs"].get("tg.region")
        pin = op["attrs"].get("tg.pin")
        if pin:
            return pin
        if region == "off":
            return "f32"
        low = {"fp16": "f16", "bf16": "bf16"}.get(region, self.amp.low)
        cls = self.amp.op_class(name)
        if cls == "lower":
            return low
        if cls == "fp32":
            return "f32"
        # promote, and follow (the type of its float operands).
        return promote(float_ins)

    # -- one step ---------------------------------------------------------
    def forward(self, seed_scale):
        """Evaluates the graph. Returns (values, dtypes, grads of `grad` ops
        as {value id: tensor}, scaled by `seed_scale`)."""
        p, amp = self.p, self.amp
        vals, dts, bare = {}, {}, set()
        for a in p.args:
            if a.get("role") == "input":
                vals[a["value"]] = self.inputs[a["name"]]
            elif a.get("role") == "param":
                vals[a["value"]] = self.params[a["name"]]
            elif a.get("role") == "buffer":
                vals[a["value"]] = self.buffers[a["name"]]
            elif a.get("role") == "state" and a["name"] == "dropout.step":
                vals[a["value"]] = torch.tensor(self.steps_done, dtype=torch.int64)
            else:
                raise InputError("argument %d of '%s' is neither an input nor a parameter "
                                 "(give ampc_torch the program as written: --pipeline=false)"
                                 % (a["value"], p.name))
            dts[a["value"]] = a["type"]
        for a in p.inputs:
            if a["value"] in p.wrt and a["type"] in FLOATS:
                vals[a["value"]] = vals[a["value"]].detach().clone().requires_grad_(True)
        grads = {}
        for op in p.ops:
            kind = op["op"]
            if not kind.startswith("tg."):
                raise InputError("%s: op '%s' is not an op of the tg dialect" % (op["loc"], kind))
            name = kind[3:]
            results = op["results"]
            if name == "minimize" or name == "grad_of":
                continue  # grad_of: a marker of what a gradient is of
            if name == "constant":
                v = op["attrs"]["value"]
                dtype = results[0]["type"]
                if "splat" in v:
                    t = torch.full(v["shape"], float(v["splat"]) if dtype in FLOATS else v["splat"],
                                   dtype=torch.float32 if dtype in FLOATS else torch.int64)
                else:
                    t = torch.tensor(v["values"], dtype=torch.float32 if dtype in FLOATS
                                     else torch.int64).reshape(v["shape"])
                if dtype == "f64":  # the constant's value, not its f32 rounding
                    t = (torch.full(v["shape"], float(v["splat"]), dtype=torch.float64)
                         if "splat" in v else
                         torch.tensor(v["values"], dtype=torch.float64).reshape(v["shape"]))
                rid = results[0]["value"]
                vals[rid], dts[rid] = round_to(t, dtype), dtype
                if op.get("source") is False and not v["shape"]:
                    bare.add(rid)
                continue
            if name == "grad":
                loss = vals[op["operands"][0]]
                wrt = [vals[i] for i in op["operands"][1:]]
                seed = torch.full_like(loss, 1.0) if seed_scale is None else \
                    round_to(torch.full_like(loss, float(seed_scale)), dts[op["operands"][0]])
                gs = torch.autograd.grad(loss, wrt, grad_outputs=seed, retain_graph=True,
                                         allow_unused=True) if loss.requires_grad else \
                    [None] * len(wrt)
                for r, w, g in zip(results, wrt, gs):
                    g = torch.zeros_like(w) if g is None else g.detach()
                    vals[r["value"]], dts[r["value"]] = g, r["type"]
                    grads[r["value"]] = g
                continue
            ins = [vals[i] for i in op["operands"]]
            in_dts = [dts[i] for i in op["operands"]]
            if name == "cast":
                to = results[0]["type"]
                x = ins[0]
                if self.autocast is not None and to in FLOATS:
                    y = x.to(_TORCH_DTYPES[to])  # a real conversion
                elif to in FLOATS and in_dts[0] in FLOATS:
                    y = as_float(quantize(quantize(as_float(x, to), in_dts[0], self.monitor), to,
                                          self.monitor), to)
                elif to == "f64":
                    y = x.to(torch.float64)
                elif to in FLOATS:
                    y = round_to(x.to(torch.float32), to)
                elif to == "bool":
                    y = x != 0
                else:
                    y = x.trunc().to(torch.int64) if torch.is_floating_point(x) else x
                vals[results[0]["value"]], dts[results[0]["value"]] = y, to
                continue
            if name not in self.rules:
                raise InputError("%s: the reference has no rule for 'tg.%s'" % (op["loc"], name))
            if self.autocast is not None:
                ys = self.autocast_op(name, ins, op["attrs"])
                for r, t in zip(results, ys):
                    vals[r["value"]], dts[r["value"]] = t, r["type"]
                continue
            float_pos = [i for i, d in enumerate(in_dts) if d in FLOATS]
            # Outside autocast blocks only --amp acts (pins included).
            if (amp.low is not None or "tg.region" in op["attrs"]) and float_pos:
                compute = self.compute_type(
                    op, name, [(in_dts[i], len(p.type_of[op["operands"][i]]["shape"]),
                                op["operands"][i] in bare) for i in float_pos])
                out_dts = [compute if r["type"] in FLOATS else r["type"] for r in results]
            else:
                compute = None
                out_dts = [r["type"] for r in results]
            xs = list(ins)
            for i in float_pos:
                x = xs[i]
                if op["operands"][i] in bare:
                    # A bare number is a scalar of the type the op computes in.
                    xs[i] = round_to(x, compute or in_dts[i])
                    continue
                # Each use's gradient contribution has the operand's type.
                x = quantize(x, in_dts[i], self.monitor)
                if compute in LOW_DTYPES and compute != in_dts[i]:
                    x = quantize(x, compute, self.monitor)  # autocast's cast
                xs[i] = x
            y = self.rules[name](xs, op["attrs"])
            ys = y if isinstance(y, tuple) else (y,)
            for r, t, d in zip(results, ys, out_dts):
                if d in FLOATS:
                    t = quantize(as_float(t, d), d, self.monitor)
                vals[r["value"]], dts[r["value"]] = t, d
        return vals, dts, grads

    def autocast_op(self, name, ins, attrs):
        """One op under --torch-autocast (the caller's region is active): as
        PyTorch runs it, except that an op of ampc's fp32 class gets its
        float operands in f32 and runs with autocast off, as CUDA
        autocast's fp32 list would run it. The results keep their dtype."""
        if self.amp.op_class(name) == "fp32":
            xs = [x.float() if torch.is_tensor(x) and torch.is_floating_point(x) else x
                  for x in ins]
            with torch.autocast("cpu", enabled=False):
                y = self.rules[name](xs, attrs)
        else:
            y = self.rules[name](list(ins), attrs)
        return y if isinstance(y, tuple) else (y,)

    def outputs(self, vals, dts):
        out = []
        for r in self.p.outputs:
            v = vals[r["value"]]
            if r["type"] in FLOATS:
                v = round_to(as_float(v.detach(), r["type"]), r["type"])
            out.append(v.detach())
        return out

    def make_optimizer(self):
        op = self.p.minimize
        hp = op["attrs"]["hyperparams"]
        opt = op["attrs"]["optimizer"]
        tensors = [self.params[self.param_of_value[v]] for v in op["operands"][1:]]

        def options(h):
            if opt == "sgd":
                return dict(lr=h["lr"], momentum=h.get("momentum", 0.0),
                            weight_decay=h.get("weight_decay", 0.0),
                            nesterov=bool(h.get("nesterov", False)))
            return dict(lr=h["lr"], betas=(h.get("beta1", 0.9), h.get("beta2", 0.999)),
                        eps=h.get("eps", 1e-8), weight_decay=h.get("weight_decay", 0.01))

        # torch.optim param_groups: the params no group names (the call's
        # values), then each `group(...)` of the minimize block.
        groups = op["attrs"].get("param_groups") or []
        grouped = set(i for g in groups for i in g["params"])
        param_groups = [dict(params=[t for i, t in enumerate(tensors) if i not in grouped])]
        for g in groups:
            param_groups.append(dict(params=[tensors[i] for i in g["params"]],
                                     **options(g["hyperparams"])))
        param_groups = [g for g in param_groups if g["params"]]
        if opt == "sgd":
            return torch.optim.SGD(param_groups, **options(hp))
        if opt == "adamw":
            return torch.optim.AdamW(param_groups, **options(hp))
        raise InputError("%s: the reference has no optimizer '%s'" % (op["loc"], opt))

    def note_gradients(self, values, targets):
        """Keeps, per parameter, the largest ratio over steps of its largest
        gradient element to the largest of all: a parameter whose ratio stays
        at rounding-noise level (softmax's invariance to a key bias, say) has
        no well-defined update under AdamW's per-element normalisation."""
        norms = {self.param_of_value[v]: float(t.grad.abs().max()) if t.grad is not None and t.grad.numel()
                 else 0.0 for v, t in zip(values, targets)}
        top = max(norms.values(), default=0.0)
        for name, n in norms.items():
            ratio = n / top if top > 0 else 0.0
            self.grad_ratio[name] = max(self.grad_ratio.get(name, 0.0), ratio)

    def accumulate(self):
        """Micro-batches per update (`accumulate = K`, default 1)."""
        return int(self.p.minimize["attrs"].get("accumulate", 1)) if self.p.training else 1

    def step(self, micro=0):
        """One step, or with accumulation (K > 1) micro-batch `micro` of an
        update: GradScaler's accumulation recipe, `(loss * (1/K))` scaled and
        differentiated per micro-batch, the gradients summed in the
        parameters' .grad (f32) in micro-batch order, and after the K-th one
        unscale, check, clip, step and the scaler's update once. Returns the
        log record {"loss", "loss_scale", "skipped"} (of the micro-batch)."""
        p = self.p
        k_acc = self.accumulate()
        last_micro = micro == k_acc - 1
        scale = self.scaler.scale if self.scaler is not None else None
        training = p.training
        region = torch.autocast("cpu", dtype=self.autocast) if self.autocast is not None \
            else contextlib.nullcontext()
        with torch.set_grad_enabled(training or p.has_grad), region:
            vals, dts, grads = self.forward(scale)
        record = {}
        found_inf = False
        targets = []
        inv = np.float32(1.0) / np.float32(scale) if scale is not None else None
        if training:
            op = p.minimize
            loss = vals[op["operands"][0]]
            targets = [self.params[self.param_of_value[v]] for v in op["operands"][1:]]
            seed = torch.ones_like(loss) if scale is None else \
                round_to(torch.full_like(loss, float(scale)), dts[op["operands"][0]])
            differentiated = loss
            if k_acc > 1:
                # ampc multiplies the loss by 1/K in the loss's type (the
                # same as torch's loss / K for K a power of two): 1/K
                # rounded once, to f64 for an f64 loss, else to f32 first.
                ldt = dts[op["operands"][0]]
                inv_k = 1.0 / k_acc if ldt == "f64" else float(np.float32(1.0) / np.float32(k_acc))
                differentiated = loss * round_to(torch.tensor(inv_k, dtype=torch.float64), ldt)
            if loss.requires_grad:
                gs = torch.autograd.grad(differentiated, targets, grad_outputs=seed,
                                         allow_unused=True)
            else:
                gs = [None] * len(targets)  # the loss reaches no parameter
            for t, g in zip(targets, gs):
                g = None if g is None else as_float(g.detach().clone(), "f64"
                                                    if t.dtype == torch.float64 else "f32")
                if k_acc > 1 and micro > 0:
                    t.grad = t.grad if g is None else (g if t.grad is None else t.grad + g)
                else:
                    t.grad = g
            if not last_micro:
                # A micro-batch before the K-th: only the forward's effects.
                for r in p.buffer_outs:
                    self.buffers[r["name"]] = round_to(as_float(vals[r["value"]].detach(), r["type"]),
                                                   r["type"])
                outs = self.outputs(vals, dts)
                self.last_outputs = outs
                return {"loss": float(outs[0]) if outs and outs[0].numel() == 1 else float("nan")}
            raw = [t.grad for t in targets if t.grad is not None] + list(grads.values())
        else:
            raw = list(grads.values())
        if scale is not None:
            found_inf = any(not bool(torch.isfinite(g).all()) for g in raw)
            for t in targets:
                if t.grad is not None:
                    t.grad = t.grad * float(inv)
            for v in grads:
                grads[v] = grads[v] * float(inv)
                vals[v] = grads[v]
        if training and not found_inf and self.track_gradients:
            self.note_gradients(op["operands"][1:], targets)
        if training:
            if self.optimizer is None:
                self.optimizer = self.make_optimizer()
                sched = p.minimize["attrs"].get("schedule")
                if sched:
                    base = p.minimize["attrs"]["hyperparams"]["lr"]
                    self.scheduler = torch.optim.lr_scheduler.LambdaLR(
                        self.optimizer, lambda t: schedule_factor(sched, base, t))
            hp = p.minimize["attrs"]["hyperparams"]
            if self.scheduler is not None:
                # The default group's rate of this update.
                record["lr"] = hp["lr"] * schedule_factor(
                    p.minimize["attrs"]["schedule"], hp["lr"], self.scheduler.last_epoch)
            if not found_inf:
                with_grad = [t for t in targets if t.grad is not None]
                if hp.get("max_grad_norm") and with_grad:
                    torch.nn.utils.clip_grad_norm_(with_grad, hp["max_grad_norm"])
                self.optimizer.step()
                # A skipped update does not advance the schedule (PyTorch's
                # schedulers would, with a warning).
                if self.scheduler is not None:
                    self.scheduler.step()
                with torch.no_grad():
                    for name, t in self.params.items():
                        if self.param_dtype[name] in LOW_DTYPES:
                            t.copy_(round_to(t, self.param_dtype[name]))
            self.optimizer.zero_grad(set_to_none=True)
        # The buffers' new values (batch norm's running statistics).
        for r in p.buffer_outs:
            self.buffers[r["name"]] = round_to(as_float(vals[r["value"]].detach(), r["type"]),
                                                   r["type"])
        if training:
            self.steps_done += 1
        outs = self.outputs(vals, dts)
        self.last_outputs = outs
        loss_value = float(outs[0]) if outs and outs[0].numel() == 1 else float("nan")
        record["loss"] = loss_value
        if self.scaler is not None:
            record["loss_scale"] = float(scale)
            record["skipped"] = bool(found_inf)
            self.scaler.update(found_inf)
        return record


# ---------------------------------------------------------------------------
# Files and the command line.
# ---------------------------------------------------------------------------

def fmt(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    s = "%.9g" % v
    return s


def log_line(step, record, extra=None):
    line = '{"step": %d, "loss": %s' % (step, fmt(record["loss"]))
    if "lr" in record:
        line += ', "lr": %s' % fmt(record["lr"])
    if "loss_scale" in record:
        line += ', "loss_scale": %s, "skipped": %s' % (
            fmt(record["loss_scale"]), "true" if record["skipped"] else "false")
    for k, v in (extra or {}).items():
        line += ', "%s": %s' % (k, json.dumps(v))
    return line + "}\n"


def write_npy_files(directory, arrays):
    """Writes {file name: array} so that each file is replaced whole or not
    at all (temporary files, renamed when all are written)."""
    os.makedirs(directory, exist_ok=True)
    temps = []
    try:
        for fname, arr in arrays.items():
            fd, tmp = tempfile.mkstemp(prefix="." + fname, dir=directory)
            with os.fdopen(fd, "wb") as f:
                np.save(f, arr, allow_pickle=False)
            temps.append((tmp, os.path.join(directory, fname)))
        for tmp, dst in temps:
            os.replace(tmp, dst)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.remove(tmp)


def parse_inputs(specs):
    files = {}
    for spec in specs or []:
        name, eq, path = spec.partition("=")
        if not eq or not name or not path:
            raise UsageError("--input expects NAME=FILE.npy, got '%s'" % spec)
        files[name] = path
    return files


def scaler_from_args(args, has_gradients, fp16_region=False):
    mode = args.loss_scale
    if mode is None:
        mode = "dynamic" if args.amp == "fp16" or fp16_region or \
            getattr(args, "torch_autocast", "off") == "fp16" else "none"
    if not has_gradients:
        mode = "none"
    if mode in ("none", "dynamic"):
        cfg = ScalerConfig(mode, args.loss_scale_init, args.loss_scale_growth,
                           args.loss_scale_backoff, args.loss_scale_interval,
                           args.loss_scale_hysteresis, args.loss_scale_min, args.loss_scale_max)
    else:
        try:
            n = float(mode)
        except ValueError:
            raise UsageError("--loss-scale must be dynamic, none or a positive number, got '%s'"
                             % mode)
        if not (n > 0 and math.isfinite(n)):
            raise UsageError("--loss-scale must be dynamic, none or a positive number, got '%s'"
                             % mode)
        cfg = ScalerConfig("static", init=n)
    return cfg


def add_run_arguments(ap):
    ap.add_argument("program", help=".tg, .mlir (compiled by ampc) or .json (--emit=json)")
    ap.add_argument("--graph", help="the graph to run (default: the first)")
    ap.add_argument("--ampc", help="the ampc binary (default: $AMPC, PATH, build/bin)")
    ap.add_argument("--steps", type=int, default=None,
                    help="training steps (default 10, or one epoch with --data)")
    ap.add_argument("--data", action="append", metavar="NAME=FILE.npy",
                    help="a dataset [N, ...] for an input (repeatable)")
    ap.add_argument("--epochs", type=int, help="with --data: epochs to train")
    ap.add_argument("--shuffle", choices=["true", "false"], default="true")
    ap.add_argument("--seed", type=int, default=0,
                    help="synthetic inputs and parameters (torch's generator, not ampc's)")
    ap.add_argument("--input", action="append", metavar="NAME=FILE.npy")
    ap.add_argument("--params-in", metavar="DIR")
    ap.add_argument("--params-out", metavar="DIR")
    ap.add_argument("--outputs-out", metavar="DIR")
    ap.add_argument("--log", metavar="FILE.jsonl")
    ap.add_argument("--amp", choices=["off", "fp16", "bf16"], default="off")
    ap.add_argument("--amp-policy", choices=["reference", "fast"], default="reference")
    ap.add_argument("--amp-fp32", default="")
    ap.add_argument("--amp-lower", default="")
    ap.add_argument("--amp-follow", default="")
    ap.add_argument("--loss-scale")
    ap.add_argument("--loss-scale-init", type=float, default=65536.0)
    ap.add_argument("--loss-scale-growth", type=float, default=2.0)
    ap.add_argument("--loss-scale-backoff", type=float, default=0.5)
    ap.add_argument("--loss-scale-interval", type=int, default=2000)
    ap.add_argument("--loss-scale-hysteresis", type=int, default=1)
    ap.add_argument("--loss-scale-min", type=float, default=0.0)
    ap.add_argument("--loss-scale-max", type=float, default=0.0)
    ap.add_argument("--threads", type=int, help="torch.set_num_threads")
    ap.add_argument("--torch-autocast", choices=["off", "bf16", "fp16"], default="off",
                    help="run under real torch.autocast('cpu') in this dtype instead of "
                         "emulating ampc's policy (for speed comparisons; needs --amp=off)")
    ap.add_argument("--grad-stats", metavar="FILE.json",
                    help="write each parameter's largest gradient relative to the "
                         "step's largest (max over steps)")
    ap.add_argument("--overflow-margin", action="store_true",
                    help="log each step's closest approach to the f16 overflow threshold")
    ap.add_argument("--quiet", action="store_true")


def split_ops(text):
    return [s for s in text.split(",") if s]


def epoch_order(seed, epoch, n):
    """ampc's shuffle order of epoch `epoch` (from 1) over n samples
    (docs/jobs.md): Fisher-Yates driven by SplitMix64 from (seed, epoch)."""
    m = (1 << 64) - 1
    state = (seed ^ (0x9E3779B97F4A7C15 * epoch)) & m
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & m
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        z ^= z >> 31
        j = z % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def load_datasets(runner, specs):
    """{input name: numpy array [N, ...]} for --data, checked as ampc checks
    them."""
    by_name = {a["name"]: a for a in runner.p.inputs}
    sets = {}
    for spec in specs or []:
        name, eq, path = spec.partition("=")
        if not eq or not name or not path:
            raise UsageError("--data expects NAME=FILE.npy, got '%s'" % spec)
        if name not in by_name:
            raise UsageError("--data: graph '%s' has no input '%s'" % (runner.p.name, name))
        a = np.load(path, allow_pickle=False)
        arg = by_name[name]
        if a.dtype != np.dtype(NUMPY_DTYPES[arg["type"]]) or \
                list(a.shape[1:]) != list(arg["shape"][1:]):
            raise InputError("--data: '%s' does not fit input '%s'" % (path, name))
        if a.shape[0] < arg["shape"][0]:
            raise InputError("--data: '%s' holds fewer samples than one batch" % path)
        sets[name] = (a, arg)
    if len({a.shape[0] for a, _ in sets.values()}) > 1:
        raise InputError("--data: the datasets hold different numbers of samples")
    return sets


def make_runner(args, doc=None):
    if args.steps is not None and args.epochs is not None:
        raise UsageError("--steps and --epochs both say how long to train; give one of them")
    if args.steps is None:
        args.steps = 10
        args.steps_given = False
    else:
        args.steps_given = True
    if args.steps < 1:
        raise UsageError("--steps must be at least 1")
    if args.amp != "off" and args.amp_policy != "reference":
        raise UsageError("the reference emulates --amp-policy=reference only "
                         "(the fast policy promises the same or stricter numerics)")
    program = Program(doc if doc is not None else load_program_json(args.program, args.ampc),
                      args.graph)
    op_list = load_op_list(args.ampc)
    amp = AmpConfig(args.amp, split_ops(args.amp_fp32), split_ops(args.amp_lower),
                    split_ops(args.amp_follow), default_classes(op_list))
    autocast = autocast_dtype(args)
    scaler = scaler_from_args(args, program.has_gradients(), program.has_fp16_region())
    runner = Runner(program, amp, scaler, monitor=args.overflow_margin or args.amp == "fp16",
                    track_gradients=bool(args.grad_stats), op_list=op_list)
    runner.autocast = autocast
    return runner


def autocast_dtype(args):
    """The torch dtype of --torch-autocast, or None; an error where this
    PyTorch's CPU autocast refuses it (1.13: anything but bfloat16)."""
    mode = getattr(args, "torch_autocast", "off")
    if mode == "off":
        return None
    if args.amp != "off":
        raise UsageError("--torch-autocast runs PyTorch's own autocast: give it with --amp=off")
    dtype = LOW_DTYPES[{"fp16": "f16", "bf16": "bf16"}[mode]]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "... Disabling autocast."
            with torch.autocast("cpu", dtype=dtype):
                ok = torch.is_autocast_cpu_enabled() and torch.get_autocast_cpu_dtype() == dtype
    except RuntimeError:
        ok = False
    if not ok:
        raise UsageError("PyTorch %s's CPU autocast does not accept %s" %
                         (torch.__version__, dtype))
    return dtype


def run(args, doc=None):
    if args.threads:
        torch.set_num_threads(args.threads)
    runner = make_runner(args, doc)
    p = runner.p
    runner.set_inputs(parse_inputs(args.input), args.seed)
    runner.set_params(args.params_in, args.seed)
    sets = load_datasets(runner, args.data)
    steps = args.steps if p.training else 1
    per_epoch = 0
    if sets:
        n = next(iter(sets.values()))[0].shape[0]
        batch = next(iter(sets.values()))[1]["shape"][0]
        per_epoch = n // batch
        if p.training and not args.steps_given:
            steps = (args.epochs or 1) * per_epoch
    order, order_epoch = None, None
    log = open(args.log, "w") if args.log else None
    first = last = float("nan")
    skipped = 0
    t0 = time.perf_counter()
    # Gradient accumulation: an update is K batches; an epoch floor(batches
    # / K) updates (the rest dropped).
    k_acc = runner.accumulate()
    if sets and k_acc > 1:
        per_epoch //= k_acc
        if p.training and not args.steps_given:
            steps = (args.epochs or 1) * per_epoch
    for k in range(steps):
        if runner.monitor is not None:
            runner.monitor.reset()
        epoch = k // per_epoch + 1 if per_epoch else None
        micro_losses = []
        for j in range(k_acc):
            if sets:
                if order_epoch != epoch:
                    order_epoch = epoch
                    order = epoch_order(args.seed, epoch, n) if args.shuffle == "true" \
                        else list(range(n))
                first_sample = ((k % per_epoch) * k_acc + j) * batch
                rows = order[first_sample:first_sample + batch]
                for name, (a, arg) in sets.items():
                    runner.inputs[name] = runner.to_tensor(np.ascontiguousarray(a[rows]),
                                                           arg["type"])
            record = runner.step(j)
            micro_losses.append(record["loss"])
        if k_acc > 1:
            # The log's loss: the mean of the update's micro-batch losses.
            record["loss"] = float(sum(micro_losses) / k_acc)
        if k == 0:
            first = record["loss"]
        last = record["loss"]
        skipped += bool(record.get("skipped"))
        if log:
            extra = None
            if args.overflow_margin and runner.monitor is not None:
                extra = {"f16_margin": runner.monitor.margin()}
            if epoch is not None:
                extra = dict(extra or {}, epoch=epoch)
            log.write(log_line(k + 1, record, extra))
    secs = time.perf_counter() - t0
    if log:
        log.close()
    if args.params_out:
        files = {a["name"] + ".npy": Runner.to_numpy(runner.params[a["name"]], a["type"])
                 for a in p.params}
        files.update({a["name"] + ".npy": Runner.to_numpy(runner.buffers[a["name"]], a["type"])
                      for a in p.buffers})
        write_npy_files(args.params_out, files)
    if args.outputs_out:
        write_npy_files(args.outputs_out, {
            "output_%d.npy" % r["index"]: Runner.to_numpy(t, r["type"])
            for r, t in zip(p.outputs, runner.last_outputs)})
    if args.grad_stats:
        with open(args.grad_stats, "w") as f:
            json.dump(runner.grad_ratio, f, indent=1, sort_keys=True)
    if not args.quiet:
        line = "%s: %d %s, loss %s -> %s" % (p.name, steps,
                                             "training steps" if p.training else "forward pass",
                                             fmt(first), fmt(last))
        if runner.scaler is not None:
            line += ", loss scale %s, %d skipped" % (fmt(float(runner.scaler.scale)), skipped)
        line += ", %.1f steps/s" % (steps / max(secs, 1e-9))
        print(line)
    return steps / max(secs, 1e-9)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ampc_torch.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    add_run_arguments(sub.add_parser("run", help="run a program with PyTorch"))
    try:
        args = ap.parse_args(argv)
        run(args)
    except UsageError as e:
        sys.stderr.write("ampc_torch: error: %s\n" % e)
        return 2
    except InputError as e:
        sys.stderr.write("ampc_torch: error: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
