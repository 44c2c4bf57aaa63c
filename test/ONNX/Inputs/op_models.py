#!/usr/bin/env python3
"""op_models.py DIR: small hand-built ONNX models (onnx.helper) for single
ops and attribute values that torch.onnx.export rarely writes, each
DIR/NAME.onnx with DIR/NAME.ref.npy (NumPy's result on DIR/x.npy, an
f32[2, 3, 4, 5] input named x, unless said otherwise)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def main(out):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    np.save(f"{out}/x.npy", x)
    X = ("x", F, [2, 3, 4, 5])

    def save(name, nodes, outputs, ref, inputs=(X,), inits=(), opset=14):
        graph = helper.make_graph(
            nodes, name, [helper.make_tensor_value_info(*i) for i in inputs],
            [helper.make_tensor_value_info(*o) for o in outputs],
            initializer=[numpy_helper.from_array(v, k) for k, v in inits])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        onnx.checker.check_model(model)
        onnx.save(model, f"{out}/{name}.onnx")
        np.save(f"{out}/{name}.ref.npy", np.asarray(ref, np.float32))

    # Flatten's axis counts from the input's rank when negative.
    for axis, shape in [(-1, [24, 5]), (-3, [2, 60]), (0, [1, 120]), (4, [120, 1])]:
        save(f"flatten_{axis}".replace("-", "m"),
             [helper.make_node("Flatten", ["x"], ["y"], name="flat", axis=axis)],
             [("y", F, shape)], x.reshape(shape))

    # Max and Min are variadic: one input or more, on run-time values and
    # folded at import (here into a Reshape's shape).
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    for op, fn in [("Max", np.maximum), ("Min", np.minimum)]:
        save(f"{op.lower()}3", [helper.make_node(op, ["x", "a", "b"], ["y"], name="m")],
             [("y", F, [2, 3, 4, 5])], fn(fn(x, a), b), inits=[("a", a), ("b", b)])
        save(f"{op.lower()}1", [helper.make_node(op, ["x"], ["y"], name="m")],
             [("y", F, [2, 3, 4, 5])], x)
    # The last input decides (the first two alone give another shape).
    shape_inits = [("s1", np.array([6, 1], np.int64)), ("s2", np.array([1, 5], np.int64)),
                   ("s3", np.array([24, 2], np.int64)), ("s4", np.array([120, 10], np.int64)),
                   ("s5", np.array([40, 5], np.int64)), ("s6", np.array([24, 20], np.int64)),
                   ("s7", np.array([12, 10], np.int64))]
    save("max3_folded", [helper.make_node("Max", ["s1", "s2", "s3"], ["s"], name="m"),
                         helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
         [("y", F, [24, 5])], x.reshape(24, 5), inits=shape_inits)
    save("min3_folded", [helper.make_node("Min", ["s4", "s5", "s6"], ["s"], name="m"),
                         helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
         [("y", F, [24, 5])], x.reshape(24, 5), inits=shape_inits)
    save("max1_folded", [helper.make_node("Max", ["s7"], ["s"], name="m"),
                         helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
         [("y", F, [12, 10])], x.reshape(12, 10), inits=shape_inits)
    # Gemm's C broadcasts to [M, N] (here f32[1] and f32[3, 1], with
    # transB, alpha and beta); A is the input a: f32[3, 4].
    a = rng.standard_normal((3, 4)).astype(np.float32)
    np.save(f"{out}/a.npy", a)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    A = [("a", F, [3, 4])]
    for name, c, attrs in [("gemm_c1", np.array([0.7], np.float32), {}),
                           ("gemm_cm1", rng.standard_normal((3, 1)).astype(np.float32), {}),
                           ("gemm_c1_ab", np.array([0.7], np.float32), dict(alpha=0.5, beta=2.0)),
                           ("gemm_c0", np.array(0.25, np.float32), {})]:
        ref = attrs.get("alpha", 1.0) * (a @ w.T) + attrs.get("beta", 1.0) * c
        save(name, [helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="gemm", transB=1, **attrs)],
             [("y", F, [3, 6])], ref, inputs=A, inits=[("w", w), ("c", c)])

    # Pow with an integer exponent (ONNX lets its type differ from the
    # base's): a known one, and a run-time one (the input e: i32[5]).
    save("pow_i64", [helper.make_node("Pow", ["x", "k"], ["y"], name="pow")],
         [("y", F, [2, 3, 4, 5])], x ** 3, inits=[("k", np.array(3, np.int64))])
    e = np.array([0, 1, 2, 3, 2], np.int32)
    np.save(f"{out}/e.npy", e)
    save("pow_i32_input", [helper.make_node("Pow", ["x", "e"], ["y"], name="pow")],
         [("y", F, [2, 3, 4, 5])], x ** e, inputs=(X, ("e", TensorProto.INT32, [5])))

    # Gather of rows with known indices, negative ones counted from the end
    # (the table is the input t: f32[4, 3]).
    t = rng.standard_normal((4, 3)).astype(np.float32)
    np.save(f"{out}/t.npy", t)
    ids = np.array([[0, -1], [2, -4]], np.int64)
    save("gather_rows_neg", [helper.make_node("Gather", ["t", "i"], ["y"], name="gather")],
         [("y", F, [2, 2, 3])], t[ids], inputs=[("t", F, [4, 3])], inits=[("i", ids)])
    save("gather_rows_range", [helper.make_node("Gather", ["t", "i"], ["y"], name="gather")],
         [("y", F, [2, 3])], t[[0, 0]], inputs=[("t", F, [4, 3])],
         inits=[("i", np.array([1, 4], np.int64))])

    # LayerNormalization over the dims from its axis to the last (opset 17),
    # the scale and bias broadcast to them.
    def layer_norm(v, axis, scale, bias, eps):
        dims = tuple(range(axis % v.ndim, v.ndim))
        mean = v.mean(axis=dims, keepdims=True)
        var = ((v - mean) ** 2).mean(axis=dims, keepdims=True)
        return (v - mean) / np.sqrt(var + eps) * scale + bias

    for name, axis, sshape, bshape in [("ln_m2", -2, (4, 5), (5,)), ("ln_1", 1, (3, 4, 5), (1, 5)),
                                       ("ln_m1", -1, (5,), (5,)), ("ln_m2_scale5", -2, (5,), None)]:
        scale = rng.uniform(0.5, 1.5, sshape).astype(np.float32)
        inits = [("scale", scale)]
        ins = ["x", "scale"]
        bias = np.float32(0)
        if bshape:
            bias = rng.standard_normal(bshape).astype(np.float32)
            inits.append(("bias", bias))
            ins.append("bias")
        save(name, [helper.make_node("LayerNormalization", ins, ["y"], name="ln", axis=axis,
                                     epsilon=1e-3)],
             [("y", F, [2, 3, 4, 5])], layer_norm(x.astype(np.float64), axis, scale, bias, 1e-3),
             inits=inits, opset=17)

    # Gather of several known indices along other axes than rows of a 2-D
    # table (x[:, [2, 0, -1]], x[..., [[1, 1], [0, 4]]]).
    for name, axis, ids in [("gather_axis1", 1, np.array([2, 0, -1], np.int64)),
                            ("gather_axis_m1", -1, np.array([[1, 1], [0, 4]], np.int64)),
                            ("gather_axis0", 0, np.array([1, 0, 1], np.int64))]:
        ref = np.take(x, ids, axis=axis)
        save(name, [helper.make_node("Gather", ["x", "i"], ["y"], name="gather", axis=axis)],
             [("y", F, list(ref.shape))], ref, inits=[("i", ids)])

    # Slice with steps on run-time values (x[..., ::2], x[:, :, 1::3],
    # x[:, 1:-1:2, ::3], a start past the last step).
    big = np.int64(2**63 - 1)
    for name, starts, ends, axes, steps in [
            ("slice_step2", [0], [big], [3], [2]),
            ("slice_step3", [1], [big], [2], [3]),
            ("slice_steps", [1, 0], [-1, big], [1, 3], [2, 3]),
            ("slice_step_big", [0, 2], [big, 4], [-1, 2], [7, 2])]:
        ref = x
        for st, en, ax, sp in zip(starts, ends, axes, steps):
            index = [slice(None)] * 4
            index[ax] = slice(st, en, sp)
            ref = ref[tuple(index)]
        save(name, [helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"], name="slice")],
             [("y", F, list(ref.shape))], ref,
             inits=[("s", np.array(starts, np.int64)), ("e", np.array(ends, np.int64)),
                    ("a", np.array(axes, np.int64)), ("p", np.array(steps, np.int64))])
    # Training through a stepped slice of a parameter: y = w[..., ::2] * x,
    # loss mean(y * y); one SGD step at lr 1 (Inputs/train_slice.tg).
    w = rng.standard_normal((2, 3, 4, 10)).astype(np.float32)
    save("slice_param", [helper.make_node("Slice", ["w", "s", "e", "a", "p"], ["h"], name="slice"),
                         helper.make_node("Mul", ["h", "x"], ["y"], name="mul")],
         [("y", F, [2, 3, 4, 5])], w[..., ::2] * x,
         inits=[("w", w), ("s", np.array([0], np.int64)), ("e", np.array([big], np.int64)),
                ("a", np.array([3], np.int64)), ("p", np.array([2], np.int64))])
    grad = np.zeros_like(w)
    grad[..., ::2] = 2 * w[..., ::2] * x * x / x.size
    np.save(f"{out}/slice_param.w1.npy", w - grad)

    # Trilu (upper and lower, k from an input) on run-time values, a Trilu
    # of a constant folded at import, and Not (a causal mask as
    # torch.tril(ones(T, T)) and masked_fill export it).
    for name, upper, k in [("triu", 1, None), ("tril_k1", 0, 1), ("triu_km2", 1, -2)]:
        ins = ["x"] + (["k"] if k is not None else [])
        inits = [("k", np.array(k, np.int64))] if k is not None else []
        ref = np.triu(x, k or 0) if upper else np.tril(x, k or 0)
        save(name, [helper.make_node("Trilu", ins, ["y"], name="trilu", upper=upper)],
             [("y", F, [2, 3, 4, 5])], ref, inits=inits)
    causal = np.tril(np.ones((4, 5), bool))
    save("causal_mask", [helper.make_node("Trilu", ["ones"], ["t"], name="tril", upper=0),
                         helper.make_node("Not", ["t"], ["masked"], name="not"),
                         helper.make_node("Where", ["masked", "ninf", "x"], ["y"], name="where")],
         [("y", F, [2, 3, 4, 5])], np.where(~causal, -np.inf, x),
         inits=[("ones", np.ones((4, 5), bool)), ("ninf", np.array(-np.inf, np.float32))])
    save("not_runtime", [helper.make_node("Greater", ["x", "zero"], ["g"], name="gt"),
                         helper.make_node("Not", ["g"], ["n"], name="not"),
                         helper.make_node("Where", ["n", "x", "zero"], ["y"], name="where")],
         [("y", F, [2, 3, 4, 5])], np.where(~(x > 0), x, 0),
         inits=[("zero", np.array(0, np.float32))])

    # Float initializers where a value must be known at import (as constant
    # folding tools store Clip's bounds, Pad's value and Resize's scales):
    # their file values, not parameters.
    lo, hi = np.array(-0.5, np.float32), np.array(0.75, np.float32)
    save("clip_inits", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")],
         [("y", F, [2, 3, 4, 5])], np.clip(x, lo, hi), inits=[("lo", lo), ("hi", hi)])
    save("pad_value_init", [helper.make_node("Pad", ["x", "p", "v"], ["y"], name="pad")],
         [("y", F, [2, 3, 4, 7])], np.pad(x, ((0, 0), (0, 0), (0, 0), (1, 1)), constant_values=1.5),
         inits=[("p", np.array([0, 0, 0, 1, 0, 0, 0, 1], np.int64)),
                ("v", np.array(1.5, np.float32))])
    save("resize_scales_init",
         [helper.make_node("Resize", ["x", "", "s"], ["y"], name="resize", mode="nearest",
                           coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
         [("y", F, [2, 3, 8, 10])], x.repeat(2, axis=2).repeat(2, axis=3),
         inits=[("s", np.array([1, 1, 2, 2], np.float32))])

    # The other reductions of opsets 13-17 (axes as an attribute):
    # ReduceL1, ReduceL2 (F.normalize), ReduceSumSquare, ReduceLogSum (of
    # |x| + 1) and ReduceLogSumExp (torch.logsumexp).
    ax = x + 0
    for name, fn, axes, keep in [
            ("ReduceL1", lambda v, a, k: np.abs(v).sum(axis=a, keepdims=k), [1, -1], 1),
            ("ReduceL2", lambda v, a, k: np.sqrt((v * v).sum(axis=a, keepdims=k)), [1], 0),
            ("ReduceSumSquare", lambda v, a, k: (v * v).sum(axis=a, keepdims=k), [-2], 0),
            ("ReduceLogSum", lambda v, a, k: np.log((np.abs(v) + 1).sum(axis=a, keepdims=k)), [2, 3], 1),
            ("ReduceLogSumExp", lambda v, a, k: np.log(np.exp(v).sum(axis=a, keepdims=k)), [1], 0)]:
        nodes = [helper.make_node(name, ["x"], ["y"], name="reduce", axes=axes, keepdims=keep)]
        src = ax.astype(np.float64)
        if name == "ReduceLogSum":
            nodes = [helper.make_node("Abs", ["x"], ["a"], name="abs"),
                     helper.make_node("Add", ["a", "one"], ["b"], name="add"),
                     helper.make_node(name, ["b"], ["y"], name="reduce", axes=axes, keepdims=keep)]
        ref = fn(src, tuple(axes), bool(keep))
        save(name.lower(), nodes, [("y", F, list(ref.shape))], ref,
             inits=[("one", np.array(1, np.float32))] if name == "ReduceLogSum" else [])

    # DepthToSpace (DCR, and CRD: F.pixel_shuffle) and SpaceToDepth, as the
    # ONNX standard defines them, on the input z: f32[2, 8, 2, 3].
    z = rng.standard_normal((2, 8, 2, 3)).astype(np.float32)
    np.save(f"{out}/z.npy", z)
    Z = [("z", F, [2, 8, 2, 3])]
    dcr = z.reshape(2, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(2, 2, 4, 6)
    crd = z.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    s2d = z.reshape(2, 8, 1, 2, 1, 3).transpose(0, 3, 5, 1, 2, 4).reshape(2, 48, 1, 1)
    save("d2s_dcr", [helper.make_node("DepthToSpace", ["z"], ["y"], name="d2s", blocksize=2)],
         [("y", F, [2, 2, 4, 6])], dcr, inputs=Z)
    save("d2s_crd", [helper.make_node("DepthToSpace", ["z"], ["y"], name="d2s", blocksize=2,
                                      mode="CRD")], [("y", F, [2, 2, 4, 6])], crd, inputs=Z)
    save("s2d", [helper.make_node("SpaceToDepth", ["z"], ["y"], name="s2d", blocksize=2)],
         [("y", F, [2, 32, 1, 1])], s2d, inputs=Z)
    save("s2d6", [helper.make_node("Reshape", ["z", "s"], ["z2"], name="r"),
                  helper.make_node("SpaceToDepth", ["z2"], ["y"], name="s2d", blocksize=2)],
         [("y", F, [2, 8, 2, 3])],
         z.reshape(2, 2, 4, 6).reshape(2, 2, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(2, 8, 2, 3),
         inputs=Z, inits=[("s", np.array([2, 2, 4, 6], np.int64))])


if __name__ == "__main__":
    main(sys.argv[1])
