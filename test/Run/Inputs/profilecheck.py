"""Checks an `ampc run --profile-json` file (test/Run/profile.test).

  profilecheck.py FILE STEPS FIRST_LEFT_OUT

The rows add up: the functions' and the source ops' times and calls are
those of the calls, whose times add up to the calls' total; every call
runs once per step here (no accumulation); each call's function and
engines appear in its function's row; GEMM calls name an engine.
"""
import json
import sys

path, steps, first = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "true"
d = json.load(open(path))
assert d["steps"] == steps, d["steps"]
assert d["first_step_left_out"] is first
calls, funcs, ops = d["calls"], d["functions"], d["ops"]
assert calls and funcs and ops


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


total = d["call_ms_per_step"]
assert total > 0 and d["wall_ms_per_step"] >= total * 0.999, d
assert d["calls_per_step"] == len(calls), (d["calls_per_step"], len(calls))
for rows in (calls, funcs, ops):
    assert close(sum(r["ms_per_step"] for r in rows), total)
    assert close(sum(r["calls_per_step"] for r in rows), len(calls))
    assert close(sum(r["share"] for r in rows), 1.0)
for rows in (funcs, ops):
    ms = [r["ms_per_step"] for r in rows]
    assert ms == sorted(ms, reverse=True), "slowest first"
by_function = {r["functions"][0]: r for r in funcs}
assert all(len(r["functions"]) == 1 for r in funcs)
for c in calls:
    assert c["calls_per_step"] == 1, c
    f = by_function[c["functions"][0]]
    assert set(c["engines"]) <= set(f["engines"]), (c, f)
    if c["functions"][0] in ("ampc_linear_fwd", "ampc_matmul_fwd",
                             "ampc_gemm", "ampc_matmul_strided"):
        assert c["engines"], c
    else:
        assert c["op"] is None or c["loc"], c
# Source ops: forward and backward rows of the same op are apart; calls of
# no source op (the optimizer) stand alone by function.
keys = [(o["loc"], o["op"], o["name"], o["backward"]) if o["op"] else
        tuple(o["functions"]) for o in ops]
assert len(keys) == len(set(keys)), keys
assert any(o["backward"] for o in ops) == (d["steps"] > 0 and any(
    c["backward"] for c in calls))
print("profile ok:", len(calls), "calls,", len(funcs), "functions,",
      len(ops), "source ops")
