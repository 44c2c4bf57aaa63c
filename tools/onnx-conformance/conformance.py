#!/usr/bin/env python3
"""ONNX's node conformance tests through `ampc run`.

Generates ONNX's node test cases from the installed onnx package (Debian's
python3-onnx; nothing of ONNX's is checked in), runs every case whose inputs
and outputs are tensors through

    ampc run model.onnx --input NAME=FILE.npy ... --outputs-out DIR

and compares ampc's outputs with the case's expected ones (rtol 1e-3,
atol 1e-5; integers and booleans exactly). Each case is

  pass     exit 0 and every output matches (shape, element kind, values)
  wrong    exit 0 and some output does not match, or is missing
  refused  exit 1 with a located error (`FILE:...: error: ...`, or an
           error naming the input file that does not fit the model)
  crash    anything else (a signal, another exit code, exit 1 without a
           located error, a time-out)

Exits 1 when any case is wrong or crashes, or (with --expect) when fewer
cases pass than the recorded count. --write-docs regenerates the marked
conformance section of docs/onnx.md; --record rewrites the count file.

Run it with /usr/bin/python3 (it needs numpy and onnx).
"""

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np

BEGIN = "<!-- conformance table: begin (tools/onnx-conformance/conformance.py --write-docs) -->"
END = "<!-- conformance table: end -->"

# Families ampc does not take at all, with the reason the table gives.
OUT_OF_SCOPE = [
    ("strings", "ampc's tensors are numbers; no string type",
     {"StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit",
      "TfIdfVectorizer"}),
    ("sequences and optionals", "values that are lists of tensors or optional; ampc's values are tensors",
     {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
      "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence",
      "ConcatFromSequence", "Optional", "OptionalGetElement",
      "OptionalHasElement"}),
    ("quantized types", "8-bit integer quantization; ampc's precisions are f32, f16 and bf16",
     {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
      "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"}),
    ("control flow", "subgraphs (If, Loop, Scan); ampc's graphs are straight-line",
     {"If", "Loop", "Scan"}),
    ("random generators", "ONNX's random streams; ampc's randomness is its own counter-based one",
     {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
      "Bernoulli", "Multinomial"}),
    ("training operators", "the ai.onnx.preview.training domain; ampc's own optimizers "
     "(`minimize ... with sgd(...)`) update the parameters",
     {"Adagrad", "Adam", "Momentum", "Gradient"}),
]


def located(stderr, model_path):
    """The first error located in the model (`MODEL:...: error: ` or
    `MODEL: error: `), or None."""
    return (re.search(r"^" + re.escape(model_path) + r"(:[^\n]*?)?: error: ", stderr, re.M) or
            # an input file that does not match the model's input (ONNX's
            # CastLike expanded cases give `like` a shape the model does
            # not declare)
            re.search(r"^ampc: error: (?=input '[^']*' from ')", stderr, re.M))


def generate(data_dir):
    """ONNX's node cases into data_dir/node (once)."""
    node = os.path.join(data_dir, "node")
    if os.path.isdir(node) and os.listdir(node):
        return node
    tmp = data_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    # The case generators use numpy aliases that numpy 1.24 removed.
    code = ("import numpy as np\n"
            "for n, t in (('float', float), ('int', int), ('bool', bool), ('object', object)):\n"
            "    if not hasattr(np, n): setattr(np, n, t)\n"
            "import sys\n"
            "from onnx.backend.test import cmd_tools\n"
            "sys.argv = ['cmd_tools', 'generate-data', '-o', sys.argv[1]]\n"
            "cmd_tools.main()\n")
    subprocess.run([sys.executable, "-c", code, tmp], check=True,
                   stdout=subprocess.DEVNULL)
    os.makedirs(data_dir, exist_ok=True)
    shutil.rmtree(node, ignore_errors=True)
    os.rename(os.path.join(tmp, "node"), node)
    shutil.rmtree(tmp, ignore_errors=True)
    return node


def case_op(name, model, single_ops):
    """The op a case tests: its node's type, or for an expanded case (a
    function inlined into its body's nodes) the op it expands."""
    ops = [n.op_type for n in model.graph.node]
    if len(ops) == 1:
        return ops[0]
    base = name[:-len("_expanded")] if name.endswith("_expanded") else None
    if base and base in single_ops:
        return single_ops[base]
    # The op whose name prefixes the case's name (test_batchnorm_... is
    # BatchNormalization's when it has one).
    flat = name[len("test_"):].replace("_", "").lower()
    best = None
    for op in ops:
        if flat.startswith(op.lower()) and (best is None or len(op) > len(best)):
            best = op
    return best or ops[0] if ops else "(no node)"


def out_of_scope(op):
    for family, reason, ops in OUT_OF_SCOPE:
        if op in ops:
            return family, reason
    return None


