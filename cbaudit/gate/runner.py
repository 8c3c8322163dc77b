"""Run every check a bundle declares, in parallel processes or on a cluster, and aggregate one
report.

The checks run through an executor (`cbaudit.io.executor`): local processes by default, Ray
tasks with `--executor ray`. A cluster task carries the bytes of its check's read root (the
bundle, or its declared or permitted root: the read log confines every read there, so that is
everything the check may read besides cbaudit's own data) and runs in a relocated copy of it
(`cbaudit.io.shipping`), so its results and read digests are those of a local run. A check that
names an input outside any bundle (`${VAR}`, an external source of this machine) runs here, on
the submitting machine. Results are merged in declaration order either way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.checks.bundle import Bundle, DeclaredCheck, discover, load_bundle
from cbaudit.checks.execute import DEFAULT_CHECK_TIMEOUT_S, errored, execute
from cbaudit.checks.interface import CheckKind
from cbaudit.gate.stamp import stamp
from cbaudit.io.executor import Executor, LocalExecutor
from cbaudit.io.memo import reusing
from cbaudit.io.reads import recording
from cbaudit.model import (
    CheckResult,
    CheckStatus,
    Finding,
    InputDigest,
    InputError,
    Location,
    Report,
    UsageError,
)
from cbaudit.model.progress import Progress

if TYPE_CHECKING:
    from cbaudit.io.shipping import Shipment


@cache
def package_data() -> tuple[Path, ...]:
    """cbaudit's own data a check may read: the package folder (shipped profiles, and the
    registries and schemas inside a wheel) and, in a source checkout, the top-level
    `registry/`."""
    from cbaudit.results.paths import registry_root

    here = Path(__file__).resolve().parent.parent
    return (here, registry_root().resolve())


@dataclass(frozen=True)
class CheckRun:
    """What one declared check gave: its results, and (path, sha256) of every file it read."""

    results: list[CheckResult]
    reads: tuple[tuple[str, str], ...] = ()


def read_roots(check: DeclaredCheck) -> tuple[Path, ...]:
    """Where a check may read: its read root (the bundle, or its declared or permitted root)
    and cbaudit's own data (the shipped registries, profiles and schemas)."""
    return ((check.root or check.bundle_root), *package_data())


def run_check(
    check: DeclaredCheck,
    kinds: Mapping[str, CheckKind[Any]],
    update: bool = False,
    timeout_s: float | None = DEFAULT_CHECK_TIMEOUT_S,
) -> CheckRun:
    """Run one declared check; never raises for bad input (it becomes an ERROR result).

    Its results carry where the check is declared, its wall time and readable locations
    (`cbaudit.gate.stamp`); every file it read is confined (`cbaudit.io.reads`) and hashed."""
    started = time.perf_counter()
    with recording(read_roots(check)) as log:
        results = execute(check, kinds, update=update, timeout_s=timeout_s)
    results = stamp(check, results, time.perf_counter() - started)
    return CheckRun(results, log.digests())


def _run_batch(
    shared: tuple[Mapping[str, CheckKind[Any]], float | None], specs: list[DeclaredCheck]
) -> list[CheckRun]:
    kinds, timeout_s = shared
    with reusing():  # (the unit's checks repeat the same parses and replays: `cbaudit.io.memo`)
        return [run_check(s, kinds, timeout_s=timeout_s) for s in specs]


def _heavy(check: DeclaredCheck) -> bool:
    """Kinds that take seconds rather than milliseconds: each gets a worker of its own, first."""
    return check.check_kind is not None and check.check_kind.heavy


