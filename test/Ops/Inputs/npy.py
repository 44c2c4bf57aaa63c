"""Small .npy files for the op tests (no third-party modules).

  npy.py write FILE DTYPE D0xD1 V...   writes the values (DTYPE f32 or f16)
  npy.py print FILE...                 prints each file's values, one file a
                                       line, as %g
"""
import struct
import sys

FORMATS = {"f32": ("<f4", "f", 4), "f16": ("<f2", "e", 2)}


def write(path, dtype, shape, values):
    descr, fmt, _ = FORMATS[dtype]
    dims = [int(d) for d in shape.split("x")]
    text = ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *[float(v) for v in values]))


def read(path):
    data = open(path, "rb").read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    for _, (descr, fmt, size) in FORMATS.items():
        if descr in header:
            body = data[10 + hlen:]
            return struct.unpack("<%d%s" % (len(body) // size, fmt), body)
    raise SystemExit("%s: not f32 or f16" % path)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        for p in sys.argv[2:]:
            print(" ".join("%g" % v for v in read(p)))
