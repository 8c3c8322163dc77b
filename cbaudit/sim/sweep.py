"""Rate sweeps: goodput capacity from replays of a workload generator (article 0x07, F38).

G* = max{ lambda : Pr_lambda[request SLO-valid] >= alpha } is estimated over a grid of
offered rates: each (rate, repeat) cell regenerates the workload at that rate with its own seed,
replays it under one policy, and measures offered-load attainment N_valid / N_off. The
capacity estimate is the largest swept rate whose mean attainment over repeats reaches alpha;
the spread is the range of the per-repeat capacities. One replay at one rate is an observed
rate, not a capacity.

Cells are pure functions of plain data (`run_cell`): the same cell gives the same JSON in any
process, in any order, so they run through an executor (`cbaudit.io.executor`): a local process
pool by default, Ray tasks on a cluster when a sweep outgrows one machine. For a cluster the
config carries the content of every file the generator spec names (`shipment`), so a worker
needs no shared file system; results are merged in cell order either way.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cbaudit.io.executor import Executor, LocalExecutor
from cbaudit.io.loader import Document
from cbaudit.io.schemas import validate
from cbaudit.io.shipping import Shipment, relocated
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.progress import Progress

RATE_KEYS = ("rate_per_s", "rate_per_tick")


def parse_rates(text: str) -> list[float]:
    """`A:B:N` -> N evenly spaced rates from A to B inclusive (ValueError when malformed)."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"--rates {text!r} is not A:B:N")
    try:
        lo, hi, n = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise ValueError(f"--rates {text!r}: A and B must be numbers and N an integer") from None
    if lo <= 0 or hi < lo or n < 1 or (n == 1 and hi != lo):
        raise ValueError(f"--rates {text!r}: need 0 < A <= B and N >= 1 (N = 1 only when A = B)")
    if n == 1:
        return [lo]
    return [round(lo + (hi - lo) * i / (n - 1), 9) for i in range(n)]


@dataclass(frozen=True)
class SweepConfig:
    """Everything a cell needs besides its rate and repeat (plain, picklable data)."""

    spec: Mapping[str, Any]
    spec_file: str
    base_dir: str
    policy: str
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    cost_model: str = "unit"
    cost_options: Mapping[str, Any] = field(default_factory=dict)
    goodput: Mapping[str, float] = field(default_factory=dict)
    window_ms: float | None = None
    base_seed: int | None = None  # None: the spec's own `seed`
    # For a cluster: the bytes of the files the spec names (see `referenced_files`).
    shipment: Shipment | None = None


def referenced_files(spec: Mapping[str, Any], base_dir: Path) -> list[Path]:
    """Every file a generator spec names (each `path` string, relative to `base_dir`)."""
    found: list[Path] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key == "path" and isinstance(value, str) and value:
                    p = Path(value)
                    found.append(p if p.is_absolute() else base_dir / p)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(spec)
    return found


def require_generator(doc: Document) -> None:
    """A sweep draws workloads from a generator spec; any other document is unusable.

    A document of another kind is SWEEP.GENERATOR.KIND at its `kind`; a generator spec that
    breaks its schema gives its SCHEMA.* findings (InputError, exit 2).
    """
    kind = doc.data.get("kind")
    if kind != "workload-generator":
        where = doc.locate("/kind" if "kind" in doc.data else "")
        what = f"kind {kind!r}" if "kind" in doc.data else "no kind (a workload manifest?)"
        message = f"a sweep needs a generator spec (kind: workload-generator); this has {what}"
        raise InputError(Finding("SWEEP.GENERATOR.KIND", message, location=where))
    findings = validate(doc.data, "workload-generator", file=doc.path, locate=doc.locate)
    if findings:
        raise InputError(findings)


def rate_field(spec: Mapping[str, Any], file: str) -> str:
    """Which arrival field a sweep varies (`rate_per_s`, `rate_per_tick` or `interval`)."""
    arrivals = spec.get("arrivals")
    if not isinstance(arrivals, Mapping):
        raise InputError.at(
            "SWEEP.GENERATOR.NO_RATE",
            "a sweep needs a generator spec with `arrivals` (poisson, gamma or fixed_interval)",
            file,
            pointer="/arrivals",
        )
    for key in RATE_KEYS:
        if key in arrivals:
            return key
    if arrivals.get("process") == "fixed_interval":
        return "interval"
    raise InputError.at(
        "SWEEP.GENERATOR.NO_RATE",
        f"arrival process {arrivals.get('process')!r} has no rate to sweep",
        file,
        pointer="/arrivals",
    )


