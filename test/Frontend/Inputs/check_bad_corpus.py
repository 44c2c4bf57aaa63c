#!/usr/bin/env python3
"""Runs ampc on the bad-input corpus (test/Frontend/bad/) and checks that every
input is rejected cleanly.

For each line `FILE<TAB>LINE:COL<TAB>SUBSTRING` of bad/EXPECTED.txt, `ampc FILE`
must exit with exactly 1 within the time limit, its stderr's first line must
start with `FILE:LINE:COL: error:` and contain SUBSTRING, and nothing may look
like a crash (a signal, "Stack dump", "Assertion", "LLVM ERROR"). An entry
naming a `.py` file is a generator: it is run with an output path and ampc is
run on what it writes. Every `.tg` file of bad/ that the manifest does not
name must also fail with exit 1 and a located error, so no file escapes.

Then three generated stress inputs: a 10 MB line (via gen_big.py, above), a
100000-deep parenthesis nesting and a 1000000-term `x + x + ...` chain. The
last two are valid programs: they must either compile (exit 0) or fail with a
located "nesting too deep" error (exit 1), never crash or hang.

Prints one line per problem and a summary; exits 1 if there was any problem.
"""

import argparse
import os
import re
import subprocess
import sys
import time

CRASH_MARKERS = ("Stack dump", "Assertion", "LLVM ERROR", "PLEASE submit a bug report",
                 "Segmentation fault", "UNREACHABLE")
LOCATED = re.compile(r"^(.*):(\d+):(\d+): error: ")


