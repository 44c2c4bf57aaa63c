"""Numerical gradient checks of every op's backward rule through the real
pipeline (`ampc run` of a graph returning a loss and `grad(...)`): for each
case and a few random directions v, the central difference
(L(x + h v) - L(x - h v)) / 2h must match <grad L, v>.

  gradcheck.py AMPC WORKDIR [CASE...]

Losses are sum(y * y) of the op's result y (or the op's own scalar), in f32
(the language has no f64); h = 1e-2 with relative tolerance 2e-2.
"""
import os
import re
import random
import struct
import subprocess
import sys

# name: (inputs [(name, dtype, shape, kind)], expression, wrt)
# kinds: any (N(0,1) away from 0), pos (0.5..2), ids:N, labels:N
CASES = {
    "matmul": ([("a", "f32", [2, 3], "any"), ("b", "f32", [3, 2], "any")], "matmul(a, b)", ["a", "b"]),
    "matmul_batched": ([("a", "f32", [2, 2, 3], "any"), ("b", "f32", [3, 2], "any")], "matmul(a, b)", ["a", "b"]),
    "linear": ([("x", "f32", [2, 3], "any"), ("w", "f32", [2, 3], "any"), ("b", "f32", [2], "any")], "linear(x, w, b)", ["x", "w", "b"]),
    "conv2d": ([("x", "f32", [1, 1, 4, 4], "any"), ("w", "f32", [2, 1, 3, 3], "any"), ("b", "f32", [2], "any")],
               "conv2d(x, w, b, padding=1)", ["x", "w", "b"]),
    "conv2d_stride": ([("x", "f32", [1, 2, 4, 4], "any"), ("w", "f32", [1, 2, 2, 2], "any")],
                      "conv2d(x, w, stride=2)", ["x", "w"]),
    "add": ([("a", "f32", [2, 3], "any"), ("b", "f32", [3], "any")], "a + b", ["a", "b"]),
    "sub": ([("a", "f32", [2, 3], "any"), ("b", "f32", [2, 1], "any")], "a - b", ["a", "b"]),
    "mul": ([("a", "f32", [2, 3], "any"), ("b", "f32", [3], "any")], "a * b", ["a", "b"]),
    "div": ([("a", "f32", [2, 3], "any"), ("b", "f32", [3], "pos")], "a / b", ["a", "b"]),
    "maximum": ([("a", "f32", [2, 3], "any"), ("b", "f32", [2, 3], "any")], "maximum(a, b)", ["a", "b"]),
    "minimum": ([("a", "f32", [2, 3], "any"), ("b", "f32", [2, 3], "any")], "minimum(a, b)", ["a", "b"]),
    "pow": ([("a", "f32", [2, 3], "pos"), ("b", "f32", [2, 3], "any")], "pow(a, b)", ["a", "b"]),
    "neg": ([("x", "f32", [2, 3], "any")], "-x", ["x"]),
    "abs": ([("x", "f32", [2, 3], "any")], "abs(x)", ["x"]),
    "exp": ([("x", "f32", [2, 3], "any")], "exp(x)", ["x"]),
    "log": ([("x", "f32", [2, 3], "pos")], "log(x)", ["x"]),
    "sqrt": ([("x", "f32", [2, 3], "pos")], "sqrt(x)", ["x"]),
    "rsqrt": ([("x", "f32", [2, 3], "pos")], "rsqrt(x)", ["x"]),
    "relu": ([("x", "f32", [2, 3], "any")], "relu(x)", ["x"]),
    "gelu": ([("x", "f32", [2, 3], "any")], "gelu(x)", ["x"]),
    "gelu_tanh": ([("x", "f32", [2, 3], "any")], 'gelu(x, approximate="tanh")', ["x"]),
    "silu": ([("x", "f32", [2, 3], "any")], "silu(x)", ["x"]),
    "leaky_relu": ([("x", "f32", [2, 3], "any")], "leaky_relu(x, negative_slope=0.2)", ["x"]),
    "softplus": ([("x", "f32", [2, 3], "any")], "softplus(x, beta=2.0)", ["x"]),
    "sigmoid": ([("x", "f32", [2, 3], "any")], "sigmoid(x)", ["x"]),
    "tanh": ([("x", "f32", [2, 3], "any")], "tanh(x)", ["x"]),
    "sum": ([("x", "f32", [2, 3], "any")], "sum(x, dims=[1])", ["x"]),
    "mean": ([("x", "f32", [2, 3], "any")], "mean(x, dims=[0], keepdim=true)", ["x"]),
    "max": ([("x", "f32", [2, 3], "any")], "max(x, dims=[1])", ["x"]),
    "softmax": ([("x", "f32", [2, 3], "any")], "softmax(x)", ["x"]),
    "log_softmax": ([("x", "f32", [2, 3], "any")], "log_softmax(x, dim=0)", ["x"]),
    "layer_norm": ([("x", "f32", [2, 4], "any"), ("w", "f32", [4], "any"), ("b", "f32", [4], "any")],
                   "layer_norm(x, w, b)", ["x", "w", "b"]),
    "rms_norm": ([("x", "f32", [2, 4], "any"), ("w", "f32", [4], "any")], "rms_norm(x, w)", ["x", "w"]),
    "max_pool2d": ([("x", "f32", [1, 1, 4, 4], "any")], "max_pool2d(x, kernel=[2, 2])", ["x"]),
    "avg_pool2d": ([("x", "f32", [1, 1, 4, 4], "any")], "avg_pool2d(x, kernel=[3, 3], stride=[1, 1], padding=[1, 1])", ["x"]),
    "reshape": ([("x", "f32", [2, 3], "any")], "reshape(x, shape=[3, 2]) * reshape(x, shape=[3, 2])", ["x"]),
    "transpose": ([("x", "f32", [2, 3, 2], "any"), ("c", "f32", [3, 2, 2], "any")], "transpose(x, perm=[1, 2, 0]) * c", ["x"]),
    "concat": ([("a", "f32", [2, 3], "any"), ("b", "f32", [1, 3], "any")], "concat(a, b, dim=0) * concat(b, a, dim=0)", ["a", "b"]),
    "slice": ([("x", "f32", [2, 5], "any")], "slice(x, dim=1, start=1, end=4)", ["x"]),
    # Slices of one value: merged into one concat of their gradients where
    # they do not overlap (a partition, a gap of zeros), added where they do.
    "slices_partition": ([("x", "f32", [2, 6], "any")],
                         "slice(x, dim=1, start=0, end=2) * slice(x, dim=1, start=2, end=4) + slice(x, dim=1, start=4, end=6)", ["x"]),
    "slices_gap": ([("x", "f32", [3, 2, 5], "any")],
                   "slice(x, dim=2, start=0, end=2) * slice(x, dim=2, start=3, end=5)", ["x"]),
    "slices_overlap": ([("x", "f32", [2, 6], "any")],
                       "slice(x, dim=1, start=0, end=4) * slice(x, dim=1, start=2, end=6)", ["x"]),
    "embedding": ([("t", "f32", [4, 3], "any"), ("ids", "i32", [5], "ids:4")], "embedding(t, ids)", ["t"]),
    "cross_entropy": ([("z", "f32", [3, 4], "any"), ("lab", "i32", [3], "labels:4")], "cross_entropy(z, lab)", ["z"]),
    "mse_loss": ([("a", "f32", [2, 3], "any"), ("b", "f32", [2, 3], "any")], "mse_loss(a, b)", ["a", "b"]),
}


