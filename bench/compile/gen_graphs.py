#!/usr/bin/env python3
"""Writes large .tg inference graphs for the compile-time benchmark.

  gen_graphs.py OUTDIR [--ops N ...]

For each N, two graphs of about N source ops each:
  mlp_N.tg          a deep residual MLP: x = x + relu(linear(x, w, b)) per layer
                    (3 ops per layer);
  transformer_N.tg  stacked pre-norm transformer blocks (attention + GELU MLP,
                    24 ops per block) on a [2, 8, 32] activation.
The op count is the number of ops of the source program (what the AMP report
lists); it is printed and used by run_compile.py.
"""
import argparse
import os


def mlp(n_ops):
    layers = max(1, n_ops // 3)
    lines = ["graph mlp(x: f32[16, 64]) -> f32[16, 64] {"]
    for i in range(layers):
        lines.append(f"  param w{i}: f32[64, 64] = normal(0.0, 0.02)")
        lines.append(f"  param b{i}: f32[64] = zeros")
    prev = "x"
    for i in range(layers):
        lines.append(f"  h{i} = {prev} + relu(linear({prev}, w{i}, b{i}))")
        prev = f"h{i}"
    lines.append(f"  return {prev}")
    lines.append("}")
    return "\n".join(lines) + "\n", layers * 3


BLOCK_OPS = 24


def transformer(n_ops):
    blocks = max(1, n_ops // BLOCK_OPS)
    lines = ["graph transformer(x: f32[2, 8, 32], mask: f32[8, 8]) -> f32[2, 8, 32] {"]
    for i in range(blocks):
        for p, shape, init in [("ln1_w", "[32]", "ones"), ("ln1_b", "[32]", "zeros"),
                               ("wq", "[32, 32]", "normal(0.0, 0.02)"), ("wk", "[32, 32]", "normal(0.0, 0.02)"),
                               ("wv", "[32, 32]", "normal(0.0, 0.02)"), ("wo", "[32, 32]", "normal(0.0, 0.02)"),
                               ("ln2_w", "[32]", "ones"), ("ln2_b", "[32]", "zeros"),
                               ("w_fc", "[128, 32]", "normal(0.0, 0.02)"), ("b_fc", "[128]", "zeros"),
                               ("w_pr", "[32, 128]", "normal(0.0, 0.02)"), ("b_pr", "[32]", "zeros")]:
            lines.append(f"  param {p}{i}: f32{shape} = {init}")
    prev = "x"
    for i in range(blocks):
        lines += [
            f"  h{i} = layer_norm({prev}, ln1_w{i}, ln1_b{i})",
            f"  q{i} = transpose(reshape(linear(h{i}, wq{i}), shape = [2, 8, 4, 8]), perm = [0, 2, 1, 3])",
            f"  k{i} = transpose(reshape(linear(h{i}, wk{i}), shape = [2, 8, 4, 8]), perm = [0, 2, 3, 1])",
            f"  v{i} = transpose(reshape(linear(h{i}, wv{i}), shape = [2, 8, 4, 8]), perm = [0, 2, 1, 3])",
            f"  s{i} = matmul(q{i}, k{i}) * 0.35 + mask",
            f"  a{i} = softmax(s{i}, dim = -1)",
            f"  y{i} = reshape(transpose(matmul(a{i}, v{i}), perm = [0, 2, 1, 3]), shape = [2, 8, 32])",
            f"  r{i} = {prev} + linear(y{i}, wo{i})",
            f"  m{i} = gelu(linear(layer_norm(r{i}, ln2_w{i}, ln2_b{i}), w_fc{i}, b_fc{i}), approximate = \"tanh\")",
            f"  o{i} = r{i} + linear(m{i}, w_pr{i}, b_pr{i})",
        ]
        prev = f"o{i}"
    lines.append(f"  return {prev}")
    lines.append("}")
    # layer_norm 1, q/k/v 3 x 3, matmul+mul+add 3, softmax 1, matmul+transpose
    # +reshape 3, linear+add 2, layer_norm+linear+gelu 3, linear+add 2 = 24.
    return "\n".join(lines) + "\n", blocks * BLOCK_OPS


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--ops", type=int, nargs="+", default=[10000, 100000, 200000])
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    for n in args.ops:
        for name, gen in [("mlp", mlp), ("transformer", transformer)]:
            text, ops = gen(n)
            path = os.path.join(args.outdir, f"{name}_{n}.tg")
            with open(path, "w") as f:
                f.write(text)
            print(f"{path} {ops}")


if __name__ == "__main__":
    main()
