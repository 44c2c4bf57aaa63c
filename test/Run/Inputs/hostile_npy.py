#!/usr/bin/env python3
"""hostile_npy.py DIR: .npy files whose headers lie or break the format
(npy-hostile.test). Each crashed `ampc run` or claimed more than it holds."""
import os
import struct
import sys


def npy(path, header, data=b"", major=1, header_len=None):
    h = header.encode()
    n = len(h) if header_len is None else header_len
    pre = b"\x93NUMPY" + bytes([major, 0])
    pre += struct.pack("<H" if major == 1 else "<I", n)
    with open(path, "wb") as f:
        f.write(pre + h + data)


def header(shape, descr="<f4"):
    return "{'descr': '%s', 'fortran_order': False, 'shape': %s, }\n" % (descr, shape)


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    # A 3 MB dtype string: the regular expressions that read the header
    # recursed out of the stack (SIGSEGV).
    npy(os.path.join(d, "long.npy"), header("(64, 784)", "a" * 3000000), major=2)
    # A dim past int64: std::stoll threw with exceptions off (SIGABRT).
    npy(os.path.join(d, "bigdim.npy"), header("(99999999999999999999999, 784)"))
    # 2^61 rows of 784 floats in a file of 16 data bytes: the byte count
    # overflowed int64.
    npy(os.path.join(d, "hugeshape.npy"), header("(2305843009213693952, 784)"), b"\0" * 16)
    # A plausible shape with too little data.
    npy(os.path.join(d, "short.npy"), header("(64, 784)"), b"\0" * 16)
    # A version-2 header that claims 4 GiB.
    npy(os.path.join(d, "header_len.npy"), header("(64, 784)"), major=2,
        header_len=0xFFFFFFFF)
    # Not a dict.
    npy(os.path.join(d, "not_dict.npy"), "[1, 2, 3]\n")


if __name__ == "__main__":
    main()
