#!/usr/bin/env python3
"""Test models for ampc's ONNX importer, exported with the installed torch.

  onnx_models.py export NAME[,NAME...] DIR [--opset N] [--dynamic] [--training]
      DIR/NAME.onnx (random weights, seed 0, eval mode), DIR/NAME.x.npy (an
      input batch) and DIR/NAME.ref.npy (PyTorch's output on it). With
      --training the export is torch.onnx.TrainingMode.TRAINING
      (BatchNormalization with training_mode=1, Dropout with training_mode
      true); the reference is still the eval-mode output (what `ampc run
      FILE.onnx`, an inference graph, computes).
  onnx_models.py train-bn NAME DIR LOG.jsonl PARAMS_DIR [--buffer-tol T]
                   [--loss-tol L]
      PyTorch trains the module that `export NAME DIR --training` wrote,
      from the file's weights and buffers, as Inputs/train_NAME.tg does
      (cross-entropy, SGD lr 0.01 momentum 0.9, inputs DIR/x.npy and
      DIR/labels.npy, train mode); exit 0 when ampc's per-step losses
      (LOG.jsonl) agree within L (default 1e-4) of the first loss and every
      running mean and variance ampc wrote (PARAMS_DIR/net.<buffer>.npy)
      within T (default 1e-4) of its largest magnitude.
  onnx_models.py compare REF.npy GOT.npy [--rtol R]
      exit 0 when max|GOT - REF| <= R * max|REF| (R defaults to 1e-4).
  onnx_models.py bad DIR
      the mlp export and the hand-built fixtures of Inputs/make_fixtures.py
      (broken files, batch norms and dropouts ampc cannot map, batch norms
      that share initializers), for tests that also need torch.
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
    if name == "squeezenet1_0":
        # Its max pools are ceil mode on inputs they do not tile.
        return torchvision.models.squeezenet1_0(num_classes=10), (2, 3, 64, 64)
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
    if name == "vgg11":
        # torchvision's VGG-11 (its convolution stack at full width) with
        # the 7x7 adaptive pool set to 2x2 and a 64-wide classifier: at 64x64
        # the features are 2x2, so the pool exports as AveragePool with a
        # 1x1 kernel, as the real model's 7x7 pool does at 224x224 (and the
        # classifier's 100M weights are not needed).
        m = torchvision.models.vgg11(num_classes=10)
        m.avgpool = torch.nn.AdaptiveAvgPool2d((2, 2))
        m.classifier = torch.nn.Sequential(
            torch.nn.Linear(512 * 2 * 2, 64), torch.nn.ReLU(True), torch.nn.Dropout(),
            torch.nn.Linear(64, 64), torch.nn.ReLU(True), torch.nn.Dropout(),
            torch.nn.Linear(64, 10))
        return m, (2, 3, 64, 64)
    if name == "resnet_bn":
        # The resnet model for a training export (batch norm not folded):
        # a batch of 4, so the last stage's batch norms see 4 values per
        # channel.
        return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10), (4, 3, 32, 32)
    if name == "bn_mlp":
        # Linear, BatchNorm1d (momentum 0.3), ReLU, Dropout(0.25), Linear.
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16, momentum=0.3),
                                   torch.nn.ReLU(), torch.nn.Dropout(0.25),
                                   torch.nn.Linear(16, 4)), (4, 8)
    if name == "bn_eval":
        # A batch norm after a ReLU: an eval export cannot fold it into the
        # convolution, so it stays a BatchNormalization node.
        return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(),
                                   torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                                   torch.nn.Linear(4 * 6 * 6, 5)), (2, 3, 8, 8)
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 4)), (4, 8)
    raise SystemExit(f"unknown model {name}")


def distinct_state(model):
    """Gives every parameter and batch-norm buffer its own values (a fresh
    module's are zeros and ones, which torch.onnx.export would store once
    and so tie), and every batch norm momentum 0.2 (not the default, so a
    wrong momentum mapping shows in the running statistics)."""
    import torch

    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=g))
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=g))
                m.running_var.copy_(1 + 0.5 * torch.rand(m.running_var.shape, generator=g))
    set_momentum(model)


def set_momentum(model):
    """Batch norms with the default momentum (0.1) get 0.2."""
    import torch

    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.momentum == 0.1:
            m.momentum = 0.2


# Classifiers whose freshly initialised eval-mode output hardly depends on
# the input (activations shrink layer by layer while the batch norms' running
# statistics are still 0 and 1): their statistics are calibrated first.
CALIBRATE = {"mobilenet_v3_small", "shufflenet_v2_x0_5", "efficientnet_b0",
             "regnet_y_400mf", "densenet121"}


def calibrate(model, shape):
    """Sets every batch norm's running statistics to the cumulative average
    over 4 random batches (train-mode forward passes), so that the eval-mode
    network normalises its activations."""
    import torch

    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(*shape, generator=g))
    for m in bns:
        m.momentum = 0.1
    model.eval()


def load_from_onnx(model, path):
    """The module's parameters and buffers from the file's initializers
    (by name; a training export keeps the module's names)."""
    import onnx
    import onnx.numpy_helper as nh
    import torch

    inits = {i.name: nh.to_array(i) for i in onnx.load(path).graph.initializer}
    state = model.state_dict()
    for key in state:
        if key.endswith("num_batches_tracked"):
            continue
        if key not in inits:
            raise SystemExit(f"{path} has no initializer '{key}'")
        state[key] = torch.from_numpy(inits[key].copy())
    model.load_state_dict(state)


def export(name, out, opset=14, dynamic=False, training=False):
    import torch

    model, shape = build(name)
    if name in CALIBRATE:
        calibrate(model, shape)
    model.eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    path = f"{out}/{name}.onnx"
    kwargs = {}
    if dynamic:
        kwargs["dynamic_axes"] = {"x": {0: "batch"}, "y": {0: "batch"}}
    if training:
        distinct_state(model)
        model.train()
        kwargs["training"] = torch.onnx.TrainingMode.TRAINING
        kwargs["do_constant_folding"] = False
    # Not under no_grad: there TransformerEncoder takes its fused fast path,
    # which has no ONNX export.
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["y"],
                      opset_version=opset, **kwargs)
    if training:
        # Tracing in train mode ran the batch norms once; the file holds the
        # statistics as exported, so the reference starts from the file.
        load_from_onnx(model, path)
    model.eval()
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
    """The mlp export (the models that import it read it) and the
    hand-built fixtures of Inputs/make_fixtures.py."""
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
    import make_fixtures

    export("mlp", out)
    make_fixtures.write(out)

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


