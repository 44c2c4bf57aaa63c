#!/usr/bin/env python3
"""Differential tests of the tensor types f64, u8, i8, i16 (and the integer
arithmetic of i32, i64) against PyTorch, through `ampc run`.

  dtypes_diff.py AMPC WORKDIR [--amp=off|fp16|bf16]

ints:  dtypes/ints.tg on values beyond 2^24 and 2^53 and at the edges of
       each width; every output must equal PyTorch's bit for bit (dtype too).
f64:   dtypes/train_f64.tg trained 5 steps from the same .npy params and
       inputs as a PyTorch f64 model of it; the final params and the last
       loss must agree within 1e-9 (relative to their largest magnitude).
nn64:  dtypes/train_f64_nn.tg (embedding, layer_norm, max_pool2d,
       avg_pool2d, the p-norm and cumsum in f64) trained 5 steps against
       PyTorch f64, the same check as f64.
adamw64: the same network (train_f64_adamw.tg) trained by AdamW with
       clip_grad_norm_ (max_norm 0.5), all in f64.
loss64: dtypes/train_f64_loss.tg (group_norm, logsumexp, cosine_similarity,
       nll_loss, kl_div, l1_loss, smooth_l1_loss in f64) trained 5 steps
       against PyTorch f64, the same check as f64.
bce64: dtypes/train_f64_bce.tg (prelu, binary_cross_entropy and
       binary_cross_entropy_with_logits in f64) trained 5 steps against
       PyTorch f64, the same check as f64.
u8:    dtypes/u8_image.tg (cast(img, to = f32) / 255.0 into a small
       classifier) trained 5 steps; it must run and its params must change.
Prints one line per case and a summary; exits 1 on any disagreement.
"""
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dtypes")
F64_TOL = 1e-9


def run(ampc, args):
    r = subprocess.run([ampc, "run"] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stdout + r.stderr)
        raise SystemExit("ampc run failed (%d)" % r.returncode)
    return r.stdout


def run_on(ampc, work, program, inputs, extra, params=None, steps=None):
    """Runs dtypes/PROGRAM on the named .npy inputs, outputs under work/out;
    with `params` (saved as f64 under work/pin) it trains `steps` steps and
    returns the folder of the trained params (work/pout)."""
    args = [os.path.join(HERE, program), "--outputs-out", os.path.join(work, "out")]
    pout = None
    if params is not None:
        pin, pout = os.path.join(work, "pin"), os.path.join(work, "pout")
        os.makedirs(pin, exist_ok=True)
        for k, v in params.items():
            np.save(os.path.join(pin, k + ".npy"), v.astype(np.float64))
        args += ["--steps", str(steps), "--params-in", pin, "--params-out", pout]
    for k, v in inputs.items():
        path = os.path.join(work, k + ".npy")
        np.save(path, v)
        args += ["--input", "%s=%s" % (k, path)]
    run(ampc, args + extra)
    return pout


def exact(tag, work, want):
    """Counts the outputs that differ from torch's in dtype, shape or bits."""
    bad = 0
    for i, w in enumerate(want):
        got = np.load(os.path.join(work, "out", "output_%d.npy" % i))
        wn = w.numpy()
        if not (got.dtype == wn.dtype and got.shape == wn.shape and np.array_equal(got, wn)):
            bad += 1
            print("%s output %d: ampc %s %r, torch %s %r" % (tag, i, got.dtype, got, wn.dtype, wn))
    print("%s: %d outputs, %d differ" % (tag, len(want), bad))
    return bad


def ints(ampc, work, extra):
    rng = np.random.default_rng(7)
    inputs = {
        "a": np.array([200, 100, 255, 0, 17], np.uint8),
        "b": np.array([100, 200, 1, 0, 250], np.uint8),
        "c": np.array([2**53 + 1, -(2**40) - 3, 2**62, -(2**63), 12345], np.int64),
        "d": np.array([3, 2**20 + 1, 2, -1, 2**53 + 3], np.int64),
        "e": np.array([-128, 100, 127, -1, 5], np.int8),
        "f": np.array([255, 200, 1, 255, 0], np.uint8),
        "h": np.array([32767, -32768, 300, -2, 9], np.int16),
        "m": np.array([7, -7, 2**24 + 1, 2**31 - 1, -(2**31)], np.int32),
        "n": np.array([2, 2, 1, 1, 3], np.int32),
        "x": (rng.standard_normal(5) * 300).astype(np.float32),
        "y": rng.uniform(-127, 127, 5).astype(np.float32),
        "z": rng.uniform(0, 255, 5).astype(np.float32),
    }
    run_on(ampc, work, "ints.tg", inputs, extra)
    t = {k: torch.from_numpy(v) for k, v in inputs.items()}
    a, b, c, d, e, f, h, m, n, x, y, z = (t[k] for k in "abcdefhmnxyz")
    want = [
        a + b, a - b, a * b,                        # u8 wraps
        c + d, c * d, c - d, -c, torch.abs(c),       # i64 beyond 2^53, wraps
        torch.maximum(c, d), torch.minimum(c, d),
        e + f, e * f,                                # i8 with u8 gives i16
        h * h, h + 1,                                # i16 wraps
        m / n, m * n,                                # true division -> f32
        c.sum(), m.sum(), a.sum(),                   # integer sums are i64
        torch.amax(c), c > d, c == d, torch.where(c > d, c, d),
        z.to(torch.uint8), y.to(torch.int8), x.to(torch.int16), c.to(torch.float64),
        c.to(torch.int32), a.to(torch.int8), h.to(torch.uint8),
        torch.argmax(c, dim=0).to(torch.int32),     # ampc's argmax is i32
        torch.cat([h, f]), torch.cat([m, c]), torch.cat([f, x]),  # promoted
    ]
    return exact("ints", work, want)


