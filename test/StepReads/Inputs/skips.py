"""skips.py LOG: the run's steps as one character each (S skipped, . not)
and, for every skipped step, the op its "overflow" object names (none when
it has none)."""
import json
import sys

lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
steps = [r for r in lines if "step" in r and "eval" not in r]
print("pattern " + "".join("S" if r.get("skipped") else "." for r in steps))
for r in steps:
    if r.get("skipped"):
        o = r.get("overflow")
        print("step %d overflow=%s" % (r["step"], o["op"] + " " + o["pass"]
                                       if o else "none"))
    elif "overflow" in r:
        print("step %d: not skipped but has an overflow object" % r["step"])