def train_bn(name, d, log, params_dir, buffer_tol, loss_tol):
    import torch

    model, _ = build(name)
    load_from_onnx(model, f"{d}/{name}.onnx")
    set_momentum(model)
    model.train()
    x = torch.from_numpy(np.load(f"{d}/x.npy"))
    labels = torch.from_numpy(np.load(f"{d}/labels.npy")).long()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    ours = [json.loads(line)["loss"] for line in open(log) if '"loss"' in line]
    theirs = []
    for _ in range(len(ours)):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        theirs.append(loss.item())
    worst = max(abs(a - b) for a, b in zip(ours, theirs)) / abs(theirs[0])
    print(f"{len(ours)} steps, torch {theirs[0]:.6g} -> {theirs[-1]:.6g}, "
          f"ampc {ours[0]:.6g} -> {ours[-1]:.6g}, worst relative difference {worst:.3g}")
    if not ours or worst > loss_tol:
        raise SystemExit("ampc's losses differ from PyTorch's")
    checked, worst_buffer, worst_key = 0, 0.0, ""
    for key, value in model.state_dict().items():
        if not (key.endswith("running_mean") or key.endswith("running_var")):
            continue
        got = np.load(f"{params_dir}/net.{key}.npy").astype(np.float64)
        want = value.numpy().astype(np.float64)
        err = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
        if err >= worst_buffer:
            worst_buffer, worst_key = err, key
        checked += 1
        if err > buffer_tol:
            raise SystemExit(f"buffer {key}: relative difference {err:.3g} exceeds {buffer_tol}")
    print(f"{checked} running statistics, worst relative difference {worst_buffer:.3g} "
          f"({worst_key})")


def main(argv):
    cmd = argv[0]
    if cmd == "export":
        opset = int(argv[argv.index("--opset") + 1]) if "--opset" in argv else 14
        # NAME,NAME,...: several models in one process (torch is imported
        # once).
        for name in argv[1].split(","):
            export(name, argv[2], opset, "--dynamic" in argv, "--training" in argv)
    elif cmd == "compare":
        rtol = float(argv[argv.index("--rtol") + 1]) if "--rtol" in argv else 1e-4
        compare(argv[1], argv[2], rtol)
    elif cmd == "bad":
        bad(argv[1])
    elif cmd == "falling":
        falling(argv[1])
    elif cmd == "train-encoder":
        train_encoder(argv[1], argv[2])
    elif cmd == "train-bn":
        def option(flag):
            return float(argv[argv.index(flag) + 1]) if flag in argv else 1e-4
        train_bn(argv[1], argv[2], argv[3], argv[4], option("--buffer-tol"),
                 option("--loss-tol"))
    elif cmd == "amp":
        amp(argv[1], argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
