#!/usr/bin/env python3
"""tggen: random valid .tg programs, and the fuzz loop of tgdiff.py.

A program is a list of statements, each defining one new tensor from earlier
ones (and from inputs and parameters it creates as it goes), with shapes
kept consistent by the shape rules of the `.tg` language. Values are
kept in a moderate range (domains of log/sqrt/rsqrt/div/pow are guarded, exp
reads a tanh), so a disagreement is a difference of semantics or precision,
not two infinities. The loss is the sum of mean(v * v) over the values no
later statement reads, so every op counts; the program is a training step
(SGD or AdamW) or one forward + `grad` pass.

  tggen.py [--seed S] [--count N] [--out DIR]    write N programs

`fuzz()` (tgdiff.py fuzz) runs programs through ampc and the reference and
shrinks any disagreement to a minimal reproducer: statements are removed one
at a time (their readers read one of the statement's operands of the same
type, or a new input), unused inputs and parameters dropped, while the
disagreement persists.
"""

import argparse
import copy
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def type_text(dtype, shape):
    return "%s[%s]" % (dtype, ", ".join(map(str, shape)))


# The elementwise ops come from the dialect (`ampc --list-ops`); only the
# ones whose domain must be guarded, and the operator spellings, are here.
UNARY_GUARDS = {
    "exp": "exp(tanh({0}))",
    "log": "log({0} * {0} + 0.5)",
    "sqrt": "sqrt({0} * {0} + 0.5)",
    "rsqrt": "rsqrt({0} * {0} + 0.5)",
    "log1p": "log1p({0} * {0})",
    "expm1": "expm1(tanh({0}))",
    "reciprocal": "reciprocal({0} * {0} + 0.5)",
}
UNARY_SPELLINGS = {"neg": ["neg({0})", "-{0}"]}
BINARY_GUARDS = {
    "div": "{0} / ({1} * {1} + 0.5)",
    "pow": "pow({0} * {0} + 0.5, tanh({1}))",
}
BINARY_SPELLINGS = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}"}
# Comparisons give bool: the generator uses them as `where`'s condition, so
# each template is a float expression of both operands.
for _cmp in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    BINARY_GUARDS[_cmp] = "where(%s({0}, {1}), {0}, {1} * 0.5)" % _cmp
# Equal floats are rare: compare with a value equal in about half the places.
BINARY_GUARDS["equal"] = "where(equal({0}, maximum({0}, {1})), {1}, {0})"
# Bare numbers next to a tensor.
BINARY_EXTRAS = ["{0} * 0.5", "{0} + 1.5"]

_TEMPLATES = {}


def templates(ampc=None):
    """(unary, binary) expression templates of every elementwise op of the
    dialect, in the order of their names (so that the programs of a seed do
    not change when records move between .td files): each op with its
    default keyword attributes, plus one template per other allowed value
    of a string attribute (gelu's approximate="tanh")."""
    key = ampc or ""
    if key in _TEMPLATES:
        return _TEMPLATES[key]
    import tgops
    exe = tgops.find_ampc(ampc)
    if exe is None:
        raise RuntimeError("cannot find ampc: pass --ampc PATH or set $AMPC")
    unary, binary = [], []
    records = tgops.load_op_list(exe).values()
    for record in sorted(records, key=lambda r: r["language"] or ""):
        name, kind = record["language"], record["elementwise"]
        if not name or not kind:
            continue
        if kind == "unary":
            unary.extend(UNARY_SPELLINGS.get(name, [UNARY_GUARDS.get(name, name + "({0})")]))
            for attr in record["attributes"]:
                for value in attr.get("allowed", []):
                    if value != attr.get("default"):
                        unary.append('%s({0}, %s="%s")' % (name, attr["name"], value))
        else:
            binary.append(BINARY_SPELLINGS.get(name, BINARY_GUARDS.get(name, name + "({0}, {1})")))
    _TEMPLATES[key] = (unary, binary + BINARY_EXTRAS)
    return _TEMPLATES[key]


