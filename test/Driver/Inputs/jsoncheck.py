"""Checks an `ampc --emit=json` document (docs/json.md) for consistency and
prints one line per graph: every value id is defined once, before its uses;
every operand and result refers to a defined value; args carry their role.

  jsoncheck.py FILE.json
"""
import json
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


doc = json.load(open(sys.argv[1]))
if doc.get("format") != "ampc-graph" or doc.get("version") != 1:
    fail("not an ampc-graph version 1 document")
for g in doc["graphs"]:
    defined = set()
    for a in g["args"]:
        if a["value"] in defined:
            fail("%s: value %d defined twice" % (g["name"], a["value"]))
        defined.add(a["value"])
        if a.get("role") not in ("input", "param", "state"):
            fail("%s: argument %d has no role" % (g["name"], a["value"]))
    for op in g["ops"]:
        for v in op["operands"]:
            if v not in defined:
                fail("%s: %s reads value %d before it is defined" % (g["name"], op["op"], v))
        for r in op["results"]:
            if r["value"] in defined:
                fail("%s: value %d defined twice" % (g["name"], r["value"]))
            defined.add(r["value"])
    for r in g["results"]:
        if r["value"] not in defined:
            fail("%s: result reads undefined value %d" % (g["name"], r["value"]))
    roles = {}
    for a in g["args"]:
        roles[a["role"]] = roles.get(a["role"], 0) + 1
    print("OK %s: %d args (%s), %d ops, %d results" % (
        g["name"], len(g["args"]), ", ".join("%d %s" % (n, r) for r, n in sorted(roles.items())),
        len(g["ops"]), len(g["results"])))