def cell_seed(base_seed: int, repeat: int) -> int:
    """Repeat k uses seed base + k at every rate (common random numbers across rates)."""
    return base_seed + repeat


def run_cell(config: SweepConfig, rate: float, repeat: int) -> dict[str, Any]:
    """One (rate, repeat) replay as JSON-ready data; unusable input comes back as `error`."""
    from cbaudit.sim import replay as core
    from cbaudit.sim.engine import Validation
    from cbaudit.sim.slo import ledger, outcomes_from_run
    from cbaudit.sim.workload import workload_from_data
    from cbaudit.sim.workload_gen import SpecSource, generate_json

    base = config.base_seed if config.base_seed is not None else config.spec.get("seed")
    if not isinstance(base, int) or isinstance(base, bool):
        missing = InputError.at(
            "SWEEP.SEED.MISSING", "declare an integer `seed` or pass a base seed", config.spec_file
        )
        return {"rate": rate, "repeat": repeat, "seed": None, "error": _dicts(missing)}
    seed = cell_seed(base, repeat)
    spec = {**config.spec, "arrivals": dict(config.spec["arrivals"])}
    key = rate_field(spec, config.spec_file)
    spec["arrivals"][key] = (1.0 / rate) if key == "interval" else rate
    try:
        src = SpecSource(file=config.spec_file, base_dir=Path(config.base_dir))
        data = generate_json(spec, seed, source=src)
        workload = workload_from_data(data, config.spec_file)
        options = core.ReplayOptions(
            policy=config.policy,
            policy_options=dict(config.policy_options),
            cost_model=config.cost_model,
            cost_options=dict(config.cost_options),
            validation=Validation.FAST,
            per_request=False,
        )
        run, _, _ = core.run(workload, options, source=config.spec_file)
        outcomes, window, exact = outcomes_from_run(
            run, window_ms=config.window_ms, goodput=config.goodput or None
        )
    except InputError as err:
        return {
            "rate": rate,
            "repeat": repeat,
            "seed": seed,
            "error": _dicts(err),
        }
    led = ledger(outcomes, window)
    return {
        "rate": rate,
        "repeat": repeat,
        "seed": seed,
        "counts": led["counts"],
        "offered_load_attainment": led["attainment"]["offered_load"],
        "request_goodput": led["rates"]["request_goodput"],
        "token_throughput": led["rates"]["token_throughput"],
        "window_ms": led["window_ms"],
        "tokens_exact": exact,
        "stop_reason": run.stop_reason,
        "contract_findings": sorted({f.code for f in run.findings}),
    }


def _dicts(err: InputError) -> list[dict[str, Any]]:
    return [f.to_dict() for f in err.findings]


def _cell_unit(config: SweepConfig, cell: tuple[float, int]) -> dict[str, Any]:
    """One cell as an executor unit: with a shipment, in its relocated copy of the inputs."""
    if config.shipment is None:
        return run_cell(config, *cell)
    with relocated(config.shipment) as where:
        here = replace(config, base_dir=str(where.rebase(Path(config.base_dir))), shipment=None)
        result: dict[str, Any] = where.restore(run_cell(here, *cell))
        return result


def _cell_failed(spec_file: str, cell: tuple[float, int], why: str) -> dict[str, Any]:
    """The error result of a cell its executor could not run (it is never dropped)."""
    rate, repeat = cell
    message = f"cell rate {rate:g}, repeat {repeat}: {why}"
    error = {
        "code": "SWEEP.CELL.FAILED",
        "message": message,
        "location": {"file": spec_file, "pointer": ""},
    }
    return {"rate": rate, "repeat": repeat, "seed": None, "error": [error]}


