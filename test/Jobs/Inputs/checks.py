"""Helpers of the run-time check tests (test/Jobs/checks-*.test).

  ints OUT SHAPE V1,V2,...    writes an i32 .npy file of SHAPE (AxB) holding
                              the values V1, V2, ... repeated
  log LOG                     checks every line of LOG is strict JSON and
                              prints, per training line, the step, whether it
                              was skipped and its "overflow" object (or
                              "none")
"""
import json
import struct
import sys


def ints(out, shape, values):
    dims = tuple(int(d) for d in shape.split("x"))
    n = 1
    for d in dims:
        n *= d
    vals = [int(v) for v in values.split(",")]
    data = [vals[i % len(vals)] for i in range(n)]
    header = "{'descr': '<i4', 'fortran_order': False, 'shape': (%s), }" % (
        "%d," % dims[0] if len(dims) == 1 else ", ".join(map(str, dims)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%di" % n, *data))


def _reject(name):
    raise ValueError("non-standard JSON constant " + name)


def log(path):
    with open(path) as f:
        for line in f:
            obj = json.loads(line, parse_constant=_reject)
            if "step" not in obj or "eval" in obj:
                continue
            over = obj.get("overflow")
            text = "none" if over is None else json.dumps(over, sort_keys=True)
            print("step %d skipped=%s overflow=%s" % (obj["step"], str(obj.get("skipped")).lower(), text))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"ints": ints, "log": log}[cmd](*args)