def ipow(ampc, work, extra):
    """dtypes/ipow.tg: pow of integers, bit for bit against torch.pow."""
    inputs = {
        "c": np.array([7, -3, 1, -1, 0, 2**31 + 5], np.int64),
        "d": np.array([40, 41, -5, -7, -1, 3], np.int64),
        "e": np.array([3, -2, 5, 0, -1, 7], np.int8),
        "f": np.array([200, 3, 255, 0, 1, 2], np.uint8),
        "g": np.array([3, 7, 2, 0, 200, 9], np.uint8),
        "m": np.array([9, -2, 0, 1, 11, -1], np.int32),
    }
    run_on(ampc, work, "ipow.tg", inputs, extra)
    c, d, e, f, g, m = (torch.from_numpy(inputs[k]) for k in "cdefgm")
    want = [torch.pow(c, d), torch.pow(e, e), torch.pow(f, g), torch.pow(f, e),
            torch.pow(m, m), torch.pow(c, 3)]
    return exact("ipow", work, want)


class Mlp64(torch.nn.Module):
    """train_f64.tg in PyTorch f64."""

    def __init__(self, p):
        super().__init__()
        self.w1, self.b1, self.w2, self.b2 = (
            torch.nn.Parameter(torch.from_numpy(p[k].copy())) for k in ("w1", "b1", "w2", "b2"))

    def forward(self, x, labels):
        h = torch.tanh(x @ self.w1 + self.b1)
        g = torch.relu(torch.nn.functional.linear(h, self.w2.t(), self.b2))
        logits = g * 2.0 - torch.sigmoid(g)
        return (torch.nn.functional.cross_entropy(logits, labels)
                + torch.mean(torch.softmax(logits, dim=1) * logits)
                + torch.nn.functional.mse_loss(torch.log_softmax(logits, dim=1),
                                               torch.exp(logits) * 0.0))


def f64(ampc, work, extra, steps=5):
    rng = np.random.default_rng(11)
    params = {"w1": rng.normal(0, 0.3, (20, 32)), "b1": rng.normal(0, 0.1, 32),
              "w2": rng.normal(0, 0.3, (32, 5)), "b2": rng.normal(0, 0.1, 5)}
    x = rng.standard_normal((16, 20))
    labels = rng.integers(0, 5, 16).astype(np.int64)
    pout = run_on(ampc, work, "train_f64.tg", {"x": x, "labels": labels}, extra,
                  params, steps)
    model = Mlp64(params)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    xt, lt = torch.from_numpy(x), torch.from_numpy(labels)
    for _ in range(steps):
        opt.zero_grad()
        loss = model(xt, lt)
        loss.backward()
        opt.step()
    worst, bad = 0.0, 0
    got_loss = np.load(os.path.join(work, "out", "output_0.npy"))
    pairs = [("loss", got_loss, loss.detach().numpy())]
    pairs += [(k, np.load(os.path.join(pout, k + ".npy")), getattr(model, k).detach().numpy())
              for k in params]
    for name, got, want in pairs:
        if got.dtype != np.float64:
            print("f64 %s: ampc wrote %s" % (name, got.dtype))
            bad += 1
            continue
        err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
        worst = max(worst, err)
        if not err <= F64_TOL:
            print("f64 %s: relative error %.3g > %g" % (name, err, F64_TOL))
            bad += 1
    print("f64: %d tensors after %d steps, %d beyond %g" % (len(pairs), steps, bad, F64_TOL))
    print("f64: worst relative error %.2g" % worst)
    return bad