def _run_cells(
    config: SweepConfig,
    cells: Sequence[tuple[float, int]],
    executor: Executor,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    def tell(done: int, index: int, _result: dict[str, Any]) -> None:
        if progress is not None:
            rate, rep = cells[index]
            progress(done, len(cells), f"rate {rate:g}, repeat {rep}")

    def failed(cell: tuple[float, int], why: str) -> dict[str, Any]:
        return _cell_failed(config.spec_file, cell, why)

    return executor.map(_cell_unit, config, list(cells), failed=failed, done=tell)


def notes(config: SweepConfig) -> list[str]:
    """What the sweep's replays will not do that the user should hear, as `replay` says it:
    the policy's stretch declaration not believed here (`cbaudit.policies.verified`: an edited
    or rebound policy), so every replay runs every iteration in full. Empty for a policy
    that cannot be made (each cell reports that) or makes no declaration."""
    from cbaudit.policies.registry import POLICIES
    from cbaudit.policies.verified import no_stretch_note, stretch_claim_refusal

    try:
        policy = POLICIES.create(config.policy, dict(config.policy_options))
    except (KeyError, ValueError, TypeError):
        return []
    if not callable(getattr(policy, "decode_stretch", None)):
        return []
    why = stretch_claim_refusal(policy)
    return [] if why is None else [no_stretch_note(why)]


def run_sweep(
    config: SweepConfig,
    rates: Sequence[float],
    *,
    repeats: int,
    attainment: float,
    jobs: int = 1,
    executor: Executor | None = None,
    runner: Callable[[SweepConfig, Sequence[tuple[float, int]], int], list[dict[str, Any]]]
    | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every cell, the per-rate summary and the goodput-capacity estimate with its spread.

    `executor` runs the cells (default: `jobs` local processes). `runner`, kept for callers
    that bring their own map, must return one `run_cell` result per cell, in the order given.
    `progress` hears of each finished cell.
    """
    cells = [(rate, rep) for rate in rates for rep in range(repeats)]
    if runner is not None:
        results = runner(config, cells, jobs)
    else:
        results = _run_cells(config, cells, executor or LocalExecutor(jobs), progress)
    errors = [r for r in results if "error" in r]
    if errors:
        raise InputError(
            Finding(
                e["code"],
                e["message"],
                location=Location(file=e["location"]["file"], pointer=e["location"]["pointer"]),
            )
            for e in errors[0]["error"]
        )
    per_rate: list[dict[str, Any]] = []
    for rate in rates:
        row = [r for r in results if r["rate"] == rate]
        values = [r["offered_load_attainment"]["value"] or 0.0 for r in row]
        per_rate.append(
            {
                "rate": rate,
                "attainment_mean": round(statistics.fmean(values), 9),
                "attainment_min": round(min(values), 9),
                "attainment_max": round(max(values), 9),
                "attainment_stdev": round(statistics.stdev(values), 9) if len(values) > 1 else None,
                "meets_target": statistics.fmean(values) >= attainment,
            }
        )
    passing = [p["rate"] for p in per_rate if p["meets_target"]]
    per_repeat: list[float | None] = []
    for rep in range(repeats):
        ok = [
            float(r["rate"])
            for r in results
            if r["repeat"] == rep and (r["offered_load_attainment"]["value"] or 0.0) >= attainment
        ]
        per_repeat.append(max(ok) if ok else None)
    known = [float(c) for c in per_repeat if c is not None]
    return {
        "policy": config.policy,
        "rates": list(rates),
        "repeats": repeats,
        "attainment_target": attainment,
        "rate_unit": rate_field(config.spec, config.spec_file).replace("rate_per_", "requests/")
        if "rate_per" in rate_field(config.spec, config.spec_file)
        else "requests per clock unit (1 / interval)",
        "goodput_capacity": {
            "estimate": max(passing) if passing else None,
            "definition": "largest swept rate whose mean offered-load attainment >= target",
            "per_repeat": per_repeat,
            "spread": {"min": min(known), "max": max(known)} if known else None,
            "below_grid": not passing,
            "at_grid_top": bool(passing) and max(passing) == max(rates),
        },
        "per_rate": per_rate,
        "cells": results,
        "note": (
            "capacity is bounded by the swept grid; one replay at one rate is an observed rate,"
            " not a capacity"
        ),
    }
