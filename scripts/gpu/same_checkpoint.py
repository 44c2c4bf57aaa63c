#!/usr/bin/env python3
"""Compares the state two ampc checkpoints hold, bit for bit.

    same_checkpoint.py A.ckpt B.ckpt

Reads both files (the format of `ampc run --save` and of the emitted
NAME_save, docs/jobs.md: "AMPCCKPT", version, program fingerprint, update
count, [epoch, batch], then named entries of dtype, size and bytes, then a
checksum) and compares the update count and every entry: names, dtypes,
sizes and bytes. The program fingerprint is not compared, so the checkpoint
of a data-parallel step (`--emit=cpp --data-parallel`) can be compared with
the one of the same program without the all-reduce. Prints "OK same
checkpoint state (N entries, B bytes)" and exits 0, or names the first
difference and exits 1; exits 2 on a file that is not a checkpoint. Needs
only the Python standard library.
"""
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        d = f.read()
    if len(d) < 16 or d[:8] != b"AMPCCKPT":
        raise ValueError("%s: not an ampc checkpoint" % path)
    d = d[:-8]  # the checksum, over everything before it
    pos = 8

    def get(fmt):
        nonlocal pos
        n = struct.calcsize(fmt)
        if pos + n > len(d):
            raise ValueError("%s: truncated at byte %d" % (path, pos))
        v = struct.unpack_from(fmt, d, pos)[0]
        pos += n
        return v

    version = get("<I")
    if version not in (1, 2):
        raise ValueError("%s: checkpoint version %d" % (path, version))
    get("<Q")  # the program's fingerprint
    steps = get("<q")
    if version == 2:
        get("<q")  # epoch
        get("<q")  # batch within it
    entries = {}
    order = []
    for _ in range(get("<I")):
        n = get("<I")
        name = d[pos:pos + n].decode()
        pos += n
        dtype = get("<i")
        size = get("<q")
        if size < 0 or pos + size > len(d):
            raise ValueError("%s: entry %s is truncated" % (path, name))
        entries[name] = (dtype, d[pos:pos + size])
        order.append(name)
        pos += size
    return steps, order, entries


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        sa, oa, a = read(argv[1])
        sb, ob, b = read(argv[2])
    except (OSError, ValueError) as e:
        print("same_checkpoint.py: %s" % e, file=sys.stderr)
        return 2
    if sa != sb:
        print("FAIL: update count %d vs %d" % (sa, sb))
        return 1
    if oa != ob:
        only = sorted(set(oa) ^ set(ob))
        print("FAIL: different entries%s" %
              (": " + ", ".join(only) if only else " (order)"))
        return 1
    for name in oa:
        (ta, da), (tb, db) = a[name], b[name]
        if ta != tb or len(da) != len(db):
            print("FAIL: %s: dtype %d, %d bytes vs dtype %d, %d bytes" %
                  (name, ta, len(da), tb, len(db)))
            return 1
        if da != db:
            at = next(i for i in range(len(da)) if da[i] != db[i])
            print("FAIL: %s differs from byte %d on" % (name, at))
            return 1
    print("OK same checkpoint state (%d entries, %d bytes)" %
          (len(oa), sum(len(v[1]) for v in a.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
