#!/usr/bin/env python3
"""Every entry point of the CUDA backend makes its context's device current.

Each `override` of the CUDA backend's class (declared in
runtime/cuda/cuda_backend.h, defined in the family files runtime/cuda/*.cu)
that launches a kernel or calls the CUDA runtime must begin with ENTER() (or
call enter()): a context on another device, or a call from another thread,
would otherwise run on whichever device happens to be current (argmax lacked
it). Checked on the source, so it runs without a GPU. Takes the directory
runtime/cuda. Prints the offenders and exits 1.
"""
import glob
import os
import re
import sys


def block(text, i):
    """The text from just after the `{` before i to its matching `}`."""
    start, depth = i, 1
    while depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1]


def bodies(text):
    """(name, body) of the member functions defined in `text`: in-class
    `override` bodies and out-of-line CudaBackend:: definitions."""
    inline = re.compile(r"\n  (?:[\w:<>& ]+?[\s*&]+)?(~?\w+)\(([^;{]*?)\)\s*"
                        r"(?:const\s*)?override\s*\{")
    outside = re.compile(r"\bCudaBackend::(~?\w+)\(([^;{]*?)\)\s*"
                         r"(?:const\s*)?\{")
    for head in (inline, outside):
        for m in head.finditer(text):
            yield m.group(1), block(text, m.end())


def main(folder):
    header = open(os.path.join(folder, "cuda_backend.h")).read()
    overrides = set(re.findall(r"(~?\w+)\([^;{]*?\)\s*(?:const\s*)?override\b",
                               header))
    sources = [os.path.join(folder, "cuda_backend.h")] + sorted(
        glob.glob(os.path.join(folder, "*.cu")))
    missing, defined, checked = [], set(), 0
    for path in sources:
        for name, body in bodies(open(path).read()):
            if name not in overrides:
                continue
            defined.add(name)
            if not re.search(r"<<<|\bcuda[A-Z]\w*\(|\blt\.run\(", body):
                continue
            checked += 1
            if "ENTER()" not in body and "enter()" not in body:
                missing.append((name, os.path.basename(path)))
    for name, path in missing:
        print(f"FAIL: CudaBackend::{name} ({path}) touches the device "
              "without ENTER()")
    for name in sorted(overrides - defined):
        print(f"FAIL: no definition of CudaBackend::{name} found: "
              "the pattern is stale")
    if checked < 20:
        print(f"FAIL: only {checked} entry points found: the pattern is stale")
        return 1
    print(f"checked {checked} entry points of {len(overrides)} overrides "
          f"in {folder}")
    return 1 if missing or overrides - defined else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
