"""Checks for the `ampc run` end-to-end tests (no third-party modules).

  falls LOG FACTOR            last loss <= first loss / FACTOR
  track LOG REF ABS REL       every step: |loss - ref| <= ABS + REL * |ref|
  same LOG REF                the losses of REF's steps equal LOG's, bit for bit
  scaler LOG INIT GROWTH BACKOFF INTERVAL HYST GRAD
                              loss_scale/skipped of every step equal the
                              transcription of PyTorch's GradScaler.update()
                              (and of the hysteresis rule), for a step whose
                              largest f16 gradient is GRAD * scale
  npy OUT DTYPE SHAPE VALUE   writes a .npy file filled with VALUE (or
                              "ramp": varied floats; "ramp:M": ints < M)
  ckpt-params A B             the parameter and optimizer slots of two
                              checkpoints are bit-identical
  npy-header FILE...          prints each .npy file's dtype and shape, and
                              checks that the data fills the file exactly
  ckpt-edit IN OUT EDIT       writes checkpoint IN changed by EDIT to OUT, with
                              its checksum made right again: version=N,
                              dtype=NAME:D (entry NAME's dtype), drop=NAME
                              (entry NAME removed), count+1 (one
                              entry more than it holds); steps=N (the update
                              count); v1 (written as
                              version 1: no epoch and batch); flip (one byte
                              of the data flipped, the checksum left as it
                              was)
  ckpt-steps FILE             prints a checkpoint's version, steps, epoch and
                              batch (version 1: epoch 1, batch 0)
  sparse FILE BYTES           creates FILE of BYTES zero bytes (sparse)
  limit-as BYTES CMD ARG...   runs CMD with its address space limited to BYTES
  close A B REL               every .npy (f32 or f64) in folder A has the shape of
                              its namesake in folder B and differs from it
                              by at most REL of B's largest magnitude
"""
import json
import struct
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def falls(log, factor):
    rows = load(log)
    first, last = rows[0]["loss"], rows[-1]["loss"]
    if not last <= first / float(factor):
        fail("loss %g -> %g does not fall by %s" % (first, last, factor))
    print("OK falls %g -> %g" % (first, last))


def track(log, ref, abs_tol, rel_tol):
    a, b = load(log), load(ref)
    if len(a) != len(b):
        fail("%d steps vs %d" % (len(a), len(b)))
    worst = 0.0
    for x, y in zip(a, b):
        d = abs(x["loss"] - y["loss"])
        worst = max(worst, d)
        if d > float(abs_tol) + float(rel_tol) * abs(y["loss"]):
            fail("step %d: loss %r vs %r" % (x["step"], x["loss"], y["loss"]))
    print("OK track, worst |diff| %g" % worst)


def same(log, ref):
    a = {r["step"]: r["loss"] for r in load(log)}
    b = load(ref)
    for r in b:
        if r["step"] not in a or a[r["step"]] != r["loss"]:
            fail("step %d differs: %r vs %r" % (r["step"], a.get(r["step"]), r["loss"]))
    print("OK same over %d steps" % len(b))


def scaler(log, init, growth, backoff, interval, hyst, grad):
    init, growth, backoff, grad = map(float, (init, growth, backoff, grad))
    interval, hyst = int(interval), int(hyst)
    scale, tracker, left = init, 0, hyst
    rows = load(log)
    skips = grows = 0
    for r in rows:
        # f16 overflows when a value rounds to >= 65520.
        found = scale >= 65520.0 or scale * grad >= 65520.0
        if r["loss_scale"] != scale or r["skipped"] != found:
            fail("step %d: got scale %r skipped %r, GradScaler rule: %r %r"
                 % (r["step"], r["loss_scale"], r["skipped"], scale, found))
        if found:
            skips += 1
            tracker = 0
            left -= 1
            if left <= 0:
                scale = scale * backoff
        else:
            tracker += 1
            if tracker == interval:
                tracker = 0
                left = hyst
                scale = scale * growth
                grows += 1
    print("OK scaler: %d steps, %d skipped, %d growths" % (len(rows), skips, grows))


def npy(out, dtype, shape, value):
    dims = tuple(int(d) for d in shape.split("x"))
    n = 1
    for d in dims:
        n *= d
    fmt = {"<f4": "f", "<i4": "i", "<f8": "d", "<i8": "q"}[dtype]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % d for d in dims) if len(dims) == 1 else ", ".join(map(str, dims)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    if value.startswith("ramp"):
        # ramp:M gives integers i*7919 % M; plain ramp gives floats in [-0.5, 0.5).
        if ":" in value:
            m = int(value.split(":")[1])
            vals = [(i * 7919) % m for i in range(n)]
        else:
            vals = [((i * 7919) % 997) / 997.0 - 0.5 for i in range(n)]
    else:
        v = float(value) if fmt in "fd" else int(value)
        vals = [v] * n
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (n, fmt), *vals))


