"""The lesson's incident, replayed (seeds/001 section 8): which counter tells the hypotheses apart.

A burst of unchunked long prompts lands on a pool of active decodes. Two hypotheses explain
an ITL spike with memory near full:

* H1, compute saturation by unchunked prefills: `forward_step_duration` against `step_tokens`;
* H2, memory exhaustion and recompute thrashing: `num_preemptions` and
  `recomputed_token_ratio` (recomputed rows / all scheduled rows), with repeated prompt passes
  for request ids that were already active.

`IncidentObserver` is a trace sink that reads the replay's plans (preemption intents) and
results (completed intervals with progress before/after) and counts, per iteration, the
scheduled rows, the recomputed rows (rows below the highest frontier a request had already
computed) and the preemptions. `incident_report` turns that into windowed cumulative counters;
the H2 signature is "at least one preemption and a recomputed-token ratio that rises".

Check kind `incident_replay` (spec fields): `workload`, optional `initial_state` (path),
`policy` (default `vllm-v1`), `variants` (list of {`label`, `budgets`, optional `preemption`
(replay preemption options, e.g. swap)}), `window` (iterations per window, default 10),
`validation` (default contract), `expect` ({label: {h2_signature: bool}}; a label that names
no variant is `INCIDENT.SPEC.INVALID`), `expected` (report file) and `assert` (path -> value).
Step duration is not modelled under the unit cost model, so H1 is reported as not evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from itertools import pairwise
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.io.loader import load_document
from cbaudit.model import CheckResult, EvidenceClass, Finding
from cbaudit.oracles.preemption.kinds import IncidentSpec
from cbaudit.sim import replay as core
from cbaudit.sim.engine import Validation
from cbaudit.sim.workload import Workload, load_workload

CHECK_NAME = "incident-replay"
DISTINGUISHING_COUNTERS = ("num_preemptions", "recomputed_token_ratio")


class IncidentObserver:
    """Per-iteration scheduled rows, recomputed rows and preemptions of one replay."""

    def __init__(self) -> None:
        self.high: dict[tuple[str, int], int] = {}
        self.step_tokens: list[int] = []
        self.recomputed: list[int] = []
        self.preemptions: list[int] = []
        self.preempted_ids: dict[str, int] = {}
        self._pending_preemptions = 0

    def write(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "plan":
            for intent in data.get("queue_intent", ()):
                if str(intent.get("action", "")).startswith("preempt"):
                    self._pending_preemptions += 1
                    rid = intent["request_id"]
                    self.preempted_ids[rid] = self.preempted_ids.get(rid, 0) + 1
        elif kind == "result":
            tokens = recomputed = 0
            for item in data["items"]:
                key = (item["request_id"], item["request_generation"])
                start = item["completed"]["start"]
                end = item["completed"]["end"]
                high = self.high.get(key, item["before"]["computed_tokens"])
                tokens += end - start
                recomputed += max(0, min(end, high) - start)
                self.high[key] = max(high, end)
            self.step_tokens.append(tokens)
            self.recomputed.append(recomputed)
            self.preemptions.append(self._pending_preemptions)
            self._pending_preemptions = 0


def _ratio(num: int, den: int) -> dict[str, Any]:
    frac = Fraction(num, den) if den else Fraction(0)
    return {
        "fraction": f"{frac.numerator}/{frac.denominator}",
        "value": round(float(frac), 9),
    }


def incident_report(obs: IncidentObserver, window: int) -> dict[str, Any]:
    """Cumulative counters at the end of each window, and the H2 signature."""
    windows = []
    cum_tokens = cum_re = cum_pre = 0
    ratios: list[Fraction] = []
    n = len(obs.step_tokens)
    for i in range(n):
        cum_tokens += obs.step_tokens[i]
        cum_re += obs.recomputed[i]
        cum_pre += obs.preemptions[i]
        if (i + 1) % window == 0 or i + 1 == n:
            ratios.append(Fraction(cum_re, cum_tokens) if cum_tokens else Fraction(0))
            windows.append(
                {
                    "end_iteration": i + 1,
                    "num_preemptions": cum_pre,
                    "recomputed_tokens": cum_re,
                    "recomputed_token_ratio": _ratio(cum_re, cum_tokens),
                }
            )
    rising = any(b > a for a, b in pairwise(ratios))
    return {
        "num_preemptions": cum_pre,
        "recomputed_tokens": cum_re,
        "scheduled_tokens": cum_tokens,
        "recomputed_token_ratio": _ratio(cum_re, cum_tokens),
        "recomputed_token_ratio_rising": rising,
        "preemptions_by_request": dict(sorted(obs.preempted_ids.items())),
        "max_step_tokens": max(obs.step_tokens, default=0),
        "windows": windows,
        "h2_signature": cum_pre > 0 and rising,
    }


def replay_incident(
    workload: Workload,
    options: core.ReplayOptions,
    window: int,
    *,
    source: str | None = None,
) -> tuple[dict[str, Any], list[str]]:
    obs = IncidentObserver()
    run, metrics, _ = core.run(workload, options, trace=obs, source=source)
    report = incident_report(obs, window)
    report.update(
        {
            "budgets": dict(options.budgets),
            "iterations": run.iterations,
            "stop_reason": run.stop_reason,
            "requests_finished": metrics["requests_finished"],
            "engine_recompute_tokens": metrics["recompute_tokens"],
            "preemption_model": metrics.get("preemption", {"mode": "recompute"}),
        }
    )
    return report, [f.code for f in run.findings]


def _replay_variants(
    spec: IncidentSpec, ctx: GateContext, workload: Workload
) -> tuple[dict[str, Any], list[Finding]]:
    """Each budget variant replayed: its report by label, and its contract findings."""
    initial = {}
    if spec.initial_state is not None:
        ipath = ctx.resolve(spec.initial_state, field="initial_state")
        doc = load_document(ipath, display=str(ipath))
        initial = core.parse_initial(doc.data, doc.path)
    runs: dict[str, Any] = {}
    findings: list[Finding] = []
    for i, v in enumerate(spec.variants):
        options = core.ReplayOptions(
            policy=spec.policy,
            budgets=dict(v.get("budgets") or {}),
            initial=initial,
            validation=Validation(spec.validation),
            preemption=dict(v.get("preemption") or {}),
        )
        report, codes = replay_incident(workload, options, spec.window, source=ctx.manifest)
        runs[v["label"]] = report
        findings += [
            Finding(
                code,
                f"{v['label']}: the replay's contract check raised {code}",
                location=ctx.location(f"/variants/{i}"),
            )
            for code in codes
        ]
    return runs, findings


def _expectations(spec: IncidentSpec, runs: Mapping[str, Any], ctx: GateContext) -> list[Finding]:
    """`INCIDENT.EXPECT.MISMATCH` for each declared counter a variant does not show."""
    return [
        Finding(
            "INCIDENT.EXPECT.MISMATCH",
            f"{label}: {name} is {runs[label].get(name)!r}, expected {value!r}",
            location=ctx.location(f"/expect/{label}/{name}"),
        )
        for label, want in spec.expect.items()
        for name, value in want.items()
        if runs[label].get(name) != value
    ]


def _incident_metrics(
    spec: IncidentSpec, workload: Workload, runs: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "workload_id": workload.workload_id,
        "policy": spec.policy,
        "window_iterations": spec.window,
        "variants": runs,
        "hypotheses": {
            "H1_compute_saturation": {
                "counters": ["forward_step_duration", "step_tokens"],
                "evaluated": False,
                "why": "the unit cost model does not model step duration; max_step_tokens is"
                " reported per variant as its input",
            },
            "H2_memory_exhaustion_recompute_thrashing": {
                "counters": list(DISTINGUISHING_COUNTERS),
                "signature": {label: r["h2_signature"] for label, r in runs.items()},
            },
        },
        "distinguishing_counters": list(DISTINGUISHING_COUNTERS),
        "evidence_class": EvidenceClass.SYNTHETIC.value,
        "scope": "synthetic replay of a hypothetical teaching incident; not a measurement",
    }


def _ratio_chart(runs: Mapping[str, Any]) -> dict[str, Any]:
    series = {
        f"{label}: recomputed-token ratio": [
            [w["end_iteration"], w["recomputed_token_ratio"]["value"]] for w in r["windows"]
        ]
        for label, r in runs.items()
    }
    return {
        "type": "lines",
        "title": "Lesson incident: cumulative recomputed-token ratio by iteration",
        "x_label": "iteration",
        "y_label": "recomputed rows / scheduled rows",
        "series": series,
    }


def run_incident_replay(spec: IncidentSpec, ctx: GateContext) -> list[CheckResult]:
    """Check kind `incident_replay`: the same burst under budget variants; H2's counters."""
    path = ctx.resolve(spec.workload, field="workload")
    workload = load_workload(path, display=str(path))
    runs, findings = _replay_variants(spec, ctx, workload)
    findings += _expectations(spec, runs, ctx)
    metrics = _incident_metrics(spec, workload, runs)
    findings += core.check_asserts(
        metrics, spec.asserts, file=ctx.manifest, pointer=f"{ctx.pointer}/assert"
    )
    if spec.expected is not None:
        findings += ctx.expect_json(spec.expected, metrics, spec.id)
    return [
        CheckResult(
            check=CHECK_NAME,
            subject=spec.id,
            findings=tuple(findings),
            metrics=metrics,
            evidence_class=EvidenceClass.SYNTHETIC,
            reason="; ".join(
                f"{label}: {r['num_preemptions']} preemptions, recomputed-token ratio"
                f" {r['recomputed_token_ratio']['fraction']}"
                for label, r in runs.items()
            ),
            artifacts={"workload": spec.workload},
            charts=(_ratio_chart(runs),),
        )
    ]
