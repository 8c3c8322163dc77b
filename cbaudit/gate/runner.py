"""Run every check a bundle declares, in parallel processes, and aggregate one report."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

from cbaudit.gate.context import GateContext
from cbaudit.gate.kinds import KINDS, resolve_kind
from cbaudit.gate.manifest import Bundle, CheckSpec, discover, load_bundle
from cbaudit.gate.stamp import stamp
from cbaudit.io.workers import worker_pool
from cbaudit.model import (
    CheckResult,
    CheckStatus,
    EvidenceClass,
    Finding,
    InputDigest,
    InputError,
    Location,
    Report,
)
from cbaudit.model.progress import Progress


def _missing_requirements(spec: CheckSpec) -> list[str]:
    missing: list[str] = []
    for req in spec.spec.get("requires", []):
        if req == "torch" and importlib.util.find_spec("torch") is None:
            missing.append("torch is not installed (pip install 'cbaudit[bench]')")
        elif req == "cuda" and not _cuda_available():
            missing.append("no CUDA device")
        elif req == "git" and shutil.which("git") is None:
            missing.append("git is not on PATH")
    return missing


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch  # only probes availability; the bench runner owns real torch use

    return bool(torch.cuda.is_available())


def _check_bindings(spec: CheckSpec, ctx: GateContext) -> list[Finding]:
    findings: list[Finding] = []
    for i, item in enumerate(spec.spec.get("consumes", [])):
        path = ctx.resolve(item["path"], field=f"consumes/{i}/path")
        loc = Location(file=spec.manifest, pointer=f"{spec.pointer}/consumes/{i}/sha256")
        if not path.is_file():
            findings.append(
                Finding(
                    "GATE.BINDING.MISSING",
                    f"bound artifact {item['path']} is missing",
                    location=loc,
                )
            )
            continue
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        if actual != item["sha256"]:
            findings.append(
                Finding(
                    "GATE.BINDING.SHA256_MISMATCH",
                    f"{item['path']} changed since it was bound: sha256 {actual}, "
                    f"bound {item['sha256']}",
                    location=loc,
                )
            )
    return findings


def _label(spec: CheckSpec, result: CheckResult, many: bool) -> str:
    base = f"{spec.bundle}:{spec.check_id}"
    if many and result.subject and result.subject != spec.check_id:
        return f"{base}:{result.subject}"
    return base


#: How long one check may run before it is stopped as GATE.CHECK.TIMEOUT (per-check
#: `timeout_s`, or `cbaudit gate --check-timeout`, override it).
DEFAULT_CHECK_TIMEOUT_S = 600.0


class CheckTimeout(Exception):
    """Raised inside a check that ran past its deadline."""


@contextlib.contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise CheckTimeout in this thread after `seconds` (SIGALRM; a no-op where signals are
    unavailable: not the main thread, or no setitimer on this platform)."""
    if (
        seconds is None
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def expire(_signum: int, _frame: object) -> None:
        raise CheckTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _errored(spec: CheckSpec, *findings: Finding) -> list[CheckResult]:
    """The single ERROR result of a check that could not run to the end."""
    return [
        CheckResult(
            check=spec.kind,
            subject=f"{spec.bundle}:{spec.check_id}",
            findings=findings,
            status=CheckStatus.ERROR,
        )
    ]


def run_check(
    spec: CheckSpec, update: bool = False, timeout_s: float | None = DEFAULT_CHECK_TIMEOUT_S
) -> list[CheckResult]:
    """Run one declared check; never raises for bad input (it becomes an ERROR result).

    Its results carry where the check is declared, its wall time and readable locations
    (`cbaudit.gate.stamp`)."""
    started = time.perf_counter()
    results = _run_check(spec, update, timeout_s)
    return stamp(spec, results, time.perf_counter() - started)


def _run_check(
    spec: CheckSpec, update: bool = False, timeout_s: float | None = DEFAULT_CHECK_TIMEOUT_S
) -> list[CheckResult]:
    ctx = GateContext(
        base_dir=spec.base_dir,
        manifest=spec.manifest,
        pointer=spec.pointer,
        bundle_root=spec.bundle_root,
        update=update,
        root=spec.root,
    )
    declared = spec.spec.get("evidence_class")
    try:
        missing = _missing_requirements(spec)
        if missing:
            return [
                CheckResult(
                    check=spec.kind,
                    subject=f"{spec.bundle}:{spec.check_id}",
                    status=CheckStatus.NOT_RUN,
                    reason="; ".join(missing),
                    evidence_class=EvidenceClass(declared) if declared else EvidenceClass.DERIVED,
                )
            ]
        func = resolve_kind(spec.kind)
        if func is None:
            known = ", ".join(sorted(KINDS))
            raise InputError(
                Finding(
                    "GATE.CHECK.UNKNOWN_KIND",
                    f"unknown check kind {spec.kind!r} (known: {known})",
                    location=ctx.location("/kind"),
                )
            )
        binding_findings = _check_bindings(spec, ctx)
        limit = spec.spec.get("timeout_s", timeout_s)
        kind_spec = {k: v for k, v in spec.spec.items() if k != "timeout_s"}
        with _deadline(limit):
            results = func(kind_spec, ctx)
    except CheckTimeout:
        return _errored(
            spec,
            Finding(
                "GATE.CHECK.TIMEOUT",
                f"the check did not finish within {limit} s and was stopped (raise its"
                " `timeout_s`, or `cbaudit gate --check-timeout`, if it needs longer)",
                location=ctx.location(),
            ),
        )
    except InputError as err:
        return _errored(spec, *err.findings)
    except Exception as err:  # a crashing check is reported, never hidden
        return _errored(
            spec,
            Finding(
                "GATE.CHECK.CRASHED",
                f"internal error in check kind {spec.kind!r}: {type(err).__name__}: {err}",
                location=ctx.location(),
            ),
        )
    many = len(results) > 1
    out: list[CheckResult] = []
    for i, result in enumerate(results):
        extra = list(binding_findings) if i == 0 else []
        if (
            declared
            and result.evidence_class.value != declared
            and result.outcome is not CheckStatus.NOT_RUN
        ):
            extra.append(
                Finding(
                    "GATE.EVIDENCE.CLASS_MISMATCH",
                    f"declared evidence class {declared!r} but the check produced "
                    f"{result.evidence_class.value!r}; a report never upgrades a class",
                    location=ctx.location("/evidence_class"),
                )
            )
        status = result.status
        if extra and status in (None, CheckStatus.PASSED):
            status = None
        out.append(
            replace(
                result,
                subject=_label(spec, result, many),
                findings=(*result.findings, *extra),
                status=status,
            )
        )
    return out


def _run_batch(specs: list[CheckSpec], timeout_s: float | None) -> list[list[CheckResult]]:
    return [run_check(s, timeout_s=timeout_s) for s in specs]


# Kinds that take seconds rather than milliseconds: each gets a worker of its own, first.
HEAVY_KINDS = frozenset(
    {"static_efficiency", "mutation", "metamorphic", "incident_replay", "fairness_replay"}
)


def _run_parallel(
    specs: list[CheckSpec], njobs: int, timeout_s: float | None, progress: Progress | None
) -> list[list[CheckResult]]:
    """Run checks in processes: heavy kinds one per task (started first), the many
    millisecond checks in batches so process overhead does not dominate."""
    heavy = [i for i, s in enumerate(specs) if s.kind in HEAVY_KINDS]
    light = [i for i, s in enumerate(specs) if s.kind not in HEAVY_KINDS]
    size = max(1, len(light) // (njobs * 4))
    batches = [heavy[i : i + 1] for i in range(len(heavy))]
    batches += [light[i : i + size] for i in range(0, len(light), size)]
    out: list[list[CheckResult]] = [[] for _ in specs]
    done = 0
    with worker_pool(njobs) as pool:
        futures = {pool.submit(_run_batch, [specs[i] for i in b], timeout_s): b for b in batches}
        for future in as_completed(futures):
            batch = futures[future]
            for i, results in zip(batch, future.result(), strict=True):
                out[i] = results
            done += len(batch)
            if progress is not None:
                progress(done, len(specs), specs[batch[-1]].check_id)
    return out


def _run_serial(
    specs: list[CheckSpec], update: bool, timeout_s: float | None, progress: Progress | None
) -> list[list[CheckResult]]:
    out: list[list[CheckResult]] = []
    for spec in specs:
        out.append(run_check(spec, update, timeout_s))
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
) -> Report:
    """Discover bundles under `paths`, run their checks, return one report.

    `root` (`--root DIR`) permits every bundle's checks to read inside DIR (which must hold
    the bundle), overriding a bundle's own `root:`; without either, checks read only inside
    their bundle. `progress` hears of each finished check.
    """
    roots = list(paths)
    bundles: list[Bundle] = [load_bundle(b, permit=root) for b in discover(roots)]
    specs = [s for b in bundles for s in b.checks]
    if select:
        chosen = [s for s in specs if select in s.check_id or select == s.kind]
        if not chosen:
            # A selection that matches nothing would pass having checked nothing: in CI that
            # hides a typo or a renamed check behind a green gate.
            raise InputError.at(
                "GATE.SELECT.EMPTY",
                f"--select {select!r} matches no check id or kind among {len(specs)} checks",
                ", ".join(str(r) for r in roots),
            )
        specs = chosen
    njobs = default_jobs() if jobs is None else max(1, jobs)
    if update or njobs == 1 or len(specs) < 2:
        per_check = _run_serial(specs, update, check_timeout, progress)
    else:
        per_check = _run_parallel(specs, njobs, check_timeout, progress)
    results = [r for group in per_check for r in group]
    claims: list[dict[str, Any]] = []
    for spec, group in zip(specs, per_check, strict=True):
        outcome = _worst([r.outcome for r in group])
        claims.append(
            {
                "bundle": spec.bundle,
                "check": spec.check_id,
                "kind": spec.kind,
                "loop": spec.spec.get("loop"),
                "title": spec.spec.get("title"),
                "claim": spec.spec.get("claim"),
                "evidence_class": spec.spec.get("evidence_class")
                or (group[0].evidence_class.value if group else None),
                "status": outcome.value,
            }
        )
    inputs: list[InputDigest] = []
    for bundle in bundles:
        for f in bundle.manifest_files:
            inputs.append(InputDigest.of(f, display=str(f)))
    summary = {
        "bundles": [{"bundle": b.name, "title": b.title, "checks": len(b.checks)} for b in bundles],
        "claims": claims,
        "selected": select,
    }
    return Report.build("gate", results, inputs, summary)


def _worst(outcomes: list[CheckStatus]) -> CheckStatus:
    order = [CheckStatus.ERROR, CheckStatus.FAILED, CheckStatus.NOT_RUN, CheckStatus.PASSED]
    for status in order:
        if status in outcomes:
            return status
    return CheckStatus.PASSED
