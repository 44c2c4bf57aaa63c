#!/usr/bin/env python3
"""The model of bench/cuda/gpt2_gen.py in PyTorch eager, timed per step.

    torch_gpt2.py [--precisions fp32,fp16,bf16] [--warmup 3] [--steps 10]
                  [--layers 12 --batch 8 --seq 1024 --width 768 --heads 12
                   --vocab 50304] [--device cuda] [--out FILE] [--dry-run]

The same blocks as the .tg program (separate q/k/v projections, explicit
matmul + additive causal mask + softmax, tanh GELU, pre-norm, untied head),
the same inputs as bench/cuda/step_bench.cpp (xorshift token stream,
targets = next token), AdamW(lr 3e-4, weight decay 0.1) after clipping the
gradient norm at 1.0. fp32 runs with TF32 off (ampc's f32 GEMMs use none);
fp16 is torch.autocast(float16) with a GradScaler, bf16 torch.autocast
(bfloat16): PyTorch's eager AMP. The loop reads no value inside a step.
Prints one JSON object (or writes --out).

--dry-run runs the small configuration of gpt2_gen.py for two fp32 steps
on the CPU (the code path the GPU run takes, minus the device) and prints
the parameter count of the configuration asked for.
"""
import argparse
import json
import sys
import time


def build(torch, layers, width, heads, vocab, seq, device):
    nn = torch.nn
    F = torch.nn.functional
    hd = width // heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(width, eps=1e-5)
            self.q = nn.Linear(width, width)
            self.k = nn.Linear(width, width)
            self.v = nn.Linear(width, width)
            self.o = nn.Linear(width, width)
            self.ln2 = nn.LayerNorm(width, eps=1e-5)
            self.fc = nn.Linear(width, 4 * width)
            self.pr = nn.Linear(4 * width, width)

        def forward(self, x, mask):
            b, t, _ = x.shape
            h = self.ln1(x)
            q = self.q(h).view(b, t, heads, hd).transpose(1, 2)
            k = self.k(h).view(b, t, heads, hd).permute(0, 2, 3, 1)
            v = self.v(h).view(b, t, heads, hd).transpose(1, 2)
            att = torch.softmax(q @ k * (1.0 / hd ** 0.5) + mask, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, width)
            x = x + self.o(y)
            m = F.gelu(self.fc(self.ln2(x)), approximate="tanh")
            return x + self.pr(m)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.wpe = nn.Parameter(torch.zeros(seq, width))
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.lnf = nn.LayerNorm(width, eps=1e-5)
            self.head = nn.Linear(width, vocab, bias=False)
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, 0.0, 0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, tokens, targets, mask):
            x = self.wte(tokens) + self.wpe
            for blk in self.blocks:
                x = blk(x, mask)
            logits = self.head(self.lnf(x))
            return F.cross_entropy(logits.reshape(-1, vocab).float(), targets)

    return GPT().to(device)


def inputs(torch, batch, seq, vocab, device):
    n = batch * seq
    r = 88172645463325252
    ids = []
    m64 = (1 << 64) - 1
    for _ in range(n + 1):
        r ^= (r << 13) & m64
        r ^= r >> 7
        r ^= (r << 17) & m64
        ids.append(r % vocab)
    t = torch.tensor(ids, dtype=torch.long)
    tokens = t[:n].view(batch, seq).to(device)
    targets = t[1:].to(device)
    q = torch.arange(seq)
    mask = torch.where(q[None, :] <= q[:, None], 0.0, -10000.0).to(device)
    return tokens, targets, mask


def time_precision(torch, a, precision, device):
    torch.manual_seed(0)
    model = build(torch, a.layers, a.width, a.heads, a.vocab, a.seq, device)
    tokens, targets, mask = inputs(torch, a.batch, a.seq, a.vocab, device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
    # torch.amp.GradScaler is new (2.3); torch.cuda.amp's works everywhere
    # (disabled, it is a no-op on the CPU too).
    scaler = torch.cuda.amp.GradScaler(enabled=precision == "fp16")
    losses = []

    def step():
        opt.zero_grad(set_to_none=True)
        if dtype is None:
            loss = model(tokens, targets, mask)
        else:
            with torch.autocast(device_type=device, dtype=dtype):
                loss = model(tokens, targets, mask)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        return loss.detach()

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    t0 = time.time()
    for _ in range(a.warmup):
        step()
    sync()
    t1 = time.time()
    for _ in range(a.steps):
        losses.append(step())
    sync()
    t2 = time.time()
    ms = 1e3 * (t2 - t1) / a.steps
    res = {"label": precision, "ms_per_step": ms,
           "tokens_per_second": a.batch * a.seq / (ms / 1e3),
           "warmup_seconds": t1 - t0, "steps": a.steps,
           "losses": [float(l) for l in losses]}
    if device == "cuda":
        res["max_memory_gb"] = torch.cuda.max_memory_allocated() / 2 ** 30
        torch.cuda.reset_peak_memory_stats()
    del model, opt
    if device == "cuda":
        torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precisions", default="fp32,fp16,bf16")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if a.dry_run:
        w, l, v, s = a.width, a.layers, a.vocab, a.seq
        params = v * w + s * w + l * (12 * w * w + 13 * w) + 2 * w + v * w
        print(f"dry-run: torch {torch.__version__}; would time "
              f"{a.precisions} over {a.layers} layers, {a.batch * a.seq} "
              f"tokens, width {a.width}, vocabulary {a.vocab} "
              f"({params / 1e6:.1f}M parameters) on {a.device}")
        small = argparse.Namespace(**vars(a))
        small.layers, small.batch, small.seq = 1, 2, 16
        small.width, small.heads, small.vocab = 64, 4, 128
        small.warmup, small.steps = 0, 2
        r = time_precision(torch, small, "fp32", "cpu")
        print(f"dry-run: the small configuration ran 2 fp32 steps on the "
              f"CPU, loss {r['losses'][0]:.4f} -> {r['losses'][-1]:.4f}")
        return 0
    results = {"torch": torch.__version__, "cases": []}
    for p in a.precisions.split(","):
        try:
            r = time_precision(torch, a, p, a.device)
        except Exception as e:  # one failure must not hide the others
            r = {"label": p, "error": f"{type(e).__name__}: {e}"}
        print(f"torch {p}: {r.get('ms_per_step', 'FAILED')} ms/step",
              file=sys.stderr)
        results["cases"].append(r)
    text = json.dumps(results, indent=1)
    if a.out:
        open(a.out, "w").write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