class Nn64(torch.nn.Module):
    """train_f64_nn.tg in PyTorch f64."""

    NAMES = ("table", "lw", "lb", "scale", "w")

    def __init__(self, p):
        super().__init__()
        for k in self.NAMES:
            setattr(self, k, torch.nn.Parameter(torch.from_numpy(p[k].copy())))

    def forward(self, img, ids, labels):
        F = torch.nn.functional
        e = F.layer_norm(F.embedding(ids, self.table), (8,), self.lw, self.lb, eps=1e-5)
        ef = e.reshape(4, 24)
        p = F.max_pool2d(img * self.scale, kernel_size=2)
        q = F.avg_pool2d(p, kernel_size=3, stride=1, padding=1)
        pq = q.reshape(4, 18)
        z = pq / torch.norm(pq, p=2.0, dim=[1], keepdim=True)
        f = torch.cat([ef, torch.cumsum(z, dim=1)], dim=1)
        return (F.cross_entropy(f @ self.w, labels)
                + torch.mean(torch.norm(e, p=3.0, dim=[2])) * 0.1)


def nn64(ampc, work, extra, steps=5, adamw=False):
    rng = np.random.default_rng(13)
    params = {"table": rng.normal(0, 0.5, (10, 8)), "lw": rng.normal(1, 0.1, 8),
              "lb": rng.normal(0, 0.1, 8), "scale": rng.normal(1, 0.1, (1, 2, 1, 1)),
              "w": rng.normal(0, 0.3, (42, 5))}
    img = rng.standard_normal((4, 2, 6, 6))
    ids = rng.integers(0, 10, (4, 3)).astype(np.int64)
    labels = rng.integers(0, 5, 4).astype(np.int64)
    tg = "train_f64_adamw.tg" if adamw else "train_f64_nn.tg"
    tag = "adamw64" if adamw else "nn64"
    pout = run_on(ampc, work, tg, {"img": img, "ids": ids, "labels": labels}, extra,
                  params, steps)
    model = Nn64(params)
    if adamw:
        opt = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.05)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    it, dt, lt = (torch.from_numpy(v) for v in (img, ids, labels))
    for _ in range(steps):
        opt.zero_grad()
        loss = model(it, dt, lt)
        loss.backward()
        if adamw:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
    pairs = [("loss", np.load(os.path.join(work, "out", "output_0.npy")), loss.detach().numpy())]
    pairs += [(k, np.load(os.path.join(pout, k + ".npy")), getattr(model, k).detach().numpy())
              for k in Nn64.NAMES]
    return report(tag, pairs, steps)


class Loss64(torch.nn.Module):
    """train_f64_loss.tg in PyTorch f64."""

    NAMES = ("gw", "gb", "w", "v")

    def __init__(self, p):
        super().__init__()
        for k in self.NAMES:
            setattr(self, k, torch.nn.Parameter(torch.from_numpy(p[k].copy())))

    def forward(self, x, t, labels):
        F = torch.nn.functional
        g = F.group_norm(x, 2, self.gw, self.gb, eps=1e-5)
        h = g.reshape(4, 12) @ self.w
        logp = F.log_softmax(h, dim=-1)
        l1 = F.nll_loss(logp, labels)
        l2 = F.kl_div(logp, F.softmax(t, dim=-1), reduction="batchmean")
        l3 = F.l1_loss(h, t)
        l4 = F.smooth_l1_loss(h, t, beta=0.3, reduction="sum")
        l5 = torch.mean(torch.logsumexp(h, dim=[1]))
        l6 = torch.mean(F.cosine_similarity(h, self.v, dim=1))
        return l1 + l2 + l3 + l4 * 0.1 + l5 * 0.1 - l6


def loss64(ampc, work, extra, steps=5):
    rng = np.random.default_rng(29)
    params = {"gw": rng.normal(1, 0.1, 4), "gb": rng.normal(0, 0.1, 4),
              "w": rng.normal(0, 0.3, (12, 6)), "v": rng.normal(0, 0.5, (4, 6))}
    inputs = {"x": rng.standard_normal((4, 4, 3)), "t": rng.standard_normal((4, 6)),
              "labels": rng.integers(0, 6, 4).astype(np.int64)}
    pout = run_on(ampc, work, "train_f64_loss.tg", inputs, extra, params, steps)
    model = Loss64(params)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    xt, tt, lt = (torch.from_numpy(inputs[k]) for k in ("x", "t", "labels"))
    # Both branches of smooth_l1 (|h - t| below and above beta) are taken.
    with torch.no_grad():
        g = torch.nn.functional.group_norm(xt, 2, model.gw, model.gb, eps=1e-5)
        below = int(((g.reshape(4, 12) @ model.w - tt).abs() < 0.3).sum())
    if not 0 < below < 24:
        print("loss64: smooth_l1 has %d of 24 terms below beta (FAILED)" % below)
        return 1
    for _ in range(steps):
        opt.zero_grad()
        loss = model(xt, tt, lt)
        loss.backward()
        opt.step()
    pairs = [("loss", np.load(os.path.join(work, "out", "output_0.npy")), loss.detach().numpy())]
    pairs += [(k, np.load(os.path.join(pout, k + ".npy")), getattr(model, k).detach().numpy())
              for k in Loss64.NAMES]
    return report("loss64", pairs, steps)


