#!/usr/bin/env python3
"""pool_models.py DIR: PyTorch's pools that ampc maps by hand, exported at
opset 14 with PyTorch's output on a random input: max_pool2d with
ceil_mode=True where the windows do not tile the input (DIR/pool_K.onnx,
DIR/pool_K.x.npy, DIR/pool_K.ref.npy), avg_pool2d with
count_include_pad=False and pads (DIR/avg_K.*), and DIR/convpool.onnx (a
Conv then a ceil-mode MaxPool) with DIR/convpool.{x,ref}.npy and
DIR/convpool.w1.npy (the convolution's weight after one SGD step at lr 1
on mean(y * y)); nearest upsamplings (DIR/up*_{13,17}.onnx with
DIR/up.x.npy and DIR/NAME.ref.npy) and DIR/unet.onnx (a convolution,
pool, upsampling and skip concatenation) with DIR/unet.x.npy and
DIR/unet.w1.npy (the first convolution's weight after one SGD step at lr 1
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


# F.interpolate(mode="nearest") by whole factors (scale_factor, size) and
# nn.Upsample, exported at opsets 13 and 17 (the latter with a dynamic
# batch, so the sizes are computed from Shape); and bilinear.
UPSAMPLES = {
    "up2": lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
    "up23": lambda x: F.interpolate(x, scale_factor=(2, 3), mode="nearest"),
    "up_size": lambda x: F.interpolate(x, size=(10, 15), mode="nearest"),
    "up_module": torch.nn.Upsample(scale_factor=3),
    "up_bilinear": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
}


class Up(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


class UNetlet(torch.nn.Module):
    """Conv, MaxPool, Conv, nearest upsampling, skip concatenation, Conv."""

    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.mid = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.out = torch.nn.Conv2d(6, 2, 1)

    def forward(self, x):
        h = self.mid(F.max_pool2d(F.relu(self.down(x)), 2))
        return self.out(torch.cat([F.interpolate(h, scale_factor=2), x], 1))


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
    x = torch.randn(2, 3, 5, 5, generator=g)
    np.save(f"{out}/up.x.npy", x.numpy())
    for name, f in UPSAMPLES.items():
        for opset in (13, 17):
            torch.onnx.export(Up(f), x, f"{out}/{name}_{opset}.onnx", input_names=["x"],
                              output_names=["y"], opset_version=opset,
                              dynamic_axes={"x": {0: "batch"}} if opset == 17 else None)
        np.save(f"{out}/{name}.ref.npy", f(x).numpy())
    torch.manual_seed(0)
    m = UNetlet()
    x = torch.randn(2, 2, 8, 8, generator=g)
    torch.onnx.export(m, x, f"{out}/unet.onnx", input_names=["x"], output_names=["y"],
                      opset_version=14)
    (m(x) ** 2).mean().backward()
    np.save(f"{out}/unet.x.npy", x.numpy())
    np.save(f"{out}/unet.w1.npy", (m.down.weight - m.down.weight.grad).detach().numpy())
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
