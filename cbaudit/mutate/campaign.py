"""Mutation campaigns: every applicable operator on every valid fixture, judged by its oracle.

A campaign is a grid of cells (fixture x operator). A cell regenerates its mutants from the
fixture and a Random seeded by (seed, operator, fixture), so a cell gives the same mutants in
any process and any order; results are sorted back into registry order, and `--jobs` (or
`--executor ray`) changes only the wall time. The cells run through an executor
(`cbaudit.io.executor`); on a cluster every task carries the fixtures' data and the bytes of
the files their unmutated oracles read (`cbaudit.io.shipping`), so workers need no shared file
system. Each mutant is one JSON Patch applied by path copying to the in-memory
fixture and handed to the target's oracle; nothing is written to disk.

Statuses (in the spirit of mutation-testing tools):

- `killed`: the oracle produced the operator's expected code;
- `killed_by_other`: rejected, but only with other codes (detected; reported for review);
- `killed_by_schema`: the mutant's shape was unusable and the expected code is not a schema
  code (detected by the schema, not by the contract check the operator aims at);
- `survived`: the oracle accepted the mutant;
- `timeout`: one evaluation took longer than the per-mutant limit (measured, not enforced);
- `oracle_error`: the patch did not apply or the oracle crashed;
- `equivalent`: the mutant's canonical form equals the fixture's (excluded from the score).

Score = detected / valid with detected = killed + killed_by_other + killed_by_schema + timeout
and valid = all - equivalent.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.checks.interface import Target, Verdict
from cbaudit.io import memo
from cbaudit.io.executor import Executor, LocalExecutor
from cbaudit.io.reads import recording
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.progress import Progress
from cbaudit.mutate.operators import Operator, OperatorRegistry
from cbaudit.mutate.patch import PatchError, apply_shared

if TYPE_CHECKING:
    from cbaudit.io.shipping import Shipment


class MutantStatus(StrEnum):
    """What happened to one mutant."""

    KILLED = "killed"
    KILLED_BY_OTHER = "killed_by_other"
    KILLED_BY_SCHEMA = "killed_by_schema"
    SURVIVED = "survived"
    TIMEOUT = "timeout"
    ORACLE_ERROR = "oracle_error"
    EQUIVALENT = "equivalent"


DETECTED = frozenset(
    {
        MutantStatus.KILLED,
        MutantStatus.KILLED_BY_OTHER,
        MutantStatus.KILLED_BY_SCHEMA,
        MutantStatus.TIMEOUT,
    }
)
#: Worst first: the status a kill-matrix cell shows when its mutants disagree.
SEVERITY_ORDER = (
    MutantStatus.SURVIVED,
    MutantStatus.ORACLE_ERROR,
    MutantStatus.TIMEOUT,
    MutantStatus.KILLED_BY_OTHER,
    MutantStatus.KILLED_BY_SCHEMA,
    MutantStatus.KILLED,
    MutantStatus.EQUIVALENT,
)


@dataclass(frozen=True)
class FixtureInput:
    """A valid fixture to mutate: display name, data, target, and how to locate pointers."""

    name: str
    data: Mapping[str, Any]
    target: str
    source: str = ""  # the file's text, for reports that show the mutated line
    locate: Callable[[str], Location] | None = None
    directory: Path | None = None  # the file's folder, for oracles that read files it names


@dataclass(frozen=True)
class MutantResult:
    """One mutant and its verdict."""

    fixture: str
    operator: str
    index: int
    patch: tuple[Mapping[str, Any], ...]
    description: str
    expect: str
    status: MutantStatus
    codes: tuple[str, ...] = ()  # error codes the mutant produced beyond the baseline's
    detail: str = ""  # oracle error text, when any

    @property
    def key(self) -> str:
        return f"{self.fixture}#{self.operator}#{self.index}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "fixture": self.fixture,
            "operator": self.operator,
            "index": self.index,
            "description": self.description,
            "expect": self.expect,
            "status": self.status.value,
            "codes": list(self.codes),
            "patch": [dict(op) for op in self.patch],
            **({"detail": self.detail} if self.detail else {}),
        }


@dataclass(frozen=True)
class CampaignResult:
    """Every mutant of a campaign, in deterministic order, plus baseline problems."""

    fixtures: tuple[str, ...]
    operators: tuple[str, ...]
    mutants: tuple[MutantResult, ...]
    baseline: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # fixture -> codes
    seed: int = 0

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in MutantStatus}
        for m in self.mutants:
            out[m.status.value] += 1
        return out

    @property
    def valid(self) -> int:
        return sum(1 for m in self.mutants if m.status is not MutantStatus.EQUIVALENT)

    @property
    def detected(self) -> int:
        return sum(1 for m in self.mutants if m.status in DETECTED)

    @property
    def score(self) -> float | None:
        """Detected / valid in percent (None when there is no valid mutant)."""
        if self.valid == 0:
            return None
        return round(100.0 * self.detected / self.valid, 2)

    def survivors(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.status is MutantStatus.SURVIVED]

    def errors(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.status is MutantStatus.ORACLE_ERROR]

    def matrix(self) -> dict[str, Any]:
        """Operator x fixture: per cell the worst status and the count of each status."""
        cells: dict[tuple[str, str], dict[str, int]] = {}
        for m in self.mutants:
            cell = cells.setdefault((m.operator, m.fixture), {})
            cell[m.status.value] = cell.get(m.status.value, 0) + 1
        rows = []
        for op in self.operators:
            row = []
            for fx in self.fixtures:
                counts = cells.get((op, fx))
                row.append(
                    {"status": _worst(counts), "counts": dict(sorted((counts or {}).items()))}
                )
            rows.append(row)
        return {"rows": list(self.operators), "cols": list(self.fixtures), "cells": rows}


def _worst(counts: Mapping[str, int] | None) -> str:
    if not counts:
        return "not_applicable"
    for status in SEVERITY_ORDER:
        if counts.get(status.value):
            return status.value
    return "not_applicable"


def canonical(data: Any) -> str:
    """The one spelling two documents must share to be the same fixture."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cell_random(seed: int, operator: str, fixture: str) -> random.Random:
    """The Random of one cell: independent of the order and process that runs it."""
    return random.Random(f"{seed}|{operator}|{fixture}")


