"""Helpers of the training-job tests (test/Jobs).

  strict LOG...               every line of each log is one complete, strict
                              JSON object (no NaN/Infinity literals)
  dataset DIR N [SEED]        DIR/x.npy f32[N, 20] and DIR/labels.npy i32[N]
                              (10 classes, a learnable rule)
  interrupt SIG STEPS LOG CMD...
                              runs CMD, sends SIG once LOG holds STEPS lines,
                              prints the exit code
  timeout SIG STEPS LOG [--later S] [--out FILE] [--ranks] CMD...
                              runs CMD in a session of its own and, once LOG
                              holds STEPS lines, sends SIG as coreutils
                              `timeout` does: to CMD, then to its process
                              group (--ranks: twice to each child of CMD, an
                              mpirun); with --later, SIG again S seconds
                              later; CMD's stdout goes to FILE; prints the
                              exit code
  ctrl-c LOG CMD...            runs CMD on a pseudo-terminal and, once LOG has
                              a line, types Ctrl-C (the terminal sends SIGINT
                              to its foreground process group); prints the
                              exit code
  perm SEED EPOCH N           prints ampc's shuffle order (docs/jobs.md)
  losses LOG REF N ABS REL    the first N training losses of LOG and REF agree:
                              |a - b| <= ABS + REL * |b|
  close A B TOL               the numbers in files A and B differ by <= TOL
  strip-momentum IN OUT       rewrites a checkpoint without its
                              *.momentum_buffer entries (a valid file)
"""
import json
import os
import signal
import struct
import subprocess
import sys
import time


def _reject(name):
    raise ValueError("non-standard JSON constant " + name)


def strict(paths):
    total = 0
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        if data and not data.endswith(b"\n"):
            print("FAIL: %s: the last line is not whole" % path)
            sys.exit(1)
        for i, line in enumerate(data.decode().splitlines()):
            try:
                obj = json.loads(line, parse_constant=_reject)
            except ValueError as e:
                print("FAIL: %s:%d: %s: %r" % (path, i + 1, e, line))
                sys.exit(1)
            if not isinstance(obj, dict):
                print("FAIL: %s:%d: not an object" % (path, i + 1))
                sys.exit(1)
            total += 1
    print("OK strict %d lines" % total)


