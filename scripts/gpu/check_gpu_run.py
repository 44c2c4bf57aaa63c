#!/usr/bin/env python3
"""Checks scripts/gpu/gpu_run.sh against a GPU machine's limits, without one.

Runs `gpu_run.sh --dry-run --runtime-build BUILD` twice (ctest
ampc_runtime.gpu_run_dry_run):
  1. to the end: $OUT must hold exactly gpu_run.json, gpu_summary.txt and
     logs.tar.gz (at most 8 files come back from a device machine, each at
     most 16 MiB, at most 2 folders down, names of letters, digits, '.',
     '_', '-'); the test cases it lists must be exactly those the test
     binary's own --gtest_list_tests gives (the CUDA cases a name pattern
     missed among them); the data-parallel harness and the small GPT-2
     step must have passed on the CPU; no scratch may be left behind;
  2. stopped by SIGTERM midway: it must exit soon after, leaving the same
     three files, a summary that says it was stopped, and none of its
     processes.
Prints what it checked; exits 1 on the first group of failures.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

ALLOWED = {"gpu_run.json", "gpu_summary.txt", "logs.tar.gz"}
NAME = re.compile(r"^[A-Za-z0-9._-]+$")
MAX_FILES, MAX_BYTES, MAX_DEPTH = 8, 16 * 1024 * 1024, 2
# The CUDA cases the old filter 'Cuda*:HostRead.Cuda*' missed before the script listed the binary's own cases.
MISSED_BEFORE = [
    "AccumulateCuda.SameBitsAsTheCpu", "ModelCopiesCuda.MatchCpuBitForBit",
    "NormDropoutCuda.DropoutMasksAreBitIdentical",
    "NormDropoutCuda.BatchNormMatchesTheCpu",
    "ReduceLossCuda.ReductionsAndNorms", "ReduceLossCuda.GroupNormAndCosine",
    "ReduceLossCuda.Losses", "CommSelf.CudaDeviceOfTheRank"]

errors = []


def fail(msg):
    errors.append(msg)
    print(f"FAIL: {msg}")


def check_out(out):
    """The limits on what comes back from $OUT."""
    found = []
    for dirpath, dirs, files in os.walk(out):
        depth = os.path.relpath(dirpath, out).count(os.sep) + (dirpath != out)
        if depth > MAX_DEPTH:
            fail(f"{dirpath} is more than {MAX_DEPTH} folders down")
        for n in dirs + files:
            if not NAME.match(n):
                fail(f"{os.path.join(dirpath, n)}: a name a device run drops")
        for f in files:
            p = os.path.join(dirpath, f)
            found.append(os.path.relpath(p, out))
            if os.path.getsize(p) > MAX_BYTES:
                fail(f"{p}: {os.path.getsize(p)} bytes, over 16 MiB")
    if len(found) > MAX_FILES:
        fail(f"{len(found)} files in $OUT, at most {MAX_FILES} come back")
    if set(found) != ALLOWED:
        fail(f"$OUT holds {sorted(found)}, not {sorted(ALLOWED)}")
    tar = os.path.join(out, "logs.tar.gz")
    if os.path.exists(tar):
        with tarfile.open(tar) as t:
            names = t.getnames()
        if not names:
            fail("logs.tar.gz is empty")
    print(f"$OUT: {sorted(found)}")


def listed_tests(binary):
    text = subprocess.run([binary, "--gtest_list_tests"], check=True,
                          capture_output=True, text=True).stdout
    names, suite = [], None
    for line in text.splitlines():
        if not line.startswith(" "):
            suite = line.split()[0]
        elif line.startswith("  "):
            names.append(suite + line.split()[0])
    return names


def leftovers(tag):
    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True,
                        text=True).stdout
    return [l for l in ps.splitlines() if tag in l]


def run(args, out, tmp, env_extra=None, term_after=None):
    env = dict(os.environ, OUT=out, TMPDIR=tmp)
    env.pop("WORK", None)
    env.update(env_extra or {})
    cmd = ["bash", args.script, "--dry-run", "--runtime-build",
           args.runtime_build]
    log = open(os.path.join(os.path.dirname(out), os.path.basename(out) +
                            ".log"), "w+")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    stopped_at = None
    if term_after is not None:
        # Once the first report is out (the build phase is over), let the
        # run get into its next phase, then stop it.
        t0 = time.time()
        while p.poll() is None and time.time() - t0 < 240:
            if os.path.exists(os.path.join(out, "gpu_summary.txt")):
                break
            time.sleep(0.2)
        time.sleep(term_after)
        if p.poll() is not None:
            fail("the run ended before SIGTERM could stop it")
        p.send_signal(signal.SIGTERM)
        stopped_at = time.time()
    try:
        rc = p.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
        fail(f"the run took more than {args.timeout} s")
    log.seek(0)
    return rc, log.read(), (time.time() - stopped_at if stopped_at else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--runtime-build", required=True)
    ap.add_argument("--work", required=True, help="a folder for this check")
    ap.add_argument("--timeout", type=int, default=500)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    tests = os.path.join(args.runtime_build, "test", "ampc_runtime_tests")
    want = listed_tests(tests)
    print(f"the test binary lists {len(want)} cases")
    for t in MISSED_BEFORE:
        if t not in want:
            fail(f"{t} is not in the test binary any more: update this check")

    # 1. To the end.
    base = tempfile.mkdtemp(prefix="full-", dir=args.work)
    out, tmp = os.path.join(base, "out"), os.path.join(base, "tmp")
    os.makedirs(tmp)
    rc, text, _ = run(args, out, tmp)
    if rc != 0 or "gpu_run: dry-run complete" not in text:
        fail(f"the dry run exited {rc}; its output:\n{text[-3000:]}")
    check_out(out)
    if os.path.exists(os.path.join(out, "gpu_run.json")):
        result = json.load(open(os.path.join(out, "gpu_run.json")))
        recs = result["records"]
        if not result["env"].get("dry_run"):
            fail("gpu_run.json is not marked dry_run")
        ran = [r["name"] for r in recs
               if r["kind"] == "test" and r["name"] in set(want)]
        missing = sorted(set(want) - set(ran))
        extra = [r["name"] for r in recs if r["kind"] == "test"
                 and not r["name"].startswith("nccl_") and r["name"] not in want]
        if missing:
            fail(f"{len(missing)} listed cases not in the run: {missing[:10]}")
        if extra:
            fail(f"cases the test binary does not list: {extra[:10]}")
        if len(ran) != len(set(ran)):
            fail("a case is listed twice")
        print(f"the run lists {len(ran)} of the binary's {len(want)} cases")
        for kind in ("dry_ddp", "dry_step", "dry_capability"):
            r = [x for x in recs if x["kind"] == kind]
            if not r or not all(x.get("ok") for x in r):
                fail(f"{kind}: {r or 'not run'}")
        bad = [r for r in recs if r.get("ok") is False]
        if bad:
            fail(f"failed steps: {bad}")
    summary = os.path.join(out, "gpu_summary.txt")
    if os.path.exists(summary) and "DRY RUN" not in open(summary).read():
        fail("the summary does not say it was a dry run")
    if os.listdir(tmp):
        fail(f"scratch left behind: {os.listdir(tmp)}")

    # 2. Stopped by SIGTERM midway.
    base = tempfile.mkdtemp(prefix="term-", dir=args.work)
    out, tmp = os.path.join(base, "out"), os.path.join(base, "tmp")
    os.makedirs(tmp)
    rc, text, after = run(args, out, tmp, term_after=3)
    if rc != 143:
        fail(f"stopped by SIGTERM, the run exited {rc}, not 143:\n"
             f"{text[-2000:]}")
    if after is not None and after > 30:
        fail(f"the run took {after:.0f} s to stop after SIGTERM")
    check_out(out)
    if os.path.exists(summary := os.path.join(out, "gpu_summary.txt")):
        if "STOPPED by SIGTERM" not in open(summary).read():
            fail("the summary of a stopped run does not say so")
        result = json.load(open(os.path.join(out, "gpu_run.json")))
        if result.get("stopped") != "TERM":
            fail(f"gpu_run.json: stopped = {result.get('stopped')!r}")
    time.sleep(1)
    if left := leftovers(tmp):
        fail(f"processes of the stopped run still running: {left}")
    if os.listdir(tmp):
        fail(f"scratch left behind after SIGTERM: {os.listdir(tmp)}")
    print("stopped by SIGTERM: exit 143, "
          f"{after:.1f} s after the signal" if after else "")
    if errors:
        return 1
    print("OK: gpu_run.sh stays within the limits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
