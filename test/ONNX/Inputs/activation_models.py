#!/usr/bin/env python3
"""activation_models.py export DIR | train DIR PARAMS_DIR | train-norm DIR PARAMS_DIR

export: PyTorch activations, norms and reductions (GroupNorm and
InstanceNorm2d, which export InstanceNormalization; var and std, which
fold a ReduceProd of the shape; amin and min, ReduceMin; repeat, Tile;
argmax, ArgMax; cumsum, CumSum) exported (opset 15) one per model,
DIR/ACT.onnx with DIR/ACT.ref.npy (PyTorch's output on DIR/x.npy, an
f32[2, 4, 6, 6] input that holds exact zeros), and DIR/mlp.onnx: Linear,
PReLU(8), Linear, then LeakyReLU + ELU + SELU + Softplus + Mish of it,
Linear, with DIR/mlp.x.npy and DIR/mlp.labels.npy.

train: PyTorch takes the step Inputs/train_act.tg takes (cross-entropy,
SGD lr 1) from the same weights; exit 0 when every parameter ampc wrote
(PARAMS_DIR/net.NAME.npy) is within 1e-5 of PyTorch's, relative to its
largest magnitude.

train-norm: the same for Inputs/train_norm.tg's step through the exported
InstanceNorm2d (SGD lr 1 on mean(y * y * x))."""
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ACTS = {
    "group_norm": nn.GroupNorm(2, 4, eps=1e-3),
    "instance_norm": nn.InstanceNorm2d(4, affine=True),
    "var": lambda x: x.var(1) + x.std((1, 3), keepdim=True)[:, 0],
    "amin": lambda x: x.amin(-1) + x.min(2)[0],
    "tile": lambda x: x.repeat(1, 2, 1, 3),
    "argmax": lambda x: x.argmax(1),
    "argmax_keep": lambda x: x.argmax(-1, keepdim=True),
    "cumsum": lambda x: torch.cumsum(x, 2),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": lambda x: F.elu(x, 0.7),
    "selu": F.selu,
    "softplus": F.softplus,
    "mish": F.mish,
}


class Act(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.p, self.l2, self.l3 = nn.Linear(6, 8), nn.PReLU(8), nn.Linear(8, 8), nn.Linear(8, 3)
        with torch.no_grad():
            self.p.weight.uniform_(0.1, 0.4)

    def forward(self, x):
        h = self.l2(self.p(self.l1(x)))
        h = F.leaky_relu(h, 0.1) + F.elu(h) + F.selu(h) + F.softplus(h) + F.mish(h)
        return self.l3(h)


def mlp():
    torch.manual_seed(0)
    return MLP()


def main(argv):
    d = argv[1]
    g = torch.Generator().manual_seed(0)
    xm = torch.randn(4, 6, generator=g)
    labels = torch.tensor([0, 2, 1, 2])
    if argv[0] == "export":
        x = torch.randn(2, 4, 6, 6, generator=g)
        x[0, 0, 0, :3] = 0.0
        np.save(f"{d}/x.npy", x.numpy())
        torch.manual_seed(0)
        for name, f in ACTS.items():
            if isinstance(f, nn.Module):
                with torch.no_grad():
                    for p in f.parameters():
                        p.uniform_(0.5, 1.5)
            if isinstance(f, nn.Module):
                torch.save(f.state_dict(), f"{d}/{name}.pt")
            torch.onnx.export(Act(f), x, f"{d}/{name}.onnx", input_names=["x"],
                              output_names=["y"], opset_version=15)
            np.save(f"{d}/{name}.ref.npy", f(x).detach().numpy())
        prelu = nn.PReLU(4)
        with torch.no_grad():
            prelu.weight.uniform_(0.1, 0.4)
        torch.onnx.export(prelu, x, f"{d}/prelu.onnx", input_names=["x"], output_names=["y"],
                          opset_version=15)
        np.save(f"{d}/prelu.ref.npy", prelu(x).detach().numpy())
        torch.onnx.export(mlp(), xm, f"{d}/mlp.onnx", input_names=["x"], output_names=["y"],
                          opset_version=15)
        np.save(f"{d}/mlp.x.npy", xm.numpy())
        np.save(f"{d}/mlp.labels.npy", labels.numpy().astype(np.int32))
        return
    if argv[0] == "train-norm":
        # Inputs/train_norm.tg's step: InstanceNorm2d's scale and bias after
        # one SGD step at lr 1 on mean(y * y * x).
        x = torch.from_numpy(np.load(f"{d}/x.npy"))
        norm = ACTS["instance_norm"]
        norm.load_state_dict(torch.load(f"{d}/instance_norm.pt"))
        y = norm(x)
        (y * y * x).mean().backward()
        with torch.no_grad():
            for name, p in norm.named_parameters():
                new = (p - p.grad).numpy()
                err = np.abs(np.load(f"{argv[2]}/net.f.{name}.npy") - new).max() / np.abs(new).max()
                print(f"f.{name}: {err:.3g}")
                if err > 1e-5:
                    raise SystemExit(f"f.{name} differs by {err:.3g} of its largest magnitude")
        return
    m = mlp()
    F.cross_entropy(m(xm), labels).backward()
    with torch.no_grad():
        for name, p in m.named_parameters():
            new = (p - p.grad).numpy()
            got = np.load(f"{argv[2]}/net.{name}.npy").reshape(new.shape)
            err = np.abs(got - new).max() / np.abs(new).max()
            print(f"{name}: {err:.3g}")
            if err > 1e-5:
                raise SystemExit(f"{name} differs by {err:.3g} of its largest magnitude")


if __name__ == "__main__":
    main(sys.argv[1:])