def _batches(specs: list[DeclaredCheck], njobs: int) -> list[list[int]]:
    """Heavy kinds one per unit (first), the many millisecond checks in batches so that the
    overhead of a unit does not dominate."""
    heavy = [i for i, s in enumerate(specs) if _heavy(s)]
    light = [i for i, s in enumerate(specs) if not _heavy(s)]
    size = max(1, len(light) // (njobs * 4))
    batches = [heavy[i : i + 1] for i in range(len(heavy))]
    batches += [light[i : i + size] for i in range(0, len(light), size)]
    return batches


def _lost(check: DeclaredCheck, why: str) -> CheckRun:
    """The error result of a check whose unit the executor could not run (never dropped)."""
    where = Location(file=check.manifest, pointer=check.pointer, line=check.line)
    finding = Finding("GATE.CHECK.LOST", why, location=where)
    return CheckRun(stamp(check, errored(check, finding), 0.0))


def _run_units(
    specs: list[DeclaredCheck],
    batches: list[list[int]],
    fn: Any,
    shared: Any,
    units: list[Any],
    executor: Executor,
    progress: Progress | None,
    out: list[CheckRun],
) -> None:
    """Run `units` (one per batch of `specs`) and put each check's run at its index."""
    count = {"done": 0}

    def done(_n: int, index: int, _runs: list[CheckRun]) -> None:
        count["done"] += len(batches[index])
        if progress is not None:
            progress(count["done"], len(specs), specs[batches[index][-1]].check_id)

    def failed(unit: Any, why: str) -> list[CheckRun]:
        return [_lost(check, why) for check in _unit_checks(unit)]

    for batch, runs in zip(
        batches, executor.map(fn, shared, units, failed=failed, done=done), strict=True
    ):
        for i, run in zip(batch, runs, strict=True):
            out[i] = run


def _unit_checks(unit: Any) -> list[DeclaredCheck]:
    return [item[0] if isinstance(item, tuple) else item for item in unit]


def _run_parallel(
    specs: list[DeclaredCheck],
    kinds: Mapping[str, CheckKind[Any]],
    executor: Executor,
    njobs: int,
    timeout_s: float | None,
    progress: Progress | None,
) -> list[CheckRun]:
    """Run checks through `executor` in batches (`_batches`)."""
    out: list[CheckRun] = [CheckRun([]) for _ in specs]
    batches = _batches(specs, njobs)
    units = [[specs[i] for i in b] for b in batches]
    _run_units(specs, batches, _run_batch, (kinds, timeout_s), units, executor, progress, out)
    return out


# ------------------------------------------------------------------------ cluster (shipped)


@dataclass(frozen=True)
class Shipped:
    """What every cluster task of a gate shares: the kinds, the timeout, each read root's
    content, and where cbaudit's own data lies on the submitting machine."""

    kinds: Mapping[str, CheckKind[Any]]
    timeout_s: float | None
    shipments: Mapping[str, Shipment]
    package: tuple[str, ...]


def _external(check: DeclaredCheck) -> bool:
    """True when the check names an input outside any bundle (`${VAR}`): it runs here."""
    return "${" in repr(check.entry)


def _run_shipped_batch(shared: Shipped, unit: list[tuple[DeclaredCheck, str]]) -> list[CheckRun]:
    """A batch of checks on a cluster worker, each in its relocated read root."""
    from cbaudit.io.shipping import relocated  # a cluster's only: a local gate never loads it

    mine = tuple(str(p) for p in package_data())
    pairs = tuple(zip(mine, shared.package, strict=True))
    out: list[CheckRun] = []
    with reusing():
        for check, key in unit:
            with relocated(shared.shipments[key], pairs) as where:
                moved = replace(
                    check,
                    base_dir=where.rebase(check.base_dir),
                    bundle_root=where.rebase(check.bundle_root),
                    root=where.rebase(check.root) if check.root is not None else None,
                )
                run = run_check(moved, shared.kinds, timeout_s=shared.timeout_s)
                out.append(where.restore(run))
    return out


def _run_remote(
    specs: list[DeclaredCheck],
    kinds: Mapping[str, CheckKind[Any]],
    executor: Executor,
    njobs: int,
    timeout_s: float | None,
    progress: Progress | None,
) -> list[CheckRun]:
    """Ship each read root once and run the checks on the cluster; the checks that read an
    external input of this machine run here."""
    from cbaudit.io.shipping import pack

    out: list[CheckRun] = [CheckRun([]) for _ in specs]
    here = [i for i, s in enumerate(specs) if _external(s)]
    away = [i for i, s in enumerate(specs) if not _external(s)]
    shipments: dict[str, Shipment] = {}
    keys: dict[int, str] = {}
    for i in away:
        root = Path(os.path.abspath(specs[i].root or specs[i].bundle_root))
        key = str(root)
        if key not in shipments:
            shipments[key] = pack([root])
        keys[i] = key
    if away:
        sub = [specs[i] for i in away]
        batches = [[away[j] for j in b] for b in _batches(sub, max(1, njobs))]
        units = [[(specs[i], keys[i]) for i in b] for b in batches]
        shared = Shipped(kinds, timeout_s, shipments, tuple(str(p) for p in package_data()))
        _run_units(specs, batches, _run_shipped_batch, shared, units, executor, progress, out)
    for i in here:
        out[i] = run_check(specs[i], kinds, timeout_s=timeout_s)
    return out


def _run_serial(
    specs: list[DeclaredCheck],
    kinds: Mapping[str, CheckKind[Any]],
    update: bool,
    timeout_s: float | None,
    progress: Progress | None,
) -> list[CheckRun]:
    out: list[CheckRun] = []
    with reusing():
        for spec in specs:
            out.append(run_check(spec, kinds, update, timeout_s))
            if progress is not None:
                progress(len(out), len(specs), spec.check_id)
    return out


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def run_gate(
    paths: Iterable[Path],
    *,
    jobs: int | None = None,
    update: bool = False,
    select: str | None = None,
    check_timeout: float | None = DEFAULT_CHECK_TIMEOUT_S,
    root: Path | None = None,
    progress: Progress | None = None,
    kinds: Mapping[str, CheckKind[Any]] | None = None,
    executor: Executor | None = None,
) -> Report:
    """Discover bundles under `paths`, run their checks, return one report.

    `root` (`--root DIR`) permits every bundle's checks to read inside DIR (which must hold
    the bundle), overriding a bundle's own `root:`; without either, checks read only inside
    their bundle. `progress` hears of each finished check. `kinds` is the registry to run
    with (default `cbaudit.kinds.KINDS`). `executor` runs the checks (default: `jobs` local
    processes); a cluster executor's provenance goes in the report's `executor` field.
    """
    if kinds is None:
        from cbaudit.kinds import KINDS

        kinds = KINDS
    roots = list(paths)
    bundles: list[Bundle] = [load_bundle(b, kinds, permit=root) for b in discover(roots)]
    specs = _selected([s for b in bundles for s in b.checks], select, roots)
    njobs = default_jobs() if jobs is None else max(1, jobs)
    if executor is not None and executor.remote:
        if update:
            raise UsageError("--update rewrites files here: run it with --executor local")
        runs = _run_remote(specs, kinds, executor, njobs, check_timeout, progress)
    elif update or njobs == 1 or len(specs) < 2:
        runs = _run_serial(specs, kinds, update, check_timeout, progress)
    else:
        local = executor if executor is not None else LocalExecutor(njobs)
        runs = _run_parallel(specs, kinds, local, njobs, check_timeout, progress)
    results = [r for run in runs for r in run.results]
    summary = {
        "bundles": [{"bundle": b.name, "title": b.title, "checks": len(b.checks)} for b in bundles],
        "claims": [_claim(spec, run.results) for spec, run in zip(specs, runs, strict=True)],
        "selected": select,
    }
    provenance = executor.provenance() if executor is not None else None
    return Report.build("gate", results, _inputs(bundles, runs), summary, executor=provenance)


def _selected(
    specs: list[DeclaredCheck], select: str | None, roots: list[Path]
) -> list[DeclaredCheck]:
    if not select:
        return specs
    chosen = [s for s in specs if select in s.check_id or select == s.kind]
    if not chosen:
        # A selection that matches nothing would pass having checked nothing: in CI that
        # hides a typo or a renamed check behind a green gate.
        raise InputError.at(
            "GATE.SELECT.EMPTY",
            f"--select {select!r} matches no check id or kind among {len(specs)} checks",
            ", ".join(str(r) for r in roots),
        )
    return chosen


def _claim(check: DeclaredCheck, group: list[CheckResult]) -> dict[str, Any]:
    """One row of the claims table: what the check backs, and its worst outcome."""
    spec, entry = check.spec, check.entry
    declared = spec.evidence_class.value if spec and spec.evidence_class else None
    if spec is None:
        declared = (
            entry.get("evidence_class") if isinstance(entry.get("evidence_class"), str) else None
        )
    return {
        "bundle": check.bundle,
        "check": check.check_id,
        "kind": check.kind,
        "loop": spec.loop if spec else entry.get("loop"),
        "title": spec.title if spec else entry.get("title"),
        "claim": spec.claim if spec else entry.get("claim"),
        "evidence_class": declared or (group[0].evidence_class.value if group else None),
        "status": _worst([r.outcome for r in group]).value,
    }


def _inputs(bundles: list[Bundle], runs: list[CheckRun]) -> list[InputDigest]:
    """Every manifest and every file a check read, once each, shown relative to the working
    directory (`Report.build` sorts them)."""
    cwd = Path.cwd()
    seen: dict[str, str] = {}
    for bundle in bundles:
        for f in bundle.manifest_files:
            seen.setdefault(str(f.resolve()), InputDigest.of(f).sha256)
    for run in runs:
        for path, digest in run.reads:
            seen.setdefault(path, digest)
    return [InputDigest(_shown(Path(p), cwd), d) for p, d in seen.items()]


def _shown(path: Path, cwd: Path) -> str:
    try:
        return os.path.relpath(path, cwd)
    except ValueError:  # another drive
        return str(path)


def _worst(outcomes: list[CheckStatus]) -> CheckStatus:
    order = [CheckStatus.ERROR, CheckStatus.FAILED, CheckStatus.NOT_RUN, CheckStatus.PASSED]
    for status in order:
        if status in outcomes:
            return status
    return CheckStatus.PASSED