class Program:
    def __init__(self, name):
        self.name = name
        self.inputs = []   # (name, dtype, shape)
        self.params = []   # (name, dtype, shape, init text)
        self.buffers = []  # the same, for `buffer` declarations
        self.stmts = []    # dicts: name, template, operands, dtype, shape
        self.training = False
        self.optimizer = "sgd(lr = 0.05)"
        self.counter = 0

    def fresh(self, prefix):
        self.counter += 1
        return "%s%d" % (prefix, self.counter)

    def types(self):
        t = {n: (d, s) for n, d, s in self.inputs}
        t.update({n: (d, s) for n, d, s, _ in self.params})
        t.update({n: (d, s) for n, d, s, _ in self.buffers})
        t.update({st["name"]: (st["dtype"], st["shape"]) for st in self.stmts})
        return t

    def leaves(self):
        used = set()
        for st in self.stmts:
            used.update(st["operands"])
        return [st["name"] for st in self.stmts if st["name"] not in used]

    def float_args(self):
        return [n for n, d, _ in self.inputs if d != "i32"] + [p[0] for p in self.params]

    def render(self):
        types = self.types()
        lines = []
        for n, d, s, init in self.params:
            lines.append("  param %s: %s = %s" % (n, type_text(d, s), init))
        for n, d, s, init in self.buffers:
            lines.append("  buffer %s: %s = %s" % (n, type_text(d, s), init))
        for st in self.stmts:
            expr = st["template"].format(*st["operands"])
            lines.append("  %s = %s%s" % (st["name"], expr, st.get("pin", "")))
        leaves = self.leaves() or [self.float_args()[0]]
        terms = []
        for v in leaves:
            d, s = types[v]
            terms.append("mean(cast(%s, to=f32) * cast(%s, to=f32))" % (v, v) if d != "f32"
                         else "mean(%s * %s)" % (v, v) if s else "%s * %s" % (v, v))
        lines.append("  loss = " + " + ".join(terms))
        if self.training and self.params:
            lines.append("  minimize loss with " + self.optimizer)
            ret = "loss"
        else:
            wrt = [n for n in self.float_args()]
            grads = ["g_" + n for n in wrt]
            lines.append("  %s = grad(loss, %s)" % (", ".join(grads), ", ".join(wrt)))
            ret = ", ".join(["loss"] + leaves[:2] + grads)
        lines.append("  return " + ret)
        sig = ", ".join("%s: %s" % (n, type_text(d, s)) for n, d, s in self.inputs)
        return "graph %s(%s) {\n%s\n}\n" % (self.name, sig, "\n".join(lines))


