"""Checks `ampc --list-ops` against the compiler itself: every record is
well formed, and every elementwise op of the language compiles from a `.tg`
call with its default keyword attributes, to the op the record names, and
differentiates (so an op added as one record is callable and has a
gradient). Prints one line per checked op; exits 1 on the first problem."""

import json
import os
import subprocess
import sys
import tempfile

ampc = sys.argv[1]
doc = json.loads(subprocess.run([ampc, "--list-ops"], check=True, capture_output=True,
                                text=True).stdout)
assert doc["format"] == "ampc-ops" and doc["version"] == 1
CLASSES = {"lower", "fp32", "promote", "follow"}
ROLES = {"none", "seed", "gradient_consumer", "unscale", "scale_update"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


for op in doc["ops"]:
    name = op["name"]
    if op["amp_class"] not in CLASSES:
        fail("%s: amp_class %r" % (name, op["amp_class"]))
    if op["loss_scale_role"] not in ROLES:
        fail("%s: loss_scale_role %r" % (name, op["loss_scale_role"]))
    if op["training"] and op["language"] not in (None, "grad"):
        fail("%s: a training op callable as %r" % (name, op["language"]))
    if any(not k.startswith("ampc_") for k in op["kernels"]):
        fail("%s: kernels %r" % (name, op["kernels"]))
    for n in op["converts_on_load"] + op["in_place"]:
        if n != "*" and n not in op["operands"]:
            fail("%s: no operand %r" % (name, n))
    if op["max_operands"] is not None and op["min_operands"] > op["max_operands"]:
        fail("%s: operands %d..%d" % (name, op["min_operands"], op["max_operands"]))
print("%d op records" % len(doc["ops"]))

with tempfile.TemporaryDirectory() as tmp:
    for op in doc["ops"]:
        kind, callee, name = op["elementwise"], op["language"], op["name"]
        if not kind:
            continue
        args = "x" if kind == "unary" else "x, y"
        # The cast keeps the loss a float for ops with a bool result (the
        # comparisons), and is the identity for the others.
        src = ("graph g(x: f32[2, 3], y: f32[3]) -> f32[] {\n"
               "  v = %s(%s)\n  w = cast(v, to=f32) * x\n  loss = mean(w * w)\n"
               "  gx = grad(loss, x)\n"
               "  return loss\n}\n" % (callee, args))
        path = os.path.join(tmp, callee + ".tg")
        with open(path, "w") as f:
            f.write(src)
        proc = subprocess.run([ampc, path, "--emit=json", "--pipeline=false"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            fail("%s(%s) does not compile: %s" % (callee, args, proc.stderr.strip()))
        graph = json.loads(proc.stdout)["graphs"][0]
        built = [o for o in graph["ops"] if o["op"] == name]
        if not built:
            fail("%s(%s) builds no %s" % (callee, args, name))
        attrs = built[0]["attrs"]
        for a in op["attributes"]:
            if "default" in a and a["default"] is not None and attrs.get(a["name"]) != a["default"]:
                fail("%s: attribute %s is %r, its default %r" % (name, a["name"],
                                                                attrs.get(a["name"]),
                                                                a["default"]))
        proc = subprocess.run([ampc, path, "--emit=mlir"], capture_output=True, text=True)
        if proc.returncode != 0:
            fail("%s: the training pipeline fails: %s" % (callee, proc.stderr.strip()))
        print("ok %s: %s(%s) -> %s" % (kind, callee, args, name))
