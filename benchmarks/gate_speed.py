"""Wall time of `cbaudit gate evidence/`, serial and with parallel processes.

Prints one line per configuration (median of several runs) and the speed-up. Target: the
whole M5.2 bundle under 10 seconds on a 2-core machine. Run from the repository root:

    .venv/bin/python benchmarks/gate_speed.py [--repeats 3] [--evidence evidence/]
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
    elapsed = time.perf_counter() - start
    return elapsed, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evidence", default="evidence/")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cpus = os.cpu_count() or 1
    results: dict[int, float] = {}
    for jobs in sorted({1, cpus}):
        times = []
        code = 0
        for _ in range(args.repeats):
            elapsed, code = _time_gate(args.evidence, jobs)
            times.append(elapsed)
        results[jobs] = statistics.median(times)
        print(
            f"gate {args.evidence} --jobs {jobs}: median {results[jobs]:.2f} s over "
            f"{args.repeats} runs (min {min(times):.2f}, max {max(times):.2f}), exit {code}"
        )
    if len(results) > 1:
        serial, parallel = results[1], results[cpus]
        print(f"speed-up with {cpus} processes: {serial / parallel:.2f}x")
    target = 10.0
    default = results[cpus]  # what `cbaudit gate` does by default: one process per CPU
    verdict = "met" if default < target else "NOT met"
    print(f"target: default run under {target:.0f} s -> {verdict} ({default:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
