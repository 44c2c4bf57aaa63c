#!/usr/bin/env python3
"""Writes the GPT-2-small-sized training step as a .tg program.

    gpt2_gen.py [--layers 12] [--batch 8] [--seq 1024] [--width 768]
                [--heads 12] [--vocab 50304] [-o FILE]

The defaults are GPT-2 small (124M parameters with an untied head: 163M)
at 8 x 1024 = 8192 tokens a step. The vocabulary is GPT-2's 50257 padded
to 50304 (a multiple of 64) so the head's GEMMs have aligned rows, as
nanoGPT does; bench/cuda/torch_gpt2.py builds the same model in PyTorch.
Each block: pre-norm causal self-attention (separate q, k, v projections,
explicit matmul + additive mask + softmax, no fused attention) and a
tanh-GELU MLP of 4x width, residual connections; a final layer norm and a
linear head; next-token cross-entropy; AdamW (lr 3e-4, weight decay 0.1,
gradient clipping at 1.0). The mask input is the additive causal mask
(0 on and below the diagonal, -10000 above).

bench/cuda/gpt2_step.tg is this script's output with the defaults; a small
configuration (--layers 1 --batch 2 --seq 16 --width 64 --heads 4
--vocab 128) is what the GPU script's dry run executes on the CPU.
"""
import argparse
import sys


def program(layers, batch, seq, width, heads, vocab):
    hd = width // heads
    assert hd * heads == width
    tokens = batch * seq
    scale = 1.0 / hd ** 0.5
    out = []
    w = out.append
    w(f"# GPT-2-small-sized training step, written by bench/cuda/gpt2_gen.py:")
    w(f"# {layers} layers, batch {batch} x sequence {seq} = {tokens} tokens, "
      f"width {width}, {heads} heads of {hd}, vocabulary {vocab}.")
    w(f"graph gpt2(tokens: i32[{batch}, {seq}], targets: i32[{tokens}], "
      f"mask: f32[{seq}, {seq}]) -> f32[] {{")
    w(f"  param wte: f32[{vocab}, {width}] = normal(0.0, 0.02)")
    w(f"  param wpe: f32[{seq}, {width}] = normal(0.0, 0.02)")
    for l in range(layers):
        for n in ("ln1", "ln2"):
            w(f"  param l{l}_{n}_w: f32[{width}] = ones")
            w(f"  param l{l}_{n}_b: f32[{width}] = zeros")
        for n in ("q", "k", "v", "o"):
            w(f"  param l{l}_w{n}: f32[{width}, {width}] = normal(0.0, 0.02)")
            w(f"  param l{l}_b{n}: f32[{width}] = zeros")
        w(f"  param l{l}_wfc: f32[{4 * width}, {width}] = normal(0.0, 0.02)")
        w(f"  param l{l}_bfc: f32[{4 * width}] = zeros")
        w(f"  param l{l}_wpr: f32[{width}, {4 * width}] = normal(0.0, 0.02)")
        w(f"  param l{l}_bpr: f32[{width}] = zeros")
    w(f"  param lnf_w: f32[{width}] = ones")
    w(f"  param lnf_b: f32[{width}] = zeros")
    w(f"  param w_head: f32[{vocab}, {width}] = normal(0.0, 0.02)")
    w("")
    w(f"  x0 = embedding(wte, tokens) + wpe")
    split = f"shape = [{batch}, {seq}, {heads}, {hd}]"
    for l in range(layers):
        x, p = f"x{l}", f"l{l}_"
        w(f"  h{l} = layer_norm({x}, {p}ln1_w, {p}ln1_b, eps = 1e-5)")
        w(f"  q{l} = transpose(reshape(linear(h{l}, {p}wq, {p}bq), {split}), "
          f"perm = [0, 2, 1, 3])")
        w(f"  k{l} = transpose(reshape(linear(h{l}, {p}wk, {p}bk), {split}), "
          f"perm = [0, 2, 3, 1])")
        w(f"  v{l} = transpose(reshape(linear(h{l}, {p}wv, {p}bv), {split}), "
          f"perm = [0, 2, 1, 3])")
        w(f"  att{l} = softmax(matmul(q{l}, k{l}) * {scale!r} + mask, dim = -1)")
        w(f"  y{l} = reshape(transpose(matmul(att{l}, v{l}), perm = [0, 2, 1, 3]), "
          f"shape = [{batch}, {seq}, {width}])")
        w(f"  r{l} = {x} + linear(y{l}, {p}wo, {p}bo)")
        w(f"  m{l} = gelu(linear(layer_norm(r{l}, {p}ln2_w, {p}ln2_b, eps = 1e-5), "
          f"{p}wfc, {p}bfc), approximate = \"tanh\")")
        w(f"  x{l + 1} = r{l} + linear(m{l}, {p}wpr, {p}bpr)")
    w(f"  logits = linear(layer_norm(x{layers}, lnf_w, lnf_b, eps = 1e-5), w_head)")
    w(f"  loss = cross_entropy(reshape(logits, shape = [{tokens}, {vocab}]), targets)")
    w(f"  minimize loss with adamw(lr = 0.0003, weight_decay = 0.1, "
      f"max_grad_norm = 1.0)")
    w(f"  return loss")
    w("}")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("-o", "--out", default="-")
    a = ap.parse_args()
    text = program(a.layers, a.batch, a.seq, a.width, a.heads, a.vocab)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    main()
