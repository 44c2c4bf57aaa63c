#!/usr/bin/env python3
"""Hand-built single-op models for the converters and the folding of
shape-like inputs added for ONNX's conformance suite (shape-inputs.test,
elementwise-more.test), with their inputs and NumPy's results.

  conf_models.py DIR   writes NAME.onnx, NAME.<input>.npy and NAME.ref.npy
  conf_models.py compare REF.npy GOT.npy [RTOL]
                       exit 1 unless GOT has REF's shape and values (within
                       RTOL of REF's largest magnitude; default 0: equal)
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)

    def save(name, op, inputs, ref, attrs=None, opset=14, out_type=F):
        """One node `op` reading `inputs` (name -> array), its output y."""
        vis = []
        for n, a in inputs.items():
            t = {np.dtype(np.float32): F, np.dtype(np.int64): I64, np.dtype(bool): B}[a.dtype]
            vis.append(helper.make_tensor_value_info(n, t, list(a.shape)))
            np.save(os.path.join(out, "%s.%s.npy" % (name, n)), a)
        node = helper.make_node(op, list(inputs), ["y"], name=name, **(attrs or {}))
        y = helper.make_tensor_value_info("y", out_type, list(ref.shape))
        g = helper.make_graph([node], name, vis, [y])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
        np.save(os.path.join(out, name + ".ref.npy"), ref)

    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    # Shape-like inputs given as graph inputs, read from their files.
    save("reshape_in", "Reshape", {"x": x, "s": np.array([4, -1], np.int64)}, x.reshape(4, 15))
    save("slice_in", "Slice", {"x": x, "starts": np.array([1, 0], np.int64),
                               "ends": np.array([3, 5], np.int64),
                               "axes": np.array([0, 2], np.int64),
                               "steps": np.array([1, 2], np.int64)}, x[1:3, :, 0:5:2])
    save("unsqueeze_in", "Unsqueeze", {"x": x, "axes": np.array([0, -1], np.int64)},
         x[None, ..., None])
    save("expand_in", "Expand", {"x": x[:, :1, :], "s": np.array([2, 3, 4, 5], np.int64)},
         np.broadcast_to(x[:, :1, :], (2, 3, 4, 5)).copy())
    save("tile_in", "Tile", {"x": x, "r": np.array([1, 2, 1], np.int64)}, np.tile(x, (1, 2, 1)))
    # A float bound given as a graph input: read from its file.
    lo = np.array(-0.5, np.float32)
    save("clip_in", "Clip", {"x": x, "lo": lo}, np.maximum(x, lo))

    # Elementwise ops composed from tg ops.
    p = rng.random((3, 4)) < 0.5
    q = rng.random((4,)) < 0.5
    save("and", "And", {"p": p, "q": q}, p & q, out_type=B)
    save("or", "Or", {"p": p, "q": q}, p | q, out_type=B)
    save("xor", "Xor", {"p": p, "q": q}, p ^ q, out_type=B)
    special = np.array([1.0, np.nan, np.inf, -np.inf, -2.0, 0.0], np.float32)
    save("isnan", "IsNaN", {"x": special}, np.isnan(special), out_type=B)
    save("isinf", "IsInf", {"x": special}, np.isinf(special), out_type=B)
    save("isinf_neg", "IsInf", {"x": special}, np.isneginf(special),
         attrs={"detect_positive": 0}, out_type=B)
    a, b, c = x, x[0], x[:, :1, :] * 2
    save("sum3", "Sum", {"a": a, "b": b, "c": c}, a + b + c)
    save("mean3", "Mean", {"a": a, "b": b, "c": c}, (a + b + c) / np.float32(3))
    save("thresholded_relu", "ThresholdedRelu", {"x": x}, np.where(x > 0.5, x, 0).astype(np.float32),
         attrs={"alpha": 0.5})
    save("softsign", "Softsign", {"x": x}, x / (1 + np.abs(x)))
    save("shrink", "Shrink", {"x": x},
         np.where(x < -0.3, x + 0.1, np.where(x > 0.3, x - 0.1, 0)).astype(np.float32),
         attrs={"lambd": 0.3, "bias": 0.1})
    save("argmin", "ArgMin", {"x": x}, np.argmin(x, axis=1)[:, None, :], attrs={"axis": 1},
         out_type=I64)
    save("argmin_flat", "ArgMin", {"x": x}, np.argmin(x, axis=-1), attrs={"axis": -1, "keepdims": 0},
         out_type=I64)
    save("size", "Size", {"x": x}, np.array(x.size, np.int64), out_type=I64)
    # select_last_index: ties (rounded values) take the last index.
    t = np.round(x * 2).astype(np.float32)
    last = lambda v, ax: v.shape[ax] - 1 - np.argmax(np.flip(v, ax), axis=ax)
    save("argmax_last", "ArgMax", {"x": t}, last(t, 1)[:, None, :],
         attrs={"axis": 1, "select_last_index": 1}, out_type=I64)
    save("argmin_last", "ArgMin", {"x": t}, last(-t, 2),
         attrs={"axis": 2, "keepdims": 0, "select_last_index": 1}, out_type=I64)
    gi = np.array([[[0, -1, 2, 1, 0]], [[3, 3, -4, 0, 1]]], np.int64)  # [2, 1, 5], axis 1 of [3, 4, 5]
    save("gather_elements", "GatherElements", {"x": x, "i": gi},
         np.take_along_axis(x[:2], np.where(gi < 0, gi + 4, gi), axis=1), attrs={"axis": 1})
    oi = np.array([[1, -1], [0, 2]], np.int64)
    oh = np.where(np.arange(3)[None, :, None] == np.where(oi < 0, oi + 3, oi)[:, None, :],
                  np.float32(5), np.float32(-1)).astype(np.float32)
    save("onehot", "OneHot", {"i": oi, "depth": np.array(3, np.int64),
                              "v": np.array([-1, 5], np.float32)}, oh, attrs={"axis": 1})
    si = np.array([[[1, -1, 0, 2, 3]], [[0, 0, 3, -4, 1]]], np.int64)  # [2, 1, 5], axis 1 of [3, 4, 5]
    su = rng.standard_normal(si.shape).astype(np.float32)
    ref = x.copy()
    np.put_along_axis(ref[:2], np.where(si < 0, si + 4, si), su, axis=1)
    save("scatter_elements", "ScatterElements", {"x": x, "i": si, "u": su}, ref, attrs={"axis": 1},
         opset=16)
    di = np.array([[1, 1, 0, 1]], np.int64)  # [1, 4], axis 1 of [2, 4]: index 1 three times
    du = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    ref = x[0, :2, :4].copy()
    np.add.at(ref[0], di[0], du[0])
    save("scatter_add", "ScatterElements", {"x": x[0, :2, :4].copy(), "i": di, "u": du}, ref,
         attrs={"axis": 1, "reduction": "add"}, opset=16)
    # TopK: two outputs; ties (rounded values) in index order.
    tx = np.round(x * 2).astype(np.float32)
    order = np.argsort(-tx, axis=-1, kind="stable")[..., :3]
    np.save(os.path.join(out, "topk.x.npy"), tx)
    np.save(os.path.join(out, "topk.k.npy"), np.array([3], np.int64))
    np.save(os.path.join(out, "topk.ref.npy"), np.take_along_axis(tx, order, axis=-1))
    np.save(os.path.join(out, "topk.ref1.npy"), order.astype(np.int64))
    node = helper.make_node("TopK", ["x", "k"], ["y", "yi"], name="topk")
    g = helper.make_graph([node], "topk", [helper.make_tensor_value_info("x", F, [3, 4, 5]),
                                           helper.make_tensor_value_info("k", I64, [1])],
                          [helper.make_tensor_value_info("y", F, [3, 4, 3]),
                           helper.make_tensor_value_info("yi", I64, [3, 4, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    with open(os.path.join(out, "topk.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    train_model(out, rng)
    save("eyelike", "EyeLike", {"x": x[0]}, np.eye(4, 5, k=1, dtype=np.float32), attrs={"k": 1})


def train_model(out, rng):
    """One SGD step (lr 1, loss mean(g * g), Inputs/train_conf.tg) through
    the differentiable new converters: g = GatherElements(Mean(Softsign(w *
    x), Shrink(w), ThresholdedRelu(w)), idx, axis 1), w a parameter; the
    updated w from NumPy's gradient."""
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    w = rng.standard_normal((3, 4, 5)).astype(np.float32)
    idx = rng.integers(-4, 4, size=(3, 2, 5)).astype(np.int64)
    nodes = [helper.make_node("Mul", ["w", "x"], ["u"], name="mul"),
             helper.make_node("Softsign", ["u"], ["s1"], name="softsign"),
             helper.make_node("Shrink", ["w"], ["s2"], name="shrink", lambd=0.3, bias=0.1),
             helper.make_node("ThresholdedRelu", ["w"], ["s3"], name="trelu", alpha=0.2),
             helper.make_node("Mean", ["s1", "s2", "s3"], ["y"], name="mean"),
             helper.make_node("GatherElements", ["y", "idx"], ["g"], name="gather", axis=1)]
    g = helper.make_graph(nodes, "train_conf", [helper.make_tensor_value_info("x", F, [3, 4, 5])],
                          [helper.make_tensor_value_info("g", F, [3, 2, 5])],
                          initializer=[numpy_helper.from_array(w, "w"),
                                       numpy_helper.from_array(idx, "idx")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    with open(os.path.join(out, "train_conf.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    np.save(os.path.join(out, "train_conf.x.npy"), x)
    u = w * x
    y = (u / (1 + np.abs(u)) + np.where(w < -0.3, w + 0.1, np.where(w > 0.3, w - 0.1, 0))
         + np.where(w > 0.2, w, 0)) / 3
    i = np.where(idx < 0, idx + 4, idx)
    gv = np.take_along_axis(y, i, axis=1)
    dg = 2 * gv / gv.size
    dy = np.zeros_like(y)
    for a in range(3):
        for b in range(2):
            for c in range(5):
                dy[a, i[a, b, c], c] += dg[a, b, c]
    dw = dy * (x / (1 + np.abs(u)) ** 2 + (np.abs(w) > 0.3) + (w > 0.2)) / 3
    np.save(os.path.join(out, "train_conf.w0.npy"), w)
    np.save(os.path.join(out, "train_conf.w1.npy"), (w - dw).astype(np.float32))


def compare(ref, got, rtol):
    r, g = np.load(ref), np.load(got)
    if r.shape != g.shape:
        sys.exit("shape %s, expected %s" % (g.shape, r.shape))
    if r.dtype.kind != g.dtype.kind:
        sys.exit("dtype %s, expected %s" % (g.dtype, r.dtype))
    if rtol == 0:
        ok = np.array_equal(r, g, equal_nan=r.dtype.kind == "f")
    else:
        scale = max(float(np.max(np.abs(r))), 1e-30)
        ok = float(np.max(np.abs(r.astype(np.float64) - g))) <= rtol * scale
    if not ok:
        sys.exit("values differ:\n%s\nexpected\n%s" % (g, r))
    print("ok")


if __name__ == "__main__":
    if sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    else:
        main(sys.argv[1])
