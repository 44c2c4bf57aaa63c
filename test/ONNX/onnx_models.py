#!/usr/bin/env python3
"""Test models for ampc's ONNX importer, exported with the installed torch.

  onnx_models.py export NAME DIR [--opset N] [--dynamic]
      DIR/NAME.onnx (random weights, seed 0, eval mode), DIR/NAME.x.npy (an
      input batch) and DIR/NAME.ref.npy (PyTorch's output on it).
  onnx_models.py compare REF.npy GOT.npy [--rtol R]
      exit 0 when max|GOT - REF| <= R * max|REF| (R defaults to 1e-4).
  onnx_models.py bad DIR
      broken files for the error tests (truncated, garbage, unknown op,
      unsupported attribute, dynamic input).
  onnx_models.py falling LOG.jsonl
      exit 0 when the last step's loss is below the first's.
  onnx_models.py train-encoder DIR LOG.jsonl
      PyTorch trains the torch.nn.TransformerEncoder that `export encoder`
      wrote (the same weights) as Inputs/train_encoder.tg does: head_w from
      DIR/p0/head_w.npy, inputs DIR/x.npy and DIR/labels.npy, 20 AdamW steps;
      exit 0 when the per-step losses of ampc's LOG.jsonl agree within 1e-4
      (relative to the first step's loss).
  onnx_models.py amp REPORT.json LOW
      exit 0 when the AMP report (`ampc --emit=report`) computes every
      convolution and GEMM in LOW (f16 or bf16) and every softmax,
      normalisation and reduction in f32; prints the counts.

Widths are small so the tests stay fast on a CPU.
"""
import json
import sys

import numpy as np


def build(name):
    import torch
    import torchvision
    from torchvision.models.resnet import BasicBlock, ResNet

    torch.manual_seed(0)
    if name == "resnet":
        # ResNet-18's blocks, one per stage.
        return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10), (2, 3, 32, 32)
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2(width_mult=0.25, num_classes=10), (2, 3, 32, 32)
    if name == "squeezenet":
        return torchvision.models.squeezenet1_1(num_classes=10), (2, 3, 64, 64)
    if name in ("mobilenet_v3_small", "shufflenet_v2_x0_5", "efficientnet_b0",
                "regnet_y_400mf", "densenet121"):
        return getattr(torchvision.models, name)(num_classes=10), (2, 3, 64, 64)
    if name == "gelu_encoder":
        # Exact GELU: exported as Erf.
        layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                                 dropout=0.0, activation="gelu",
                                                 batch_first=True)
        return torch.nn.TransformerEncoder(layer, num_layers=1), (2, 5, 16)
    if name == "encoder":
        layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                                 dropout=0.0, batch_first=True)
        enc = torch.nn.TransformerEncoder(layer, num_layers=2)
        # The layers are copies of one layer, and several biases start at 0
        # or 1: torch.onnx.export stores initializers of equal value once, so
        # they would be one (tied) parameter in the file. Perturbing every
        # parameter keeps them apart, so training the file trains what
        # PyTorch trains.
        with torch.no_grad():
            for p in enc.parameters():
                p.add_(0.02 * torch.randn_like(p))
        return enc, (2, 5, 16)
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 4)), (4, 8)
    raise SystemExit(f"unknown model {name}")


def export(name, out, opset=14, dynamic=False):
    import torch

    model, shape = build(name)
    model.eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    path = f"{out}/{name}.onnx"
    kwargs = {}
    if dynamic:
        kwargs["dynamic_axes"] = {"x": {0: "batch"}, "y": {0: "batch"}}
    # Not under no_grad: there TransformerEncoder takes its fused fast path,
    # which has no ONNX export.
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["y"],
                      opset_version=opset, **kwargs)
    with torch.no_grad():
        ref = model(x)
    np.save(f"{out}/{name}.x.npy", x.numpy())
    np.save(f"{out}/{name}.ref.npy", ref.numpy())


def compare(ref_path, got_path, rtol):
    ref = np.load(ref_path).astype(np.float64)
    got = np.load(got_path).astype(np.float64)
    if ref.shape != got.shape:
        raise SystemExit(f"shape {got.shape} != reference {ref.shape}")
    err = float(np.max(np.abs(got - ref)))
    scale = float(np.max(np.abs(ref)))
    print(f"max abs error {err:.3g}, largest |ref| {scale:.3g}, relative {err / scale:.3g}")
    if err > rtol * scale:
        raise SystemExit(f"error {err:.3g} exceeds {rtol} * {scale:.3g}")