class Checker:
    def __init__(self, ampc, timeout):
        self.ampc = ampc
        self.timeout = timeout
        self.problems = []
        self.checked = 0

    def problem(self, what, message):
        self.problems.append(f"{what}: {message}")
        print(f"FAIL {what}: {message}", flush=True)

    def run(self, path, extra=()):
        """Runs ampc; returns (exit code or None on timeout, stderr, seconds)."""
        start = time.monotonic()
        try:
            p = subprocess.run([self.ampc, path, *extra], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return None, "", time.monotonic() - start
        except OSError as e:
            raise SystemExit(f"FAIL: cannot run {self.ampc}: {e}")
        return p.returncode, p.stderr.decode("utf-8", "replace"), time.monotonic() - start

    def sane(self, what, rc, err, seconds):
        """Common checks: no timeout, no signal, no crash text."""
        if rc is None:
            self.problem(what, f"timed out after {self.timeout} s")
            return False
        if rc < 0:
            self.problem(what, f"killed by signal {-rc}")
            return False
        for marker in CRASH_MARKERS:
            if marker in err:
                self.problem(what, f"crash marker '{marker}' in stderr: {first_line(err)!r}")
                return False
        return True

    def expect_error(self, what, path, linecol=None, substring=None):
        """ampc PATH must exit 1 with a located first line."""
        self.checked += 1
        rc, err, seconds = self.run(path)
        if not self.sane(what, rc, err, seconds):
            return
        if rc != 1:
            self.problem(what, f"exit code {rc}, expected 1 (stderr: {first_line(err)!r})")
            return
        line = first_line(err)
        if linecol is not None:
            prefix = f"{path}:{linecol}: error:"
            if not line.startswith(prefix):
                self.problem(what, f"first line {clip(line)!r} does not start with {prefix!r}")
                return
        else:
            m = LOCATED.match(line)
            if not m or m.group(1) != path:
                self.problem(what, f"first line {clip(line)!r} is not '{path}:LINE:COL: error: ...'")
                return
        if substring is not None and substring not in line:
            self.problem(what, f"first line {clip(line)!r} does not contain {substring!r}")

    def expect_ok_or_too_deep(self, what, path):
        self.checked += 1
        rc, err, seconds = self.run(path, ["-o", path + ".out.mlir"])
        if not self.sane(what, rc, err, seconds):
            return
        if rc == 0:
            print(f"ok   {what}: compiled in {seconds:.1f} s", flush=True)
            return
        line = first_line(err)
        if rc != 1:
            self.problem(what, f"exit code {rc}, expected 0 or 1 (stderr: {clip(line)!r})")
        elif not LOCATED.match(line) or not line.startswith(path + ":"):
            self.problem(what, f"first line {clip(line)!r} is not a located error")
        elif "nesting too deep" not in line:
            self.problem(what, f"valid input rejected with {clip(line)!r}, expected success "
                               "or 'nesting too deep'")
        else:
            print(f"ok   {what}: rejected as too deep in {seconds:.1f} s", flush=True)


def first_line(text):
    return text.split("\n", 1)[0]


def clip(s, n=200):
    return s if len(s) <= n else s[:n] + "..."


def read_manifest(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 3 or not re.fullmatch(r"\d+:\d+", fields[1]):
                raise SystemExit(f"{path}:{number}: malformed manifest line {line!r} "
                                 "(expected FILE<TAB>LINE:COL<TAB>SUBSTRING)")
            entries.append((fields[0], fields[1], fields[2]))
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ampc", required=True)
    ap.add_argument("--bad-dir", required=True)
    ap.add_argument("--tmp", required=True, help="scratch directory (created)")
    # The timeouts catch hangs. A sanitized ampc (scripts/sanitize.sh sets
    # ASAN_OPTIONS) starts and runs several times slower, and on a loaded
    # machine two of the corpus's inputs once took over 20 s there: give it
    # six times as long.
    slow = 6.0 if "ASAN_OPTIONS" in os.environ else 1.0
    ap.add_argument("--timeout", type=float, default=20.0 * slow)
    ap.add_argument("--stress-timeout", type=float, default=60.0 * slow)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()

    os.makedirs(args.tmp, exist_ok=True)
    manifest_path = os.path.join(args.bad_dir, "EXPECTED.txt")
    if not os.path.exists(manifest_path):
        print(f"FAIL: no manifest {manifest_path}")
        return 1
    entries = read_manifest(manifest_path)
    if not entries:
        print(f"FAIL: manifest {manifest_path} is empty")
        return 1

    c = Checker(args.ampc, args.timeout)
    named = set()
    for name, linecol, substring in entries:
        if name in named:
            c.problem(name, "listed twice in EXPECTED.txt")
            continue
        named.add(name)
        src = os.path.join(args.bad_dir, name)
        if not os.path.exists(src):
            c.problem(name, "listed in EXPECTED.txt but missing")
            continue
        if name.endswith(".py"):
            # A generator: it writes the input to the path it is given.
            out = os.path.join(args.tmp, os.path.splitext(name)[0] + ".tg")
            try:
                subprocess.run([args.python, src, out], check=True, stdout=subprocess.DEVNULL,
                               timeout=args.stress_timeout)
            except (subprocess.SubprocessError, OSError) as e:
                c.problem(name, f"generator failed: {e}")
                continue
            c.expect_error(name, out, linecol, substring)
        else:
            c.expect_error(name, src, linecol, substring)

    # Files the manifest does not name still have to fail cleanly.
    unlisted = sorted(f for f in os.listdir(args.bad_dir)
                      if f.endswith(".tg") and f not in named)
    for name in unlisted:
        c.expect_error(name + " (not in EXPECTED.txt)", os.path.join(args.bad_dir, name))

    # Generated stress inputs that are valid programs.
    c.timeout = args.stress_timeout
    deep = os.path.join(args.tmp, "deep_parens.tg")
    with open(deep, "w") as f:
        n = 100_000
        f.write("graph g(x: f32[2]) {\n  y = " + "(" * n + "x" + ")" * n + "\n  return y\n}\n")
    c.expect_ok_or_too_deep("100000-deep parentheses", deep)

    chain = os.path.join(args.tmp, "long_chain.tg")
    with open(chain, "w") as f:
        f.write("graph g(x: f32[2]) {\n  y = x" + " + x" * 999_999 + "\n  return y\n}\n")
    c.expect_ok_or_too_deep("1000000-term x + x chain", chain)

    print(f"bad-corpus: {c.checked} inputs checked ({len(entries)} in EXPECTED.txt, "
          f"{len(unlisted)} unlisted, 2 generated stress inputs), "
          f"{len(c.problems)} problem(s)")
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main())
