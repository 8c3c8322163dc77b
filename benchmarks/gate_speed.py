"""Wall time of `cbaudit gate evidence/`, serial and with parallel processes, or side by side
with another checkout.

Prints one line per configuration (median of several runs) and the speed-up. Target: the
whole M5.2 bundle under 10 seconds on a 2-core machine. Run from the repository root:

    .venv/bin/python benchmarks/gate_speed.py [--repeats 3] [--evidence evidence/]

With `--baseline DIR` (another checkout of cbaudit, e.g. `git archive REV | tar -x -C DIR`),
the default run (one process per CPU) of DIR's code over DIR's evidence and of this checkout
over its own are interleaved A B A B ..., each in a fresh process with the same environment,
and the script prints each side's min and median and the ratio this / baseline:

    .venv/bin/python benchmarks/gate_speed.py --baseline /tmp/base --repeats 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _time_gate(evidence: str, jobs: int, source: Path | None = None) -> tuple[float, int]:
    """Seconds and exit code of one gate run; `source` runs another checkout's code in it."""
    env = dict(os.environ)
    cwd = None
    if source is not None:
        env["PYTHONPATH"] = str(source)
        cwd = source
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cbaudit", "gate", evidence, "-q", "--jobs", str(jobs)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=cwd,
    )
    elapsed = time.perf_counter() - start
    return elapsed, proc.returncode


def compare(evidence: str, baseline: Path, repeats: int) -> int:
    """Interleave the baseline checkout (A) and this one (B); print min, median and ratio."""
    jobs = os.cpu_count() or 1
    times: dict[str, list[float]] = {"baseline": [], "this": []}
    codes: dict[str, set[int]] = {"baseline": set(), "this": set()}
    _time_gate(evidence, jobs, baseline)  # warm both bytecode caches, untimed
    _time_gate(evidence, jobs, REPO)
    for _ in range(repeats):
        for name, source in (("baseline", baseline), ("this", REPO)):
            elapsed, code = _time_gate(evidence, jobs, source)
            times[name].append(elapsed)
            codes[name].add(code)
    print(f"gate {evidence} --jobs {jobs}, {repeats} interleaved runs each (A B A B ...)")
    for name in ("baseline", "this"):
        t = times[name]
        print(
            f"  {name:8s} min {min(t):6.2f} s  median {statistics.median(t):6.2f} s"
            f"  exit {sorted(codes[name])}"
        )
    ratio_min = min(times["this"]) / min(times["baseline"])
    ratio_median = statistics.median(times["this"]) / statistics.median(times["baseline"])
    print(f"  ratio this/baseline: min {ratio_min:.3f}, median {ratio_median:.3f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evidence", default="evidence/")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    args = parser.parse_args()
    if args.baseline is not None:
        return compare(args.evidence, args.baseline.resolve(), args.repeats)
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