def bad(out):
    import onnx
    from onnx import TensorProto, helper

    export("mlp", out)
    data = open(f"{out}/mlp.onnx", "rb").read()
    open(f"{out}/truncated.onnx", "wb").write(data[: len(data) // 2])
    open(f"{out}/garbage.onnx", "wb").write(b"this is not a protobuf\xff\xff\xff\xff")
    open(f"{out}/empty.onnx", "wb").write(b"")

    def save(nodes, name, inputs=None, inits=(), opset=14, yshape=(2, 4)):
        x = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])]
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(yshape))
        graph = helper.make_graph(nodes, name, x, [y], initializer=list(inits))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        onnx.save(model, f"{out}/{name}.onnx")

    save([helper.make_node("Relu", ["x"], ["h"], name="relu0"),
          helper.make_node("Celu", ["h"], ["y"], name="the_celu")], "unknown_op")
    save([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1),
          ], "ok_softmax")
    # ceil_mode where the windows do not tile the input (5 = 2 + 2 * 1 + 1).
    save([helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                           strides=[2, 2], ceil_mode=1)], "ceil_mode", yshape=(1, 1, 3, 3),
         inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])])
    save([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[0, 0, 1, 1])],
         "asym_pads", yshape=(1, 1, 3, 3),
         inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
         inits=[helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 3, 3], [0.1] * 9)])
    save([helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=1.0)], "bad_attr")
    save([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dynamic", yshape=("batch", 4),
         inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])])
    save([helper.make_node("Relu", ["x"], ["y"], name="relu")], "old_opset", opset=11)
    save([helper.make_node("Pad", ["x", "p"], ["y"], name="pad", mode="reflect")], "pad_reflect",
         yshape=(2, 6), inits=[helper.make_tensor("p", TensorProto.INT64, [4], [0, 1, 0, 1])])
    save([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "shape_mismatch", yshape=(2, 2),
         inits=[helper.make_tensor("w", TensorProto.FLOAT, [3, 2], [0.5] * 6)])


def falling(log):
    losses = [json.loads(line)["loss"] for line in open(log) if '"loss"' in line]
    print(f"{len(losses)} steps, loss {losses[0]:.4g} -> {losses[-1]:.4g}")
    if not (losses[-1] < losses[0]):
        raise SystemExit("the loss did not fall")


LOW_OPS = {"conv2d", "conv_transpose2d", "linear", "matmul"}
F32_OPS = {"softmax", "log_softmax", "layer_norm", "rms_norm", "mean", "sum"}


def amp(report_path, low):
    text = open(report_path).read()
    decoder = json.JSONDecoder()
    pos, graphs = 0, []
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        obj, pos = decoder.raw_decode(text, pos)
        graphs.append(obj)
    counts = {"low": 0, "f32": 0}
    for g in graphs:
        for op in g["ops"]:
            if op["op"] in LOW_OPS:
                if op["compute"] != low:
                    raise SystemExit(f"{op['loc']}: {op['op']} computes in {op['compute']}, not {low}")
                counts["low"] += 1
            elif op["op"] in F32_OPS:
                if op["compute"] != "f32":
                    raise SystemExit(f"{op['loc']}: {op['op']} computes in {op['compute']}, not f32")
                counts["f32"] += 1
    if counts["low"] == 0:
        raise SystemExit("no convolution or GEMM in the report")
    print(f"{counts['low']} convolutions/GEMMs in {low}, {counts['f32']} softmax/norm/reductions in f32")


def train_encoder(d, log):
    import torch

    model, _ = build("encoder")
    model.eval()  # as exported; dropout is 0, so train() would be the same
    head_w = torch.nn.Parameter(torch.from_numpy(np.load(f"{d}/p0/head_w.npy")))
    x = torch.from_numpy(np.load(f"{d}/x.npy"))
    labels = torch.from_numpy(np.load(f"{d}/labels.npy")).long()
    params = list(model.parameters()) + [head_w]
    opt = torch.optim.AdamW(params, lr=0.01)
    ours = [json.loads(line)["loss"] for line in open(log) if '"loss"' in line]
    theirs = []
    for _ in range(len(ours)):
        opt.zero_grad()
        logits = torch.nn.functional.linear(model(x).mean(dim=1), head_w)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        loss.backward()
        opt.step()
        theirs.append(loss.item())
    worst = max(abs(a - b) for a, b in zip(ours, theirs)) / abs(theirs[0])
    print(f"{len(ours)} steps, torch {theirs[0]:.6g} -> {theirs[-1]:.6g}, "
          f"ampc {ours[0]:.6g} -> {ours[-1]:.6g}, worst relative difference {worst:.3g}")
    if len(ours) < 2 or worst > 1e-4:
        raise SystemExit("ampc's losses differ from PyTorch's")


def main(argv):
    cmd = argv[0]
    if cmd == "export":
        opset = int(argv[argv.index("--opset") + 1]) if "--opset" in argv else 14
        export(argv[1], argv[2], opset, "--dynamic" in argv)
    elif cmd == "compare":
        rtol = float(argv[argv.index("--rtol") + 1]) if "--rtol" in argv else 1e-4
        compare(argv[1], argv[2], rtol)
    elif cmd == "bad":
        bad(argv[1])
    elif cmd == "falling":
        falling(argv[1])
    elif cmd == "train-encoder":
        train_encoder(argv[1], argv[2])
    elif cmd == "amp":
        amp(argv[1], argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