def load_tensor(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def short_reason(m, stderr):
    """The located error, reduced to what the table shows."""
    line = stderr[m.end():].splitlines()[0]
    # "ONNX node 'N' (Op): why" -> "why"
    line = re.sub(r"^ONNX node '[^']*' \([^)]*\): ", "", line)
    line = re.sub(r"\(in ONNX node '[^']*', [^)]*\)", "", line)
    line = re.sub(r"'[^']*'", "'…'", line) if "op type" not in line else line
    # The importer's longest messages, shortened for the table.
    line = re.sub(r"^op type '(\w+)' is not supported by ampc's ONNX importer$",
                  r"no converter for `\1`", line)
    line = re.sub(r"^'[^']*': input '[^']*' has (\w+) elements \(ampc takes [^)]*\)$",
                  r"an input of type \1", line)
    line = re.sub(r"^'[^']*' uses opset (\d+) of the default domain; .*$",
                  r"the model's opset \1 (ampc imports 13 to 17)", line)
    line = re.sub(r"^the model's opset (\d+) defines (\w+) as of opset (\d+), which differs.*$",
                  r"`\2` of opset \3 differs from opsets 13 to 17", line)
    line = re.sub(r"which must be known at import time: give it with .*$",
                  "which must be known at import time", line)
    line = re.sub(r"\[[-\d, ]*\]", "[…]", line)
    line = re.sub(r"\b(opset|value|dim|output|input|axis|rank) -?\d+\b", r"\1 N", line).strip()
    return line[:160]


def run_case(args, case_dir, name, op):
    import onnx
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    work = os.path.join(args.work, "cases", name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "out"))
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    data = os.path.join(case_dir, "test_data_set_0")
    cmd = [args.ampc, "run", os.path.join(case_dir, "model.onnx")]
    for k, iname in enumerate(inputs):
        arr = load_tensor(os.path.join(data, "input_%d.pb" % k))
        npy = os.path.join(work, "input_%d.npy" % k)
        np.save(npy, arr)
        cmd += ["--input", "%s=%s" % (iname, npy)]
    cmd += ["--outputs-out", os.path.join(work, "out")]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=args.timeout, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        return name, op, "crash", "time-out after %d s" % args.timeout
    if p.returncode == 0:
        expected = sorted(glob.glob(os.path.join(data, "output_*.pb")),
                          key=lambda s: int(re.findall(r"(\d+)\.pb$", s)[0]))
        for k, e in enumerate(expected):
            want = load_tensor(e)
            got_path = os.path.join(work, "out", "output_%d.npy" % k)
            if not os.path.exists(got_path):
                return name, op, "wrong", "output %d not written" % k
            got = np.load(got_path)
            if model.graph.output[k].type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
                why = compare_bf16(got, want)
            else:
                why = compare(got, want)
            if why:
                return name, op, "wrong", "output %d: %s" % (k, why)
        shutil.rmtree(work, ignore_errors=True)
        return name, op, "pass", ""
    m = located(p.stderr, os.path.join(case_dir, "model.onnx"))
    if p.returncode == 1 and m:
        shutil.rmtree(work, ignore_errors=True)
        return name, op, "refused", short_reason(m, p.stderr)
    if p.returncode < 0:
        why = "signal %s" % signal.Signals(-p.returncode).name
    else:
        why = "exit %d" % p.returncode
    tail = p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else []
    return name, op, "crash", why + (": " + tail[0][:150] if tail else "")


def compare(got, want):
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    kind = lambda a: "f" if a.dtype.kind in "fc" else ("b" if a.dtype.kind == "b" else "i")
    if kind(got) != kind(want):
        return "element type %s, expected %s" % (got.dtype, want.dtype)
    if kind(want) != "f":
        if not np.array_equal(got.astype(np.int64), want.astype(np.int64)):
            return "values differ"
        return None
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    if not np.allclose(g, w, rtol=1e-3, atol=1e-5, equal_nan=True):
        bad = ~np.isclose(g, w, rtol=1e-3, atol=1e-5, equal_nan=True)
        err = np.abs(g - w)[bad]
        return "%d of %d values differ (largest %.3g)" % (bad.sum(), g.size, np.nanmax(err) if err.size else 0)
    return None


def compare_bf16(got, want):
    """BFLOAT16 outputs: onnx reads them as their bit patterns (uint16).
    ONNX 1.12's generator makes its expected bf16 values by truncating f32,
    ampc rounds to nearest even (as PyTorch does, and ONNX from 1.14): the
    values are compared within one bf16 unit in the last place."""
    def widen(a):
        if a.dtype == np.uint16 or a.dtype == np.int16:
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a.astype(np.float32)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    g, w = widen(got).astype(np.float64), widen(want).astype(np.float64)
    if not np.allclose(g, w, rtol=2.0 ** -7, atol=0, equal_nan=True):
        return "bf16 values differ by more than one unit in the last place"
    return None


