"""Wall time of `cbaudit gate evidence/` at each `--jobs` setting, interleaved.

Prints the configuration, then one line per run and, per setting, min and median over the
rounds and the speed-up of the default (one process per CPU) over one process. The settings
run in turn within each round (1, N, 1, N, ...), so all of them see the same load; the load
average is printed before each round. Target: the whole bundle under 10 seconds on a 2-core
machine. Run from the repository root:

    .venv/bin/python benchmarks/gate_speed.py [--rounds 3] [--evidence evidence/] [--jobs 1,2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def _time_gate(evidence: str, jobs: int) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cbaudit", "gate", evidence, "-q", "--jobs", str(jobs)],
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - start, proc.returncode


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evidence", default="evidence/")
    parser.add_argument("--rounds", "--repeats", type=int, default=3)
    parser.add_argument("--jobs", help="comma-separated settings (default: 1 and the CPU count)")
    args = parser.parse_args()
    cpus = os.cpu_count() or 1
    settings = [int(j) for j in args.jobs.split(",")] if args.jobs else sorted({1, cpus})
    print(
        f"configuration: cbaudit gate {args.evidence} -q, --jobs {settings}, {args.rounds}"
        f" interleaved rounds; host: {cpus} CPUs, {_load()}"
    )
    times: dict[int, list[float]] = {j: [] for j in settings}
    codes: dict[int, int] = {}
    for k in range(args.rounds):
        print(f"  round {k + 1} ({_load()})", flush=True)
        for jobs in settings:
            elapsed, codes[jobs] = _time_gate(args.evidence, jobs)
            times[jobs].append(elapsed)
            print(f"    --jobs {jobs}: {elapsed:6.2f} s (exit {codes[jobs]})", flush=True)
    for jobs in settings:
        ts = times[jobs]
        print(
            f"gate --jobs {jobs}: min {min(ts):.2f} s, median {statistics.median(ts):.2f} s"
            f" over {args.rounds} runs, exit {codes[jobs]}"
        )
    if 1 in times and cpus in times and cpus != 1:
        ratio = statistics.median(times[1]) / statistics.median(times[cpus])
        print(f"speed-up with {cpus} processes (median): {ratio:.2f}x")
    default = statistics.median(times[cpus]) if cpus in times else None
    if default is not None:
        verdict = "met" if default < 10.0 else "NOT met"
        print(f"target: default run under 10 s -> {verdict} ({default:.2f} s median)")
    print(_load())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
