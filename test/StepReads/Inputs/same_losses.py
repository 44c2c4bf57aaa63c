"""same_losses.py RUN.jsonl STEP_BENCH.json: the step lines of `ampc run
--log` against the losses step_bench read one step late (both %.9g)."""
import json
import sys

run = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
run = [r["loss"] for r in run if "step" in r and "eval" not in r]
sb = json.load(open(sys.argv[2]))
if len(run) != len(sb["losses"]):
    sys.exit(f"FAIL: {len(run)} run lines, {len(sb['losses'])} step_bench losses")
for i, (a, b) in enumerate(zip(run, sb["losses"])):
    if float(a) != float(b):
        sys.exit(f"FAIL: step {i + 1}: ampc run {a!r}, step_bench {b!r}")
print(f"OK {len(run)} losses equal, {sb['host_syncs_inside_steps']} host syncs "
      f"inside steps")
