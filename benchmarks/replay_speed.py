"""Replay speed on a real request trace: simulated iterations and requests per wall second.

    .venv/bin/python benchmarks/replay_speed.py [--trace ../shared/traces/splitwise_code.csv]

Replays the Splitwise code trace (8,819 requests) with `sarathi-serve` and `vllm-v1` under the
roofline cost model, with contract validation on (`--validate contract`: the contract's
incremental validator, `cbaudit.contract.live`, on every plan and result), and prints
iterations per wall second, requests per wall second, and the wall-time ratio of 10x versus 1x
requests (10 back-to-back copies of the trace; linear scaling gives a ratio near 10). For
comparison it also times `--validate off` on the whole trace and, on a prefix, the record
validator every iteration (the engine's `cross_check` hook: full SchedulerState, IterationPlan
and IterationResult records through `check_state` / `check_plan` / `check_result`, which is
what `contract` cost before it became incremental). Each figure is the best of `--repeat` runs.
Wall-clock figures are printed, never written into a report.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from cbaudit.policies.registry import POLICIES
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.workload import RequestDecl, Workload, workload_from_data

HERE = Path(__file__).resolve().parent
DEFAULT_TRACE = HERE.parent.parent / "shared" / "traces" / "splitwise_code.csv"
BUDGETS = {"token_budget": 2048, "sequence_budget": 256}


def load_trace(path: Path, limit: int | None = None) -> Workload:
    """The trace as a workload: the workload helper's importer, else a minimal CSV reader."""
    try:
        from cbaudit.sim.workload_gen import import_trace_json

        data = import_trace_json(path, budgets=BUDGETS, limit=limit)
    except ImportError:
        data = _minimal_reader(path, limit)
    return workload_from_data(data, str(path))


def _minimal_reader(path: Path, limit: int | None) -> dict[str, Any]:
    import csv

    reqs: list[dict[str, Any]] = []
    hidden: dict[str, int] = {}
    with path.open(newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            if limit is not None and i >= limit:
                break
            rid = f"splitwise-{i:06d}"
            out = int(row["num_decode_tokens"])
            reqs.append(
                {
                    "request_id": rid,
                    "arrival": float(row["arrived_at"]) * 1000.0,
                    "prompt_tokens": int(row["num_prefill_tokens"]),
                    "max_output_tokens": out,
                }
            )
            hidden[rid] = out
    return {
        "schema_version": 1,
        "workload_id": path.stem,
        "clock": {"unit": "ms"},
        "budgets": BUDGETS,
        "requests": reqs,
        "fixture_only_hidden_truth": {"realized_output_tokens": hidden},
    }


def tiled(workload: Workload, copies: int) -> Workload:
    """`copies` back-to-back copies of the trace (arrivals shifted by its span)."""
    span = max(r.arrival for r in workload.requests) + 1000.0
    n = len(workload.requests)
    reqs: list[RequestDecl] = []
    hidden: dict[str, int] = {}
    for k in range(copies):
        for r in workload.requests:
            rid = f"{r.request_id}-x{k}"
            reqs.append(
                replace(
                    r,
                    request_id=rid,
                    arrival=r.arrival + k * span,
                    arrival_order=r.arrival_order + k * n,
                )
            )
            hidden[rid] = workload.realized_output(r)
    return replace(workload, requests=tuple(reqs), hidden_realized=hidden)


def cost_model() -> Any:
    try:
        from cbaudit.sim.cost_models import get_cost_model

        return get_cost_model("roofline", {"hardware": "nvidia-h100-sxm"}), "roofline"
    except Exception as err:  # the roofline model is the workload helper's; fall back honestly
        from cbaudit.sim.cost_unit import UnitCostModel

        print(f"(roofline cost model unavailable: {err}; using unit)")
        return UnitCostModel(), "unit"


def timed(
    workload: Workload,
    policy: str,
    validation: Validation,
    cost: Any,
    *,
    repeat: int = 1,
    records: bool = False,
) -> dict[str, Any]:
    """Replay `repeat` times; the fastest wall time (with `records`, also the record validator)."""
    wall = float("inf")
    for _ in range(repeat):
        engine = Engine(
            workload, POLICIES.create(policy), cost, validation=validation, cross_check=records
        )
        t0 = time.perf_counter()
        run = engine.run()
        wall = min(wall, time.perf_counter() - t0)
    return {
        "iterations": run.iterations,
        "requests": len(run.requests),
        "wall_s": wall,
        "it_per_s": run.iterations / wall,
        "req_per_s": len(run.requests) / wall,
        "stop": run.stop_reason,
        "findings": len(run.findings),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--records-prefix", type=int, default=1000)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (10x: one run)")
    args = ap.parse_args()
    base = load_trace(args.trace)
    cost, cost_name = cost_model()
    print(f"trace {args.trace.name}: {len(base.requests)} requests; cost model {cost_name}")
    for policy in ("sarathi-serve", "vllm-v1"):
        one = timed(base, policy, Validation.CONTRACT, cost, repeat=args.repeat)
        many = timed(tiled(base, args.copies), policy, Validation.CONTRACT, cost)
        off = timed(base, policy, Validation.OFF, cost, repeat=args.repeat)
        prefix = load_trace(args.trace, limit=args.records_prefix)
        records = timed(prefix, policy, Validation.CONTRACT, cost, records=True)
        live_prefix = timed(prefix, policy, Validation.CONTRACT, cost, repeat=args.repeat)
        print(f"\n{policy}")
        for label, r in (
            ("1x  validate=contract", one),
            (f"{args.copies}x validate=contract", many),
            ("1x  validate=off", off),
            (f"first {args.records_prefix} contract", live_prefix),
            (f"first {args.records_prefix} + record validator", records),
        ):
            print(
                f"  {label:34s} {r['iterations']:>8d} it {r['wall_s']:8.2f} s"
                f" {r['it_per_s']:>10.0f} it/s {r['req_per_s']:>9.0f} req/s"
                f" stop={r['stop']} findings={r['findings']}"
            )
        print(
            f"  time ratio {args.copies}x / 1x: {many['wall_s'] / one['wall_s']:.2f}"
            f" (linear = {args.copies})"
        )


if __name__ == "__main__":
    main()
