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


if __name__ == "__main__":
    main(sys.argv[1])
