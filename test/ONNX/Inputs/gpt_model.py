#!/usr/bin/env python3
"""A small GPT-style decoder written by hand (token and position
embeddings, a causal mask from torch.tril(torch.ones(T, T)) and
masked_fill, attention from Linear/view/transpose/matmul/softmax, tanh
GELU, LayerNorm), for ampc's ONNX importer.

  gpt_model.py export DIR
      DIR/gpt.onnx (opset 17, batch and length dynamic), DIR/ids.npy
      (i64[2, 6]), DIR/labels.npy (i32[12], the next tokens) and
      DIR/ref.npy (PyTorch's logits on ids).
  gpt_model.py train DIR LOG.jsonl PARAMS_DIR
      PyTorch trains the module as Inputs/train_gpt.tg does (5 SGD steps,
      lr 0.1, momentum 0.9, cross-entropy of the logits reshaped to
      [12, 11]); exit 0 when ampc's per-step losses (LOG.jsonl) agree within
      1e-5 of the first loss and the embeddings and the final norm ampc
      wrote (PARAMS_DIR/net.<name>.npy) within 1e-5 of their largest
      magnitude.
"""
import json
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class GPT(nn.Module):
    def __init__(self, vocab=11, d=16, heads=2, layers=2, t_max=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(t_max, d)
        self.heads = heads
        self.blocks = nn.ModuleList([nn.ModuleDict(dict(
            ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
            ln2=nn.LayerNorm(d), fc=nn.Linear(d, 4 * d), fc2=nn.Linear(4 * d, d)))
            for _ in range(layers)])
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        # Equal initial values (LayerNorm's ones and zeros) would be one
        # initializer in the file: every parameter its own values.
        with torch.no_grad():
            for p in self.parameters():
                p.add_(0.02 * torch.randn_like(p))

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t))
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        for blk in self.blocks:
            h = blk["ln1"](x)
            q, k, v = blk["qkv"](h).split(h.shape[-1], -1)

            def heads(z):
                return z.view(b, t, self.heads, -1).transpose(1, 2)

            q, k, v = heads(q), heads(k), heads(v)
            a = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
            a = a.masked_fill(~mask, float("-inf")).softmax(-1)
            x = x + blk["proj"]((a @ v).transpose(1, 2).reshape(b, t, -1))
            x = x + blk["fc2"](F.gelu(blk["fc"](blk["ln2"](x)), approximate="tanh"))
        return self.head(self.lnf(x))


def model():
    torch.manual_seed(0)
    return GPT().eval()


def main(argv):
    d = argv[1]
    ids = torch.randint(0, 11, (2, 7), generator=torch.Generator().manual_seed(1))
    ids, labels = ids[:, :6].contiguous(), ids[:, 1:].reshape(-1).to(torch.int32)
    m = model()
    if argv[0] == "export":
        torch.onnx.export(m, ids, f"{d}/gpt.onnx", input_names=["ids"], output_names=["y"],
                          opset_version=17,
                          dynamic_axes={"ids": {0: "batch", 1: "t"}, "y": {0: "batch", 1: "t"}})
        np.save(f"{d}/ids.npy", ids.numpy())
        np.save(f"{d}/labels.npy", labels.numpy())
        with torch.no_grad():
            np.save(f"{d}/ref.npy", m(ids).numpy())
        return
    log, params = argv[2], argv[3]
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(m(ids).reshape(12, 11), labels.long())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    got = [json.loads(line)["loss"] for line in open(log) if '"loss"' in line]
    worst = max(abs(a - b) for a, b in zip(losses, got)) / abs(losses[0])
    print(f"losses {losses[0]:.4g} -> {losses[-1]:.4g}, worst difference {worst:.3g} of the first")
    if len(got) != len(losses) or worst > 1e-5:
        raise SystemExit(f"ampc's losses {got} differ from PyTorch's {losses}")
    for name in ["tok.weight", "pos.weight", "lnf.weight", "lnf.bias"]:
        ref = dict(m.named_parameters())[name].detach().numpy()
        err = np.abs(np.load(f"{params}/net.{name}.npy") - ref).max() / np.abs(ref).max()
        print(f"{name}: {err:.3g}")
        if err > 1e-5:
            raise SystemExit(f"{name} differs by {err:.3g} of its largest magnitude")


if __name__ == "__main__":
    main(sys.argv[1:])
