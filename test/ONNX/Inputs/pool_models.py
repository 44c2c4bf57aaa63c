#!/usr/bin/env python3
"""pool_models.py DIR: PyTorch's pools that ampc maps by hand, exported at
opset 14 with PyTorch's output on a random input: max_pool2d with
ceil_mode=True where the windows do not tile the input (DIR/pool_K.onnx,
DIR/pool_K.x.npy, DIR/pool_K.ref.npy), avg_pool2d with
count_include_pad=False and pads (DIR/avg_K.*), and DIR/convpool.onnx (a
Conv then a ceil-mode MaxPool) with DIR/convpool.{x,ref}.npy and
DIR/convpool.w1.npy (the convolution's weight after one SGD step at lr 1
on mean(y * y))."""
import sys

import numpy as np
import torch
import torch.nn.functional as F

# (H, W, kernel, stride, padding): 8x8 k3 s2 (GoogLeNet's and SqueezeNet
# 1.0's pools), a last window that would start in the end padding (3, k2,
# s2, p1: 2 windows, not 3), a kernel smaller than the stride, padding.
CASES = [(8, 8, 3, 2, 0), (13, 13, 3, 2, 0), (3, 3, 2, 2, 1), (4, 5, 1, 2, 0),
         (7, 6, 3, 2, 1), (6, 9, 2, 3, 0), (9, 9, (3, 2), (2, 3), (1, 0))]


class Pool(torch.nn.Module):
    def __init__(self, k, s, p):
        super().__init__()
        self.k, self.s, self.p = k, s, p

    def forward(self, x):
        return F.max_pool2d(x, self.k, self.s, self.p, ceil_mode=True)


# AvgPool2d(count_include_pad=False) with pads: (H, W, kernel, stride,
# padding).
AVG_CASES = [(8, 8, 3, 2, 1), (7, 5, (3, 2), (2, 1), (1, 1)), (5, 6, 3, 1, 1), (9, 9, 5, 3, 2)]


class AvgPool(torch.nn.Module):
    def __init__(self, k, s, p):
        super().__init__()
        self.k, self.s, self.p = k, s, p

    def forward(self, x):
        return F.avg_pool2d(x, self.k, self.s, self.p, count_include_pad=False)


class ConvPool(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3)

    def forward(self, x):
        return F.max_pool2d(self.conv(x), 3, 2, ceil_mode=True)


def main(out):
    g = torch.Generator().manual_seed(0)
    for i, (h, w, k, s, p) in enumerate(CASES):
        x = torch.randn(2, 3, h, w, generator=g)
        m = Pool(k, s, p)
        torch.onnx.export(m, x, f"{out}/pool_{i}.onnx", input_names=["x"],
                          output_names=["y"], opset_version=14)
        np.save(f"{out}/pool_{i}.x.npy", x.numpy())
        np.save(f"{out}/pool_{i}.ref.npy", m(x).numpy())
    for i, (h, w, k, s, p) in enumerate(AVG_CASES):
        x = torch.randn(2, 3, h, w, generator=g)
        m = AvgPool(k, s, p)
        torch.onnx.export(m, x, f"{out}/avg_{i}.onnx", input_names=["x"],
                          output_names=["y"], opset_version=14)
        np.save(f"{out}/avg_{i}.x.npy", x.numpy())
        np.save(f"{out}/avg_{i}.ref.npy", m(x).numpy())
    torch.manual_seed(0)
    m = ConvPool()
    x = torch.randn(2, 2, 10, 10, generator=g)
    torch.onnx.export(m, x, f"{out}/convpool.onnx", input_names=["x"],
                      output_names=["y"], opset_version=14)
    y = m(x)
    (y * y).mean().backward()
    np.save(f"{out}/convpool.x.npy", x.numpy())
    np.save(f"{out}/convpool.ref.npy", y.detach().numpy())
    # One SGD step at lr 1: the new weight is the old one less the gradient.
    np.save(f"{out}/convpool.w1.npy", (m.conv.weight - m.conv.weight.grad).detach().numpy())


if __name__ == "__main__":
    main(sys.argv[1])
