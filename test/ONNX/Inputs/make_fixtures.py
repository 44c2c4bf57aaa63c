#!/usr/bin/env python3
"""Small ONNX models for ampc's importer tests, built with the onnx
package's helper API (no torch).

  make_fixtures.py DIR
      writes every fixture into DIR as NAME.onnx.

The checked-in copies are test/ONNX/Fixtures/*.onnx; after changing a model
here, regenerate them with Debian's interpreter (the one with python3-onnx):

  /usr/bin/python3 test/ONNX/Inputs/make_fixtures.py test/ONNX/Fixtures

test/ONNX/fixtures-current.test checks that the copies match this script.
The fixtures are:
  - broken files and models ampc refuses, each with a located error
    (errors.test, batchnorm.test, import.test);
  - one model per converter family: elementwise ops, NN ops, tensor and
    shape ops, host folding (converters.test);
  - hostile models: attributes, dims and names out of range (errors.test);
  - DOUBLE, UINT8, INT8 and INT16 tensors (dtypes.test).
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def value(name, shape, dtype=FLOAT):
    return helper.make_tensor_value_info(name, dtype, list(shape))


def floats(name, shape, values):
    return helper.make_tensor(name, FLOAT, list(shape), values)


def ints(name, values):
    return helper.make_tensor(name, INT64, [len(values)], values)


def model(nodes, name, inputs=None, inits=(), opset=14, yshape=(2, 4), outputs=None):
    """A graph of `nodes` reading x: f32[2, 4] (or `inputs`), writing y."""
    graph = helper.make_graph(nodes, name, inputs or [value("x", [2, 4])],
                              outputs or [value("y", yshape)], initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), name=attrs.pop("name", op.lower()),
                            **attrs)


def refused():
    """Models ampc refuses with a located error (errors.test, batchnorm.test)."""
    m = {}
    m["unknown_op"] = model([node("Relu", ["x"], ["h"], name="relu0"),
                             node("Celu", ["h"], name="the_celu")], "unknown_op")
    m["ok_softmax"] = model([node("Softmax", ["x"], name="sm", axis=1)], "ok_softmax")
    # A MaxPool whose Indices output is a graph output, in an unknown
    # storage order.
    m["pool_indices"] = model([node("MaxPool", ["x"], ["y", "i"], name="pool",
                                    kernel_shape=[2, 2], strides=[2, 2], storage_order=2)],
                              "pool_indices",
                              yshape=(1, 1, 2, 2), inputs=[value("x", [1, 1, 5, 5])],
                              outputs=[value("y", (1, 1, 2, 2)),
                                       value("i", (1, 1, 2, 2), TensorProto.INT64)])
    m["negative_pads"] = model([node("Conv", ["x", "w"], name="conv", pads=[0, 0, -1, -1])],
                               "negative_pads", yshape=(1, 1, 1, 1),
                               inputs=[value("x", [1, 1, 4, 4])],
                               inits=[floats("w", [1, 1, 3, 3], [0.1] * 9)])
    m["bad_attr"] = model([node("Relu", ["x"], name="relu", alpha=1.0)], "bad_attr")
    m["dynamic"] = model([node("Relu", ["x"], name="relu")], "dynamic", yshape=("batch", 4),
                         inputs=[value("x", ["batch", 4])])
    # Two inputs that share the dim_param 'batch'.
    m["dynamic2"] = model([node("Add", ["x", "m"], name="add")], "dynamic2", yshape=("batch", 4),
                          inputs=[value("x", ["batch", 4]), value("m", ["batch", 4])])
    # Opset 11's Softmax coerces its input to 2-D: not opset 13's op.
    m["old_opset"] = model([node("Softmax", ["x"], name="sm")], "old_opset", opset=11)
    # Opset 11's Relu differs from opset 13's in its types only: imported.
    m["old_opset_relu"] = model([node("Relu", ["x"], name="relu")], "old_opset_relu", opset=11)
    m["new_opset"] = model([node("Relu", ["x"], name="relu")], "new_opset", opset=18)
    # A shape-like graph input: known only to `ampc run`, from its file.
    m["reshape_input"] = model([node("Reshape", ["x", "s"], name="rs")], "reshape_input",
                               inputs=[value("x", [2, 4]), value("s", [2], INT64)],
                               yshape=(4, 2))
    m["pad_reflect"] = model([node("Pad", ["x", "p"], name="pad", mode="reflect")], "pad_reflect",
                             yshape=(2, 6), inits=[ints("p", [0, 1, 0, 1])])
    m["shape_mismatch"] = model([node("MatMul", ["x", "w"], name="mm")], "shape_mismatch",
                                yshape=(2, 2), inits=[floats("w", [3, 2], [0.5] * 6)])
    # Two initializers whose names sanitize alike ('w:1', 'w/1' -> 'w_1').
    m["name_clash"] = model([node("MatMul", ["x", "w:1"], ["h"], name="mm1"),
                             node("MatMul", ["h", "w/1"], name="mm2")], "name_clash",
                            yshape=(2, 3), inits=[floats("w:1", [4, 4], [0.5] * 16),
                                                  floats("w/1", [4, 3], [0.25] * 12)])

    # Sizes that crashed the import (SIGABRT, SIGFPE) or wrapped around: a
    # ConstantOfShape of 10^18 and of 2^64 elements (the count overflowed to
    # 0) and with a negative dim, a Range of 10^18 elements, a Pad of 10^12,
    # a ceil-mode MaxPool of stride 0, an Unsqueeze of one axis twice, an
    # initializer of 2^64 elements without data.
    m["huge_constant"] = model([node("ConstantOfShape", ["s"], name="cs")], "huge_constant",
                               inits=[ints("s", [10**9, 10**9])])
    m["wrapped_constant"] = model([node("ConstantOfShape", ["s"], ["c"], name="cs"),
                                   node("Add", ["x", "c"], name="add")], "wrapped_constant",
                                  inits=[ints("s", [2**31, 2**31, 4])])
    m["negative_constant"] = model([node("ConstantOfShape", ["s"], name="cs")],
                                   "negative_constant", inits=[ints("s", [-3, 4])])
    m["huge_range"] = model([node("Range", ["a", "b", "c"], ["r"], name="range"),
                             node("Shape", ["r"], name="shape")], "huge_range",
                            inits=[helper.make_tensor(n, INT64, [], [v])
                                   for n, v in [("a", 0), ("b", 10**18), ("c", 1)]])
    m["huge_pad"] = model([node("Pad", ["x", "p"], name="pad")], "huge_pad",
                          inits=[ints("p", [0, 10**12, 0, 0])])
    m["pool_stride0"] = model([node("MaxPool", ["x"], name="pool", kernel_shape=[2, 2],
                                    strides=[0, 0], ceil_mode=1)], "pool_stride0",
                              yshape=(1, 1, 3, 3), inputs=[value("x", [1, 1, 5, 5])])
    m["unsqueeze_twice"] = model([node("Unsqueeze", ["x", "a"], name="unsq")], "unsqueeze_twice",
                                 yshape=(2, 1, 1, 4), inits=[ints("a", [1, 1])])
    big = TensorProto(name="w", data_type=FLOAT, dims=[2**32, 2**32, 1], raw_data=b"")
    m["huge_initializer"] = model([node("Add", ["x", "w"], name="add")], "huge_initializer",
                                  inits=[big])

    # Batch norms over the 4 channels of x: f32[2, 4].
    stats = [floats("scale", [4], [1, 1, 1, 1]), floats("bias", [4], [0, 0, 0, 0]),
             floats("mean", [4], [0.1, 0.2, 0.3, 0.4]), floats("var", [4], [1, 2, 3, 4])]

    def bn(name, inputs, outputs=("y",), training=1, momentum=0.9):
        return node("BatchNormalization", inputs, outputs, name=name, training_mode=training,
                    momentum=momentum)

    # The running mean computed in the graph (not an initializer).
    m["bn_computed_mean"] = model([node("Mul", ["mean", "two"], ["mean2"], name="mul"),
                                   bn("bn", ["x", "scale", "bias", "mean2", "var"])],
                                  "bn_computed_mean",
                                  inits=stats + [floats("two", [4], [2.0] * 4)])
    # The running-mean output used by a later node.
    m["bn_stat_output"] = model([bn("bn", ["x", "scale", "bias", "mean", "var"],
                                    ["h", "new_mean", "new_var"]),
                                 node("Add", ["h", "new_mean"], name="add")], "bn_stat_output",
                                inits=stats)
    # Two batch norms that read one mean and variance, whose variance is
    # also the second one's scale (torch.onnx.export stores equal
    # initializers once).
    m["bn_shared"] = model([bn("bn0", ["x", "scale", "bias", "mean", "var"], ["h"]),
                            bn("bn1", ["h", "var", "bias", "mean", "var"])], "bn_shared",
                           inits=stats)
    # One value per channel: no batch statistics.
    m["bn_one_value"] = model([bn("bn", ["x", "scale", "bias", "mean", "var"])], "bn_one_value",
                              yshape=(1, 4), inputs=[value("x", [1, 4])], inits=stats)
    # Dropouts whose training_mode or ratio is a graph input, and a ratio
    # of 1.
    m["dropout_input_mode"] = model([node("Dropout", ["x", "", "train"], name="drop")],
                                    "dropout_input_mode",
                                    inputs=[value("x", [2, 4]), value("train", [], BOOL)])
    train = helper.make_tensor("t", BOOL, [], [True])
    m["dropout_input_ratio"] = model([node("Dropout", ["x", "r", "t"], name="drop")],
                                     "dropout_input_ratio", inits=[train],
                                     inputs=[value("x", [2, 4]), value("r", [])])
    m["dropout_ratio_one"] = model(
        [node("Constant", [], ["r"], name="ratio", value=helper.make_tensor("r", FLOAT, [], [1.0])),
         node("Dropout", ["x", "r", "t"], name="drop")], "dropout_ratio_one", inits=[train])
    return m


def hostile():
    """Attributes, dims and names out of range: located errors (or what a
    sane value would give), never a signal or an overflow (a DepthToSpace of
    blocksize 2^40 was SIGFPE, a Min with an empty input name SIGSEGV)."""
    m = {}
    x4 = [value("x", [1, 8, 2, 2])]
    m["depth_to_space_huge"] = model([node("DepthToSpace", ["x"], name="d2s", blocksize=2**40)],
                                     "depth_to_space_huge", inputs=x4, yshape=(1, 2, 4, 4))
    m["space_to_depth_huge"] = model([node("SpaceToDepth", ["x"], name="s2d", blocksize=2**40)],
                                     "space_to_depth_huge", inputs=x4, yshape=(1, 32, 1, 1))
    m["min_empty_input"] = model([node("Min", ["s", ""], ["y"], name="min")], "min_empty_input",
                                 yshape=(2,), inits=[ints("s", [3, 4])])
    m["tile_huge"] = model([node("Tile", ["x", "r"], name="tile")], "tile_huge",
                           inits=[ints("r", [2**62, 2**62])])
    m["reshape_huge"] = model([node("Reshape", ["x", "s"], name="reshape")], "reshape_huge",
                              yshape=(2**40, 2**40), inits=[ints("s", [2**40, 2**40])])
    # Steps past the dim take one element: x[:, 0:4:2^63-1] (run time) and
    # s[3::-2^63] (at import, where the negated step overflowed).
    m["slice_huge_step"] = model(
        [node("Slice", ["x", "b", "e", "a", "st"], name="slice")], "slice_huge_step",
        yshape=(2, 1), inits=[ints("b", [0]), ints("e", [4]), ints("a", [1]),
                              ints("st", [2**63 - 1])])
    m["slice_huge_negative_step"] = model(
        [node("Slice", ["s", "b", "e", "a", "st"], ["t"], name="slice"),
         node("Reshape", ["x", "t"], name="reshape")], "slice_huge_negative_step", yshape=(8,),
        inits=[ints("s", [8, 2]), ints("b", [0]), ints("e", [-(2**63)]), ints("a", [0]),
               ints("st", [-(2**63)])])
    # Fewer ends than starts: ends[1] was read past its data.
    m["slice_short_ends"] = model(
        [node("Slice", ["x", "b", "e"], name="slice")], "slice_short_ends", yshape=(1, 1),
        inits=[ints("b", [0, 0]), ints("e", [1])])
    m["gather_axis_huge"] = model([node("Gather", ["s", "i"], name="gather", axis=2**40)],
                                  "gather_axis_huge", yshape=(1,),
                                  inits=[ints("s", [3, 4]), ints("i", [0])])

    # Found with the importer's fuzz target (tools/ampc-fuzz) and the review
    # that came with it: a host Transpose read its perm unchecked (out of
    # bounds), a host Concat of inputs that differ off the axis wrote past
    # its output, a host Range read a scalar from an empty tensor, float to
    # int conversions of NaN or 1e30 and int64 arithmetic that overflows
    # were undefined behaviour, and dims or conv attributes near 2^63
    # overflowed the shape arithmetic.
    def i64(name, shape, values):
        return helper.make_tensor(name, INT64, list(shape), values)

    def const(name, tensor):
        return node("Constant", [], [name], name=name, value=tensor)

    m["transpose_bad_perm"] = model([node("Transpose", ["s"], name="tr", perm=[0, 5])],
                                    "transpose_bad_perm", yshape=(2, 2),
                                    inits=[i64("s", [2, 2], [1, 2, 3, 4])])
    m["concat_mismatch"] = model([node("Concat", ["a", "b"], name="cat", axis=0)],
                                 "concat_mismatch", yshape=(2, 3),
                                 inits=[i64("a", [1, 1], [1]), i64("b", [1, 3], [1, 2, 3])])
    m["range_empty_start"] = model([node("Range", ["a", "b", "c"], name="range")],
                                   "range_empty_start", yshape=(3,),
                                   inits=[i64("a", [0], []), i64("b", [], [3]),
                                          i64("c", [], [1])])
    m["cast_out_of_range"] = model(
        [const("f", helper.make_tensor("f", FLOAT, [4], [float("nan"), 1e30, -1e30, -2.7])),
         node("Cast", ["f"], name="cast", to=INT64)], "cast_out_of_range", yshape=(4,))
    big, small = 2**63 - 1, -(2**63)
    m["int64_wraps"] = model(
        [node("Add", ["a", "one"], ["add"], name="add"),
         node("Div", ["a", "minus_one"], ["div"], name="div"),
         node("Neg", ["a"], ["neg"], name="neg"),
         node("ReduceProd", ["p"], ["prod"], name="prod", keepdims=0)], "int64_wraps",
        outputs=[value(n, [2], INT64) for n in ("add", "div", "neg")] + [value("prod", [], INT64)],
        inits=[i64("a", [2], [big, small]), i64("one", [2], [1, 1]),
               i64("minus_one", [2], [-1, -1]), i64("p", [2], [2**32, 2**32])])
    x4c = [value("x", [1, 1, 5, 5])]
    w = floats("w", [1, 1, 3, 3], [0.1] * 9)
    m["conv_huge_dilation"] = model([node("Conv", ["x", "w"], name="conv",
                                          dilations=[2**40, 1])], "conv_huge_dilation",
                                    inputs=x4c, yshape=(1, 1, 3, 3), inits=[w])
    m["conv_huge_group"] = model([node("Conv", ["x", "w"], name="conv", group=2**40)],
                                 "conv_huge_group", inputs=x4c, yshape=(1, 1, 3, 3), inits=[w])
    m["input_dim_huge"] = model([node("Relu", ["x"], name="relu")], "input_dim_huge",
                                inputs=[value("x", [2**40, 4])], yshape=(2**40, 4))
    m["expand_huge"] = model([node("Expand", ["x", "s"], name="expand")], "expand_huge",
                             yshape=(2**40, 2, 4), inits=[ints("s", [2**40, 1, 1])])
    return m


def families():
    """One model per converter family, for IR checks (converters.test)."""
    m = {}
    x3 = [value("x", [2, 3, 4])]
    # Elementwise: activations onto their tg ops, or composed.
    m["leaky_relu"] = model([node("LeakyRelu", ["x"], alpha=0.25)], "leaky_relu")
    m["softplus"] = model([node("Softplus", ["x"])], "softplus")
    m["prelu_channel"] = model([node("PRelu", ["x", "w"])], "prelu_channel", inputs=x3,
                               yshape=(2, 3, 4), inits=[floats("w", [3, 1], [0.1, 0.2, 0.3])])
    m["prelu_one"] = model([node("PRelu", ["x", "w"])], "prelu_one", inputs=x3,
                           yshape=(2, 3, 4), inits=[floats("w", [1], [0.1])])
    m["prelu_last_dim"] = model([node("PRelu", ["x", "w"])], "prelu_last_dim", inputs=x3,
                                yshape=(2, 3, 4), inits=[floats("w", [4], [0.1, 0.2, 0.3, 0.4])])
    m["elu"] = model([node("Elu", ["x"], alpha=0.5)], "elu")
    m["hard_swish"] = model([node("HardSwish", ["x"])], "hard_swish")
    m["max3"] = model([node("Max", ["x", "a", "b"], name="max")], "max3",
                      inputs=[value("x", [2, 4]), value("a", [2, 4]), value("b", [4])])
    # NN ops.
    m["gemm"] = model([node("Gemm", ["x", "w", "b"], transB=1)], "gemm", yshape=(2, 3),
                      inits=[floats("w", [3, 4], [0.5] * 12), floats("b", [3], [1, 2, 3])])
    m["conv_pool"] = model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                            node("MaxPool", ["c"], kernel_shape=[2, 2], strides=[2, 2])],
                           "conv_pool", inputs=[value("x", [1, 2, 4, 4])], yshape=(1, 3, 2, 2),
                           inits=[floats("w", [3, 2, 3, 3], [0.01] * 54)])
    m["reduce_l2"] = model([node("ReduceL2", ["x"], axes=[1], keepdims=0)], "reduce_l2",
                           yshape=(2,))
    # Tensor and shape ops.
    m["depth_to_space"] = model([node("DepthToSpace", ["x"], blocksize=2, mode="CRD")],
                                "depth_to_space", inputs=[value("x", [1, 8, 2, 2])],
                                yshape=(1, 2, 4, 4))
    m["tile"] = model([node("Tile", ["x", "r"])], "tile", yshape=(4, 12),
                      inits=[ints("r", [2, 3])])
    # Host folding: the shape [8] computed at import from x's shape
    # (Shape, Gather, ReduceProd, Concat), then a Reshape by it.
    m["host_shape"] = model(
        [node("Shape", ["x"], ["s"]),
         node("ReduceProd", ["s"], ["n"], keepdims=1),
         node("Reshape", ["x", "n"])], "host_shape", yshape=(8,))
    return m


def dtypes():
    """The element types DOUBLE, UINT8, INT8 and INT16 as inputs,
    initializers, Constants and Cast targets (dtypes.test runs them)."""
    D, U8, I8, I16, I32 = (TensorProto.DOUBLE, TensorProto.UINT8, TensorProto.INT8,
                           TensorProto.INT16, TensorProto.INT32)
    m = {}
    # f64 all the way: values f32 cannot hold (1/3, 2^-40), a MatMul with an
    # f64 initializer, an Add of an f64 Constant and a CumSum; and x through
    # f32 and back (rounded once).
    third = 1.0 / 3.0
    m["dtypes_double"] = model(
        [node("Constant", [], ["c"], name="c",
              value=helper.make_tensor("cv", D, [3], [1e-10, 2.0 ** -40, 1.0 / 7.0])),
         node("MatMul", ["x", "w"], ["h"], name="matmul"),
         node("Add", ["h", "c"], ["h2"], name="add"),
         node("CumSum", ["h2", "axis"], ["y"], name="cumsum"),
         node("Cast", ["x"], ["xf"], name="to_f32", to=FLOAT),
         node("Cast", ["xf"], ["z"], name="to_f64", to=D)],
        "dtypes_double", inputs=[value("x", [2, 3], D)],
        inits=[helper.make_tensor("w", D, [3, 3],
                                  [third, 1.0, -third, 2.0 ** -40, 0.5, 1e280,
                                   1e-300, -2.0, third * 7]),
               helper.make_tensor("axis", INT64, [], [1])],
        outputs=[value("y", [2, 3], D), value("z", [2, 3], D)])
    # The narrow integers: u8 + u8 wraps, i8 * i16 wraps in i16, casts
    # between them keep the low bits, an i8 to DOUBLE, a CumSum of INT32.
    m["dtypes_ints"] = model(
        [node("Constant", [], ["c"], name="c",
              value=helper.make_tensor("cv", I16, [5], [1000, -1000, 32767, 0, -32768])),
         node("Add", ["a", "k"], ["u"], name="add_u8"),
         node("Cast", ["e"], ["e16"], name="e_to_i16", to=I16),
         node("Mul", ["e16", "s"], ["p"], name="mul_i16"),
         node("Add", ["p", "c"], ["q"], name="add_i16"),
         node("Cast", ["a"], ["a8"], name="a_to_i8", to=I8),
         node("Cast", ["s"], ["s8"], name="s_to_u8", to=U8),
         node("Cast", ["e"], ["ed"], name="e_to_f64", to=D),
         node("Cast", ["a"], ["a32"], name="a_to_i32", to=I32),
         node("CumSum", ["a32", "axis"], ["cs"], name="cumsum")],
        "dtypes_ints",
        inputs=[value("a", [5], U8), value("e", [5], I8), value("s", [5], I16)],
        inits=[helper.make_tensor("k", U8, [5], [100, 200, 1, 0, 255]),
               helper.make_tensor("axis", INT64, [], [0])],
        outputs=[value("u", [5], U8), value("q", [5], I16), value("a8", [5], I8),
                 value("s8", [5], U8), value("ed", [5], D), value("cs", [5], I32)])
    # Folded at import: u8 200 + 100 wraps to 44 (so 44 < 50), as it would
    # on the device; then added to the input.
    def u8c(name, v):
        return node("Constant", [], [name], name=name,
                    value=helper.make_tensor(name + "v", U8, [1], [v]))
    m["dtypes_host_wrap"] = model(
        [u8c("c200", 200), u8c("c100", 100), u8c("c50", 50),
         node("Add", ["c200", "c100"], ["s"], name="fold_add"),
         node("Less", ["s", "c50"], ["b"], name="fold_less"),
         node("Add", ["x", "s"], ["y"], name="add")],
        "dtypes_host_wrap", inputs=[value("x", [2], U8)],
        outputs=[value("y", [2], U8), value("b", [1], BOOL)])
    # Integer Pow, exact: 3 ** 39 folded at import (above 2^53, where a
    # pow in double would round), and x ** e of an INT64 input on the device
    # (7 ** 40 wraps).
    m["dtypes_int_pow"] = model(
        [node("Constant", [], ["b3"], name="b3",
              value=helper.make_tensor("b3v", INT64, [1], [3])),
         node("Constant", [], ["e39"], name="e39",
              value=helper.make_tensor("e39v", INT64, [1], [39])),
         node("Pow", ["b3", "e39"], ["p"], name="fold_pow"),
         node("Pow", ["x", "e"], ["y"], name="pow")],
        "dtypes_int_pow", inputs=[value("x", [4], INT64), value("e", [4], INT64)],
        outputs=[value("y", [4], INT64), value("p", [1], INT64)])
    return m


def all_models():
    out = {}
    for group in (refused, hostile, families, dtypes):
        out.update(group())
    return out


def write(out):
    """Every fixture into `out`, and truncated.onnx, garbage.onnx and
    empty.onnx: files that are no ONNX model."""
    os.makedirs(out, exist_ok=True)
    models = all_models()
    for name, m in models.items():
        onnx.save(m, os.path.join(out, name + ".onnx"))
    data = models["gemm"].SerializeToString()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(out, "garbage.onnx"), "wb") as f:
        f.write(b"this is not a protobuf\xff\xff\xff\xff")
    with open(os.path.join(out, "empty.onnx"), "wb") as f:
        f.write(b"")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    write(sys.argv[1])
