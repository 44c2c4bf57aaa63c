"""Helpers of the batch-norm tests (no third-party modules).

  same DIR_A DIR_B             every .npy file of DIR_A is in DIR_B with the
                               same bytes (and no other); prints the names
  differs FILE_A FILE_B        the two files' bytes differ
  eval-loss LOG                the loss of LOG's last eval line
  output-loss OUT              the loss of an `ampc run` summary on stdout
                               ("..., loss A -> B, ...": B)
"""
import json
import os
import re
import sys


def main(argv):
    cmd = argv[0]
    if cmd == "same":
        a, b = argv[1], argv[2]
        fa = sorted(f for f in os.listdir(a) if f.endswith(".npy"))
        fb = sorted(f for f in os.listdir(b) if f.endswith(".npy"))
        if fa != fb:
            print("FAIL: files differ: %s vs %s" % (fa, fb))
            return 1
        for f in fa:
            if open(os.path.join(a, f), "rb").read() != open(os.path.join(b, f), "rb").read():
                print("FAIL: %s differs" % f)
                return 1
        print("same: " + " ".join(f[:-4] for f in fa))
        return 0
    if cmd == "differs":
        same = open(argv[1], "rb").read() == open(argv[2], "rb").read()
        print("FAIL: the same bytes" if same else "differs")
        return 1 if same else 0
    if cmd == "eval-loss":
        lines = [json.loads(l) for l in open(argv[1]) if l.strip()]
        evals = [l for l in lines if "eval" in l]
        print("%.6g" % evals[-1]["loss"])
        return 0
    if cmd == "output-loss":
        m = re.search(r"loss \S+ -> (\S+),", open(argv[1]).read())
        print("%.6g" % float(m.group(1)))
        return 0
    print("unknown command " + cmd)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
