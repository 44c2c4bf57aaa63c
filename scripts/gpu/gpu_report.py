#!/usr/bin/env python3
"""The report of scripts/gpu/gpu_run.sh: gpu_run.json, gpu_summary.txt and
logs.tar.gz, the only three files the run leaves in $OUT.

  gpu_report.py --work WORK --out OUT --seconds S [--stopped SIGNAL] [--print]
  gpu_report.py --work WORK --verdict      # exit 0 when the run passed

Each file is written as NAME.part in OUT and renamed, so OUT never holds a
half-written one; the run calls this after every phase and from its
EXIT/TERM trap. logs.tar.gz keeps the tail of each log (at most LOG_BYTES)
and stays under MAX_TAR bytes (a device machine returns files of at most
16 MiB).
"""
import argparse
import io
import json
import os
import sys
import tarfile

MAX_TAR = 15 * 1024 * 1024
LOG_BYTES = 512 * 1024
# Test states that fail the run. On a GPU machine a CUDA case that skipped
# for want of a device did not test anything.
BAD = ("failed", "timeout", "skipped: no GPU", "not run: no time left")


def records(work):
    path = os.path.join(work, "records.jsonl")
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except ValueError:  # a line cut by a kill
                pass
    return out


def load(work, name):
    p = os.path.join(work, name)
    try:
        return json.load(open(p)) if os.path.exists(p) else None
    except ValueError:
        return None


def env_of(recs):
    return next((r for r in recs if r["kind"] == "env"),
                {"gpu": "?", "nvcc": "?", "torch": "?", "commit": "?",
                 "dry_run": False})


def failures(recs):
    """The records that fail the run."""
    bad = []
    for r in recs:
        st = str(r.get("status", ""))
        if r["kind"] == "test" and st in BAD:
            bad.append(r)
        elif r["kind"] != "test" and ("failed" in st or r.get("ok") is False
                                       or r.get("rc") not in (None, 0)):
            bad.append(r)
        elif r["kind"] == "tests" or r["kind"] == "stopped":
            bad.append(r)
    return bad