class Generator:
    """Builds one random program."""

    FLOATS = ("f32", "f16", "bf16")

    def __init__(self, rng, name, amp_pins=False, ampc=None):
        self.rng = rng
        self.p = Program(name)
        self.amp_pins = amp_pins
        self.unary_templates, self.binary_templates = templates(ampc)

    # -- pool -------------------------------------------------------------
    def pool(self, pred=lambda d, s: True):
        return [(n, d, s) for n, (d, s) in self.p.types().items()
                if d in self.FLOATS and pred(d, s)]

    def new_input(self, shape, dtype="f32"):
        name = self.p.fresh("x")
        self.p.inputs.append((name, dtype, list(shape)))
        return name

    def new_param(self, shape, std=0.5):
        name = self.p.fresh("w")
        self.p.params.append((name, "f32", list(shape), "normal(0.0, %g)" % std))
        return name

    def operand(self, pred=lambda d, s: True, shape=None):
        """An existing float tensor (often the newest) satisfying pred, or a
        new input/parameter of `shape`."""
        cands = self.pool(pred)
        if cands and self.rng.random() < 0.85:
            # Prefer recent values: programs become chains, not just fans.
            cands.sort(key=lambda c: self.order(c[0]))
            pick = cands[-1] if self.rng.random() < 0.6 else self.rng.choice(cands)
            return pick[0]
        if shape is None:
            shape = self.random_shape()
        return self.new_param(shape) if self.rng.random() < 0.5 else self.new_input(shape)

    def order(self, name):
        for i, st in enumerate(self.p.stmts):
            if st["name"] == name:
                return 1000 + i
        return 0

    def random_shape(self, rank=None):
        rank = self.rng.choice([1, 2, 2, 3, 4]) if rank is None else rank
        return [self.rng.randint(1, 5) for _ in range(rank)]

    def shape_of(self, name):
        return self.p.types()[name][1]

    def dtype_of(self, name):
        return self.p.types()[name][0]

    def add(self, template, operands, shape, dtype=None):
        if dtype is None:
            dts = [self.dtype_of(o) for o in operands if self.dtype_of(o) in self.FLOATS]
            dtype = promote(dts)
        st = {"name": self.p.fresh("v"), "template": template, "operands": list(operands),
              "dtype": dtype, "shape": list(shape)}
        if self.amp_pins and self.rng.random() < 0.08:
            pin = " @" + self.rng.choice(["f32", "f16", "bf16"])
            # dropout outside a training graph (decided later) computes
            # nothing, and a pin on it is an error: never pin it (the draws
            # above still happen, so the other programs stay the same).
            if not template.startswith("dropout("):
                st["pin"] = pin
        self.p.stmts.append(st)
        return st["name"]

    # -- ops --------------------------------------------------------------
    def unary(self):
        a = self.operand()
        s = self.shape_of(a)
        template = self.rng.choice(self.unary_templates)
        return self.add(template, [a], s)

    def broadcastable(self, shape):
        """A shape that broadcasts against `shape`: a suffix, some dims 1."""
        k = self.rng.randint(0, len(shape))
        suffix = shape[len(shape) - k:]
        return [1 if self.rng.random() < 0.3 else d for d in suffix]

    def binary(self):
        a = self.operand()
        sa = self.shape_of(a)
        want = self.broadcastable(sa)
        cands = [n for n, d, s in self.pool(lambda d, s: s == want)]
        b = self.rng.choice(cands) if cands and self.rng.random() < 0.5 else (
            self.new_param(want) if self.rng.random() < 0.5 else self.new_input(want))
        if self.rng.random() < 0.5:
            a, b = b, a
        out = broadcast(self.shape_of(a), self.shape_of(b))
        template = self.rng.choice(self.binary_templates)
        if "{1}" not in template:
            return self.add(template, [a], self.shape_of(a))
        return self.add(template, [a, b], out)

    def matmul(self):
        a = self.operand(lambda d, s: len(s) >= 2)
        if len(self.shape_of(a)) < 2:
            a = self.new_input(self.random_shape(self.rng.choice([2, 3])))
        sa = self.shape_of(a)
        k, n = sa[-1], self.rng.randint(1, 6)
        if self.rng.random() < 0.5:
            w = self.new_param([k, n], std=1.0 / math.sqrt(k))
            # `a @ w` is matmul; `mm` its 2-D spelling.
            spelling = self.rng.choice(["matmul({0}, {1})", "{0} @ {1}"] +
                                       (["mm({0}, {1})"] if len(sa) == 2 else []))
            return self.add(spelling, [a, w], sa[:-1] + [n])
        w = self.new_param([n, k], std=1.0 / math.sqrt(k))
        if self.rng.random() < 0.5:
            b = self.new_param([n], std=0.1)
            return self.add("linear({0}, {1}, {2})", [a, w, b], sa[:-1] + [n])
        return self.add("linear({0}, {1})", [a, w], sa[:-1] + [n])

    def image(self):
        cands = self.pool(lambda d, s: len(s) == 4 and s[2] >= 2 and s[3] >= 2)
        if cands and self.rng.random() < 0.8:
            return self.rng.choice(cands)[0]
        return self.new_input([self.rng.randint(1, 2), self.rng.randint(1, 4),
                               self.rng.randint(3, 7), self.rng.randint(3, 7)])

    def conv(self):
        x = self.image()
        n, c, h, w = self.shape_of(x)
        groups = c if c > 1 and self.rng.random() < 0.25 else 1
        o = groups * self.rng.randint(1, 3)
        kh, kw = self.rng.randint(1, min(3, h)), self.rng.randint(1, min(3, w))
        stride = self.rng.choice([1, 1, 2])
        pad = self.rng.choice([0, 0, 1])
        dil = self.rng.choice([1, 1, 2]) if h > 4 and w > 4 else 1
        oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
        ow = (w + 2 * pad - dil * (kw - 1) - 1) // stride + 1
        if oh < 1 or ow < 1:
            return None
        wt = self.new_param([o, c // groups, kh, kw], std=1.0 / math.sqrt(c // groups * kh * kw))
        attrs = "stride=%d, padding=%d, dilation=%d, groups=%d" % (stride, pad, dil, groups)
        if self.rng.random() < 0.5:
            b = self.new_param([o], std=0.1)
            return self.add("conv2d({0}, {1}, {2}, %s)" % attrs, [x, wt, b], [n, o, oh, ow])
        return self.add("conv2d({0}, {1}, %s)" % attrs, [x, wt], [n, o, oh, ow])

    def seed2(self):
        """The GEMM-plus-add family, prelu and the 1-D / 3-D convolutions
        (fp16 list): `c` broadcast from a random suffix of the result shape,
        beta and alpha away from 1, strides, padding, groups and output
        padding on small shapes."""
        r = self.rng.random()
        m, k, n = (self.rng.randint(1, 5) for _ in range(3))
        beta = self.rng.choice([1.0, 0.5])
        alpha = self.rng.choice([1.0, 1.5])
        kws = ", beta=%g, alpha=%g" % (beta, alpha)
        if r < 0.4:
            op = self.rng.choice(["addmm", "baddbmm", "addbmm", "addmv", "addr"])
            b = self.rng.randint(1, 3)
            a_shape, b_shape, out = {
                "addmm": ([m, k], [k, n], [m, n]),
                "baddbmm": ([b, m, k], [b, k, n], [b, m, n]),
                "addbmm": ([b, m, k], [b, k, n], [m, n]),
                "addmv": ([m, k], [k], [m]),
                "addr": ([m], [n], [m, n]),
            }[op]
            c_shape = out[len(out) - self.rng.randint(1, len(out)):]
            if self.rng.random() < 0.3:
                c_shape = [1] * len(c_shape)
            c = self.new_param(c_shape, std=0.5)
            x = self.new_input(a_shape)
            w = self.new_param(b_shape, std=1.0 / math.sqrt(k))
            return self.add(op + "({0}, {1}, {2}%s)" % kws, [c, x, w], out)
        if r < 0.6:
            x = self.operand(lambda d, s: len(s) >= 2)
            if len(self.shape_of(x)) < 2:
                x = self.new_input(self.random_shape(self.rng.choice([2, 3])))
            sx = self.shape_of(x)
            w = self.new_param([sx[1] if self.rng.random() < 0.7 else 1], std=0.3)
            return self.add("prelu({0}, {1})", [x, w], sx)
        three = self.rng.random() < 0.4
        nd = 3 if three else 1
        c = self.rng.randint(1, 3)
        groups = 2 if self.rng.random() < 0.3 else 1
        c *= groups
        spatial = [self.rng.randint(2, 4) if three else self.rng.randint(3, 8) for _ in range(nd)]
        x = self.new_input([self.rng.randint(1, 2), c] + spatial)
        ks = [self.rng.randint(1, 2) for _ in range(nd)]
        stride = self.rng.choice([1, 2])
        pad = self.rng.choice([0, 1])
        o = groups * self.rng.randint(1, 2)
        name = "3d" if three else "1d"
        if self.rng.random() < 0.5:
            out = [(s + 2 * pad - kk) // stride + 1 for s, kk in zip(spatial, ks)]
            if min(out) < 1:
                return None
            wt = self.new_param([o, c // groups] + ks, std=1.0 / math.sqrt(c // groups * 2))
            return self.add("conv%s({0}, {1}, stride=%d, padding=%d, groups=%d)" % (
                name, stride, pad, groups), [x, wt], [self.shape_of(x)[0], o] + out)
        opad = self.rng.choice([0, stride - 1])
        out = [(s - 1) * stride - 2 * pad + kk + opad for s, kk in zip(spatial, ks)]
        if min(out) < 1:
            return None
        wt = self.new_param([c, o // groups] + ks, std=1.0 / math.sqrt(c))
        return self.add("conv_transpose%s({0}, {1}, stride=%d, padding=%d, output_padding=%d, "
                        "groups=%d)" % (name, stride, pad, opad, groups), [x, wt],
                        [self.shape_of(x)[0], o] + out)

    def pool2d(self):
        x = self.image()
        n, c, h, w = self.shape_of(x)
        k = self.rng.randint(1, min(3, h, w))
        stride = self.rng.randint(1, k)
        pad = self.rng.randint(0, k // 2)
        oh = (h + 2 * pad - k) // stride + 1
        ow = (w + 2 * pad - k) // stride + 1
        op = self.rng.choice(["max_pool2d", "avg_pool2d"])
        return self.add("%s({0}, kernel=[%d, %d], stride=[%d, %d], padding=[%d, %d])" % (
            op, k, k, stride, stride, pad, pad), [x], [n, c, oh, ow])

    def reduce(self):
        a = self.operand(lambda d, s: len(s) >= 1)
        s = self.shape_of(a)
        if not s:
            return None
        dims = sorted(self.rng.sample(range(len(s)), self.rng.randint(1, len(s))))
        keep = self.rng.random() < 0.4
        op = self.rng.choice(["sum", "mean", "max"])
        out = [1 if i in dims else d for i, d in enumerate(s)] if keep else \
            [d for i, d in enumerate(s) if i not in dims]
        return self.add("%s({0}, dims=[%s]%s)" % (op, ", ".join(map(str, dims)),
                                                  ", keepdim=true" if keep else ""), [a], out)

    def norm(self):
        a = self.operand(lambda d, s: len(s) >= 1)
        s = self.shape_of(a)
        if not s:
            return None
        kind = self.rng.choice(["softmax", "log_softmax", "layer_norm", "rms_norm",
                                "batch_norm", "dropout"])
        if kind == "dropout":
            # Identity outside training graphs; ampc's mask in training ones.
            return self.add("dropout({0}, p=%g)" % self.rng.choice([0.1, 0.5]), [a], s)
        if kind == "batch_norm":
            # At least 4 values per channel: the batch variance of fewer is
            # dominated by rounding.
            if len(s) < 2 or numel(s) // s[1] < 4:
                return None
            w = self.new_param([s[1]], std=0.5)
            b = self.new_param([s[1]], std=0.1)
            rm, rv = self.p.fresh("rm"), self.p.fresh("rv")
            self.p.buffers.append((rm, "f32", [s[1]], "normal(0.0, 0.5)"))
            self.p.buffers.append((rv, "f32", [s[1]], "uniform(0.5, 2.0)"))
            return self.add("batch_norm({0}, {1}, {2}, {3}, {4}, momentum=%g)" %
                            self.rng.choice([0.1, 0.5]), [a, w, b, rm, rv], s)
        if kind in ("softmax", "log_softmax"):
            dim = self.rng.randrange(-len(s), len(s))
            return self.add("%s({0}, dim=%d)" % (kind, dim), [a], s)
        if s[-1] < 2:
            # Normalising one element gives a constant (the bias), which
            # PyTorch computes with its rounding noise times 1/sqrt(eps).
            return None
        w = self.new_param([s[-1]], std=0.5)
        if kind == "layer_norm":
            b = self.new_param([s[-1]], std=0.1)
            return self.add("layer_norm({0}, {1}, {2})", [a, w, b], s)
        return self.add("rms_norm({0}, {1})", [a, w], s)

    def shape_op(self):
        a = self.operand(lambda d, s: len(s) >= 1)
        s = self.shape_of(a)
        if not s:
            return None
        kind = self.rng.choice(["reshape", "transpose", "concat", "slice"])
        if kind == "reshape":
            n = numel(s)
            divisors = [d for d in range(1, n + 1) if n % d == 0]
            d0 = self.rng.choice(divisors)
            new = [d0, -1] if self.rng.random() < 0.5 else [n]
            out = [d0, n // d0] if len(new) == 2 else [n]
            return self.add("reshape({0}, shape=[%s])" % ", ".join(map(str, new)), [a], out)
        if kind == "transpose" and len(s) >= 2:
            perm = list(range(len(s)))
            self.rng.shuffle(perm)
            return self.add("transpose({0}, perm=[%s])" % ", ".join(map(str, perm)), [a],
                            [s[i] for i in perm])
        if kind == "concat":
            dim = self.rng.randrange(len(s))
            other = list(s)
            other[dim] = self.rng.randint(1, 3)
            b = self.new_param(other) if self.rng.random() < 0.5 else self.new_input(other)
            out = list(s)
            out[dim] += other[dim]
            return self.add("concat({0}, {1}, dim=%d)" % dim, [a, b], out)
        dims = [i for i, d in enumerate(s) if d >= 2]
        if not dims:
            return None
        dim = self.rng.choice(dims)
        start = self.rng.randint(0, s[dim] - 1)
        end = self.rng.randint(start + 1, s[dim])
        out = list(s)
        out[dim] = end - start
        return self.add("slice({0}, dim=%d, start=%d, end=%d)" % (dim, start, end), [a], out)

    def embedding(self):
        v, d = self.rng.randint(2, 8), self.rng.randint(1, 5)
        table = self.new_param([v, d], std=1.0)
        ids = self.p.fresh("ids")
        shape = self.random_shape(self.rng.choice([1, 2]))
        self.p.inputs.append((ids, "i32", shape))
        st = self.add("embedding({0}, %s)" % ids, [table], shape + [d])
        return st

    def cast(self):
        a = self.operand()
        to = self.rng.choice(["f16", "bf16", "f32"])
        return self.add("cast({0}, to=%s)" % to, [a], self.shape_of(a), dtype=to)

    def loss_op(self):
        a = self.operand(lambda d, s: len(s) == 2 and s[1] >= 2)
        s = self.shape_of(a)
        if len(s) != 2 or s[1] < 2:
            return None
        if self.rng.random() < 0.5:
            labels = self.p.fresh("labels")
            self.p.inputs.append((labels, "i32", [s[0]]))
            return self.add("cross_entropy({0}, %s)" % labels, [a], [], dtype="f32")
        b = self.new_input(s)
        r = self.rng.random()
        if r < 0.2:
            return self.add("binary_cross_entropy(sigmoid({0}), sigmoid({1}))", [a, b], [],
                            dtype="f32")
        if r < 0.4:
            return self.add("binary_cross_entropy_with_logits({0}, sigmoid({1}))", [a, b], [],
                            dtype="f32")
        return self.add("mse_loss({0}, {1})", [a, b], [], dtype="f32")

    def fp32_list_op(self):
        """An op of PyTorch's fp32 autocast list: logsumexp, norm,
        cumsum, group_norm, cosine_similarity or one of the losses nll_loss,
        l1_loss, smooth_l1_loss, kl_div (all fp32 under AMP: f32 results)."""
        a = self.operand(lambda d, s: len(s) >= 1)
        s = self.shape_of(a)
        if not s:
            return None
        kind = self.rng.choice(["logsumexp", "norm", "cumsum", "group_norm", "cosine",
                                "nll_loss", "l1_loss", "smooth_l1_loss", "kl_div"])
        if kind in ("logsumexp", "norm"):
            dims = sorted(self.rng.sample(range(len(s)), self.rng.randint(1, len(s))))
            keep = self.rng.random() < 0.4
            out = [1 if i in dims else d for i, d in enumerate(s)] if keep else \
                [d for i, d in enumerate(s) if i not in dims]
            # The norms' gradient has a kink at 0 and p = inf ties: p = 2 or
            # 3 on a value kept away from 0.
            arg = "{0}" if kind == "logsumexp" else "{0} * {0} + 0.5"
            p = "" if kind == "logsumexp" else ", p=%s" % self.rng.choice(["2.0", "3.0"])
            return self.add("%s(%s%s, dims=[%s]%s)" % (
                kind, arg, p, ", ".join(map(str, [d - len(s) for d in dims])),
                ", keepdim=true" if keep else ""), [a], out)
        if kind == "cumsum":
            dim = self.rng.randrange(-len(s), len(s))
            return self.add("cumsum({0}, dim=%d)" % dim, [a], s)
        if kind == "group_norm":
            if len(s) < 2 or s[1] < 2:
                return None
            groups = self.rng.choice([g for g in range(1, s[1] + 1) if s[1] % g == 0])
            if numel(s[2:]) * s[1] // groups < 2:
                return None  # one element per group: a constant (see norm)
            w = self.new_param([s[1]], std=0.5)
            b = self.new_param([s[1]], std=0.1)
            return self.add("group_norm({0}, {1}, {2}, groups=%d)" % groups, [a, w, b], s)
        if kind == "cosine":
            dim = self.rng.randrange(-len(s), len(s))
            b = self.new_param(s) if self.rng.random() < 0.5 else self.new_input(s)
            out = [d for i, d in enumerate(s) if i != dim % len(s)]
            return self.add("cosine_similarity({0} + 0.5, {1}, dim=%d)" % dim, [a, b], out)
        if kind == "nll_loss":
            if len(s) != 2 or s[1] < 2:
                return None
            labels = self.p.fresh("labels")
            self.p.inputs.append((labels, "i32", [s[0]]))
            return self.add("nll_loss(log_softmax({0}), %s)" % labels, [a], [], dtype="f32")
        b = self.new_input(s)
        if kind == "kl_div":
            if len(s) < 2:
                return None
            return self.add("kl_div(log_softmax({0}), softmax({1}))", [a, b], [], dtype="f32")
        if kind == "l1_loss":
            return self.add("l1_loss({0}, {1})", [a, b], [], dtype="f32")
        return self.add("smooth_l1_loss({0}, {1}, beta=0.5)", [a, b], [], dtype="f32")

    def build(self, n_ops):
        makers = [self.unary, self.unary, self.binary, self.binary, self.matmul, self.conv,
                  self.pool2d, self.reduce, self.norm, self.norm, self.shape_op,
                  self.shape_op, self.embedding, self.cast, self.loss_op, self.seed2,
                  self.fp32_list_op]
        while len(self.p.stmts) < n_ops:
            self.rng.choice(makers)()
        self.p.training = self.rng.random() < 0.5 and bool(self.p.params)
        if self.rng.random() < 0.5:
            self.p.optimizer = "sgd(lr = %g, momentum = %g)" % (
                self.rng.choice([0.01, 0.05]), self.rng.choice([0.0, 0.9]))
        else:
            self.p.optimizer = "adamw(lr = %g, weight_decay = %g)" % (
                self.rng.choice([0.001, 0.01]), self.rng.choice([0.0, 0.01]))
        return self.p


def promote(dtypes):
    if not dtypes:
        return "f32"
    s = set(dtypes)
    if len(s) == 1:
        return dtypes[0]
    return "f32"


def broadcast(a, b):
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    return [max(x, y) for x, y in zip(a, b)]


def generate(seed, index, amp_pins=False, ampc=None):
    rng = random.Random(seed * 100003 + index)
    return Generator(rng, "fuzz%d" % index, amp_pins, ampc).build(rng.randint(1, 7))


# ---------------------------------------------------------------------------
# Shrinking.
# ---------------------------------------------------------------------------

def without(prog, i):
    """`prog` without statement i: its readers read an operand of the same
    type, or a new input of the statement's type."""
    p = copy.deepcopy(prog)
    st = p.stmts.pop(i)
    types = p.types()
    same = [o for o in st["operands"] if types.get(o) == (st["dtype"], st["shape"])]
    if same:
        repl = same[0]
    else:
        repl = p.fresh("x")
        p.inputs.append((repl, st["dtype"], st["shape"]))
    for other in p.stmts:
        other["operands"] = [repl if o == st["name"] else o for o in other["operands"]]
    return prune(p)


def prune(p):
    used = set()
    for st in p.stmts:
        used.update(st["operands"])
        used.update(tok for tok in st["template"].replace("(", " ").replace(")", " ")
                    .replace(",", " ").split())
    p.inputs = [x for x in p.inputs if x[0] in used] or p.inputs[:1]
    p.params = [x for x in p.params if x[0] in used]
    p.buffers = [x for x in p.buffers if x[0] in used]
    if not p.params:
        p.training = False
    return p


def shrink(prog, fails):
    """The smallest program reachable by removing statements for which
    `fails(program)` still holds."""
    changed = True
    while changed:
        changed = False
        for i in range(len(prog.stmts) - 1, -1, -1):
            if len(prog.stmts) <= 1:
                break
            candidate = without(prog, i)
            try:
                if fails(candidate):
                    prog, changed = candidate, True
                    break
            except Exception:
                continue
        if not changed and prog.training:
            candidate = copy.deepcopy(prog)
            candidate.training = False
            try:
                if fails(candidate):
                    prog, changed = candidate, True
            except Exception:
                pass
    return prog


def kind_of(problem):
    """What a problem is about: "loss", "param", "output", "loss_scale",
    "skipped", "error" or "crash" (names and numbers left out)."""
    words = problem.replace(":", " ").split()
    if words[0] == "step":
        return words[2] if len(words) > 2 else "loss"
    return words[0]


def fuzz(ampc, count, seed, amp_flags, save=None, verbose=False):
    """Runs `count` random programs through ampc and the reference; prints
    and saves a minimal reproducer of every disagreement. Returns the exit
    code (0: all agree)."""
    import tgdiff
    amp = tgdiff.amp_mode(amp_flags)
    failures = ambiguous = 0
    for i in range(count):
        prog = generate(seed, i, amp_pins=amp != "off", ampc=ampc)

        def problems_of(p):
            c = tgdiff.Case(p.name, p.render(), steps=5, seed=seed + i)
            try:
                cmp, tol, margin = tgdiff.check_case(ampc, c, amp_flags)
            except (RuntimeError, tgdiff.ref.InputError) as e:
                return ["error: %s" % e], math.inf
            except Exception as e:  # the reference itself failed
                return ["crash: %s: %s" % (type(e).__name__, e)], math.inf
            return cmp.problems(tol), margin

        problems, margin = problems_of(prog)
        if problems and margin < tgdiff.MARGIN:
            ambiguous += 1
            if verbose:
                print("ambiguous %s (f16 overflow margin %.2g%%), not counted" %
                      (prog.name, 100 * margin))
            continue
        if not problems:
            if verbose:
                print("ok %s: %d statements%s" % (prog.name, len(prog.stmts),
                                                   ", training" if prog.training else ""))
            continue
        failures += 1
        kinds = {kind_of(p) for p in problems}

        def still_fails(p):
            # The same kind of disagreement, not another one met on the way.
            found, m = problems_of(p)
            return m >= tgdiff.MARGIN and bool(kinds & {kind_of(x) for x in found})

        small = shrink(prog, still_fails)
        text = small.render()
        print("DISAGREE %s [%s] (seed %d, program %d); minimal reproducer:" %
              (prog.name, " ".join(amp_flags) or "--amp=off", seed, i))
        print("  " + text.replace("\n", "\n  ").rstrip())
        for p in problems_of(small)[0][:6]:  # what the reproducer shows
            print("  -> " + p)
        if verbose:
            for p in problems[:6]:
                print("  (the original program: %s)" % p)
        if save:
            os.makedirs(save, exist_ok=True)
            with open(os.path.join(save, "%s.tg" % prog.name), "w") as f:
                f.write("# tgdiff fuzz --seed %d, program %d, %s\n" %
                        (seed, i, " ".join(amp_flags) or "--amp=off"))
                f.write(text)
    print("%d random programs, %d disagreements, %d ambiguous (not counted)" %
          (count, failures, ambiguous))
    return 1 if failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="write random valid .tg programs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--out", default="-")
    ap.add_argument("--pins", action="store_true", help="pin some ops (@f32/@f16/@bf16)")
    ap.add_argument("--ampc", help="the ampc binary whose ops to use (default: $AMPC, PATH, "
                                   "build/bin)")
    args = ap.parse_args(argv)
    for i in range(args.count):
        text = generate(args.seed, i, args.pins, args.ampc).render()
        if args.out == "-":
            sys.stdout.write(text + "\n")
        else:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "fuzz%d.tg" % i), "w") as f:
                f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
