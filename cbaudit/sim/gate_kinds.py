"""Gate check kinds owned by the simulator: `replay` and `policy-snapshots`.

`replay` spec fields: `workload` (path), `policy` (id), optional `options`
{`policy_options`, `cost_model`, `cost_options`, `horizon`, `seed`, `budgets`, `windows`,
`validation`, `initial_state` (path to SchedulerState-shaped JSON/YAML)}, optional `expected`
(path of the expected metrics JSON, compared canonically) and optional `assert` (metric path ->
exact value; a fraction-bearing metric such as `slot_occupancy` also takes "n/d").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.io.loader import load_document
from cbaudit.model import CheckResult, InputError
from cbaudit.sim import replay as core
from cbaudit.sim.engine import Validation
from cbaudit.sim.timeline import TimelineSink
from cbaudit.sim.workload import load_workload

_OPTION_KEYS = {
    "policy_options",
    "cost_model",
    "cost_options",
    "horizon",
    "seed",
    "budgets",
    "windows",
    "validation",
    "initial_state",
    "per_request",
    "goodput",
    "slo_window_ms",
    "preemption",
}


def _spec_error(
    ctx: Any, field: str, message: str, code: str = "REPLAY.SPEC.INVALID"
) -> InputError:
    return InputError.at(code, message, ctx.manifest, pointer=f"{ctx.pointer}/{field}")


def _mapping(spec: Mapping[str, Any], key: str, ctx: Any) -> Mapping[str, Any]:
    value = spec.get(key) or {}
    if not isinstance(value, Mapping):
        raise _spec_error(ctx, key, f"{key} must be a mapping")
    return value


def options_from_spec(spec: Mapping[str, Any], ctx: Any) -> core.ReplayOptions:
    """Validate a check's `policy` and `options` into ReplayOptions (InputError when unusable)."""
    policy = spec.get("policy")
    if not isinstance(policy, str) or not policy:
        raise _spec_error(ctx, "policy", "policy must be a policy id string")
    opts = _mapping(spec, "options", ctx)
    unknown = sorted(set(opts) - _OPTION_KEYS)
    if unknown:
        raise _spec_error(
            ctx, "options", f"unknown options {unknown} (known: {sorted(_OPTION_KEYS)})"
        )
    horizon = opts.get("horizon")
    if horizon is not None and (
        isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1
    ):
        raise _spec_error(ctx, "options/horizon", "horizon must be an integer >= 1")
    windows = opts.get("windows", [])
    if not isinstance(windows, list) or not all(isinstance(w, int) and w >= 1 for w in windows):
        raise _spec_error(ctx, "options/windows", "windows must be a list of integers >= 1")
    try:
        validation = Validation(opts.get("validation", "contract"))
    except ValueError:
        raise _spec_error(
            ctx, "options/validation", "validation must be contract, fast or off"
        ) from None
    initial = {}
    if "initial_state" in opts:
        path = ctx.resolve(opts["initial_state"], field="options/initial_state")
        doc = load_document(path, display=str(path))
        initial = core.parse_initial(doc.data, doc.path)
    return core.ReplayOptions(
        policy=policy,
        policy_options=dict(_mapping(opts, "policy_options", ctx)),
        cost_model=str(opts.get("cost_model", "unit")),
        cost_options=dict(_mapping(opts, "cost_options", ctx)),
        horizon=horizon,
        seed=opts.get("seed"),
        budgets=dict(_mapping(opts, "budgets", ctx)),
        windows=tuple(windows),
        validation=validation,
        initial=initial,
        per_request=bool(opts.get("per_request", True)),
        preemption=dict(_mapping(opts, "preemption", ctx)),
        **_slo_options(opts, ctx),
    )


