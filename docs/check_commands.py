#!/usr/bin/env python3
"""Runs the shell commands of the README and docs/*.md as a newcomer would.

  check_commands.py --build DIR [--list] [--only FILE:LINE]

Every ```sh block of README.md and docs/*.md runs, in a scratch directory
that holds the repository's examples/, tools/, scripts/ and bench/ (links)
and build/ (a link to DIR), with DIR/bin first on PATH, under `bash -e`:
unless SKIP below names the block (by its file and first line) with the
reason it cannot run in CI. A new or edited block runs, so the docs cannot
drift from what works. `bash scripts/setup.sh` and `bash scripts/build.sh`
are taken as done (the test runs after the build). Placeholder files the
docs' commands name (model.tg) are FIXTURES. Prints one line per block and
exits 1 if any failed, with its output.

Registered as test/Docs/commands.test (lit, part of scripts/test.sh).
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (file, first line of the block) -> why it does not run in CI.
SKIP = {
    ("README.md", "bash scripts/test.sh"):
        "the test command itself",
    ("docs/cuda.md", "# Here, once (Debian 12, ampc built): OpenBLAS, "
     "GoogleTest and the emitted"):
        "needs a GPU machine (and packs a carry of up to 64 MiB); "
        "ctest gpu_run_dry_run runs the dry run",
    ("docs/onnx.md", "ampc run resnet.onnx --input x=batch.npy --outputs-out "
     "out   # out/output_0.npy"):
        "names the user's own model and batch files",
    ("docs/onnx.md", "/usr/bin/python3 tools/onnx-conformance/conformance.py "
     "--ampc build/bin/ampc \\"):
        "the 885-case conformance run (minutes; 10+ under sanitizers), which "
        "test/ONNX/conformance.test runs",
    ("docs/pytorch.md", "ampc run model.tg --params-in P --input x=x.npy "
     "--steps 20 --log a.jsonl --params-out A --outputs-out AO"):
        "names the user's own params and input files",
    ("docs/pytorch.md", "/usr/bin/python3 tools/ampc-torch/tgdiff.py examples "
     "[--amp=fp16 --amp-policy=reference] [--loss-scale...]"):
        "a synopsis with [options]; test/Reference runs these",
    ("docs/sanitizers.md", "bash scripts/sanitize.sh                 # "
     "everything, in build-asan/"):
        "a 25-minute sanitized build of its own",
    ("docs/sanitizers.md", "export ASAN_OPTIONS=allow_user_poisoning=0:"
     "detect_leaks=0"):
        "needs the sanitized build (build-asan/)",
    ("docs/sanitizers.md", "mkdir -p /tmp/corpus"):
        "needs the sanitized build (build-asan/) and runs 5 minutes",
}

# Files the docs' commands take as the user's own.
FIXTURES = {"model.tg": "examples/mlp.tg"}

TAKEN_AS_DONE = re.compile(r"bash scripts/(setup|build)\.sh")


def blocks():
    """(file, line, text) of every ```sh block, in file order."""
    files = ["README.md"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    for name in files:
        with open(os.path.join(ROOT, name)) as f:
            text = f.read()
        for m in re.finditer(r"^```sh\n(.*?)^```", text, re.S | re.M):
            yield name, text.count("\n", 0, m.start()) + 2, m.group(1)


def scratch(build):
    d = tempfile.mkdtemp(prefix="ampc-docs-")
    for sub in ("examples", "tools", "scripts", "bench", "docs", "test"):
        os.symlink(os.path.join(ROOT, sub), os.path.join(d, sub))
    os.symlink(os.path.abspath(build), os.path.join(d, "build"))
    for name, source in FIXTURES.items():
        shutil.copy(os.path.join(ROOT, source), os.path.join(d, name))
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--only")
    args = ap.parse_args()
    env = dict(os.environ)
    env["PATH"] = os.path.join(os.path.abspath(args.build), "bin") + os.pathsep + env["PATH"]
    # CI runs as root: Open MPI's mpirun then wants these (docs/distributed.md).
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    failed = ran = 0
    seen = set()
    for name, line, text in blocks():
        first = text.splitlines()[0] if text.strip() else ""
        seen.add((name, first))
        where = "%s:%d" % (name, line)
        if args.only and args.only != where:
            continue
        reason = SKIP.get((name, first))
        if reason:
            print("SKIP %s: %s" % (where, reason))
            continue
        if args.list:
            print("RUN  %s" % where)
            continue
        work = scratch(args.build)
        env["HOME"] = work  # `cmake --install ... --prefix $HOME/ampc`
        script = TAKEN_AS_DONE.sub("true", text)
        t0 = time.time()
        try:
            p = subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=600)
            code, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            code, out = None, e.stdout or b""
        ran += 1
        status = ("ok" if code == 0 else "FAILED (timed out after 600 s)"
                  if code is None else "FAILED (exit %d)" % code)
        print("RUN  %s: %s in %.1f s" % (where, status, time.time() - t0))
        if code != 0:
            failed += 1
            print(text + "--- output:\n" + out.decode(errors="replace")[-4000:])
        else:
            shutil.rmtree(work)
    stale = [k for k in SKIP if k not in seen]
    for name, first in stale:
        print("STALE SKIP entry (no such block): %s: %s" % (name, first))
    print("%d blocks run, %d failed, %d skipped" % (ran, failed, len(SKIP) - len(stale)))
    sys.exit(1 if failed or stale else 0)


if __name__ == "__main__":
    main()