def classify(
    expect: str, verdict: Verdict, baseline: frozenset[str]
) -> tuple[MutantStatus, tuple[str, ...]]:
    """The status of a mutant from its oracle verdict (codes already in the baseline ignored)."""
    new = tuple(sorted(verdict.codes - baseline))
    if expect in new:
        return MutantStatus.KILLED, new
    if verdict.unusable and not expect.startswith("SCHEMA."):
        return MutantStatus.KILLED_BY_SCHEMA, new
    if new:
        return MutantStatus.KILLED_BY_OTHER, new
    return MutantStatus.SURVIVED, new


def run_cell(
    fixture: FixtureInput,
    operator: Operator,
    target: Target,
    *,
    seed: int,
    baseline: frozenset[str],
    original: str,
    timeout_s: float,
    limit: int | None = None,
) -> list[MutantResult]:
    """Generate and judge every mutant of one operator on one fixture (judged by `target`,
    the fixture's type)."""
    rng = cell_random(seed, operator.name, fixture.name)
    out: list[MutantResult] = []
    try:
        edits = list(operator.generate(fixture.data, rng))
    except Exception as err:  # a generator bug is an oracle error of this cell, never a crash
        return [
            MutantResult(
                fixture.name,
                operator.name,
                0,
                (),
                "generator failed",
                operator.expect,
                MutantStatus.ORACLE_ERROR,
                detail=f"{type(err).__name__}: {err}",
            )
        ]
    if limit is not None and len(edits) > limit:
        keep = sorted(rng.sample(range(len(edits)), limit))
        edits = [edits[i] for i in keep]
    for index, (patch, description) in enumerate(edits):
        status: MutantStatus
        codes: tuple[str, ...] = ()
        detail = ""
        try:
            mutant = apply_shared(fixture.data, patch)
        except PatchError as err:
            status, detail = MutantStatus.ORACLE_ERROR, f"patch does not apply: {err}"
        else:
            if canonical(mutant) == original:
                status = MutantStatus.EQUIVALENT
            else:
                began = time.perf_counter()
                try:
                    verdict = target.evaluate(mutant, fixture.directory)
                except Exception as err:  # the oracle crashed on a mutant: report, go on
                    status, detail = MutantStatus.ORACLE_ERROR, f"{type(err).__name__}: {err}"
                else:
                    if time.perf_counter() - began > timeout_s:
                        status = MutantStatus.TIMEOUT
                    else:
                        status, codes = classify(operator.expect, verdict, baseline)
        out.append(
            MutantResult(
                fixture.name,
                operator.name,
                index,
                tuple(patch),
                description,
                operator.expect,
                status,
                codes,
                detail,
            )
        )
    return out