class Bce64(torch.nn.Module):
    """train_f64_bce.tg in PyTorch f64."""

    NAMES = ("w", "slope", "v")

    def __init__(self, p):
        super().__init__()
        for k in self.NAMES:
            setattr(self, k, torch.nn.Parameter(torch.from_numpy(p[k].copy())))

    def forward(self, x, y):
        F = torch.nn.functional
        h = F.prelu(x @ self.w, self.slope)
        l1 = F.binary_cross_entropy(torch.sigmoid(h), torch.sigmoid(self.v))
        l2 = F.binary_cross_entropy_with_logits(h * 2.0, y)
        return l1 + l2


def bce64(ampc, work, extra, steps=5):
    rng = np.random.default_rng(31)
    params = {"w": rng.normal(0, 0.5, (6, 3)), "slope": rng.normal(0.25, 0.1, 3),
              "v": rng.normal(0, 0.5, (4, 3))}
    inputs = {"x": rng.standard_normal((4, 6)), "y": rng.uniform(0, 1, (4, 3))}
    pout = run_on(ampc, work, "train_f64_bce.tg", inputs, extra, params, steps)
    model = Bce64(params)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    xt, yt = (torch.from_numpy(inputs[k]) for k in ("x", "y"))
    # Both branches of prelu (x > 0 and x <= 0) are taken.
    with torch.no_grad():
        pos = int((xt @ model.w > 0).sum())
    if not 0 < pos < 12:
        print("bce64: prelu has %d of 12 inputs above 0 (FAILED)" % pos)
        return 1
    for _ in range(steps):
        opt.zero_grad()
        loss = model(xt, yt)
        loss.backward()
        opt.step()
    pairs = [("loss", np.load(os.path.join(work, "out", "output_0.npy")), loss.detach().numpy())]
    pairs += [(k, np.load(os.path.join(pout, k + ".npy")), getattr(model, k).detach().numpy())
              for k in Bce64.NAMES]
    return report("bce64", pairs, steps)


def report(tag, pairs, steps):
    worst, bad = 0.0, 0
    for name, got, want in pairs:
        if got.dtype != np.float64:
            print("%s %s: ampc wrote %s" % (tag, name, got.dtype))
            bad += 1
            continue
        err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
        worst = max(worst, err)
        if not err <= F64_TOL:
            print("%s %s: relative error %.3g > %g" % (tag, name, err, F64_TOL))
            bad += 1
    print("%s: %d tensors after %d steps, %d beyond %g" % (tag, len(pairs), steps, bad, F64_TOL))
    print("%s: worst relative error %.2g" % (tag, worst))
    return bad


def adamw64(ampc, work, extra):
    return nn64(ampc, work, extra, adamw=True)


def u8(ampc, work, extra, steps=5):
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (8, 3, 4, 4)).astype(np.uint8)
    labels = rng.integers(0, 4, 8).astype(np.int64)
    np.save(os.path.join(work, "img.npy"), img)
    np.save(os.path.join(work, "ul.npy"), labels)
    pout0, pout = os.path.join(work, "u0"), os.path.join(work, "u1")
    common = [os.path.join(HERE, "u8_image.tg"), "--input", "img=" + os.path.join(work, "img.npy"),
              "--input", "labels=" + os.path.join(work, "ul.npy"), "--seed", "5"] + extra
    run(ampc, common + ["--steps", "1", "--params-out", pout0])
    out = run(ampc, common + ["--steps", str(steps), "--params-out", pout])
    w0 = np.load(os.path.join(pout0, "w.npy"))
    w1 = np.load(os.path.join(pout, "w.npy"))
    moved = float(np.max(np.abs(w1.astype(np.float64) - w0.astype(np.float64))))
    ok = moved > 0 and np.all(np.isfinite(w1.astype(np.float64)))
    print("u8: trained %d steps, w moved by %.3g%s" % (steps, moved, "" if ok else " (FAILED)"))
    return 0 if ok else 1


def main():
    ampc, work = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    bad = 0
    for name, fn in (("ints", ints), ("ipow", ipow), ("f64", f64), ("nn64", nn64), ("adamw64", adamw64),
                     ("loss64", loss64), ("bce64", bce64), ("u8", u8)):
        sub = os.path.join(work, name)
        os.makedirs(sub, exist_ok=True)
        bad += fn(ampc, sub, extra)
    print("dtypes: %s" % ("all agree" if bad == 0 else "%d disagreements" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