def summary(work, recs, secs, stopped):
    env = env_of(recs)
    dry = env.get("dry_run")
    lines = [f"ampc CUDA run{' (DRY RUN: nothing ran on a GPU)' if dry else ''}",
             f"gpu: {env.get('gpu')}", f"nvcc: {env.get('nvcc')}",
             f"torch: {env.get('torch')}",
             f"commit: {env.get('commit')}, {secs} s"]
    if stopped:
        lines.append(f"STOPPED by SIG{stopped} after {secs} s: the phases "
                     "below the last one recorded did not run")
    for r in recs:
        if r["kind"] == "build":
            lines.append(
                f"build: {'ok' if r['ok'] else 'FAILED'}"
                + (f", CUDA backend {'ON' if r.get('cuda_backend') else 'OFF'}"
                   if r["ok"] and "cuda_backend" in r else "")
                + (f", NCCL {'ON' if r.get('nccl') else 'OFF'}"
                   if r["ok"] else "")
                + f" ({r['seconds']} s)")
    tests = [r for r in recs if r["kind"] == "test"]
    listed = next((r["count"] for r in recs if r["kind"] == "test_list"), None)
    counts = {}
    for t in tests:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    if listed is None:
        listed = "none yet"
    # The test binary's cases plus the checks beside them (lazy loading,
    # NCCL, the data-parallel steps), counted together.
    extra = (f" + {len(tests) - listed} other checks"
             if isinstance(listed, int) and len(tests) > listed else "")
    lines.append(f"tests ({listed} cases listed by the test binary{extra}): "
                 + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    for t in tests:
        if t["status"] in BAD:
            lines.append(f"  {t['status']}: {t['name']}")
    for r in failures(recs):
        if r["kind"] != "test":
            lines.append(f"FAILED step: {json.dumps(r)}")
    result = {"env": env, "seconds": secs, "stopped": stopped or None,
              "records": recs}
    ampc, torch = load(work, "kernel_bench.json"), load(work, "torch_ref.json")
    result.update(ampc_kernels=ampc, torch_kernels=torch)
    if ampc:
        tmap = {c["name"]: c for c in (torch or {}).get("cases", [])}
        lines.append(f"{'kernel':44s} {'ampc us':>10s} {'torch us':>10s} "
                     f"{'torch/ampc':>10s}")
        ratios = {}
        for c in ampc["cases"]:
            a, b = c.get("us_per_call"), tmap.get(c["name"], {}).get("us_per_call")
            if a and b:
                ratios[c["name"]] = b / a
            lines.append(f"{c['name']:44s} {a if a else 'FAILED':>10} "
                         f"{b if b else '-':>10} "
                         f"{(f'{b / a:.2f}' if a and b else '-'):>10}")
        result["speed_vs_torch"] = ratios
        g = ratios.get("gemm_8192^3_f16")
        if g is not None:
            lines.append(f"target f16 GEMM 8192^3 >= 0.97x torch: {g:.3f}x "
                         f"({'met' if g >= 0.97 else 'NOT met'})")
    steps = {p: load(work, f"step_{p}.json") for p in ("fp32", "fp16", "bf16")}
    tg = load(work, "torch_gpt2.json") or {}
    tsteps = {c["label"]: c for c in tg.get("cases", [])}
    result["gpt2_step"] = {"ampc": steps, "torch": tg}
    if any(steps.values()) or tsteps:
        lines.append("GPT-2-small-sized training step (8192 tokens, width 768, "
                     "12 layers), ms per step:")
        lines.append(f"{'precision':10s} {'ampc':>10s} {'torch':>10s} "
                     f"{'torch/ampc':>10s} {'syncs in steps':>15s}")
        for p in ("fp32", "fp16", "bf16"):
            a = (steps[p] or {}).get("ms_per_step")
            b = tsteps.get(p, {}).get("ms_per_step")
            sy = (steps[p] or {}).get("host_syncs_inside_steps", "-")
            lines.append(f"{p:10s} {a if a else 'FAILED':>10} "
                         f"{b if b else 'FAILED':>10} "
                         f"{(f'{b / a:.2f}' if a and b else '-'):>10} {sy:>15}")
        a16 = (steps["fp16"] or {}).get("ms_per_step")
        a32 = (steps["fp32"] or {}).get("ms_per_step")
        t16 = tsteps.get("fp16", {}).get("ms_per_step")
        if a16 and t16:
            lines.append(f"target fp16 step >= 1.3x PyTorch eager AMP: "
                         f"{t16 / a16:.2f}x "
                         f"({'met' if t16 / a16 >= 1.3 else 'NOT met'})")
        if a16 and a32:
            lines.append(f"target fp16 step >= 2x ampc f32: {a32 / a16:.2f}x "
                         f"({'met' if a32 / a16 >= 2 else 'NOT met'})")
        syncs = [s.get("host_syncs_inside_steps") for s in steps.values() if s]
        if syncs:
            lines.append("target 0 host synchronisations inside emitted steps: "
                         + ("met" if all(x == 0 for x in syncs) else "NOT met"))
    for r in recs:
        if r["kind"] == "phase":
            lines.append(f"phase {r['name']}: {r['status']}")
    small = load(work, "small_step.json")
    if small:
        lines.append("dry run: the small GPT-2 configuration stepped on the "
                     "CPU through the emitted C++: loss "
                     f"{small['losses'][0]:.4f} -> {small['losses'][-1]:.4f}, "
                     f"{small['host_syncs_inside_steps']} host syncs inside "
                     "steps")
    result["passed"] = not dry and not failures(recs) and bool(tests)
    lines.append("verdict: " + ("dry run" if dry else
                                "PASSED" if result["passed"] else "FAILED"))
    return result, lines


def logs_tar(logs, limit):
    """logs/ as a gzipped tar, each file cut to its last `limit` bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for dirpath, _, files in sorted(os.walk(logs)):
            for f in sorted(files):
                p = os.path.join(dirpath, f)
                try:
                    size = os.path.getsize(p)
                    with open(p, "rb") as fh:
                        if size > limit:
                            fh.seek(size - limit)
                        data = fh.read(limit)
                except OSError:
                    continue
                info = tarfile.TarInfo(os.path.join(
                    "logs", os.path.relpath(p, logs)))
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write(work, out, secs, stopped, show):
    recs = records(work)
    result, lines = summary(work, recs, secs, stopped)
    limit = LOG_BYTES
    data = logs_tar(os.path.join(work, "logs"), limit)
    while len(data) > MAX_TAR and limit > 1024:
        limit //= 4
        data = logs_tar(os.path.join(work, "logs"), limit)
    files = {"gpu_run.json": json.dumps(result, indent=1).encode(),
             "gpu_summary.txt": ("\n".join(lines) + "\n").encode(),
             "logs.tar.gz": data}
    for name, blob in files.items():
        # Renamed in OUT's own file system, so a reader sees a whole file.
        part = os.path.join(out, name + ".part")
        with open(part, "wb") as fh:
            fh.write(blob)
        os.replace(part, os.path.join(out, name))
    if show:
        print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out")
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--stopped", default="")
    ap.add_argument("--verdict", action="store_true")
    ap.add_argument("--print", action="store_true", help="the summary too")
    a = ap.parse_args()
    if a.verdict:
        recs = records(a.work)
        ok = any(r["kind"] == "test" for r in recs) and not failures(recs)
        return 0 if ok else 1
    write(a.work, a.out, a.seconds, a.stopped, a.print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