# ------------------------------------------------------------------------- executor units


@dataclass(frozen=True)
class CampaignShared:
    """What every unit of a campaign shares (picklable unless `operators` is set, which only
    an in-process run passes; elsewhere operators are looked up in the registry by name)."""

    fixtures: Mapping[str, FixtureInput]
    baselines: Mapping[str, frozenset[str]]
    originals: Mapping[str, str]
    targets: Mapping[str, Target]
    seed: int
    timeout_s: float
    limit: int | None
    operators: Mapping[str, Operator] | None = None
    shipment: Shipment | None = None  # a cluster run: the files the oracles read


def _pack(roots: Sequence[Path], files: Iterable[Path]) -> Shipment:
    from cbaudit.io.shipping import pack  # a cluster run's only: a local campaign never loads it

    return pack(roots, files)


def _cells_unit(shared: CampaignShared, cells: list[tuple[str, str]]) -> list[MutantResult]:
    """Judge the mutants of some (fixture, operator) cells; relocated on a cluster worker."""
    if shared.shipment is None:
        return _judge_cells(shared, cells)
    from cbaudit.io.shipping import relocated  # a cluster run's only

    with relocated(shared.shipment) as where:
        moved = {
            name: replace(
                fx, directory=where.rebase(fx.directory) if fx.directory is not None else None
            )
            for name, fx in shared.fixtures.items()
        }
        here = replace(shared, fixtures=moved, shipment=None)
        judged: list[MutantResult] = where.restore(_judge_cells(here, cells))
        return judged


def _judge_cells(shared: CampaignShared, cells: list[tuple[str, str]]) -> list[MutantResult]:
    from cbaudit.mutate.registry import OPERATORS

    ops = shared.operators if shared.operators is not None else OPERATORS
    out: list[MutantResult] = []
    # the mutants of a fixture re-read the files and re-run the replays they did not change:
    # each done once here (`cbaudit.io.memo`; in a gate worker, the worker's scope)
    with memo.reusing():
        for fixture_name, op_name in cells:
            fixture = shared.fixtures[fixture_name]
            out += run_cell(
                fixture,
                ops[op_name],
                shared.targets[fixture.target],
                seed=shared.seed,
                baseline=shared.baselines[fixture_name],
                original=shared.originals[fixture_name],
                timeout_s=shared.timeout_s,
                limit=shared.limit,
            )
    return out


