"""convshare.py SHARED.txt APART.txt SHARED_DIR APART_DIR

Compares two `ampc run` logs taken with ONEDNN_VERBOSE=1, the default run
(a convolution's backward data and weights passes share the moved output
gradient) and one with AMPC_CPU_CONV_SHARE=off: prints how many fewer
oneDNN reorders the default ran, and whether the parameters each wrote
(--params-out) are byte-identical.
"""
import os
import sys


def reorders(path):
    with open(path) as f:
        return sum(1 for line in f if line.startswith("onednn_verbose,exec,cpu,reorder,"))


shared, apart = reorders(sys.argv[1]), reorders(sys.argv[2])
names = sorted(os.listdir(sys.argv[4]))
same = names == sorted(os.listdir(sys.argv[3])) and all(
    open(os.path.join(sys.argv[3], n), "rb").read() == open(os.path.join(sys.argv[4], n), "rb").read()
    for n in names)
print("%d fewer reorders (%d against %d); %d parameters %s" % (
    apart - shared, shared, apart, len(names), "byte-identical" if same else "DIFFER"))