def table(results, skipped):
    by_op = collections.OrderedDict()
    for name, op, status, why in sorted(results, key=lambda r: r[1].lower()):
        by_op.setdefault(op, []).append((status, why))
    lines = ["| ONNX op | cases | passed | why the rest are refused (cases) |",
             "| --- | ---: | ---: | --- |"]
    for op, rs in by_op.items():
        passed = sum(1 for s, _ in rs if s == "pass")
        reasons = collections.Counter(why for s, why in rs if s != "pass")
        scope = out_of_scope(op)
        if scope and passed == 0:
            text = "out of scope: " + scope[0]
        else:
            text = "; ".join("%s (%d)" % (w.replace("|", "\\|"), n) for w, n in reasons.most_common())
        lines.append("| `%s` | %d | %d | %s |" % (op, len(rs), passed, text))
    return lines


def write_docs(path, results, skipped, counts):
    with open(path) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        sys.exit("conformance.py: %s has no conformance markers" % path)
    total = sum(counts.values())
    body = [BEGIN, "",
            "%d cases run: **%d pass**, %d wrong, %d refused, %d crash."
            % (total, counts["pass"], counts["wrong"], counts["refused"], counts["crash"]),
            ""]
    body += table(results, skipped)
    body += ["", "Out of scope (the families ampc does not take, and why):", ""]
    for family, reason, ops in OUT_OF_SCOPE:
        body.append("- %s (%s): %s." % (family, ", ".join("`%s`" % o for o in sorted(ops)), reason))
    if skipped:
        body += ["", "Not run (%d cases whose inputs or outputs are sequences, optionals or "
                 "strings, which `ampc run` cannot be given):" % len(skipped), ""]
        c = collections.Counter(op for _, op in skipped)
        body.append(", ".join("`%s` %d" % (op, n) for op, n in sorted(c.items())) + ".")
    body += ["", END]
    start = doc.index(BEGIN)
    end = doc.index(END) + len(END)
    with open(path, "w") as f:
        f.write(doc[:start] + "\n".join(body) + doc[end:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ampc", required=True, help="the ampc binary")
    ap.add_argument("--work", required=True, help="a scratch directory (the cases are generated under it once)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per case")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--expect", help="the recorded pass count: fail below it")
    ap.add_argument("--record", action="store_true", help="write the pass count into --expect's file")
    ap.add_argument("--write-docs", metavar="ONNX_MD", help="regenerate the marked table in this file")
    ap.add_argument("--results", help="write each case's result as JSON lines here")
    args = ap.parse_args()
    args.ampc = os.path.abspath(args.ampc)
    args.work = os.path.abspath(args.work)
    import onnx

    node = generate(os.path.join(args.work, "data"))
    names = sorted(d for d in os.listdir(node)
                   if os.path.exists(os.path.join(node, d, "test_data_set_0", "input_0.pb")))
    models = {n: onnx.load(os.path.join(node, n, "model.onnx")) for n in names}
    single = {n: m.graph.node[0].op_type for n, m in models.items() if len(m.graph.node) == 1}
    todo, skipped = [], []
    for n in names:
        if args.filter and args.filter not in n:
            continue
        m = models[n]
        op = case_op(n, m, single)
        vals = list(m.graph.input) + list(m.graph.output)
        if not all(v.type.HasField("tensor_type") and v.type.tensor_type.elem_type != onnx.TensorProto.STRING
                   for v in vals):
            skipped.append((n, op))
            continue
        todo.append((n, op))

    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = [ex.submit(run_case, args, os.path.join(node, n), n, op) for n, op in todo]
        for f in concurrent.futures.as_completed(futs):
            results.append(f.result())
    results.sort()
    counts = collections.Counter({"pass": 0, "wrong": 0, "refused": 0, "crash": 0})
    counts.update(r[2] for r in results)
    if args.results:
        with open(args.results, "w") as f:
            for name, op, status, why in results:
                f.write(json.dumps({"case": name, "op": op, "status": status, "why": why}) + "\n")
    for name, op, status, why in results:
        if status in ("wrong", "crash"):
            print("%s: %s (%s): %s" % (status.upper(), name, op, why))
    print("cases: %d run, %d not run (sequence/optional/string values)" % (len(results), len(skipped)))
    print("pass: %d  wrong: %d  refused: %d  crash: %d"
          % (counts["pass"], counts["wrong"], counts["refused"], counts["crash"]))
    if args.write_docs:
        write_docs(args.write_docs, results, skipped, counts)
    status = 0
    if counts["wrong"] or counts["crash"]:
        status = 1
    if args.expect:
        if args.record:
            with open(args.expect, "w") as f:
                f.write("%d\n" % counts["pass"])
        else:
            with open(args.expect) as f:
                want = int(f.read().split()[0])
            if counts["pass"] < want:
                print("FAIL: %d cases pass, fewer than the recorded %d (%s)" % (counts["pass"], want, args.expect))
                status = 1
            elif counts["pass"] > want:
                print("note: %d cases pass, more than the recorded %d: raise it with --record" % (counts["pass"], want))
    return status


if __name__ == "__main__":
    sys.exit(main())
