"""Mutation campaign speed on the Loop 2 fixture: mutants judged per wall second.

    .venv/bin/python benchmarks/mutate_speed.py [--fixture PATH] [--copies 24] [--repeats 3]

Runs every registered operator on `loop2/valid.case.json` (each mutant: one JSON Patch applied
by path copying, then the full contract validator) in one process, and again with
`--jobs 2` (worker processes; start-up included in the wall time). The fixture is listed
`--copies` times under distinct names so each configuration judges a few thousand mutants.
Target: at least 2,000 mutants per second in one process. Prints one line per configuration
(best of `--repeats`) and a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cbaudit.io import load_document  # noqa: E402 - after the path setup above
from cbaudit.kinds import TARGETS  # noqa: E402
from cbaudit.mutate.campaign import FixtureInput, run_campaign  # noqa: E402
from cbaudit.mutate.registry import OPERATORS  # noqa: E402

DEFAULT = REPO / "evidence/m5-2-continuous-batching/loop2/valid.case.json"


def _rate(fixtures: list[FixtureInput], jobs: int, repeats: int) -> tuple[float, int, float]:
    best = float("inf")
    count = 0
    score = 0.0
    for _ in range(repeats):
        began = time.perf_counter()
        result = run_campaign(fixtures, OPERATORS, targets=TARGETS, seed=0, jobs=jobs)
        best = min(best, time.perf_counter() - began)
        count = len(result.mutants)
        score = result.score or 0.0
    return count / best, count, score


def _rate_of(entry: object) -> float:
    assert isinstance(entry, dict)
    return float(entry["mutants_per_s"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", type=Path, default=DEFAULT)
    parser.add_argument("--copies", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = load_document(args.fixture).data
    fixtures = [FixtureInput(f"copy-{i}", data, "plan-case") for i in range(args.copies)]
    run_campaign(fixtures[:1], OPERATORS, targets=TARGETS)  # warm the schema validators
    out: dict[str, object] = {}
    for jobs in (1, 2):
        rate, count, score = _rate(fixtures, jobs, args.repeats)
        print(f"jobs={jobs}: {count} mutants, {rate:,.0f} mutants/s, score {score}%")
        out[f"jobs_{jobs}"] = {"mutants": count, "mutants_per_s": round(rate), "score": score}
    out["target_single_process"] = 2000
    single = _rate_of(out["jobs_1"])
    out["meets_target"] = single >= 2000
    print(json.dumps(out, sort_keys=True))
    return 0 if out["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
