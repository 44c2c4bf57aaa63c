#!/usr/bin/env python3
"""Checks ampc's reference AMP policy against PyTorch's autocast test lists.

Reads the op names of PyTorch's CUDA autocast lists (autocast-lists.txt,
`LIST NAME` lines) and, for every name ampc can spell, compiles a one-op
graph whose inputs have the dtypes that list uses (f32 for the fp16 lists,
f16 for the fp32 lists, f32 and f16 for the promote lists) with
`--amp=MODE --amp-policy=reference --emit=report`, and checks the result
dtype of the op against what the list expects (the low type for the fp16
lists, f32 for the fp32 and promote lists, bool for comparisons).

Every list name that is also the name of a `.tg` op (`ampc --list-ops`) must
have a program here, so an op added to the language is checked as soon as it
exists; names whose PyTorch function differs from the `.tg` op of the same
name are listed in UNRELATED with the reason.

  check_autocast_lists.py AMPC LISTS.txt fp16|bf16
"""

import json
import os
import subprocess
import sys
import tempfile

# list name -> (.tg expression, operand names with shapes, tg op it builds,
# expected result kind: "low" (the AMP type), "f32" or "bool").
PROGRAMS = {
    # fp16 lists: f32 inputs.
    "conv1d": ("conv1d(x, w)", [("x", [2, 3, 8]), ("w", [4, 3, 3])], "conv1d"),
    "conv3d": ("conv3d(x, w)", [("x", [1, 3, 4, 4, 4]), ("w", [4, 3, 3, 3, 3])], "conv3d"),
    "conv_transpose1d": ("conv_transpose1d(x, w)", [("x", [2, 3, 8]), ("w", [3, 4, 3])],
                         "conv_transpose1d"),
    "conv_transpose3d": ("conv_transpose3d(x, w)",
                         [("x", [1, 3, 4, 4, 4]), ("w", [3, 4, 3, 3, 3])], "conv_transpose3d"),
    "prelu": ("prelu(x, w)", [("x", [2, 8, 4]), ("w", [8])], "prelu"),
    "addmm": ("addmm(c, a, b)", [("c", [8]), ("a", [8, 8]), ("b", [8, 8])], "addmm"),
    "addmv": ("addmv(c, a, v)", [("c", [8]), ("a", [8, 8]), ("v", [8])], "addmv"),
    "addr": ("addr(c, u, v)", [("c", [8, 8]), ("u", [8]), ("v", [8])], "addr"),
    "addbmm": ("addbmm(c, a, b)", [("c", [8, 8]), ("a", [2, 8, 8]), ("b", [2, 8, 8])],
               "addbmm"),
    "baddbmm": ("baddbmm(c, a, b)", [("c", [2, 8, 8]), ("a", [2, 8, 8]), ("b", [2, 8, 8])],
                "baddbmm"),
    "conv2d": ("conv2d(x, w)", [("x", [2, 3, 8, 8]), ("w", [4, 3, 3, 3])], "conv2d"),
    "conv_transpose2d": ("conv_transpose2d(x, w)", [("x", [2, 3, 8, 8]), ("w", [3, 4, 3, 3])],
                         "conv_transpose2d"),
    "matmul": ("matmul(a, b)", [("a", [8, 8]), ("b", [8, 8])], "matmul"),
    "__matmul__": ("a @ b", [("a", [8, 8]), ("b", [8, 8])], "matmul"),
    "mm": ("mm(a, b)", [("a", [8, 8]), ("b", [8, 8])], "mm"),
    "mv": ("mv(a, v)", [("a", [8, 8]), ("v", [8])], "mv"),
    "bmm": ("bmm(a, b)", [("a", [8, 8, 8]), ("b", [8, 8, 8])], "bmm"),
    # chain_matmul is a chain of mm; `y` is the last one.
    "chain_matmul": ("chain_matmul(a, b, c)", [("a", [8, 8]), ("b", [8, 8]), ("c", [8, 8])],
                     "mm"),
    "linear": ("linear(x, w, b)", [("x", [8, 8]), ("w", [8, 8]), ("b", [8])], "linear"),
    # fp32 lists: f16 inputs.
    "exp": ("exp(x)", [("x", [8])], "exp"),
    "expm1": ("expm1(x)", [("x", [8])], "expm1"),
    "log": ("log(x)", [("x", [8])], "log"),
    "log1p": ("log1p(x)", [("x", [8])], "log1p"),
    "reciprocal": ("reciprocal(x)", [("x", [8])], "reciprocal"),
    "rsqrt": ("rsqrt(x)", [("x", [8])], "rsqrt"),
    "pow": ("pow(a, b)", [("a", [8]), ("b", [8])], "pow"),
    "softmax": ("softmax(x, dim=0)", [("x", [8])], "softmax"),
    "log_softmax": ("log_softmax(x, dim=0)", [("x", [8])], "log_softmax"),
    "layer_norm": ("layer_norm(x, w, b)", [("x", [8, 8]), ("w", [8]), ("b", [8])],
                   "layer_norm"),
    "sum": ("sum(x)", [("x", [8])], "sum"),
    "softplus": ("softplus(x)", [("x", [8])], "softplus"),
    "mse_loss": ("mse_loss(a, b)", [("a", [8, 8]), ("b", [8, 8])], "mse_loss"),
    "binary_cross_entropy_with_logits": ("binary_cross_entropy_with_logits(a, b)",
                                         [("a", [8, 8]), ("b", [8, 8])],
                                         "binary_cross_entropy_with_logits"),
    # The reductions, norms and losses of the fp32 lists. An operand
    # with a third field has that dtype whatever the list (class labels).
    "logsumexp": ("logsumexp(x, dims=[1])", [("x", [4, 8])], "logsumexp"),
    "cumsum": ("cumsum(x, dim=-1)", [("x", [4, 8])], "cumsum"),
    "norm": ("norm(x, dims=[1])", [("x", [4, 8])], "norm"),
    "group_norm": ("group_norm(x, w, b, groups=2)",
                   [("x", [2, 4, 3]), ("w", [4]), ("b", [4])], "group_norm"),
    "cosine_similarity": ("cosine_similarity(a, b)", [("a", [4, 8]), ("b", [4, 8])],
                          "cosine_similarity"),
    "kl_div": ("kl_div(a, b)", [("a", [4, 8]), ("b", [4, 8])], "kl_div"),
    "nll_loss": ("nll_loss(x, labels)", [("x", [4, 8]), ("labels", [4], "i32")], "nll_loss"),
    "l1_loss": ("l1_loss(a, b)", [("a", [4, 8]), ("b", [4, 8])], "l1_loss"),
    "smooth_l1_loss": ("smooth_l1_loss(a, b)", [("a", [4, 8]), ("b", [4, 8])],
                       "smooth_l1_loss"),
    # Promote lists: the first operand f32, the second f16 (cat: f16, f32).
    "add": ("add(a, b)", [("a", [8]), ("b", [8])], "add"),
    "mul": ("mul(a, b)", [("a", [8]), ("b", [8])], "mul"),
    "div": ("div(a, b)", [("a", [8]), ("b", [8])], "div"),
    "cat": ("concat(a, b, dim=0)", [("a", [8]), ("b", [8])], "concat"),
    "eq": ("equal(a, b)", [("a", [8]), ("b", [8])], "equal"),
    "ne": ("not_equal(a, b)", [("a", [8]), ("b", [8])], "not_equal"),
    "lt": ("less(a, b)", [("a", [8]), ("b", [8])], "less"),
    "le": ("less_equal(a, b)", [("a", [8]), ("b", [8])], "less_equal"),
    "gt": ("greater(a, b)", [("a", [8]), ("b", [8])], "greater"),
    "ge": ("greater_equal(a, b)", [("a", [8]), ("b", [8])], "greater_equal"),
    # banned: f32 inputs.
    "binary_cross_entropy": ("binary_cross_entropy(a, b)", [("a", [8, 8]), ("b", [8, 8])],
                             "binary_cross_entropy"),
}