def _slo_options(opts: Mapping[str, Any], ctx: Any) -> dict[str, Any]:
    """`goodput` (["ttft:MS", ...] or a mapping of ms limits) and `slo_window_ms` (article 0x07)."""
    from cbaudit.sim.slo import GOODPUT_KEYS, parse_goodput

    out: dict[str, Any] = {}
    raw = opts.get("goodput")
    if raw is not None:
        items = (
            [f"{k}:{v}" for k, v in raw.items()]
            if isinstance(raw, Mapping)
            else [raw]
            if isinstance(raw, str)
            else raw
        )
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise _spec_error(ctx, "options/goodput", f"goodput takes {sorted(GOODPUT_KEYS)}:MS")
        try:
            out["goodput"] = parse_goodput(items)
        except ValueError as err:
            raise _spec_error(ctx, "options/goodput", str(err)) from None
    window = opts.get("slo_window_ms")
    if window is not None:
        if isinstance(window, bool) or not isinstance(window, int | float) or window <= 0:
            raise _spec_error(ctx, "options/slo_window_ms", "slo_window_ms must be a number > 0")
        out["slo_window_ms"] = float(window)
    return out


def run_replay(spec: Mapping[str, Any], ctx: Any) -> list[CheckResult]:
    """Gate kind `replay`: one replay, its expected metrics file, and exact assertions."""
    check_id = str(spec.get("id", "replay"))
    if not isinstance(spec.get("workload"), str):
        raise _spec_error(ctx, "workload", "workload must be a relative path")
    wl_path = ctx.resolve(spec["workload"], field="workload")
    workload = load_workload(wl_path, display=str(wl_path))
    options = options_from_spec(spec, ctx)
    timeline = TimelineSink()
    run, metrics, evidence = core.run(
        workload, options, source=ctx.manifest, base_dir=ctx.base_dir, trace=timeline
    )
    result = core.to_result(run, metrics, evidence, check_id)
    gantt = timeline.chart(f"{check_id}: slot occupancy ({options.policy})")
    findings = list(result.findings)
    asserts = _mapping(spec, "assert", ctx)
    findings += core.check_asserts(
        metrics, asserts, file=ctx.manifest, pointer=f"{ctx.pointer}/assert"
    )
    if "expected" in spec:
        findings += ctx.expect_json(spec["expected"], metrics, check_id)
    return [
        CheckResult(
            check=CHECK_NAME_REPLAY,
            subject=check_id,
            findings=tuple(findings),
            metrics=result.metrics,
            evidence_class=result.evidence_class,
            reason=result.reason,
            artifacts={"workload": str(spec["workload"])},
            charts=(*result.charts, *((gantt,) if gantt else ())),
        )
    ]


CHECK_NAME_REPLAY = "replay"


def _int_field(case: Mapping[str, Any], key: str, ctx: Any, ptr: str) -> int:
    value = case.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _spec_error(ctx, f"{ptr}/{key}", f"{key} must be an integer >= 0")
    return value


def run_admission_cases(spec: Mapping[str, Any], ctx: Any) -> list[CheckResult]:
    """Gate kind `admission_cases`: lesson 5.1 block math and admission eligibility.

    Fields: `blocks` (list of {cached_tokens, input_tokens, block_size, expect}) and
    `admission` (list of {cached_tokens, input_tokens, active_sequences, step_tokens,
    free_blocks, max_sequences, max_tokens, block_size, expect: ADMITTED | DEFERRED_*}).
    """
    from cbaudit.model import Finding, Location
    from cbaudit.policies.budget import admission_check, blocks_needed

    check_id = str(spec.get("id", "admission"))
    findings: list[Finding] = []
    rows: list[dict[str, Any]] = []
    for i, case in enumerate(spec.get("blocks") or []):
        ptr = f"blocks/{i}"
        if not isinstance(case, Mapping):
            raise _spec_error(ctx, ptr, "a block case must be a mapping")
        got = blocks_needed(
            _int_field(case, "cached_tokens", ctx, ptr),
            _int_field(case, "input_tokens", ctx, ptr),
            max(1, _int_field(case, "block_size", ctx, ptr)),
        )
        rows.append({"case": ptr, "blocks_needed": got})
        if got != case.get("expect"):
            findings.append(
                Finding(
                    "REPLAY.BLOCKS.MISMATCH",
                    f"{ptr}: blocks needed {got}, expected {case.get('expect')!r}",
                    location=Location(file=ctx.manifest, pointer=f"{ctx.pointer}/{ptr}"),
                )
            )
    for i, case in enumerate(spec.get("admission") or []):
        ptr = f"admission/{i}"
        if not isinstance(case, Mapping):
            raise _spec_error(ctx, ptr, "an admission case must be a mapping")
        reason = admission_check(
            cached_tokens=_int_field(case, "cached_tokens", ctx, ptr),
            input_tokens=_int_field(case, "input_tokens", ctx, ptr),
            active_sequences=_int_field(case, "active_sequences", ctx, ptr),
            step_tokens=_int_field(case, "step_tokens", ctx, ptr),
            free_blocks=_int_field(case, "free_blocks", ctx, ptr),
            max_sequences=_int_field(case, "max_sequences", ctx, ptr),
            max_tokens=_int_field(case, "max_tokens", ctx, ptr),
            block_size=max(1, _int_field(case, "block_size", ctx, ptr)),
        )
        rows.append({"case": ptr, "decision": reason.value})
        if reason.value != case.get("expect"):
            findings.append(
                Finding(
                    "REPLAY.ADMISSION.MISMATCH",
                    f"{ptr}: decision {reason.value}, expected {case.get('expect')!r}",
                    location=Location(file=ctx.manifest, pointer=f"{ctx.pointer}/{ptr}"),
                )
            )
    from cbaudit.model import EvidenceClass

    return [
        CheckResult(
            check="admission_cases",
            subject=check_id,
            findings=tuple(findings),
            metrics={"cases": rows},
            evidence_class=EvidenceClass.DERIVED,
        )
    ]


