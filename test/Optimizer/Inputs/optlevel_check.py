"""Checks of the --opt-level tests (no third-party modules).

  types REPORT LEVEL SRC     the training graphs of report REPORT (of source
                             SRC) have the types the opt-level table gives
  mean LOG REF REL           the mean loss of LOG is within REL (relative)
                             of REF's
  falls LOG                  the mean loss of the last 5 steps is below the
                             first step's loss
  no-param-cast LOWERED      no ampc_cast_fwd in a step reads a param slot
  model-copies CKPT          every f16 state NAME.model of checkpoint CKPT
                             is its f32 master NAME rounded, bit for bit
  first-loss LOG REF         step 1's loss of LOG equals REF's, bit for bit
"""
import json
import re
import sys

# The ops O2 keeps in f32.
LOSSES = {"cross_entropy", "mse_loss", "binary_cross_entropy",
          "binary_cross_entropy_with_logits", "nll_loss"}
KEPT_O2 = LOSSES | {"batch_norm"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def load_log(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip() and '"loss"' in l]


def training_graphs(src):
    names = []
    for chunk in re.split(r"^graph\s+", open(src).read(), flags=re.M)[1:]:
        if "minimize" in chunk:
            names.append(re.match(r"\w+", chunk).group(0))
    return names


def types(report, level, src):
    rep = json.load(open(report))
    graphs = rep if isinstance(rep, list) else [rep]
    names = training_graphs(src)
    checked = 0
    for g in graphs:
        if g["graph"] not in names:
            continue
        low = "f16" if g["amp"] == "fp16" else "bf16"
        for op in g["ops"]:
            compute = op.get("compute")
            if compute not in ("f32", "f16", "bf16"):
                continue  # integer ops
            want = low
            if level == "O2" and op["op"] in KEPT_O2:
                want = "f32"
            if compute != want:
                fail("%s %s at %s computes in %s, want %s" %
                     (level, op["op"], op["loc"], compute, want))
            checked += 1
        for p in g["params"]:
            want = {"O2": ("f32", low), "O3": (low, low)}[level]
            if (p["master"], p["model"]) != want:
                fail("%s param %s: master %s model %s, want %s/%s" %
                     ((level, p["name"], p["master"], p["model"]) + want))
        if level == "O3" and "loss_scale" in g and g["loss_scale"] != {
                "mode": "static", "scale": 1.0}:
            fail("O3 loss scale %r" % g["loss_scale"])
        if level == "O2" and g.get("loss_scale", {}).get("mode") != (
                "dynamic" if low == "f16" else None):
            fail("O2 loss scale %r" % g.get("loss_scale"))
    if not checked:
        fail("no float op checked")
    print("OK types %s: %d ops" % (level, checked))


def mean(log, ref, rel):
    a = [r["loss"] for r in load_log(log)]
    b = [r["loss"] for r in load_log(ref)]
    if len(a) != len(b) or not a:
        fail("%d steps vs %d" % (len(a), len(b)))
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    d = abs(ma - mb) / abs(mb)
    if not d <= float(rel):
        fail("mean loss %g vs %g: relative difference %g" % (ma, mb, d))
    print("OK mean %g vs %g (relative difference %.4f) over %d steps" %
          (ma, mb, d, len(a)))


def falls(log):
    rows = [r["loss"] for r in load_log(log)]
    tail = sum(rows[-5:]) / len(rows[-5:])
    if not tail < rows[0]:
        fail("loss %g -> %g (mean of the last 5) does not fall" % (rows[0], tail))
    print("OK falls %g -> %g" % (rows[0], tail))


def no_param_cast(lowered):
    text = open(lowered).read()
    casts = 0
    programs = re.split(r"rt\.program ", text)[1:]
    if not programs:
        fail("no rt.program")
    for prog in programs:
        params = set(re.findall(r"rt\.slot param @([\w.]+)", prog))
        if "rt.step {" not in prog:
            fail("no rt.step in a program")
        step = prog[prog.index("rt.step {"):]
        for m in re.finditer(
                r'rt\.call "ampc_cast_fwd"\(#rt\.context, %([\w.]+), '
                r'#rt\.dtype<\w+>, array<[^>]*>, \d+ : i32, %([\w.]+),', step):
            casts += 1
            if m.group(2) in params:
                fail("a cast kernel in the step reads param '%s'" % m.group(2))
    print("OK no param cast in the step (%d other cast calls)" % casts)


def model_copies(ckpt):
    import os
    import struct
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "Run", "Inputs"))
    import runcheck
    slots = runcheck.read_ckpt(ckpt)
    n = 0
    for name, data in slots.items():
        if not name.endswith(".model"):
            continue
        master = slots[name[:-len(".model")]]
        count = len(master) // 4
        if len(data) != 2 * count:
            fail("%s is not an f16 copy of its master" % name)
        floats = struct.unpack("<%df" % count, master)
        want = struct.pack("<%de" % count, *floats)
        if data != want:
            fail("%s is not its master rounded to f16" % name)
        n += 1
    if not n:
        fail("no model copies in " + ckpt)
    print("OK %d model copies are their masters rounded" % n)


def first_loss(log, ref):
    a, b = load_log(log)[0]["loss"], load_log(ref)[0]["loss"]
    if a != b:
        fail("step 1: loss %r vs %r" % (a, b))
    print("OK first loss %r" % a)


def main(argv):
    cmd, args = argv[1], argv[2:]
    {"types": types, "mean": mean, "falls": falls,
     "no-param-cast": no_param_cast, "model-copies": model_copies,
     "first-loss": first_loss}[cmd](*args)


if __name__ == "__main__":
    main(sys.argv)
