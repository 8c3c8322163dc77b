"""Wall time of `cbaudit gate evidence/` at each `--jobs` setting, interleaved, or side by side
with another checkout.

Prints the configuration, then one line per run and, per setting, min and median over the
rounds and the speed-up of the default (one process per CPU) over one process. The settings
run in turn within each round (1, N, 1, N, ...), so all of them see the same load; the load
average is printed before each round. Target: the whole bundle under 10 seconds on a 2-core
machine. Run from the repository root:

    .venv/bin/python benchmarks/gate_speed.py [--rounds 3] [--evidence evidence/] [--jobs 1,2]

With `--baseline DIR` (another checkout of cbaudit, e.g. `git archive REV | tar -x -C DIR`),
the default run (one process per CPU) of DIR's code over DIR's evidence and of this checkout
over its own are interleaved A B A B ..., each in a fresh process with the same environment,
and the script prints each side's min and median and the ratio this / baseline:

    .venv/bin/python benchmarks/gate_speed.py --baseline /tmp/base --rounds 7
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
    return time.perf_counter() - start, proc.returncode


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def compare(evidence: str, baseline: Path, repeats: int) -> int:
    """Interleave the baseline checkout (A) and this one (B); print min, median and ratio."""
    jobs = os.cpu_count() or 1
    times: dict[str, list[float]] = {"baseline": [], "this": []}
    codes: dict[str, set[int]] = {"baseline": set(), "this": set()}
    _time_gate(evidence, jobs, baseline)  # warm both bytecode caches, untimed
    _time_gate(evidence, jobs, REPO)
    print(f"gate {evidence} --jobs {jobs}, {repeats} interleaved runs each (A B A B ...)")
    for _ in range(repeats):
        print(f"  ({_load()})", flush=True)
        for name, source in (("baseline", baseline), ("this", REPO)):
            elapsed, code = _time_gate(evidence, jobs, source)
            times[name].append(elapsed)
            codes[name].add(code)
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
    parser.add_argument("--rounds", "--repeats", type=int, default=3)
    parser.add_argument("--jobs", help="comma-separated settings (default: 1 and the CPU count)")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    args = parser.parse_args()
    if args.baseline is not None:
        return compare(args.evidence, args.baseline.resolve(), args.rounds)
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
    if cpus in times:
        default = statistics.median(times[cpus])
        verdict = "met" if default < 10.0 else "NOT met"
        print(f"target: default run under 10 s -> {verdict} ({default:.2f} s median)")
    print(_load())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
