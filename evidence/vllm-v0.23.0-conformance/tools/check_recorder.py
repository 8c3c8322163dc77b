"""Check cbaudit's vLLM recorder against the real scheduler (run after run_vllm.sh twice).

For each NAME: RUN_DIR/plain/NAME.jsonl was driven with vLLM's own Scheduler and
RUN_DIR/recd/NAME.jsonl with the recorder's RecordingScheduler (looked up as --scheduler-cls
looks it up), writing RUN_DIR/records/NAME.record.jsonl. It checks that
 1. the recorder changed no decision (the two traces are byte-identical);
 2. every record line equals its trace line on every field they share (idle trace lines
    have no record line: a real engine makes no step then);
 3. each request arrived in the record at the first non-idle step at or after its
    arrival_step, with its prompt, max_tokens and priority;
 4. `stopped` at step k is vLLM's `finished` at step k + 1, with min(output_tokens,
    max_model_len - prompt) outputs.
`cbaudit conform RECORD` (no workload) is the other half of the check: run it on each record.

usage: python check_recorder.py RUN_DIR WORKLOAD_DIR NAME [NAME ...]   (exit 0 = all OK)
"""

import json
import os
import sys

SHARED = ("scheduled", "total", "new", "resumed", "preempted", "finished", "running_after",
          "waiting_after", "free_blocks_after")


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def check(run_dir, wl_dir, name):
    problems = []
    plain, recd = (os.path.join(run_dir, d, name + ".jsonl") for d in ("plain", "recd"))
    with open(plain, "rb") as a, open(recd, "rb") as b:
        if a.read() != b.read():
            problems.append("the trace under the recorder differs from the plain one")
    busy = [t for t in lines(plain) if not t.get("idle")]
    record = lines(os.path.join(run_dir, "records", name + ".record.jsonl"))
    header, steps = record[0], record[1:]
    if header.get("kind") != "header" or len(steps) != len(busy):
        problems.append(f"{len(steps)} record steps for {len(busy)} non-idle trace steps")
    for k, (t, s) in enumerate(zip(busy, steps)):
        bad = [f for f in SHARED if t[f] != s[f]]
        if s["step"] != k or bad:
            problems.append(f"record step {k} (trace step {t['step']}) differs on {bad}")
            break
    with open(os.path.join(wl_dir, name + ".workload.json")) as f:
        wl = json.load(f)
    at = [t["step"] for t in busy]
    want = {r["id"]: (next(i for i, st in enumerate(at) if st >= r["arrival_step"]),
                      r["prompt_tokens"], r["output_tokens"], r.get("priority", 0))
            for r in wl["requests"]}
    got = {a["id"]: (s["step"], a["prompt_tokens"], a["max_tokens"], a["priority"])
           for s in steps for a in s["arrivals"]}
    if got != want:
        problems.append("recorded arrivals differ from the workload")
    length = wl["config"].get("max_model_len", 2048)
    outputs = {r["id"]: min(r["output_tokens"], length - r["prompt_tokens"]) for r in wl["requests"]}
    for k, s in enumerate(steps):
        if k + 1 < len(steps) and sorted(s["stopped"]) != steps[k + 1]["finished"]:
            problems.append(f"stopped at record step {k} is not finished at {k + 1}")
            break
        for rid, info in s["stopped"].items():
            if info["output_tokens"] != outputs[rid]:
                problems.append(f"{rid}: {info['output_tokens']} outputs, expected {outputs[rid]}")
    print(f"{name}: {'OK' if not problems else 'FAIL'} ({len(steps)} record steps,"
          f" {len(got)} arrivals, vLLM {header.get('vllm_version')} {header.get('vllm_commit')})")
    for p in problems:
        print("   ", p)
    return not problems


if __name__ == "__main__":
    run, wls, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    sys.exit(0 if all([check(run, wls, n) for n in names]) else 1)
