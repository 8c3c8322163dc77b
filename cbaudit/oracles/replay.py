"""Loop 3 (article 0x02, 0x0B), the lesson and the lecture, and Loop 10's snapshots: checks that
replay the simulator.

Kinds (spec fields; schemas/check-<kind>.schema.json):

* `replay`: `workload` (path), `policy` (id), optional `options` {`policy_options`,
  `cost_model`, `cost_options`, `horizon`, `seed`, `budgets`, `windows`, `validation`,
  `initial_state` (path to SchedulerState-shaped JSON/YAML), `per_request`, `goodput`,
  `slo_window_ms`, `preemption`, `state_pool`, `graph_buckets`}, optional `expected` (the
  expected metrics, compared canonically) and `assert` (metric path -> exact value; a
  fraction-bearing metric such as `slot_occupancy` also takes "n/d").
* `replay_report`: the JSON report `cbaudit replay -f json` gives, kept on file for
  compare-results: `workload` (manifest or generator spec), `policy`, `options` (as `replay`;
  `seed` draws a generator spec), `report` (compared canonically; `gate --update` rewrites it),
  optional `samples` (default true).
* `policy_snapshots` (Loop 10): `snapshots` (files with `workload` and `state`), `policies`
  ([{id, policy, options}]), optional `expected`, `assert` (`<snapshot>.<policy id>.<field>`).
* `admission_cases` (lesson 5.1): `blocks` ({cached_tokens, input_tokens, block_size,
  expect}) and `admission` (the eligibility cases, `expect`: ADMITTED | DEFERRED_*).
* `static_efficiency` (lecture): `cells` ({batch_size, batches}), `mean_output_tokens`, `seed`,
  `tolerance` (relative), optional `expected`: seeded geometric replays vs 1 / (ln B + gamma).

The simulator loads when a check of these kinds runs (fast start). A goodput option the
simulator cannot read is `REPLAY.SPEC.INVALID`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.spec import CheckSpec, converted, key
from cbaudit.io.loader import load_document
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location

if TYPE_CHECKING:
    from cbaudit.sim.replay import ReplayOptions


@dataclass(frozen=True, kw_only=True)
class ReplaySpec(CheckSpec):
    """Fields of `replay`."""

    workload: str
    policy: str
    options: Mapping[str, Any] = field(default_factory=dict)
    expected: str | None = None
    asserts: Mapping[str, Any] = field(default_factory=dict, metadata=key("assert"))


@dataclass(frozen=True, kw_only=True)
class ReplayReportSpec(CheckSpec):
    """Fields of `replay_report`."""

    workload: str
    policy: str
    report: str
    options: Mapping[str, Any] = field(default_factory=dict)
    samples: bool = True


@dataclass(frozen=True, kw_only=True)
class PolicySnapshotsSpec(CheckSpec):
    """Fields of `policy_snapshots`."""

    snapshots: tuple[str, ...] = field(metadata=converted(tuple))
    policies: tuple[Mapping[str, Any], ...] = field(metadata=converted(tuple))
    expected: str | None = None
    asserts: Mapping[str, Any] = field(default_factory=dict, metadata=key("assert"))


@dataclass(frozen=True, kw_only=True)
class AdmissionCasesSpec(CheckSpec):
    """Fields of `admission_cases`."""

    blocks: tuple[Mapping[str, Any], ...] = field(default=(), metadata=converted(tuple))
    admission: tuple[Mapping[str, Any], ...] = field(default=(), metadata=converted(tuple))


@dataclass(frozen=True, kw_only=True)
class StaticEfficiencySpec(CheckSpec):
    """Fields of `static_efficiency`."""

    cells: tuple[Mapping[str, int], ...] = field(metadata=converted(tuple))
    mean_output_tokens: float
    seed: int
    tolerance: float
    expected: str | None = None


def _spec_error(ctx: GateContext, field: str, message: str) -> InputError:
    return ctx.error("REPLAY.SPEC.INVALID", message, field)


def replay_options(policy: str, opts: Mapping[str, Any], ctx: GateContext) -> ReplayOptions:
    """A check's `policy` and (schema-checked) `options` as ReplayOptions; the initial state
    file is read here, and a goodput the simulator cannot read is REPLAY.SPEC.INVALID."""
    from cbaudit.sim import replay as core
    from cbaudit.sim.engine import Validation

    initial = {}
    if "initial_state" in opts:
        path = ctx.resolve(opts["initial_state"], field="options/initial_state")
        doc = load_document(path, display=str(path))
        initial = core.parse_initial(doc.data, doc.path)
    return core.ReplayOptions(
        policy=policy,
        policy_options=dict(opts.get("policy_options") or {}),
        cost_model=str(opts.get("cost_model", "unit")),
        cost_options=dict(opts.get("cost_options") or {}),
        horizon=opts.get("horizon"),
        seed=opts.get("seed"),
        budgets=dict(opts.get("budgets") or {}),
        windows=tuple(opts.get("windows", [])),
        validation=Validation(opts.get("validation", "contract")),
        initial=initial,
        per_request=bool(opts.get("per_request", True)),
        preemption=dict(opts.get("preemption") or {}),
        state_pool=_state_pool(opts, ctx),
        graph_buckets=dict(opts.get("graph_buckets") or {}),
        **_slo_options(opts, ctx),
    )


def _state_pool(opts: Mapping[str, Any], ctx: GateContext) -> dict[str, Any]:
    """`state_pool` with a profile file (not a shipped id) resolved inside the bundle."""
    pool = dict(opts.get("state_pool") or {})
    ref = pool.get("model")
    if isinstance(ref, str) and ref:
        from cbaudit.sim.profiles import shipped_profiles

        if ref not in shipped_profiles():
            pool["model"] = str(ctx.resolve(ref, field="options/state_pool/model"))
    return pool


def _slo_options(opts: Mapping[str, Any], ctx: GateContext) -> dict[str, Any]:
    """`goodput` (["ttft:MS", ...] or a mapping of ms limits) and `slo_window_ms` (article 0x07)."""
    out: dict[str, Any] = {}
    raw = opts.get("goodput")
    if raw is not None:
        from cbaudit.sim.slo import parse_goodput

        items = [f"{k}:{v}" for k, v in raw.items()] if isinstance(raw, Mapping) else raw
        items = [items] if isinstance(items, str) else items
        try:
            out["goodput"] = parse_goodput(items)
        except ValueError as err:
            raise _spec_error(ctx, "options/goodput", str(err)) from None
    window = opts.get("slo_window_ms")
    if window is not None:
        out["slo_window_ms"] = float(window)
    return out


def run_replay(spec: ReplaySpec, ctx: GateContext) -> list[CheckResult]:
    """Kind `replay`: one replay, its expected metrics file, and exact assertions."""
    from cbaudit.sim import replay as core
    from cbaudit.sim.timeline import TimelineSink
    from cbaudit.sim.workload import load_workload

    wl_path = ctx.resolve(spec.workload, field="workload")
    workload = load_workload(wl_path, display=str(wl_path))
    options = replay_options(spec.policy, spec.options, ctx)
    timeline = TimelineSink()
    run, metrics, evidence = core.run(
        workload, options, source=ctx.manifest, base_dir=ctx.base_dir, trace=timeline
    )
    result = core.to_result(run, metrics, evidence, spec.id)
    gantt = timeline.chart(f"{spec.id}: slot occupancy ({options.policy})")
    findings = list(result.findings)
    findings += core.check_asserts(
        metrics, spec.asserts, file=ctx.manifest, pointer=f"{ctx.pointer}/assert"
    )
    if spec.expected is not None:
        findings += ctx.expect_json(spec.expected, metrics, spec.id)
    return [
        CheckResult(
            check="replay",
            subject=spec.id,
            findings=tuple(findings),
            metrics=result.metrics,
            evidence_class=result.evidence_class,
            reason=result.reason,
            artifacts={"workload": spec.workload},
            charts=(*result.charts, *((gantt,) if gantt else ())),
        )
    ]


def run_replay_report(spec: ReplayReportSpec, ctx: GateContext) -> list[CheckResult]:
    """Kind `replay_report`: running `cbaudit replay WORKLOAD ... --samples --per-request -f json`
    from the declaring file's directory gives the same report as the one kept on file (samples
    and per-request records inline, as this kind keeps them by default)."""
    from cbaudit.sim.replay_compare import load_replay_workload, replay_report

    path = ctx.resolve(spec.workload, field="workload")
    options = replay_options(spec.policy, spec.options, ctx)
    workload, source = load_replay_workload(path, seed=options.seed, display=spec.workload)
    report, evidence = replay_report(
        workload, source, options, samples=spec.samples, base_dir=ctx.base_dir
    )
    [result] = report.results
    findings = [*result.findings, *ctx.expect_json(spec.report, report.to_dict(), spec.id)]
    counts = {k: len(v) for k, v in result.metrics.get("samples", {}).items()}
    return [
        CheckResult(
            check="replay-report",
            subject=spec.id,
            findings=tuple(findings),
            metrics={"coordinates": report.summary["coordinates"], "sample_counts": counts},
            evidence_class=evidence,
            reason=f"{result.reason}; samples {counts}",
            artifacts={"report": spec.report},
        )
    ]


def run_admission_cases(spec: AdmissionCasesSpec, ctx: GateContext) -> list[CheckResult]:
    """Kind `admission_cases`: lesson 5.1 block math and admission eligibility."""
    from cbaudit.policies.budget import admission_check, blocks_needed

    findings: list[Finding] = []
    rows: list[dict[str, Any]] = []
    for i, case in enumerate(spec.blocks):
        ptr = f"blocks/{i}"
        got = blocks_needed(case["cached_tokens"], case["input_tokens"], max(1, case["block_size"]))
        rows.append({"case": ptr, "blocks_needed": got})
        if got != case.get("expect"):
            findings.append(
                Finding(
                    "REPLAY.BLOCKS.MISMATCH",
                    f"{ptr}: blocks needed {got}, expected {case.get('expect')!r}",
                    location=Location(file=ctx.manifest, pointer=f"{ctx.pointer}/{ptr}"),
                )
            )
    for i, case in enumerate(spec.admission):
        ptr = f"admission/{i}"
        fields = {k: v for k, v in case.items() if k != "expect"}
        reason = admission_check(**{**fields, "block_size": max(1, case["block_size"])})
        rows.append({"case": ptr, "decision": reason.value})
        if reason.value != case.get("expect"):
            findings.append(
                Finding(
                    "REPLAY.ADMISSION.MISMATCH",
                    f"{ptr}: decision {reason.value}, expected {case.get('expect')!r}",
                    location=Location(file=ctx.manifest, pointer=f"{ctx.pointer}/{ptr}"),
                )
            )
    return [
        CheckResult(
            check="admission_cases",
            subject=spec.id,
            findings=tuple(findings),
            metrics={"cases": rows},
            evidence_class=EvidenceClass.DERIVED,
        )
    ]


def run_static_efficiency(spec: StaticEfficiencySpec, ctx: GateContext) -> list[CheckResult]:
    """Kind `static_efficiency`: seeded geometric replays vs 1 / (ln B + gamma)."""
    from cbaudit.sim.engine import Validation
    from cbaudit.sim.montecarlo import static_efficiency

    tol = spec.tolerance
    out = []
    findings: list[Finding] = []
    for i, cell in enumerate(spec.cells):
        b, nb = cell["batch_size"], cell["batches"]
        res = static_efficiency(b, nb, float(spec.mean_output_tokens), spec.seed, Validation.OFF)
        out.append(res)
        if res["relative_error"] > tol:
            findings.append(
                Finding(
                    "REPLAY.EFFICIENCY.OUT_OF_TOLERANCE",
                    f"B={b}: measured {res['measured_efficiency']} vs 1/(ln B + gamma)"
                    f" {res['lecture_approximation']}: relative error {res['relative_error']}"
                    f" > {tol}",
                    location=Location(file=ctx.manifest, pointer=f"{ctx.pointer}/cells/{i}"),
                )
            )
    metrics = {"cells": out, "tolerance": tol}
    if spec.expected is not None:
        findings += ctx.expect_json(spec.expected, metrics, spec.id)
    return [
        CheckResult(
            check="static_efficiency",
            subject=spec.id,
            findings=tuple(findings),
            metrics=metrics,
            evidence_class=EvidenceClass.SYNTHETIC,
        )
    ]


def _decisions(spec: PolicySnapshotsSpec, ctx: GateContext) -> dict[str, Any]:
    """snapshot name -> policy id -> that policy's one decision on the snapshot."""
    from cbaudit.sim import replay as core
    from cbaudit.sim.snapshot import decide_snapshot
    from cbaudit.sim.workload import workload_from_data

    table: dict[str, Any] = {}
    for i, rel in enumerate(spec.snapshots):
        path = ctx.resolve(rel, field=f"snapshots/{i}")
        doc = load_document(path, display=str(path))
        if "workload" not in doc.data or "state" not in doc.data:
            raise InputError.at(
                "REPLAY.SNAPSHOT.SHAPE", "a snapshot needs workload and state", doc.path, pointer=""
            )
        workload = workload_from_data(doc.data["workload"], doc.path)
        initial = core.parse_initial(doc.data["state"], doc.path, "/state")
        table[str(doc.data.get("name", path.stem))] = {
            p["id"]: decide_snapshot(
                workload,
                initial,
                str(p["policy"]),
                dict(p.get("options") or {}),
                source=ctx.manifest,
            )
            for p in spec.policies
        }
    return table


