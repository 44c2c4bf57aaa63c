"""The op records of the tg dialect, as `ampc --list-ops` prints them.

The Python tools (the reference, the generator, the differential tests) take
the op list, each op's operands and keyword attributes, its AMP class and the
PyTorch function with its meaning from the compiler instead of keeping lists
of their own. Needs no torch.
"""

import json
import os
import shutil
import subprocess

_CACHE = {}


def find_ampc(explicit=None):
    """The ampc binary: `explicit`, $AMPC, PATH, or this tree's build/bin;
    None when there is none."""
    if explicit:
        return explicit
    if os.environ.get("AMPC"):
        return os.environ["AMPC"]
    on_path = shutil.which("ampc")
    if on_path:
        return on_path
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "..", "build", "bin", "ampc")
    if os.path.exists(built):
        return os.path.normpath(built)
    return None


def load_op_list(exe):
    """{"tg.NAME": record} from `EXE --list-ops`; raises RuntimeError with
    the reason when it fails."""
    if exe not in _CACHE:
        proc = subprocess.run([exe, "--list-ops"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError("'%s --list-ops' failed (exit %d):\n%s" %
                               (exe, proc.returncode, proc.stderr.rstrip()))
        doc = json.loads(proc.stdout)
        if doc.get("format") != "ampc-ops" or doc.get("version") != 1:
            raise RuntimeError("'%s --list-ops' is not an ampc-ops version 1 document" % exe)
        _CACHE[exe] = {op["name"]: op for op in doc["ops"]}
    return _CACHE[exe]
