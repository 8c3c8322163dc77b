"""Fairness beside SLO outcomes for engine replays (article 0x09A on the replay engine).

`FairnessObserver` is a trace sink: it reads the published cuts (who is eligible) and the
results (completed intervals with progress before/after) of a replay, and publishes weighted
service per client only from completed rows beyond the highest frontier already counted, so
recompute rebuild after a preemption is never service. From that series `fairness_metrics`
reports, per client, final service, completed events, the longest eligible run without a
completed event, starvation over the replay, and the maximum service gap of every client pair
while both stay backlogged; `slo_by_identity` partitions each client's requests into
SLO-valid, completed-miss, rejected and unfinished from the replay's per-request clocks.

Check kind `fairness_replay` (spec fields): `workload` (path), `runs` (list of
{`policy`, optional `policy_options`, `label`}), optional `weights` {`w_p`, `w_q`} (default
1, 2), `horizon`, `validation` (contract | fast | off, default contract), `expected` (the
expected report, compared canonically) and `assert` (dotted metric path -> exact value).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.model import CheckResult, EvidenceClass, Finding
from cbaudit.oracles.fairness.accounting import (
    ServiceSeries,
    backlogged_gap,
    starved,
    weighted_rows,
)
from cbaudit.oracles.fairness.kinds import FairnessReplaySpec
from cbaudit.sim import replay as core
from cbaudit.sim.engine import Validation
from cbaudit.sim.workload import Workload, load_workload

CHECK_NAME = "fairness-replay"
NO_CLIENT = "(none)"


class FairnessObserver:
    """A TraceSink that turns state/result records into a per-client service series."""

    def __init__(self, workload: Workload, w_p: int, w_q: int) -> None:
        self.w_p = w_p
        self.w_q = w_q
        self.client = {r.request_id: r.client or NO_CLIENT for r in workload.requests}
        self.prompt = {r.request_id: r.prompt_tokens for r in workload.requests}
        self.series = ServiceSeries(tuple(sorted(set(self.client.values()))))
        self.counted: dict[tuple[str, int], int] = {}
        self._eligible: frozenset[str] = frozenset()

    def write(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "state":
            eligible = set()
            for v in data["requests"]:
                key = (v["request_id"], v["request_generation"])
                self.counted.setdefault(key, v["computed_tokens"])
                if v["ready"] and not v["terminal"]:
                    eligible.add(self.client[v["request_id"]])
            self._eligible = frozenset(eligible)
        elif kind == "result":
            service: dict[str, int] = {}
            events: dict[str, int] = {}
            for item in data["items"]:
                rid = item["request_id"]
                key = (rid, item["request_generation"])
                before = item["before"]["computed_tokens"]
                after = item["after"]["computed_tokens"]
                counted = self.counted.get(key, before)
                if after > counted:
                    c = self.client[rid]
                    units = weighted_rows(counted, after, self.prompt[rid], self.w_p, self.w_q)
                    service[c] = service.get(c, 0) + units
                    events[c] = events.get(c, 0) + 1
                    self.counted[key] = after
            self.series.tick(self._eligible, service, events)


def _longest_zero_run(series: ServiceSeries, identity: str) -> int:
    best = run = 0
    for eligible, done in zip(series.backlogged, series.completed, strict=True):
        run = run + 1 if identity in eligible and not done.get(identity) else 0
        best = max(best, run)
    return best


def fairness_metrics(obs: FairnessObserver) -> dict[str, Any]:
    s = obs.series
    clients = list(s.identities)
    gaps = {}
    for f, g in itertools.combinations(clients, 2):
        gap, window = backlogged_gap(s, f, g)
        gaps[f"{f}|{g}"] = {
            "gap": gap,
            "co_backlogged_iterations": list(window) if window else None,
        }
    return {
        "weights": {"w_p": obs.w_p, "w_q": obs.w_q},
        "publication": "completed intervals beyond the counted frontier (rebuild is not service)",
        "final_service": {c: s.final[c] for c in clients},
        "completed_events": {c: sum(t.get(c, 0) for t in s.completed) for c in clients},
        "max_backlogged_gap": gaps,
        "longest_eligible_wait_iterations": {c: _longest_zero_run(s, c) for c in clients},
        "starved": [c for c in clients if starved(s, c)],
        "observed_iterations": len(s.backlogged),
        "service_curve": {c: s.curve(c) for c in clients},
    }


def slo_by_identity(workload: Workload, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """SLO-valid / completed-miss / rejected / unfinished per client (no SLO: `no_slo`)."""
    per = metrics.get("requests") or {}
    out: dict[str, dict[str, int]] = {}
    for decl in workload.requests:
        c = decl.client or NO_CLIENT
        row = out.setdefault(
            c, {"slo_valid": 0, "completed_miss": 0, "rejected": 0, "unfinished": 0, "no_slo": 0}
        )
        rec = per.get(decl.request_id, {})
        reason = rec.get("finish_reason")
        if reason == "rejected":
            row["rejected"] += 1
        elif reason is None:
            row["unfinished"] += 1
        elif not decl.slo:
            row["no_slo"] += 1
        else:
            limits = {"ttft_ms": "ttft_ms", "e2e_ms": "e2e_ms", "tbt_ms": "tbt_max_ms"}
            ok = all(
                rec.get(field) is not None and rec[field] <= limit
                for name, field in limits.items()
                if (limit := decl.slo.get(name)) is not None
            )
            row["slo_valid" if ok else "completed_miss"] += 1
    return dict(sorted(out.items()))


def replay_fairness(
    workload: Workload,
    policy: str,
    policy_options: Mapping[str, Any],
    *,
    w_p: int = 1,
    w_q: int = 2,
    horizon: int | None = None,
    validation: Validation = Validation.CONTRACT,
    source: str | None = None,
) -> dict[str, Any]:
    """One replay with fairness and per-identity SLO outcomes (JSON-ready)."""
    options = core.ReplayOptions(
        policy=policy, policy_options=dict(policy_options), horizon=horizon, validation=validation
    )
    obs = FairnessObserver(workload, w_p, w_q)
    run, metrics, _ = core.run(workload, options, trace=obs, source=source)
    return {
        "policy": policy,
        "policy_options": dict(policy_options),
        "stop_reason": run.stop_reason,
        "iterations": run.iterations,
        "requests_finished": metrics["requests_finished"],
        "contract_findings": [f.code for f in run.findings],
        "preemptions": metrics["preemptions"],
        "recompute_tokens": metrics["recompute_tokens"],
        "fairness": fairness_metrics(obs),
        "slo_by_identity": slo_by_identity(workload, metrics),
    }


def run_fairness_replay(spec: FairnessReplaySpec, ctx: GateContext) -> list[CheckResult]:
    """Check kind `fairness_replay`: replays under several policies with fairness metrics."""
    check_id, runs, horizon = spec.id, spec.runs, spec.horizon
    validation = Validation(spec.validation)
    w_p, w_q = spec.weights.get("w_p", 1), spec.weights.get("w_q", 2)
    path = ctx.resolve(spec.workload, field="workload")
    workload = load_workload(path, display=str(path))
    report: dict[str, Any] = {"workload_id": workload.workload_id, "runs": {}}
    curves: dict[str, list[list[Any]]] = {}
    findings: list[Finding] = []
    for item in runs:
        opts = item.get("policy_options") or {}
        label = str(item.get("label", item["policy"]))
        result = replay_fairness(
            workload,
            item["policy"],
            opts,
            w_p=w_p,
            w_q=w_q,
            horizon=horizon,
            validation=validation,
            source=ctx.manifest,
        )
        report["runs"][label] = result
        for c, pts in result["fairness"]["service_curve"].items():
            curves[f"{c} ({label})"] = pts
    metrics: dict[str, Any] = {**report, "evidence_class": EvidenceClass.SYNTHETIC.value}
    findings += core.check_asserts(
        metrics, spec.asserts, file=ctx.manifest, pointer=f"{ctx.pointer}/assert"
    )
    for i, result in enumerate(report["runs"].values()):
        findings += [
            Finding(
                code,
                f"{result['policy']}: the replay's plan/result contract check raised {code}",
                location=ctx.location(f"/runs/{i}"),
            )
            for code in result["contract_findings"]
        ]
    if spec.expected is not None:
        findings += ctx.expect_json(spec.expected, metrics, check_id)
    chart = {
        "type": "lines",
        "title": f"{workload.workload_id}: cumulative completed weighted service per client",
        "x_label": "iteration (cut)",
        "y_label": f"weighted service W (w_p={w_p}, w_q={w_q})",
        "series": curves,
    }
    return [
        CheckResult(
            check=CHECK_NAME,
            subject=check_id,
            findings=tuple(findings),
            metrics=metrics,
            evidence_class=EvidenceClass.SYNTHETIC,
            reason=", ".join(
                f"{label}: starved {r['fairness']['starved'] or 'none'}"
                for label, r in report["runs"].items()
            ),
            artifacts={"workload": spec.workload},
            charts=(chart,),
        )
    ]