def run_static_efficiency(spec: Mapping[str, Any], ctx: Any) -> list[CheckResult]:
    """Gate kind `static_efficiency`: seeded geometric replays vs 1 / (ln B + gamma).

    Fields: `cells` (list of {batch_size, batches}), `mean_output_tokens`, `seed`,
    `tolerance` (relative, e.g. 0.03), optional `expected` (metrics JSON).
    """
    from cbaudit.model import EvidenceClass, Finding, Location
    from cbaudit.sim.montecarlo import static_efficiency

    check_id = str(spec.get("id", "static-efficiency"))
    cells = spec.get("cells")
    if not isinstance(cells, list) or not cells:
        raise _spec_error(ctx, "cells", "cells must be a non-empty list")
    mean = spec.get("mean_output_tokens")
    tol = spec.get("tolerance")
    seed = spec.get("seed")
    if not isinstance(mean, int | float) or mean <= 1:
        raise _spec_error(ctx, "mean_output_tokens", "mean_output_tokens must be a number > 1")
    if not isinstance(tol, int | float) or not 0 < tol < 1:
        raise _spec_error(ctx, "tolerance", "tolerance must be a number in (0, 1)")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _spec_error(ctx, "seed", "seed must be an integer")
    out = []
    findings: list[Finding] = []
    for i, cell in enumerate(cells):
        ptr = f"cells/{i}"
        if not isinstance(cell, Mapping):
            raise _spec_error(ctx, ptr, "a cell must be a mapping")
        b = _int_field(cell, "batch_size", ctx, ptr)
        nb = _int_field(cell, "batches", ctx, ptr)
        res = static_efficiency(b, nb, float(mean), seed, Validation.OFF)
        out.append(res)
        if res["relative_error"] > tol:
            findings.append(
                Finding(
                    "REPLAY.EFFICIENCY.OUT_OF_TOLERANCE",
                    f"B={b}: measured {res['measured_efficiency']} vs 1/(ln B + gamma)"
                    f" {res['lecture_approximation']}: relative error {res['relative_error']}"
                    f" > {tol}",
                    location=Location(file=ctx.manifest, pointer=f"{ctx.pointer}/{ptr}"),
                )
            )
    metrics = {"cells": out, "tolerance": tol}
    if "expected" in spec:
        findings += ctx.expect_json(spec["expected"], metrics, check_id)
    return [
        CheckResult(
            check="static_efficiency",
            subject=check_id,
            findings=tuple(findings),
            metrics=metrics,
            evidence_class=EvidenceClass.SYNTHETIC,
        )
    ]


