"""Trace validation throughput: cbaudit against check-jsonschema on the same real records.

    .venv/bin/python benchmarks/validate_throughput.py [--trace FILE] [--requests 400]
        [--rounds 3]

Like with like: one replay trace (`cbaudit replay --trace-out`) of the first `--requests` rows
of a real request trace (default: the Splitwise code trace) under the issue-16 configuration
(vllm-v1, 2048 tokens, 256 sequences, K/V block 16, 26,312 blocks, roofline Llama-3-8B on
H100). Every record of that trace (workload, state, plan, result) goes

* through `cbaudit validate-plan --trace T.jsonl` (schema and every contract rule), one
  process, and
* through `check-jsonschema --schemafile S` (schema only), one process per record kind over
  one file per record of that kind, the same records as cbaudit reads;

both as whole processes (start-up included), interleaved A B A B for `--rounds` rounds with
the load average printed before each. Printed: the configuration, records per kind, min and
median wall seconds and records/s of each, and the ratio. check-jsonschema is the dev extra's
(or on PATH); the benchmark stops if either tool rejects a record.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
DEFAULT_TRACE = REPO.parent / "shared" / "traces" / "splitwise_code.csv"
SCHEMA_OF = {
    "workload": "workload-manifest",
    "state": "scheduler-state",
    "plan": "iteration-plan",
    "result": "iteration-result",
}
CONFIG = [
    "-p", "vllm-v1", "--cost-model", "roofline",
    "--cost-option", "hardware=nvidia-h100-sxm", "--cost-option", "model=llama-3-8b-gqa-fp16",
    "--cost-option", "mfu=0.7",
    "--budget", "token_budget=2048", "--budget", "sequence_budget=256",
    "--budget", "kv_block_size=16", "--budget", "kv_total_blocks=26312",
]  # fmt: skip


def timed(argv: list[str], cwd: Path | None = None) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, check=False)
    return time.perf_counter() - t0, proc.returncode, proc.stdout[-1500:] + proc.stderr[-1500:]


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    exe = shutil.which("check-jsonschema") or str(Path(PY).parent / "check-jsonschema")
    if not Path(exe).exists() and shutil.which(exe) is None:
        sys.exit("check-jsonschema not found (pip install check-jsonschema)")
    with tempfile.TemporaryDirectory(prefix="validate-throughput-") as tmp:
        work = Path(tmp)
        lines = args.trace.read_text(encoding="utf-8").splitlines(keepends=True)
        rows = work / "rows.csv"
        rows.write_text("".join(lines[: args.requests + 1]), encoding="utf-8")
        jsonl = work / "replay.trace.jsonl"
        replay = [PY, "-m", "cbaudit", "replay", "run", str(rows), *CONFIG, "-q"]
        replay += ["--trace-out", str(jsonl), "-f", "json", "-o", str(work / "replay.json")]
        wall, rc, text = timed(replay)
        if rc != 0:
            sys.exit(f"replay failed (exit {rc}):\n{text}")
        by_kind: dict[str, list[Path]] = {k: [] for k in SCHEMA_OF}
        for i, line in enumerate(jsonl.read_text(encoding="utf-8").splitlines()):
            rec = json.loads(line)
            folder = work / rec["record"]
            folder.mkdir(exist_ok=True)
            f = folder / f"{i:07d}.json"
            f.write_text(json.dumps(rec["data"]), encoding="utf-8")
            by_kind[rec["record"]].append(f)
        n = sum(len(v) for v in by_kind.values())
        size = jsonl.stat().st_size / 1e6
        counts = ", ".join(f"{k} {len(v)}" for k, v in by_kind.items())
        print(
            f"configuration: replay trace of the first {args.requests} rows of"
            f" {args.trace.name} (vllm-v1, 2048 tokens, 256 sequences, block 16, 26312 blocks,"
            f" roofline Llama-3-8B on H100): {n} records ({counts}), {size:.1f} MB;"
            f" {args.rounds} interleaved rounds"
        )
        print(f"host: {os.cpu_count()} CPUs, {load()}")
        cb_argv = [PY, "-m", "cbaudit", "validate-plan", "--trace", str(jsonl), "-q"]
        cb_argv += ["-f", "json", "-o", str(work / "validate.json")]
        cb: list[float] = []
        cj: list[float] = []
        for k in range(args.rounds):
            print(f"  round {k + 1} ({load()})", flush=True)
            wall, rc, text = timed(cb_argv)
            if rc != 0:
                sys.exit(f"cbaudit validate-plan exit {rc}:\n{text}")
            cb.append(wall)
            print(f"    cbaudit validate-plan   {wall:7.2f} s", flush=True)
            total = 0.0
            for kind, files in by_kind.items():
                if not files:
                    continue
                schema = REPO / "schemas" / f"{SCHEMA_OF[kind]}.schema.json"
                wall, rc, text = timed([exe, "--schemafile", str(schema), *map(str, files)])
                if rc != 0:
                    sys.exit(f"check-jsonschema rejected {kind} records (exit {rc}):\n{text}")
                total += wall
            cj.append(total)
            print(f"    check-jsonschema        {total:7.2f} s", flush=True)
    for name, walls in (("cbaudit validate-plan (schema + contract)", cb),
                        ("check-jsonschema (schema only)", cj)):  # fmt: skip
        med = statistics.median(walls)
        print(
            f"  {name:42s} min {min(walls):6.2f} s  median {med:6.2f} s"
            f"  {n / med:9.0f} records/s (median)"
        )
    ratio = statistics.median(cj) / statistics.median(cb)
    print(f"  cbaudit records/s / check-jsonschema records/s: x{ratio:.2f} (median)")
    print(f"{load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