def run_campaign(
    fixtures: Sequence[FixtureInput],
    operators: OperatorRegistry | Sequence[Operator],
    *,
    targets: Mapping[str, Target],
    seed: int = 0,
    jobs: int = 1,
    timeout_s: float = 10.0,
    limit: int | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
    ship: Sequence[Path] = (),
) -> CampaignResult:
    """Apply every operator to every fixture of its target and judge each mutant.

    `targets` (name -> `Target`) holds each fixture's target: `cbaudit.kinds.TARGETS`, or those
    of the kinds the gate runs with. `progress` hears of each finished cell (fixture x
    operator), with the mutants judged so far. `executor` runs the cells (default: `jobs`
    local processes); a cell it cannot run is an `oracle_error` of that cell, never dropped.
    On a cluster the cells carry the files the unmutated fixtures' oracles read and every file
    under the folders in `ship` (a bundle's read root: a mutant may read another file there).
    """
    ops = list(operators.values()) if isinstance(operators, OperatorRegistry) else list(operators)
    remote = executor is not None and executor.remote
    baselines: dict[str, frozenset[str]] = {}
    originals: dict[str, str] = {}
    read: list[Path] = []
    for fx in fixtures:
        if remote:  # the files the oracle reads travel with the cells (the read log names them)
            with recording([Path("/")]) as log:
                verdict = targets[fx.target].evaluate(fx.data, fx.directory)
            read += list(log.files)
        else:
            verdict = targets[fx.target].evaluate(fx.data, fx.directory)
        if verdict.unusable:
            raise _unusable(fx, verdict)
        baselines[fx.name] = verdict.codes
        originals[fx.name] = canonical(fx.data)
    cells = [(fx.name, op.name) for fx in fixtures for op in ops if op.target == fx.target]
    by_name = {op.name: op for op in ops}
    seen: list[MutantResult] = []
    local = jobs <= 1 or len(cells) < 2
    if executor is None or (local and not remote):
        executor = LocalExecutor(1 if local else jobs)
    if local and not remote:
        chunks = [[c] for c in cells]
        shared = CampaignShared(
            {f.name: f for f in fixtures},
            baselines,
            originals,
            targets,
            seed,
            timeout_s,
            limit,
            operators=by_name,
        )
    else:
        # Interleaved chunks, several per worker, so progress moves and the load balances.
        count = min(len(cells), 64 if remote else jobs * 8)
        chunks = [c for c in (cells[i::count] for i in range(count)) if c]
        shipment = _pack(ship, _shipped_files(read)) if remote else None
        shared = CampaignShared(
            {f.name: f for f in _picklable(fixtures)},
            baselines,
            originals,
            dict(targets),
            seed,
            timeout_s,
            limit,
            shipment=shipment,
        )
    cells_done = {"n": 0}

    def judged(_n: int, index: int, part: list[MutantResult]) -> None:
        cells_done["n"] += len(chunks[index])
        if progress is not None:
            seen.extend(part)
            progress(cells_done["n"], len(cells), f"{len(seen)} mutants judged")

    def failed(chunk: list[tuple[str, str]], why: str) -> list[MutantResult]:
        return [
            MutantResult(
                fx,
                op,
                0,
                (),
                "cell not run",
                by_name[op].expect,
                MutantStatus.ORACLE_ERROR,
                detail=why,
            )
            for fx, op in chunk
        ]

    parts = executor.map(_cells_unit, shared, chunks, failed=failed, done=judged)
    results = [m for part in parts for m in part]
    order_fx = {f.name: i for i, f in enumerate(fixtures)}
    order_op = {op.name: i for i, op in enumerate(ops)}
    results.sort(key=lambda m: (order_fx[m.fixture], order_op[m.operator], m.index))
    used_ops = [op.name for op in ops if any(op.target == f.target for f in fixtures)]
    return CampaignResult(
        fixtures=tuple(f.name for f in fixtures),
        operators=tuple(used_ops),
        mutants=tuple(results),
        baseline={k: tuple(sorted(v)) for k, v in baselines.items() if v},
        seed=seed,
    )


def _unusable(fx: FixtureInput, verdict: Verdict) -> InputError:
    """A fixture whose shape its own oracle rejects cannot be mutated (exit 2): every mutant
    would be rejected for the shape, and operators would read fields that are not there."""
    codes = ", ".join(sorted(verdict.codes)) or "no code"
    where = fx.locate("") if fx.locate is not None else Location(file=fx.name, pointer="")
    message = (
        f"the unmutated fixture is not a usable {fx.target} (its oracle rejects its shape:"
        f" {codes}); a campaign mutates valid fixtures"
    )
    return InputError(Finding("MUTATE.FIXTURE.UNUSABLE", message, location=where))


def _shipped_files(read: list[Path]) -> list[Path]:
    """The files the oracles read, less cbaudit's own data (every worker has its own)."""
    from cbaudit.results.paths import registry_root

    own = (Path(__file__).resolve().parent.parent, registry_root().resolve())
    return [p for p in dict.fromkeys(read) if not any(r == p or r in p.parents for r in own)]


def _picklable(fixtures: Sequence[FixtureInput]) -> list[FixtureInput]:
    """Fixtures without their locator closures (workers need only the data)."""
    return [FixtureInput(f.name, f.data, f.target, directory=f.directory) for f in fixtures]