def write_npy(path, descr, shape, fmt, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


def dataset(out, n, seed=0):
    """N samples of 20 features in [-1, 1) from an LCG seeded by SEED; the
    label is the argmax of one fixed linear map (10 classes)."""
    n, state = int(n), 12345
    def rnd():
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return ((state >> 40) / float(1 << 24)) * 2.0 - 1.0
    w = [[rnd() for _ in range(10)] for _ in range(20)]
    state = int(seed) * 2654435761 + 777  # the samples differ per seed
    xs, labels = [], []
    for _ in range(n):
        x = [rnd() for _ in range(20)]
        scores = [sum(x[i] * w[i][c] for i in range(20)) for c in range(10)]
        xs.extend(x)
        labels.append(max(range(10), key=lambda c: scores[c]))
    os.makedirs(out, exist_ok=True)
    write_npy(os.path.join(out, "x.npy"), "<f4", (n, 20), "f", xs)
    write_npy(os.path.join(out, "labels.npy"), "<i4", (n,), "i", labels)


def interrupt(sig, steps, log, cmd):
    sig = getattr(signal, sig)
    steps = int(steps)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline:
        try:
            with open(log) as f:
                if sum(1 for _ in f) >= steps:
                    break
        except FileNotFoundError:
            pass
        time.sleep(0.001)
    if p.poll() is None:
        p.send_signal(sig)
    print("exit=%d" % p.wait())


def children(pid):
    """The processes whose parent is PID."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def timeout_like(sig, steps, log, args):
    sig = getattr(signal, sig)
    later, out, ranks = None, subprocess.DEVNULL, False
    while args[0].startswith("--"):
        if args[0] == "--ranks":
            ranks = True
            args = args[1:]
            continue
        if args[0] == "--later":
            later = float(args[1])
        elif args[0] == "--out":
            out = open(args[1], "wb")
        else:
            sys.exit("timeout: unknown option " + args[0])
        args = args[2:]
    p = subprocess.Popen(args, stdout=out, start_new_session=True)
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline:
        try:
            with open(log) as f:
                if sum(1 for _ in f) >= int(steps):
                    break
        except FileNotFoundError:
            pass
        time.sleep(0.005)
    if p.poll() is not None:
        sys.exit("timeout: the command ended before its log had %s lines"
                 % steps)
    targets = children(p.pid) if ranks else [p.pid]

    def deliver():
        for pid in targets:
            try:
                os.kill(pid, sig)
                if ranks:
                    os.kill(pid, sig)
                else:
                    os.killpg(pid, sig)
            except ProcessLookupError:
                pass

    deliver()
    if later is not None:
        time.sleep(later)
        if p.poll() is None:
            deliver()
        else:
            print("the command had ended before the later signal")
    try:
        print("exit=%d" % p.wait(timeout=60))
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit("timeout: the command did not end within 60 s")


def ctrl_c(log, cmd):
    import pty
    import select
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)

    def drain(seconds):
        """Reads the terminal for up to SECONDS; False at its end."""
        r, _, _ = select.select([fd], [], [], seconds)
        if not r:
            return True
        try:
            return bool(os.read(fd, 65536))
        except OSError:
            return False

    deadline = time.time() + 120
    while not (os.path.exists(log) and os.path.getsize(log) > 0):
        if time.time() > deadline or not drain(0.05):
            sys.exit("ctrl-c: no line in %s" % log)
    time.sleep(0.2)
    os.write(fd, b"\x03")
    deadline = time.time() + 60
    while drain(1.0) and time.time() < deadline:
        pass
    _, status = os.waitpid(pid, 0)
    print("exit=%d" % os.waitstatus_to_exitcode(status))


def perm(seed, epoch, n):
    print(" ".join(str(i) for i in epoch_order(int(seed), int(epoch), int(n))))


def epoch_order(seed, epoch, n):
    """ampc's shuffle (docs/jobs.md): Fisher-Yates driven by SplitMix64."""
    m = (1 << 64) - 1
    state = (seed ^ (0x9E3779B97F4A7C15 * epoch)) & m
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & m
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        z ^= z >> 31
        j = z % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & ((1 << 64) - 1)
    return h


def strip_momentum(src, dst):
    data = open(src, "rb").read()
    (version,) = struct.unpack_from("<I", data, 8)
    pos = 8 + 4 + 8 + 8 + (16 if version >= 2 else 0)
    head = bytearray(data[:pos])
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    kept = []
    for _ in range(count):
        start = pos
        (n,) = struct.unpack_from("<I", data, pos)
        name = data[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        _, size = struct.unpack_from("<iq", data, pos)
        pos += 12 + size
        if not name.endswith(".momentum_buffer"):
            kept.append(data[start:pos])
    out = bytes(head) + struct.pack("<I", len(kept)) + b"".join(kept)
    with open(dst, "wb") as f:
        f.write(out + struct.pack("<Q", fnv1a(out)))


def losses(log, ref, n, abs_tol, rel_tol):
    def read(path):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        return [r["loss"] for r in rows if "step" in r and "eval" not in r]
    a, b = read(log)[:int(n)], read(ref)[:int(n)]
    if len(a) != int(n) or len(b) != int(n):
        print("FAIL: %d and %d losses, expected %s" % (len(a), len(b), n))
        sys.exit(1)
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b)):
        worst = max(worst, abs(x - y))
        if abs(x - y) > float(abs_tol) + float(rel_tol) * abs(y):
            print("FAIL: step %d: loss %r vs %r" % (i + 1, x, y))
            sys.exit(1)
    print("OK %s losses agree, worst |diff| %.3g" % (n, worst))


def close(a, b, tol):
    x, y = float(open(a).read()), float(open(b).read())
    if abs(x - y) > float(tol):
        print("FAIL: %g vs %g (tolerance %s)" % (x, y, tol))
        sys.exit(1)
    print("OK %g vs %g" % (x, y))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "strict":
        strict(args)
    elif cmd == "dataset":
        dataset(*args)
    elif cmd == "interrupt":
        interrupt(args[0], args[1], args[2], args[3:])
    elif cmd == "timeout":
        timeout_like(args[0], args[1], args[2], args[3:])
    elif cmd == "ctrl-c":
        ctrl_c(args[0], args[1:])
    elif cmd == "losses":
        losses(*args)
    elif cmd == "close":
        close(*args)
    elif cmd == "strip-momentum":
        strip_momentum(*args)
    elif cmd == "perm":
        perm(*args)
    else:
        sys.exit("unknown command " + cmd)
