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

Gate kind `incident_replay` (spec fields): `workload`, optional `initial_state` (path),
`policy` (default `vllm-v1`), `variants` (list of {`label`, `budgets`, optional `preemption`
(replay preemption options, e.g. swap)}), `window`
(iterations per window, default 10), `validation` (default contract), `expect`
({label: {h2_signature: bool}}), `expected` (report file) and `assert` (path -> value).
Step duration is not modelled under the unit cost model, so H1 is reported as not evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from cbaudit.io.loader import load_document
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError
from cbaudit.sim import replay as core
from cbaudit.sim.engine import Validation
from cbaudit.sim.workload import Workload, load_workload

if TYPE_CHECKING:
    from cbaudit.checks.context import GateContext

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


def _err(ctx: GateContext, field: str, message: str) -> InputError:
    return InputError.at(
        "INCIDENT.SPEC.INVALID", message, ctx.manifest, pointer=f"{ctx.pointer}/{field}"
    )


def run_incident_replay(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Gate kind `incident_replay`: the same burst under budget variants; H2's counters."""
    check_id = str(spec.get("id", CHECK_NAME))
    if not isinstance(spec.get("workload"), str):
        raise _err(ctx, "workload", "workload must be a relative path")
    variants = spec.get("variants")
    if not isinstance(variants, list) or not variants:
        raise _err(ctx, "variants", "variants must be a non-empty list of {label, budgets}")
    window = spec.get("window", 10)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise _err(ctx, "window", "window must be an integer >= 1")
    try:
        validation = Validation(spec.get("validation", "contract"))
    except ValueError:
        raise _err(ctx, "validation", "validation must be contract, fast or off") from None
    path = ctx.resolve(spec["workload"], field="workload")
    workload = load_workload(path, display=str(path))
    initial = {}
    if "initial_state" in spec:
        ipath = ctx.resolve(spec["initial_state"], field="initial_state")
        doc = load_document(ipath, display=str(ipath))
        initial = core.parse_initial(doc.data, doc.path)
    policy = spec.get("policy", "vllm-v1")
    if not isinstance(policy, str):
        raise _err(ctx, "policy", "policy must be a policy id")
    runs: dict[str, Any] = {}
    findings: list[Finding] = []
    for i, v in enumerate(variants):
        if not isinstance(v, Mapping) or not isinstance(v.get("label"), str):
            raise _err(ctx, f"variants/{i}", "each variant needs a label")
        budgets = v.get("budgets") or {}
        if not isinstance(budgets, Mapping):
            raise _err(ctx, f"variants/{i}/budgets", "budgets must be a mapping")
        preemption = v.get("preemption") or {}
        if not isinstance(preemption, Mapping):
            raise _err(ctx, f"variants/{i}/preemption", "preemption must be a mapping")
        options = core.ReplayOptions(
            policy=policy,
            budgets=dict(budgets),
            initial=initial,
            validation=validation,
            preemption=dict(preemption),
        )
        report, codes = replay_incident(workload, options, window, source=ctx.manifest)
        runs[v["label"]] = report
        findings += [
            Finding(
                code,
                f"{v['label']}: the replay's contract check raised {code}",
                location=ctx.location(f"/variants/{i}"),
            )
            for code in codes
        ]
    expect = spec.get("expect") or {}
    if not isinstance(expect, Mapping):
        raise _err(ctx, "expect", "expect must map variant labels to {h2_signature: bool}")
    for label, want in expect.items():
        if label not in runs or not isinstance(want, Mapping):
            raise _err(ctx, f"expect/{label}", f"no variant labelled {label!r}")
        for key, value in want.items():
            got = runs[label].get(key)
            if got != value:
                findings.append(
                    Finding(
                        "INCIDENT.EXPECT.MISMATCH",
                        f"{label}: {key} is {got!r}, expected {value!r}",
                        location=ctx.location(f"/expect/{label}/{key}"),
                    )
                )
    metrics: dict[str, Any] = {
        "workload_id": workload.workload_id,
        "policy": policy,
        "window_iterations": window,
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
    asserts = spec.get("assert") or {}
    if not isinstance(asserts, Mapping):
        raise _err(ctx, "assert", "assert must map metric paths to values")
    findings += core.check_asserts(
        metrics, asserts, file=ctx.manifest, pointer=f"{ctx.pointer}/assert"
    )
    if "expected" in spec:
        findings += ctx.expect_json(spec["expected"], metrics, check_id)
    series = {
        f"{label}: recomputed-token ratio": [
            [w["end_iteration"], w["recomputed_token_ratio"]["value"]] for w in r["windows"]
        ]
        for label, r in runs.items()
    }
    chart = {
        "type": "lines",
        "title": "Lesson incident: cumulative recomputed-token ratio by iteration",
        "x_label": "iteration",
        "y_label": "recomputed rows / scheduled rows",
        "series": series,
    }
    return [
        CheckResult(
            check=CHECK_NAME,
            subject=check_id,
            findings=tuple(findings),
            metrics=metrics,
            evidence_class=EvidenceClass.SYNTHETIC,
            reason="; ".join(
                f"{label}: {r['num_preemptions']} preemptions, recomputed-token ratio"
                f" {r['recomputed_token_ratio']['fraction']}"
                for label, r in runs.items()
            ),
            artifacts={"workload": str(spec["workload"])},
            charts=(chart,),
        )
    ]