class _Capture:
    """A trace sink keeping the last plan (one-decision snapshot runs)."""

    def __init__(self) -> None:
        self.plans: list[Mapping[str, Any]] = []

    def write(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "plan":
            self.plans.append(data)


def decide_snapshot(
    workload: Any,
    initial: Mapping[str, Any],
    policy: str,
    policy_options: Mapping[str, Any],
    *,
    source: str,
) -> dict[str, Any]:
    """One policy decision on one scheduler snapshot, summarized."""
    from cbaudit.sim.engine import Engine

    pol = core.make_policy(policy, policy_options, file=source)
    cap = _Capture()
    engine = Engine(
        workload,
        pol,
        core.make_cost_model("unit", {}),
        horizon=1,
        max_decisions=1,
        validation=Validation.CONTRACT,
        trace=cap,
        initial=initial,
    )
    run = engine.run()
    plan = cap.plans[0] if cap.plans else None
    decision: dict[str, Any] = {
        "policy": policy,
        "policy_options": dict(policy_options),
        "findings": [f.code for f in run.findings if f.code != "REPLAY.NO_PROGRESS"],
        "exact_runtime_reproduction": False,
    }
    if plan is None:
        decision.update({"selected": [], "not_selected": [], "preempted": []})
        return decision
    decision["selected"] = [
        f"{w['request_id']}[{w['start']},{w['end']}) {w['phase']}" for w in plan["selected"]
    ]
    decision["tokens_used"] = plan["budget_ledger"]["tokens_used"]
    decision["not_selected"] = [f"{n['request_id']}: {n['reason']}" for n in plan["not_selected"]]
    decision["preempted"] = [
        q["request_id"] for q in plan.get("queue_intent", []) if q["action"] == "preempt"
    ]
    return decision


def run_policy_snapshots(spec: Mapping[str, Any], ctx: Any) -> list[CheckResult]:
    """Gate kind `policy_snapshots`: several policies, one decision each, on fixed snapshots.

    Fields: `snapshots` (list of paths to files with `workload` and `state` members),
    `policies` (list of {id, policy, options}), optional `expected`, optional `assert`
    (paths `<snapshot>.<policy id>.<field>` into the decision table).
    """
    from cbaudit.model import EvidenceClass
    from cbaudit.sim.workload import workload_from_data

    check_id = str(spec.get("id", "policy-snapshots"))
    snaps = spec.get("snapshots")
    pols = spec.get("policies")
    if not isinstance(snaps, list) or not snaps:
        raise _spec_error(ctx, "snapshots", "snapshots must be a non-empty list of paths")
    if not isinstance(pols, list) or not pols:
        raise _spec_error(ctx, "policies", "policies must be a non-empty list")
    table: dict[str, Any] = {}
    for i, rel in enumerate(snaps):
        path = ctx.resolve(rel, field=f"snapshots/{i}")
        doc = load_document(path, display=str(path))
        if "workload" not in doc.data or "state" not in doc.data:
            raise InputError.at(
                "REPLAY.SNAPSHOT.SHAPE", "a snapshot needs workload and state", doc.path, pointer=""
            )
        workload = workload_from_data(doc.data["workload"], doc.path)
        initial = core.parse_initial(doc.data["state"], doc.path, "/state")
        name = str(doc.data.get("name", path.stem))
        row: dict[str, Any] = {}
        for j, p in enumerate(pols):
            if not isinstance(p, Mapping) or not isinstance(p.get("id"), str):
                raise _spec_error(ctx, f"policies/{j}", "each policy needs id and policy")
            row[p["id"]] = decide_snapshot(
                workload,
                initial,
                str(p.get("policy")),
                dict(p.get("options") or {}),
                source=ctx.manifest,
            )
        table[name] = row
    findings = core.check_asserts(
        table, _mapping(spec, "assert", ctx), file=ctx.manifest, pointer=f"{ctx.pointer}/assert"
    )
    for name, row in table.items():
        for pid, d in row.items():
            for code in d["findings"]:
                from cbaudit.model import Finding, Location

                findings.append(
                    Finding(
                        code,
                        f"{name} / {pid}: the decision breaks the contract",
                        location=Location(file=ctx.manifest, pointer=ctx.pointer),
                    )
                )
    if "expected" in spec:
        findings += ctx.expect_json(spec["expected"], table, check_id)
    return [
        CheckResult(
            check="policy_snapshots",
            subject=check_id,
            findings=tuple(findings),
            metrics={"decisions": table},
            evidence_class=EvidenceClass.SYNTHETIC,
        )
    ]
