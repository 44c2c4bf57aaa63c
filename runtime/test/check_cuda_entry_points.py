#!/usr/bin/env python3
"""Every entry point of the CUDA backend makes its context's device current.

Each `override` of runtime/cuda/cuda_backend.cu that launches a kernel or
calls the CUDA runtime must begin with ENTER() (or call enter()): a context
on another device, or a call from another thread, would otherwise run on
whichever device happens to be current (argmax lacked it). Checked on the
source, so it runs without a GPU. Prints the offenders and exits 1.
"""
import re
import sys


def bodies(text):
    head = re.compile(r"\n  [\w:<>*& ]+?\s+(\w+)\(([^;{]*?)\)\s*(?:const\s*)?"
                      r"override\s*\{")
    for m in head.finditer(text):
        i, depth = m.end(), 1
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


def main(path):
    text = open(path).read()
    missing, checked = [], 0
    for name, body in bodies(text):
        if not re.search(r"<<<|\bcuda[A-Z]\w*\(|\blt\.run\(", body):
            continue
        checked += 1
        if "ENTER()" not in body and "enter()" not in body:
            missing.append(name)
    for name in missing:
        print(f"FAIL: CudaBackend::{name} touches the device without ENTER()")
    if checked < 20:
        print(f"FAIL: only {checked} entry points found: the pattern is stale")
        return 1
    print(f"checked {checked} entry points of {path}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
