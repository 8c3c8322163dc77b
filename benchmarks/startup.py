"""Start-up time of `cbaudit --version` (target: under 150 ms), and of `cbaudit --help`.

Prints the median and minimum wall time over several runs of each command, in a fresh
process each time. Run from the repository root:

    .venv/bin/python benchmarks/startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _cbaudit() -> list[str]:
    script = Path(sys.executable).with_name("cbaudit")
    if script.exists():
        return [str(script)]
    found = shutil.which("cbaudit")
    return [found] if found else [sys.executable, "-m", "cbaudit"]


def _time(cmd: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    base = _cbaudit()
    target_ms = 150.0
    for flag in ("--version", "--help"):
        times = _time([*base, flag], args.repeats)
        print(
            f"cbaudit {flag}: median {statistics.median(times):.0f} ms, "
            f"min {min(times):.0f} ms over {args.repeats} runs"
        )
        if flag == "--version":
            median = statistics.median(times)
            verdict = "met" if median < target_ms else "NOT met"
            print(f"target: --version under {target_ms:.0f} ms -> {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