# List names that are `.tg` op names with another meaning: no check.
UNRELATED = {
    # torch.equal compares whole tensors to one Python bool; `.tg` `equal`
    # is the elementwise torch.eq (checked as `eq`).
    "equal": "torch.equal is a whole-tensor test; .tg equal is torch.eq",
}

# Where ampc differs from the list on purpose: the list's expectation is
# replaced by ampc's, with the reason printed.
DIFFERENCES = {
    # PyTorch refuses binary_cross_entropy under autocast (it is unsafe in
    # f16); ampc computes it in f32 instead, as it does the other losses.
    "binary_cross_entropy": ("f32", "PyTorch refuses it under autocast; ampc computes it in f32"),
}
# Not in the lists, differing from PyTorch on purpose too: `mean` is in
# ampc's fp32 class (PyTorch's autocast leaves it out of the lists, so it
# runs in its input's type); that is tested in test/Transforms/AMP.

COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def expected(list_name, name, low):
    if name in DIFFERENCES:
        return DIFFERENCES[name][0]
    if name in COMPARISONS:
        return "bool"
    if list_name in ("torch_fp16", "nn_fp16", "methods_fp16"):
        return low
    return "f32"


def input_dtypes(list_name, name, count):
    if list_name in ("torch_fp16", "nn_fp16", "methods_fp16", "banned"):
        return ["f32"] * count
    if list_name in ("torch_fp32", "nn_fp32"):
        return ["f16"] * count
    # The promote lists: cat and stack take (f16, f32), the others (f32, f16).
    first, second = ("f16", "f32") if name in ("cat", "stack") else ("f32", "f16")
    return [first] + [second] * (count - 1)