def read_ckpt(path):
    data = open(path, "rb").read()
    (version,) = struct.unpack_from("<I", data, 8)
    # magic, version, fingerprint, steps (version 2: epoch, batch)
    pos = 8 + 4 + 8 + 8 + (16 if version >= 2 else 0)
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    slots = {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        name = data[pos:pos + n].decode()
        pos += n
        dtype, size = struct.unpack_from("<iq", data, pos)
        pos += 12
        slots[name] = data[pos:pos + size]
        pos += size
    return slots


def ckpt_params(a, b):
    x, y = read_ckpt(a), read_ckpt(b)
    keys = [k for k in x if not k.startswith("loss_scale.")]
    for k in keys:
        if x[k] != y[k]:
            fail("slot %s differs" % k)
    print("OK %d parameter/optimizer slots bit-identical" % len(keys))


def fnv1a(data):
    h = 1469598103934665603
    for c in data:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def ckpt_edit(src, out, edit):
    data = bytearray(open(src, "rb").read())
    body = data[:-8]
    (version,) = struct.unpack_from("<I", body, 8)
    count_at = 8 + 4 + 8 + 8 + (16 if version >= 2 else 0)
    if edit == "flip":
        data[count_at + 8] ^= 0x40
        open(out, "wb").write(data)
        return
    if edit.startswith("steps="):
        struct.pack_into("<q", body, 20, int(edit[6:]))
    elif edit == "v1":
        struct.pack_into("<I", body, 8, 1)
        del body[count_at - 16:count_at]
    elif edit.startswith("version="):
        struct.pack_into("<I", body, 8, int(edit[8:]))
    elif edit == "count+1":
        (count,) = struct.unpack_from("<I", body, count_at)
        struct.pack_into("<I", body, count_at, count + 1)
    elif edit.startswith("drop="):
        (count,) = struct.unpack_from("<I", body, count_at)
        pos = count_at + 4
        for _ in range(count):
            start = pos
            (n,) = struct.unpack_from("<I", body, pos)
            entry = body[pos + 4:pos + 4 + n].decode()
            (size,) = struct.unpack_from("<q", body, pos + 4 + n + 4)
            pos += 4 + n + 12 + size
            if entry == edit[5:]:
                del body[start:pos]
                struct.pack_into("<I", body, count_at, count - 1)
                break
        else:
            fail("no entry %s" % edit[5:])
    elif edit.startswith("dtype="):
        name, dtype = edit[6:].split(":")
        (count,) = struct.unpack_from("<I", body, count_at)
        pos = count_at + 4
        for _ in range(count):
            (n,) = struct.unpack_from("<I", body, pos)
            entry = body[pos + 4:pos + 4 + n].decode()
            pos += 4 + n
            if entry == name:
                struct.pack_into("<i", body, pos, int(dtype))
                break
            (size,) = struct.unpack_from("<q", body, pos + 4)
            pos += 12 + size
        else:
            fail("no entry %s" % name)
    else:
        fail("unknown edit %s" % edit)
    open(out, "wb").write(bytes(body) + struct.pack("<Q", fnv1a(body)))


def ckpt_steps(path):
    data = open(path, "rb").read()
    version, _, steps = struct.unpack_from("<IQq", data, 8)
    epoch, batch = (struct.unpack_from("<qq", data, 28) if version >= 2
                    else (1, 0))
    print("version %d steps %d epoch %d batch %d" % (version, steps, epoch,
                                                      batch))


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(int(size))


def limit_as(size, *cmd):
    import os
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (int(size), int(size)))
    os.execv(cmd[0], list(cmd))


def npy_header(*paths):
    import ast
    import os
    for path in paths:
        data = open(path, "rb").read()
        if data[:6] != b"\x93NUMPY":
            fail("%s is not a .npy file" % path)
        (hlen,) = struct.unpack_from("<H", data, 8)
        if (10 + hlen) % 64:
            fail("%s: the data does not start on a 64-byte boundary" % path)
        header = ast.literal_eval(data[10:10 + hlen].decode("latin1"))
        n = 1
        for d in header["shape"]:
            n *= d
        size = int(header["descr"][2:])
        if len(data) - 10 - hlen != n * size:
            fail("%s: %d data bytes for %d elements of %d bytes" %
                 (path, len(data) - 10 - hlen, n, size))
        print("%s: %r %r" % (os.path.basename(path), header["descr"], header["shape"]))


def read_floats(path):
    import ast
    data = open(path, "rb").read()
    (hlen,) = struct.unpack_from("<H", data, 8)
    header = ast.literal_eval(data[10:10 + hlen].decode("latin1"))
    fmt = {"<f4": "f", "<f8": "d"}.get(header["descr"])
    if fmt is None:
        fail("%s: %s, not <f4 or <f8" % (path, header["descr"]))
    n = 1
    for d in header["shape"]:
        n *= d
    return header["shape"], struct.unpack_from("<%d%s" % (n, fmt), data,
                                               10 + hlen)


def close(a, b, rel):
    import os
    names = sorted(f for f in os.listdir(a) if f.endswith(".npy"))
    if not names:
        fail("%s holds no .npy file" % a)
    for name in names:
        sa, va = read_floats(os.path.join(a, name))
        sb, vb = read_floats(os.path.join(b, name))
        if sa != sb:
            fail("%s: shape %r against %r" % (name, sa, sb))
        top = max([abs(v) for v in vb] + [1e-30])
        worst = max([abs(x - y) for x, y in zip(va, vb)] + [0.0])
        if worst > float(rel) * top:
            fail("%s: differs by %g, more than %s of its largest magnitude %g" %
                 (name, worst, rel, top))
    print("close: %d parameters" % len(names))


def ckpt_slots(path):
    """Prints each slot of a checkpoint: name, dtype code, bytes."""
    data = open(path, "rb").read()
    (version,) = struct.unpack_from("<I", data, 8)
    pos = 8 + 4 + 8 + 8 + (16 if version >= 2 else 0)
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        name = data[pos:pos + n].decode()
        pos += n
        dtype, size = struct.unpack_from("<iq", data, pos)
        pos += 12 + size
        print("slot %s dtype %d bytes %d" % (name, dtype, size))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"falls": falls, "track": track, "same": same, "scaler": scaler,
     "npy": npy, "ckpt-params": ckpt_params, "npy-header": npy_header,
     "ckpt-edit": ckpt_edit, "sparse": sparse, "limit-as": limit_as,
     "close": close, "ckpt-slots": ckpt_slots, "ckpt-steps": ckpt_steps}[cmd.replace("-", "_") if False else cmd](*args)
