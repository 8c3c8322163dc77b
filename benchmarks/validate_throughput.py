"""Throughput of `cbaudit validate-plan --trace` against check-jsonschema (a script, not a test).

Generates a JSONL trace (one workload, one state, then N plan records, every plan valid so
each one runs the whole contract) in a temporary directory and prints:

- records/s and MB/s of `cbaudit validate-plan --trace` (schema + every contract check), as a
  subprocess including interpreter start-up, and of the in-process `validate_trace` call;
- objects/s of `check-jsonschema` validating a sample of the same plan records (one JSON file
  each) against the same plan schema (schema only), and the ratio;
- peak RSS of the cbaudit subprocess at two trace lengths (memory must not grow with length).

Usage: .venv/bin/python benchmarks/validate_throughput.py [--plans 100000] [--sample 3000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable


def build_records(n_decode: int = 16, n_prefill: int = 16) -> tuple[Any, Any, Any]:
    """A workload, a state and one valid plan with 16 decode rows and 4 prefill chunks."""
    requests = []
    views = []
    for i in range(n_decode + n_prefill):
        rid = f"r{i:03d}"
        decode = i < n_decode
        p = 8 + i % 5
        e = 1 + i % 3 if decode else 0
        c = p + e - 1 if decode else 0
        requests.append(
            {
                "request_id": rid,
                "arrival": i,
                "arrival_order": i,
                "prompt_tokens": p if decode else 12,
                "max_output_tokens": 64,
                "client": f"client-{i % 4}",
            }
        )
        views.append(
            {
                "request_id": rid,
                "request_generation": 0,
                "snapshot_version": i,
                "prompt_tokens": p if decode else 12,
                "emitted_tokens": e,
                "computed_tokens": c,
                "committed_tokens": c,
                "ready": True,
                "terminal": False,
                "queue": "running" if decode else "waiting",
                "arrival_order": i,
                "client": f"client-{i % 4}",
            }
        )
    workload = {
        "schema_version": 1,
        "workload_id": "bench",
        "clock": {"unit": "tick"},
        "policy": {
            "policy_id": "decode-first-fcfs",
            "policy_version": "1.0.0",
            "tie_break": {
                "key": [
                    "phase_rank",
                    "priority_rank",
                    "arrival_order",
                    "request_id",
                    "request_generation",
                ],
                "phase_order": ["DECODE_ROW", "PREFILL_CHUNK"],
            },
        },
        "budgets": {"token_budget": 64, "sequence_budget": 20},
        "requests": requests,
    }
    state = {
        "workload_id": "bench",
        "decision_id": 1,
        "state_version": 1,
        "requests": views,
        "completed_service": {},  # clients are declared; none has completed service yet
    }
    selected = []
    for v in views[: n_decode + 4]:
        decode = v["emitted_tokens"] >= 1
        start = v["computed_tokens"]
        end = start + 1 if decode else 12
        selected.append(
            {
                "request_id": v["request_id"],
                "request_generation": 0,
                "snapshot_version": v["snapshot_version"],
                "start": start,
                "end": end,
                "phase": "DECODE_ROW" if decode else "PREFILL_CHUNK",
                "positions": list(range(start, end)),
                "tie_break_key": [0 if decode else 1, 0, v["arrival_order"], v["request_id"], 0],
            }
        )
    tokens = sum(w["end"] - w["start"] for w in selected)
    plan = {
        "decision_id": 1,
        "input_state_version": 1,
        "policy_id": "decode-first-fcfs",
        "policy_version": "1.0.0",
        "selected": selected,
        "budget_ledger": {
            "token_budget": 64,
            "tokens_used": tokens,
            "sequence_budget": 20,
            "sequences_used": len(selected),
        },
        "not_selected": [],
    }
    return workload, state, plan


def write_trace(path: Path, n_plans: int) -> None:
    workload, state, plan = build_records()
    line = json.dumps({"record": "plan", "data": plan}, separators=(",", ":")) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"record": "workload", "data": workload}) + "\n")
        fh.write(json.dumps({"record": "state", "data": state}) + "\n")
        for _ in range(n_plans):
            fh.write(line)


def run_cbaudit(trace: Path, out: Path) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak RSS (KiB) of one `validate-plan --trace` process."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "rc = subprocess.run(sys.argv[1:]).returncode\n"
        "dt = time.perf_counter() - t\n"
        "print(dt, rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    cmd = [PY, "-c", probe, PY, "-m", "cbaudit", "validate-plan", "--trace", str(trace)]
    cmd += ["--format", "json", "--output", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=True)
    secs, rc, rss = res.stdout.split()
    return float(secs), int(rc), int(rss)


def run_check_jsonschema(sample_dir: Path, files: list[Path]) -> float:
    exe = shutil.which("check-jsonschema") or str(Path(PY).parent / "check-jsonschema")
    schema = REPO / "schemas" / "iteration-plan.schema.json"
    start = time.perf_counter()
    res = subprocess.run(
        [exe, "--schemafile", str(schema), *map(str, files)],
        capture_output=True,
        text=True,
        cwd=sample_dir,
        check=False,
    )
    secs = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"check-jsonschema failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    return secs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=3_000, help="records for check-jsonschema")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from cbaudit.contract.trace import validate_trace

    with tempfile.TemporaryDirectory(prefix="cbaudit-bench-") as tmp:
        root = Path(tmp)
        big = root / "big.trace.jsonl"
        small = root / "small.trace.jsonl"
        write_trace(big, args.plans)
        write_trace(small, max(args.plans // 10, 1))
        size_mb = big.stat().st_size / 1e6

        secs, rc, rss_big = run_cbaudit(big, root / "big.report.json")
        if rc != 0:
            raise SystemExit(f"cbaudit exited {rc} on the generated trace")
        _, _, rss_small = run_cbaudit(small, root / "small.report.json")

        start = time.perf_counter()
        result = validate_trace(big)
        in_proc = time.perf_counter() - start
        assert result.outcome.value == "passed", result.findings[:3]

        sample_dir = root / "sample"
        sample_dir.mkdir()
        _, _, plan = build_records()
        files = []
        for i in range(args.sample):
            f = sample_dir / f"plan{i:05d}.json"
            f.write_text(json.dumps(plan))
            files.append(f)
        cj_secs = run_check_jsonschema(sample_dir, files)

    cb_rate = args.plans / secs
    cb_inproc = args.plans / in_proc
    cj_rate = args.sample / cj_secs
    print(f"trace: {args.plans} plan records, {size_mb:.1f} MB (+ workload and state)")
    print(
        f"cbaudit validate-plan --trace (subprocess): {secs:.2f} s, {cb_rate:,.0f} records/s,"
        f" {size_mb / secs:.1f} MB/s"
    )
    print(
        f"cbaudit validate_trace (in process):        {in_proc:.2f} s, {cb_inproc:,.0f}"
        f" records/s, {size_mb / in_proc:.1f} MB/s"
    )
    print(
        f"check-jsonschema (schema only, {args.sample} files): {cj_secs:.2f} s,"
        f" {cj_rate:,.0f} objects/s"
    )
    print(f"ratio cbaudit (subprocess) / check-jsonschema: {cb_rate / cj_rate:.1f}x")
    print(
        f"peak RSS: {rss_small / 1024:.1f} MiB at {max(args.plans // 10, 1)} plans,"
        f" {rss_big / 1024:.1f} MiB at {args.plans} plans"
    )
    print(f"cpu count: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