def run_policy_snapshots(spec: PolicySnapshotsSpec, ctx: GateContext) -> list[CheckResult]:
    """Kind `policy_snapshots`: several policies, one decision each, on fixed snapshots."""
    from cbaudit.sim import replay as core

    table = _decisions(spec, ctx)
    findings = core.check_asserts(
        table, spec.asserts, file=ctx.manifest, pointer=f"{ctx.pointer}/assert"
    )
    findings += [
        Finding(
            code,
            f"{name} / {pid}: the decision breaks the contract",
            location=Location(file=ctx.manifest, pointer=ctx.pointer),
        )
        for name, row in table.items()
        for pid, d in row.items()
        for code in d["findings"]
    ]
    if spec.expected is not None:
        findings += ctx.expect_json(spec.expected, table, spec.id)
    return [
        CheckResult(
            check="policy_snapshots",
            subject=spec.id,
            findings=tuple(findings),
            metrics={"decisions": table},
            evidence_class=EvidenceClass.SYNTHETIC,
        )
    ]


REPLAY: CheckKind[ReplaySpec] = CheckKind(
    name="replay",
    spec_type=ReplaySpec,
    run=run_replay,
    summary="one replay of a workload under a policy: expected metrics and exact assertions",
)
REPLAY_REPORT: CheckKind[ReplayReportSpec] = CheckKind(
    name="replay_report",
    spec_type=ReplayReportSpec,
    run=run_replay_report,
    summary="a replay's full JSON report (samples and coordinates) kept on file",
)
POLICY_SNAPSHOTS: CheckKind[PolicySnapshotsSpec] = CheckKind(
    name="policy_snapshots",
    spec_type=PolicySnapshotsSpec,
    run=run_policy_snapshots,
    summary="Loop 10: several policies, one decision each, on fixed scheduler snapshots",
)
ADMISSION_CASES: CheckKind[AdmissionCasesSpec] = CheckKind(
    name="admission_cases",
    spec_type=AdmissionCasesSpec,
    run=run_admission_cases,
    summary="lesson 5.1: block math and admission eligibility cases",
)
STATIC_EFFICIENCY: CheckKind[StaticEfficiencySpec] = CheckKind(
    name="static_efficiency",
    spec_type=StaticEfficiencySpec,
    run=run_static_efficiency,
    summary="lecture: static batching efficiency vs 1 / (ln B + gamma) by seeded replays",
    heavy=True,
)