def write_npy(path, dtype, shape, values):
    descr, fmt = {"f32": ("<f4", "f"), "i32": ("<i4", "i")}[dtype]
    dims = "".join("%d, " % d for d in shape) if len(shape) == 1 else ", ".join(map(str, shape))
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def draw(rng, kind, n):
    if kind == "pos":
        return [rng.uniform(0.5, 2.0) for _ in range(n)]
    if kind.startswith("ids:") or kind.startswith("labels:"):
        m = int(kind.split(":")[1])
        return [rng.randrange(m) for _ in range(n)]
    out = []
    while len(out) < n:
        v = rng.gauss(0.0, 1.0)
        if abs(v) > 0.2 and all(abs(v - u) > 0.1 and abs(v + u) > 0.1 for u in out):
            out.append(v)
    return out


def run(ampc, graph, work, inputs, values):
    args = [ampc, "run", graph]
    for (name, dtype, shape, _), vals in zip(inputs, values):
        path = os.path.join(work, name + ".npy")
        write_npy(path, dtype, shape, vals)
        args += ["--input", "%s=%s" % (name, path)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    outputs = []
    for line in out.splitlines():
        if line.startswith("output "):
            outputs.append([float(v) for v in line.split(":", 1)[1].split()])
    return outputs


def check(ampc, work, name, rng, directions=2):
    # One run per case: the graph computes L(x) and its gradients, and
    # L(x + h v_k), L(x - h v_k) on perturbed copies of the inputs.
    inputs, expr, wrt = CASES[name]
    h = 1e-2
    base = [draw(rng, k, numel(s)) for _, _, s, k in inputs]
    dirs = [{w: [rng.gauss(0.0, 1.0) for _ in range(numel(s))]
             for w, _, s, _ in inputs if w in wrt} for _ in range(directions)]
    all_inputs, all_values = list(inputs), list(base)
    body = "  y = %s\n  loss = sum(y * y)\n" % expr
    body += "  %s = grad(loss, %s)\n" % (", ".join("g_" + w for w in wrt), ", ".join(wrt))
    extra = []
    for k, v in enumerate(dirs):
        for sign, tag in ((1, "p"), (-1, "m")):
            suffix = "_%s%d" % (tag, k)
            for (n, t, shp, kind), vals in zip(inputs, base):
                if n in wrt:
                    all_inputs.append((n + suffix, t, shp, kind))
                    all_values.append([a + sign * h * b for a, b in zip(vals, v[n])])
            e = re.sub(r"\b(%s)\b" % "|".join(wrt), lambda m: m.group(1) + suffix, expr)
            body += "  y%s = %s\n  loss%s = sum(y%s * y%s)\n" % (suffix, e, suffix, suffix, suffix)
            extra.append("loss" + suffix)
    params = ", ".join("%s: %s%s" % (n, t, list(s)) for n, t, s, _ in all_inputs)
    graph = os.path.join(work, name + ".tg")
    with open(graph, "w") as f:
        f.write("graph g(%s) {\n%s" % (params, body))
        f.write("  return loss, %s, %s\n}\n" % (", ".join("g_" + w for w in wrt), ", ".join(extra)))
    outs = run(ampc, graph, work, all_inputs, all_values)
    grads = dict(zip(wrt, outs[1:1 + len(wrt)]))
    losses = [o[0] for o in outs[1 + len(wrt):]]
    worst = 0.0
    for k, v in enumerate(dirs):
        fd = (losses[2 * k] - losses[2 * k + 1]) / (2 * h)
        an = sum(sum(g * d for g, d in zip(grads[w], v[w])) for w in wrt)
        err = abs(fd - an) / max(1.0, abs(an))
        worst = max(worst, err)
        if err > 2e-2:
            print("FAIL %s: finite difference %.6g, analytic %.6g" % (name, fd, an))
            return False
    print("OK %-16s worst relative error %.2e" % (name, worst))
    return True


def main():
    ampc, work = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or sorted(CASES)
    os.makedirs(work, exist_ok=True)
    rng = random.Random(1234)
    results = []
    for n in names:
        try:
            results.append(check(ampc, work, n, rng))
        except subprocess.CalledProcessError as e:
            print("FAIL %s: ampc exited %d: %s" % (n, e.returncode, e.stderr.strip()))
            results.append(False)
    ok = all(results)
    print("%d cases, %s" % (len(names), "all passed" if ok else "FAILURES"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
