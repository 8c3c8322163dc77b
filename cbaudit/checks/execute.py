"""Run one declared check as the gate does: requirements, bindings, the kind, evidence class.

`execute` never raises for bad input: a check that did not parse, raised `InputError`, crashed
or ran past its deadline becomes one `error` result with its code. The gate adds processes,
labels, timing and the read log around it; `negative_check` runs its inner check through it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import signal
import threading
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from cbaudit.checks.bundle import DeclaredCheck
from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.spec import CheckSpec
from cbaudit.io.reads import file_sha256, note_read
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, Finding, InputError, Location

#: How long one check may run before it is stopped as GATE.CHECK.TIMEOUT (per-check
#: `timeout_s`, or `cbaudit gate --check-timeout`, override it).
DEFAULT_CHECK_TIMEOUT_S = 600.0


class CheckTimeout(Exception):
    """Raised inside a check that ran past its deadline."""


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
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


def cuda_available() -> bool:
    """Whether torch sees a CUDA device (False without torch)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch  # only probes availability; the bench runner owns real torch use

    return bool(torch.cuda.is_available())


def missing_requirements(spec: CheckSpec) -> list[str]:
    """Why this machine cannot run the check (`requires:`), one phrase per requirement."""
    missing: list[str] = []
    for req in spec.requires:
        if req == "torch" and importlib.util.find_spec("torch") is None:
            missing.append("torch is not installed (pip install 'cbaudit[bench]')")
        elif req == "cuda" and not cuda_available():
            missing.append("no CUDA device")
        elif req == "git" and shutil.which("git") is None:
            missing.append("git is not on PATH")
    return missing


def binding_findings(spec: CheckSpec, ctx: GateContext) -> list[Finding]:
    """`GATE.BINDING.*` for each `consumes:` artifact that is missing or changed."""
    findings: list[Finding] = []
    for i, item in enumerate(spec.consumes):
        path = ctx.resolve(item.path, field=f"consumes/{i}/path")
        loc = Location(file=ctx.manifest, pointer=f"{ctx.pointer}/consumes/{i}/sha256")
        if not path.is_file():
            message = f"bound artifact {item.path} is missing"
            findings.append(Finding("GATE.BINDING.MISSING", message, location=loc))
            continue
        note_read(path, item.path)
        actual = file_sha256(path.resolve())
        if actual != item.sha256:
            findings.append(
                Finding(
                    "GATE.BINDING.SHA256_MISMATCH",
                    f"{item.path} changed since it was bound: sha256 {actual}, bound {item.sha256}",
                    location=loc,
                )
            )
    return findings


def errored(check: DeclaredCheck, *findings: Finding) -> list[CheckResult]:
    """The single ERROR result of a check that could not run to the end."""
    return [
        CheckResult(
            check=check.kind,
            subject=f"{check.bundle}:{check.check_id}",
            findings=findings,
            status=CheckStatus.ERROR,
        )
    ]


def _label(check: DeclaredCheck, result: CheckResult, many: bool) -> str:
    base = f"{check.bundle}:{check.check_id}"
    if many and result.subject and result.subject != check.check_id:
        return f"{base}:{result.subject}"
    return base


def execute(
    check: DeclaredCheck,
    kinds: Mapping[str, CheckKind[Any]],
    *,
    update: bool = False,
    timeout_s: float | None = DEFAULT_CHECK_TIMEOUT_S,
) -> list[CheckResult]:
    """Run one declared check (see the module docstring); results labelled `bundle:id`."""
    ctx = check.context(kinds, update)
    spec, kind = check.spec, check.check_kind
    if spec is None or kind is None:
        return errored(check, *check.errors)
    declared = spec.evidence_class
    limit = spec.timeout_s if spec.timeout_s is not None else timeout_s
    try:
        missing = missing_requirements(spec)
        if missing:
            return [
                CheckResult(
                    check=check.kind,
                    subject=f"{check.bundle}:{check.check_id}",
                    status=CheckStatus.NOT_RUN,
                    reason="; ".join(missing),
                    evidence_class=declared or EvidenceClass.DERIVED,
                )
            ]
        bindings = binding_findings(spec, ctx)
        with deadline(limit):
            results = kind.run(spec, ctx)
    except CheckTimeout:
        return errored(
            check,
            Finding(
                "GATE.CHECK.TIMEOUT",
                f"the check did not finish within {limit} s and was stopped (raise its"
                " `timeout_s`, or `cbaudit gate --check-timeout`, if it needs longer)",
                location=ctx.location(),
            ),
        )
    except InputError as err:
        return errored(check, *err.findings)
    except Exception as err:  # a crashing check is reported, never hidden
        return errored(
            check,
            Finding(
                "GATE.CHECK.CRASHED",
                f"internal error in check kind {check.kind!r}: {type(err).__name__}: {err}",
                location=ctx.location(),
            ),
        )
    return _finish(check, ctx, results, bindings, declared)


def _finish(
    check: DeclaredCheck,
    ctx: GateContext,
    results: list[CheckResult],
    bindings: list[Finding],
    declared: EvidenceClass | None,
) -> list[CheckResult]:
    """Label each result, add the binding findings (to the first) and class mismatches."""
    many = len(results) > 1
    out: list[CheckResult] = []
    for i, result in enumerate(results):
        extra = list(bindings) if i == 0 else []
        if (
            declared is not None
            and result.evidence_class is not declared
            and result.outcome is not CheckStatus.NOT_RUN
        ):
            extra.append(
                Finding(
                    "GATE.EVIDENCE.CLASS_MISMATCH",
                    f"declared evidence class {declared.value!r} but the check produced "
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
                subject=_label(check, result, many),
                findings=(*result.findings, *extra),
                status=status,
            )
        )
    return out
