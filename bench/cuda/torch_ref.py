#!/usr/bin/env python3
"""PyTorch timings of the cases kernel_bench times, in the same run.

Same sizes and dtypes as bench/cuda/kernel_bench.cpp, timed with CUDA events
after warm-up. Writes {"cases": [{"name", "us_per_call", ...}]} as JSON.

    torch_ref.py [--out FILE] [--dry-run]

--dry-run checks that torch imports and lists the cases without touching
CUDA.
"""
import argparse
import json
import sys


def cases(torch):
    T, C, H, V = 8192, 768, 3072, 50257
    F = torch.nn.functional
    dev = "cuda"
    out = []

    def gemm(dt):
        n = 8192
        a = torch.randn(n, n, device=dev, dtype=dt)
        b = torch.randn(n, n, device=dev, dtype=dt)
        return lambda: torch.mm(a, b), 2.0 * n ** 3, 0

    for name, dt in (("f16", torch.float16), ("bf16", torch.bfloat16),
                     ("f32", torch.float32)):
        out.append(("gemm_8192^3_" + name, lambda dt=dt: gemm(dt)))

    def linear_fwd():
        x = torch.randn(T, C, device=dev, dtype=torch.float16)
        w = torch.randn(H, C, device=dev, dtype=torch.float16)
        b = torch.randn(H, device=dev, dtype=torch.float16)
        return (lambda: F.gelu(F.linear(x, w, b), approximate="tanh"),
                2.0 * T * C * H, 0)

    def linear_bwd():
        x = torch.randn(T, C, device=dev, dtype=torch.float16)
        w = torch.randn(H, C, device=dev, dtype=torch.float16)
        dy = torch.randn(T, H, device=dev, dtype=torch.float16)
        return (lambda: (dy.mm(w), dy.t().mm(x), dy.sum(0)),
                4.0 * T * C * H, 0)

    def ln_fwd():
        x = torch.randn(T, C, device=dev)
        w = torch.randn(C, device=dev)
        b = torch.randn(C, device=dev)
        return lambda: F.layer_norm(x, (C,), w, b), 0, 2.0 * T * C * 4

    def ln_bwd():
        x = torch.randn(T, C, device=dev, requires_grad=True)
        w = torch.randn(C, device=dev, requires_grad=True)
        b = torch.randn(C, device=dev, requires_grad=True)
        y = F.layer_norm(x, (C,), w, b)
        dy = torch.randn_like(y)
        return (lambda: torch.autograd.grad(y, (x, w, b), dy,
                                            retain_graph=True),
                0, 3.0 * T * C * 4)

    def softmax():
        x = torch.randn(96, 1024, 1024, device=dev, dtype=torch.float16)
        return lambda: torch.softmax(x, -1), 0, 2.0 * 96 * 1024 * 1024 * 2

    def softmax_f32():
        x = torch.randn(96, 1024, 1024, device=dev)
        return lambda: torch.softmax(x, -1), 0, 2.0 * 96 * 1024 * 1024 * 4

    def softmax_bwd():
        # What autocast's softmax of f16 scores runs backward: dy and y in
        # f32, the gradient to the f16 input.
        y = torch.softmax(torch.randn(96, 1024, 1024, device=dev), -1)
        dy = torch.randn_like(y)
        return (lambda: torch._softmax_backward_data(dy, y, -1, torch.float16),
                0, 96.0 * 1024 * 1024 * (4 + 4 + 2))

    def xent():
        logits = torch.randn(T, V, device=dev, dtype=torch.float16,
                             requires_grad=True)
        labels = torch.randint(0, V, (T,), device=dev)

        def run():
            loss = F.cross_entropy(logits, labels)
            return torch.autograd.grad(loss, logits)
        return run, 0, 3.0 * T * V * 2

    def emb_bwd():
        table = torch.randn(V, C, device=dev, requires_grad=True)
        tok = torch.randint(0, V, (T,), device=dev)
        y = F.embedding(tok, table)
        dy = torch.randn_like(y)
        return (lambda: torch.autograd.grad(y, table, dy, retain_graph=True),
                0, T * C * 4 + V * C * 4)

    def gpt2_params():
        sizes = [50257 * 768, 1024 * 768]
        for _ in range(12):
            sizes += [768, 768, 768 * 2304, 2304, 768 * 768, 768, 768, 768,
                      768 * 3072, 3072, 3072 * 768, 768]
        sizes += [768, 768]
        return [torch.randn(s, device=dev) for s in sizes]

    def unscale():
        g = gpt2_params()
        found = torch.zeros(1, device=dev)
        inv = torch.ones(1, device=dev)
        total = sum(t.numel() for t in g)
        return (lambda: torch._amp_foreach_non_finite_check_and_unscale_(
            g, found, inv), 0, 2.0 * total * 4)

    def adamw():
        p = [torch.nn.Parameter(t) for t in gpt2_params()]
        for t in p:
            t.grad = torch.randn_like(t)
        opt = torch.optim.AdamW(p, lr=1e-4, weight_decay=0.1, foreach=True)
        total = sum(t.numel() for t in p)
        return opt.step, 0, 7.0 * total * 4

    out += [("linear_fwd_mlp_fc_f16_gelu_tanh", linear_fwd),
            ("linear_bwd_mlp_fc_f16", linear_bwd),
            ("layer_norm_fwd_8192x768_f32", ln_fwd),
            ("layer_norm_bwd_8192x768_f32", ln_bwd),
            ("softmax_fwd_96x1024x1024_f16", softmax),
            ("softmax_fwd_96x1024x1024_f32", softmax_f32),
            ("softmax_bwd_96x1024x1024_f32_to_f16", softmax_bwd),
            ("cross_entropy_fwd_bwd_8192x50257_f16", xent),
            ("embedding_bwd_8192_tokens_50257x768_f32", emb_bwd),
            ("unscale_124M_f32", unscale),
            ("adamw_124M_f32", adamw)]
    return out


def time_call(torch, fn, min_secs=0.3):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    calls, elapsed = 0, 0.0
    while elapsed < min_secs * 1e3 and calls < 2000:
        start.record()
        for _ in range(5):
            fn()
        end.record()
        end.synchronize()
        elapsed += start.elapsed_time(end)
        calls += 5
    return elapsed * 1e3 / calls  # microseconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"torch_ref: torch does not import: {e}", file=sys.stderr)
        return 1
    cs = cases(torch)
    if args.dry_run:
        for name, _ in cs:
            print(f"dry-run: would time torch {name}")
        print(f"dry-run: torch {torch.__version__}, {len(cs)} cases, "
              "stopping before the first CUDA call")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    for name, make in cs:
        try:
            fn, flops, nbytes = make()
            us = time_call(torch, fn)
            r = {"name": name, "us_per_call": round(us, 3)}
            if flops:
                r["tflops"] = round(flops / us / 1e6, 2)
            if nbytes:
                r["gbps"] = round(nbytes / us / 1e3, 1)
        except Exception as e:  # one failing case must not hide the others
            r = {"name": name, "error": str(e)}
        print(f"{name:44s} {r.get('us_per_call', 'FAILED')}", file=sys.stderr)
        results.append(r)
        torch.cuda.empty_cache()
    text = json.dumps({"torch": torch.__version__, "cases": results}) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