def main():
    ampc, lists_path, mode = sys.argv[1:4]
    low = {"fp16": "f16", "bf16": "bf16"}[mode]
    ops = json.loads(subprocess.run([ampc, "--list-ops"], check=True, capture_output=True,
                                    text=True).stdout)["ops"]
    language = {o["language"] for o in ops if o["language"]}
    entries = []
    with open(lists_path) as f:
        for line in f:
            line = line.split("#")[0].split()
            if line:
                entries.append((line[0], line[1]))
    checked = mismatches = 0
    work = tempfile.mkdtemp(prefix="autocast-lists-")
    for list_name, name in entries:
        if name in UNRELATED:
            print("unrelated %s %s: %s" % (list_name, name, UNRELATED[name]))
            continue
        if name not in PROGRAMS:
            if name in language:
                print("MISSING %s %s: a .tg op of this name has no program here"
                      % (list_name, name))
                mismatches += 1
            continue
        expr, operands, op = PROGRAMS[name]
        if op not in language:
            continue  # ampc has no such op.
        dtypes = input_dtypes(list_name, name, len(operands))
        dtypes = [o[2] if len(o) > 2 else t for o, t in zip(operands, dtypes)]
        sig = ", ".join("%s: %s[%s]" % (o[0], t, ", ".join(map(str, o[1])))
                        for o, t in zip(operands, dtypes))
        path = os.path.join(work, name + ".tg")
        with open(path, "w") as f:
            f.write("graph g(%s) {\n  y = %s\n  return y\n}\n" % (sig, expr))
        run = subprocess.run([ampc, path, "--amp=" + mode, "--amp-policy=reference",
                              "--emit=report"], capture_output=True, text=True)
        want = expected(list_name, name, low)
        got = None
        if run.returncode == 0:
            for entry in json.loads(run.stdout)["ops"]:
                if entry["name"] == "y" and entry["op"] == op:
                    got = entry["result"]
        checked += 1
        note = ""
        if name in DIFFERENCES:
            note = " (differs on purpose: %s)" % DIFFERENCES[name][1]
        if got == want:
            print("ok %s %s: tg.%s(%s) -> %s%s" % (list_name, name, op, ", ".join(dtypes),
                                                     got, note))
        else:
            mismatches += 1
            print("FAIL %s %s: tg.%s(%s) -> %s, expected %s%s %s" % (
                list_name, name, op, ", ".join(dtypes), got, want, note,
                run.stderr.strip()))
    print("%d list entries checked, %d mismatches" % (checked, mismatches))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
