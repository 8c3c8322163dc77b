"""Loop 7 oracle (article 0x07): SLO clocks, slack, goodput and overload.

Four parts, each checked against the numbers the fixture declares:

`clock_ledger`
    Declared per-request event records: arrival, admission/resume, output emissions, the
    deadlines derived from them, and the slack of each selection under the named cost model.
    First-token deadlines must come from the original arrival and next-token deadlines from
    the previous emission (never admission, retry, resume or selection); headroom and slack
    must reconcile; TPOT is undefined (null, never 0) for a one-output request.
`burst`
    The six-request burst replayed by the engine under each declared policy (least-slack
    accept-all and the bounded four-live cap): per-cut slack decisions, the closed outcome
    ledger, rates with units and the three attainment denominators.
`tail_probe`
    Nearest-rank tails with the article's sample gates (p50 n>=2, p95 n>=20, p99 n>=100):
    the 98 x 10 ms + 2 x 500 ms probe has mean 19.8, p95 10, p99 500.
`saturation`
    A finite window whose demand exceeds capacity (F41), replayed under a policy: 240 two-row
    requests over 1.3 s give 480 rows of demand against 260 of capacity (220 excess); the
    bounded policy rejects 118, so 100% completion-conditioned is 50.833% offered-load.

Replays run the real engine with contract validation; the online projection never carries
hidden realized lengths (only the executor reads them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from cbaudit.io import memo
from cbaudit.model import CheckResult, EvidenceClass, Finding, Location
from cbaudit.policies.base import PlanBuilder, Policy, StateView
from cbaudit.sim import slo
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.metrics import INSUFFICIENT, PERCENTILE_GATES
from cbaudit.sim.workload import workload_from_data

NAME = "slo-overload"
FIXTURE_SCHEMA = "slo-overload-fixture"
COST_MODEL_ID = "exclusive_endpoint_lower_bound_v1"
RATE_UNITS = {
    "offered_request_rate": "requests/s",
    "request_throughput": "requests/s",
    "request_goodput": "requests/s",
    "token_throughput": "tokens/s",
    "token_goodput": "tokens/s",
}
SAMPLE_GATES = {name: gate for name, _, gate in PERCENTILE_GATES}

CODES: Mapping[str, str] = {
    "SLO.CLOCK.EVENT_ORDER": "events out of order (an emission before arrival or a prior one)",
    "SLO.CLOCK.FIRST_ORIGIN": "first-token deadline not measured from the original arrival",
    "SLO.CLOCK.NEXT_ORIGIN": "next-token deadline not measured from the previous emission",
    "SLO.HEADROOM.RECONCILE": "declared headroom is not deadline - now",
    "SLO.SLACK.TARGET": "a selection's clock target (first/next) contradicts the emissions",
    "SLO.SLACK.RECONCILE": "predicted finish or slack does not follow the named cost model",
    "SLO.SLACK.MODEL_UNKNOWN": "slack is computed under an unnamed or unknown cost model",
    "SLO.TPOT.ONE_OUTPUT": "a one-output request reports a TPOT (it is undefined, not 0)",
    "SLO.TPOT.VALUE": "declared TPOT is not (last - first) / (outputs - 1)",
    "SLO.HIDDEN_TRUTH.ONLINE": "realized output length appears in the online projection",
    "SLO.PARTITION.NOT_CLOSED": "offered != valid + completed-miss + rejected + unfinished",
    "SLO.RATE.UNIT": "a rate carries the wrong unit",
    "SLO.RATE.VALUE": "a declared rate is not count / window",
    "SLO.ATTAINMENT.DENOMINATOR": "an attainment fraction uses the wrong denominator",
    "SLO.TAIL.VALUE": "a declared tail value is not the nearest-rank estimate",
    "SLO.TAIL.INSUFFICIENT_SAMPLE": "a percentile is reported below its sample gate",
    "SLO.TAIL.MEAN_ONLY": "a percentile claim is supported by a mean",
    "SLO.OVERLOAD.ARITHMETIC": "finite-window demand, capacity or excess arithmetic is wrong",
    "SLO.OVERLOAD.CLAIM": "a claim that all offered work completes although D_W > C_W",
    "SLO.EXPECT.MISMATCH": "a declared replay outcome differs from the replay",
    "SLO.REPLAY.CONTRACT": "the replay raised a contract finding",
}


class FixtureLike(Protocol):
    @property
    def data(self) -> Mapping[str, Any]: ...
    @property
    def path(self) -> str: ...
    def require_schema(self, schema: str) -> None: ...


Emit = Callable[[str, str, str], None]


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0, abs_tol=1e-6)


# ---------------------------------------------------------------------------------------------
# clock ledger


def check_clock_ledger(
    entries: Sequence[Mapping[str, Any]], tick_ms: float, emit: Emit
) -> list[dict[str, Any]]:
    """Validate declared event records; returns the recomputed deadlines per request."""
    out = []
    for i, e in enumerate(entries):
        base = f"/clock_ledger/{i}"
        rid = e["request_id"]
        arrival = float(e["arrival_ms"])
        outputs = [float(x) for x in e["outputs_ms"]]
        limits = e["slo"]
        for key in ("admitted_ms", "resumed_ms"):
            if key in e and float(e[key]) < arrival:
                emit(
                    "SLO.CLOCK.EVENT_ORDER",
                    f"{rid}: {key} {e[key]} precedes arrival {arrival:g}",
                    f"{base}/{key}",
                )
        prev = arrival
        for j, y in enumerate(outputs):
            if y <= prev if j else y < prev:
                emit(
                    "SLO.CLOCK.EVENT_ORDER",
                    f"{rid}: output {j} at {y:g} ms does not follow {prev:g} ms",
                    f"{base}/outputs_ms/{j}",
                )
            prev = y
        first = slo.first_token_deadline(arrival, float(limits["ttft_ms"]))
        declared = e["deadlines_ms"]
        if not _close(float(declared["first"]), first):
            origin = float(declared["first"]) - float(limits["ttft_ms"])
            why = next(
                (
                    f" (it restarts at {k[:-3]})"
                    for k in ("admitted_ms", "resumed_ms")
                    if k in e and _close(origin, float(e[k]))
                ),
                "",
            )
            emit(
                "SLO.CLOCK.FIRST_ORIGIN",
                f"{rid}: first-token deadline {declared['first']} is not arrival {arrival:g} +"
                f" TTFT {limits['ttft_ms']} = {first:g}{why}",
                f"{base}/deadlines_ms/first",
            )
        nexts = (
            [slo.next_token_deadline(y, float(limits["tbt_ms"])) for y in outputs[:-1]]
            if "tbt_ms" in limits
            else []
        )
        declared_next = [float(x) for x in declared.get("next", [])]
        if len(declared_next) != len(nexts) or not all(
            _close(a, b) for a, b in zip(declared_next, nexts, strict=False)
        ):
            emit(
                "SLO.CLOCK.NEXT_ORIGIN",
                f"{rid}: next-token deadlines {declared_next} are not previous emission + TBT"
                f" {[round(x, 6) for x in nexts]}",
                f"{base}/deadlines_ms/next",
            )
        for j, s in enumerate(e.get("selections", [])):
            _check_selection(
                rid, s, arrival, outputs, limits, tick_ms, f"{base}/selections/{j}", emit
            )
        tpot = (outputs[-1] - outputs[0]) / (len(outputs) - 1) if len(outputs) >= 2 else None
        if "tpot_ms" in e:
            declared_tpot = e["tpot_ms"]
            if tpot is None and declared_tpot is not None:
                emit(
                    "SLO.TPOT.ONE_OUTPUT",
                    f"{rid}: one output has no inter-output interval; TPOT {declared_tpot!r}"
                    " manufactures evidence (it is undefined)",
                    f"{base}/tpot_ms",
                )
            elif tpot is not None and (declared_tpot is None or not _close(declared_tpot, tpot)):
                emit(
                    "SLO.TPOT.VALUE",
                    f"{rid}: TPOT {declared_tpot!r} is not (last - first) / (n - 1) = {tpot:g}",
                    f"{base}/tpot_ms",
                )
        out.append(
            {
                "request_id": rid,
                "first_deadline_ms": first,
                "next_deadlines_ms": nexts,
                "tpot_ms": tpot,
            }
        )
    return out


def _check_selection(
    rid: str,
    s: Mapping[str, Any],
    arrival: float,
    outputs: Sequence[float],
    limits: Mapping[str, Any],
    tick_ms: float,
    ptr: str,
    emit: Emit,
) -> None:
    now = float(s["now_ms"])
    before = [y for y in outputs if y <= now]
    target = "next" if before else "first"
    if s["target"] != target:
        emit(
            "SLO.SLACK.TARGET",
            f"{rid}: at {now:g} ms {len(before)} outputs exist, so the clock is {target!r},"
            f" not {s['target']!r}",
            f"{ptr}/target",
        )
    if target == "first":
        deadline = slo.first_token_deadline(arrival, float(limits["ttft_ms"]))
        predicted = slo.lower_bound_finish(
            now, tick_ms, first=True, prefill_units=int(s.get("prefill_units", 1))
        )
    else:
        deadline = slo.next_token_deadline(before[-1], float(limits["tbt_ms"]))
        predicted = slo.lower_bound_finish(now, tick_ms, first=False, prefill_units=0)
    if not _close(float(s["headroom_ms"]), slo.headroom(deadline, now)):
        emit(
            "SLO.HEADROOM.RECONCILE",
            f"{rid}: headroom {s['headroom_ms']} at {now:g} ms is not deadline {deadline:g} -"
            f" now = {deadline - now:g}",
            f"{ptr}/headroom_ms",
        )
    if not _close(float(s["predicted_finish_ms"]), predicted):
        emit(
            "SLO.SLACK.RECONCILE",
            f"{rid}: predicted finish {s['predicted_finish_ms']} is not {predicted:g} under"
            f" {COST_MODEL_ID}",
            f"{ptr}/predicted_finish_ms",
        )
    if not _close(float(s["slack_ms"]), slo.predicted_slack(deadline, predicted)):
        emit(
            "SLO.SLACK.RECONCILE",
            f"{rid}: slack {s['slack_ms']} is not deadline - predicted finish ="
            f" {deadline - predicted:g}",
            f"{ptr}/slack_ms",
        )


# ---------------------------------------------------------------------------------------------
# replays


class _Recorder:
    """Wraps a slack-ordered policy and logs each cut's candidates and selections.

    The log is kept as each cut's clock, candidates and decisions, and written out as JSON
    objects (`cuts`) only where a report shows it: most replays need only the count of
    selections made with negative slack (`negative_selections`)."""

    def __init__(self, inner: Any, tick_ms: float) -> None:
        self.inner = inner
        self.policy_id = inner.policy_id
        self.policy_version = inner.policy_version
        self.tie_break_key = inner.tie_break_key
        self.phase_order = inner.phase_order
        self.tick_ms = tick_ms
        # (now, candidates, selected idx, rejected idx) per cut; a candidate's values are
        # fixed when it is made, and its request's id never changes
        self._log: list[tuple[float, list[Any], set[int], set[int]]] = []

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        cands = self.inner.candidates(view)
        self.inner.choose_from(view, plan, cands)  # (`choose` would compute them again)
        chosen = {it.req.idx for it in plan.items}
        rejected = {r.idx for r in plan.rejected}
        self._log.append((view.now, cands, chosen, rejected))

    def negative_selections(self) -> int:
        """Selections whose slack, in ms as the log writes it, is negative."""
        ms = self.tick_ms
        return sum(
            1
            for _, cands, chosen, _ in self._log
            for c in cands
            if c.req.idx in chosen and slo._num(c.slack * ms) < 0
        )

    @property
    def cuts(self) -> list[dict[str, Any]]:
        """The log as JSON objects, one per cut."""
        ms = self.tick_ms
        return [
            {
                "now_ms": slo._num(now * ms),
                "candidates": [
                    {
                        "request_id": c.req.rid,
                        "target": c.target,
                        "deadline_ms": slo._num(c.deadline * ms),
                        "headroom_ms": slo._num(c.headroom * ms),
                        "predicted_finish_ms": slo._num(c.predicted_finish * ms),
                        "slack_ms": slo._num(c.slack * ms),
                        "decision": "selected"
                        if c.req.idx in chosen
                        else ("rejected" if c.req.idx in rejected else "waits"),
                    }
                    for c in cands
                ],
            }
            for now, cands, chosen, rejected in self._log
        ]


def _manifest(
    workload_id: str,
    count: int,
    interval_ms: float,
    section: Mapping[str, Any],
    tick_ms: float,
) -> dict[str, Any]:
    req = section["request"]
    ids = [f"{section.get('id_prefix', 'r')}{i + 1:03d}" for i in range(count)]
    realized = int(section["fixture_only_hidden_truth"]["realized_output_tokens"])
    return {
        "schema_version": 1,
        "workload_id": workload_id,
        "clock": {"unit": "tick", "tick_ms": tick_ms},
        "policy": {"policy_id": "declared-by-replay", "policy_version": "1"},
        "budgets": {
            "token_budget": int(section["rows_per_tick"]),
            "sequence_budget": int(section["rows_per_tick"]),
        },
        "requests": [
            {
                "request_id": rid,
                "arrival": round(i * interval_ms / tick_ms, 9),
                "prompt_tokens": int(req["prompt_tokens"]),
                "max_output_tokens": int(req["max_output_tokens"]),
                "slo": dict(req["slo"]),
            }
            for i, rid in enumerate(ids)
        ],
        "fixture_only_hidden_truth": {"realized_output_tokens": dict.fromkeys(ids, realized)},
    }


#: Replays kept while a `cbaudit.io.memo` scope is active (a gate worker: the mutants of a
#: Loop 7 fixture re-run the sections they did not change), sized by the candidates their logs
#: hold.
_REPLAYS = "slo.replay_section"
REPLAY_LIMIT = 500_000


def replay_section(
    section: Mapping[str, Any], policy_spec: Mapping[str, Any], tick_ms: float, name: str
) -> tuple[dict[str, Any], list[str], _Recorder]:
    """Replay one section under one policy; returns its report, contract codes and the log.

    A replay is a function of its arguments alone (the same workload, policy, clock and
    engine), so inside a reuse scope (`cbaudit.io.memo`) one whose arguments are the same JSON
    as an earlier one's is not run again: the caller gets a fresh copy of that report, its codes
    and its log (read only)."""
    key = memo.json_key(section, policy_spec, tick_ms, name) if memo.active() else None
    if key is not None:
        held = memo.recall(_REPLAYS, key)
        if held is not None:
            report, codes, recorder = held
            return memo.fresh(report), list(codes), recorder
    report, codes, recorder = _replay_section(section, policy_spec, tick_ms, name)
    if key is not None:
        size = 1 + sum(len(cands) for _, cands, _, _ in recorder._log)
        kept = (memo.fresh(report), tuple(codes), recorder)
        memo.keep(_REPLAYS, key, kept, size=size, limit=REPLAY_LIMIT)
    return report, codes, recorder


def _replay_section(
    section: Mapping[str, Any], policy_spec: Mapping[str, Any], tick_ms: float, name: str
) -> tuple[dict[str, Any], list[str], _Recorder]:
    from cbaudit.sim.replay import make_policy

    count = int(section["requests"])
    data = _manifest(name, count, float(section.get("interval_ms", 0)), section, tick_ms)
    workload = workload_from_data(data, f"<{name}>")
    policy = make_policy(str(policy_spec["policy"]), dict(policy_spec.get("options", {})))
    recorder = _Recorder(policy, tick_ms)
    horizon = math.ceil(float(section["window_ms"]) / tick_ms)
    from cbaudit.sim.cost_unit import from_options

    rec_policy: Policy = recorder
    engine = Engine(
        workload, rec_policy, from_options({}), horizon=horizon, validation=Validation.FAST
    )
    run = engine.run()
    report = slo.slo_report(run, window_ms=float(section["window_ms"]), per_request=count <= 12)
    report["negative_slack_selections"] = recorder.negative_selections()
    report["iterations"] = run.iterations
    report["policy"] = {
        "policy_id": policy.policy_id,
        "options": dict(policy_spec.get("options", {})),
    }
    return report, [f.code for f in run.findings], recorder


def _get(node: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


def _compare(expect: Any, actual: Any, ptr: str, emit: Emit) -> None:
    if isinstance(expect, Mapping):
        for k, v in expect.items():
            if not isinstance(actual, Mapping) or k not in actual:
                emit(
                    "SLO.EXPECT.MISMATCH",
                    f"{ptr}/{k}: the oracle computes no such value",
                    f"{ptr}/{k}",
                )
                continue
            _compare(v, actual[k], f"{ptr}/{k}", emit)
        return
    if (
        isinstance(expect, int | float)
        and isinstance(actual, int | float)
        and not isinstance(expect, bool)
    ):
        if not _close(float(expect), float(actual)):
            emit("SLO.EXPECT.MISMATCH", f"declared {expect!r}, computed {actual!r}", ptr)
        return
    if expect != actual:
        emit("SLO.EXPECT.MISMATCH", f"declared {expect!r}, computed {actual!r}", ptr)


def check_declared_accounting(
    expect: Mapping[str, Any], window_ms: float, ptr: str, emit: Emit
) -> None:
    """Internal consistency of a declared ledger: partition, units, rates, denominators."""
    counts = expect.get("counts")
    if isinstance(counts, Mapping):
        parts = ("slo_valid", "completed_miss", "rejected", "unfinished")
        if "offered" in counts and all(p in counts for p in parts):
            total = sum(int(counts[p]) for p in parts)
            if int(counts["offered"]) != total:
                emit(
                    "SLO.PARTITION.NOT_CLOSED",
                    f"offered {counts['offered']} != valid + miss + rejected + unfinished"
                    f" = {total}",
                    f"{ptr}/counts/offered",
                )
    rates = expect.get("rates")
    if isinstance(rates, Mapping):
        for name, r in rates.items():
            if not isinstance(r, Mapping):
                continue
            if "unit" in r and name in RATE_UNITS and r["unit"] != RATE_UNITS[name]:
                emit(
                    "SLO.RATE.UNIT",
                    f"{name} is measured in {RATE_UNITS[name]}, not {r['unit']!r}",
                    f"{ptr}/rates/{name}/unit",
                )
            numerator = _rate_numerator(name, expect)
            if "value" in r and numerator is not None:
                want = numerator / (window_ms / 1000.0)
                if not math.isclose(float(r["value"]), want, rel_tol=1e-6, abs_tol=1e-6):
                    emit(
                        "SLO.RATE.VALUE",
                        f"{name} {r['value']} is not {numerator} / {window_ms / 1000:g} s ="
                        f" {want:.6f}",
                        f"{ptr}/rates/{name}/value",
                    )
    att = expect.get("attainment")
    if isinstance(att, Mapping) and isinstance(counts, Mapping):
        dens = {
            "offered_load": counts.get("offered"),
            "admitted": counts.get("admitted"),
            "completion_conditioned": counts.get("completed"),
        }
        for name, a in att.items():
            if not isinstance(a, Mapping) or "fraction" not in a or dens.get(name) is None:
                continue
            _, _, den = str(a["fraction"]).partition("/")
            if den != str(dens[name]):
                emit(
                    "SLO.ATTAINMENT.DENOMINATOR",
                    f"{name} attainment {a['fraction']} must divide by {dens[name]}",
                    f"{ptr}/attainment/{name}/fraction",
                )


def _rate_numerator(name: str, expect: Mapping[str, Any]) -> int | None:
    counts = expect.get("counts", {})
    tokens = expect.get("tokens", {})
    source = {
        "offered_request_rate": counts.get("offered"),
        "request_throughput": counts.get("completed"),
        "request_goodput": counts.get("slo_valid"),
        "token_throughput": tokens.get("emitted"),
        "token_goodput": tokens.get("slo_valid_completed"),
    }.get(name)
    return None if source is None else int(source)


# ---------------------------------------------------------------------------------------------
# tails and overload


def check_tail(section: Mapping[str, Any], emit: Emit) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, probe in enumerate(section["probes"]):
        ptr = f"/tail_probe/probes/{i}"
        samples = [float(s["value_ms"]) for s in probe["samples"] for _ in range(int(s["count"]))]
        gates = {k: float(v) for k, v in probe.get("gates_ms", {}).items()}
        result = slo.tail_gate(samples, gates)
        dist = result["distribution"]
        for name, value in probe.get("declared_ms", {}).items():
            p = f"{ptr}/declared_ms/{name}"
            if name in SAMPLE_GATES and value != INSUFFICIENT and len(samples) < SAMPLE_GATES[name]:
                emit(
                    "SLO.TAIL.INSUFFICIENT_SAMPLE",
                    f"{name} needs n >= {SAMPLE_GATES[name]}; this sample has n = {len(samples)}",
                    p,
                )
                continue
            got = dist.get(name)
            same = (
                value == got
                if isinstance(value, str) or isinstance(got, str) or got is None
                else _close(float(value), float(got))
            )
            if not same:
                emit("SLO.TAIL.VALUE", f"{name}: declared {value!r}, nearest rank gives {got!r}", p)
        for j, claim in enumerate(probe.get("claims", [])):
            if claim["metric"] != claim["evidence"]:
                emit(
                    "SLO.TAIL.MEAN_ONLY" if claim["evidence"] == "mean" else "SLO.TAIL.VALUE",
                    f"a {claim['metric']} claim cannot rest on the {claim['evidence']}",
                    f"{ptr}/claims/{j}/evidence",
                )
        for name, verdict in probe.get("expect_gates", {}).items():
            got = result["gates"].get(name, {}).get("passes")
            if got != verdict:
                emit(
                    "SLO.EXPECT.MISMATCH",
                    f"gate {name}: declared passes={verdict!r}, computed {got!r}",
                    f"{ptr}/expect_gates/{name}",
                )
        out[str(probe["label"])] = result
    return out


def check_overload(section: Mapping[str, Any], tick_ms: float, emit: Emit) -> dict[str, Any]:
    req = section["request"]
    realized = int(section["fixture_only_hidden_truth"]["realized_output_tokens"])
    rows_per_request = int(req["prompt_tokens"]) + realized - 1  # offline only
    demand = int(section["requests"]) * rows_per_request
    ticks = math.floor(float(section["window_ms"]) / tick_ms)
    capacity = ticks * int(section["rows_per_tick"])
    result = slo.overload(demand, capacity)
    result["rows_per_request"] = rows_per_request
    result["window_ticks"] = ticks
    result["note"] = "demand uses realized lengths offline only; policies never see them"
    declared = section.get("overload", {})
    for key in ("demand_rows", "capacity_rows", "unavoidable_excess_rows"):
        if key in declared and int(declared[key]) != result[key]:
            emit(
                "SLO.OVERLOAD.ARITHMETIC",
                f"{key}: declared {declared[key]}, the window gives {result[key]}",
                f"/saturation/overload/{key}",
            )
    if declared.get("all_offered_work_can_complete") is True and demand > capacity:
        emit(
            "SLO.OVERLOAD.CLAIM",
            f"demand {demand} rows exceeds capacity {capacity}: not all offered work can"
            " complete inside the window",
            "/saturation/overload/all_offered_work_can_complete",
        )
    return result


# ---------------------------------------------------------------------------------------------
# the oracle


def _hidden_leaks(data: Mapping[str, Any], emit: Emit) -> None:
    for section in ("burst", "saturation"):
        req = data.get(section, {}).get("request", {})
        if "realized_output_tokens" in req:
            emit(
                "SLO.HIDDEN_TRUTH.ONLINE",
                f"{section}: the online request declaration carries realized_output_tokens;"
                " only the executor may read it",
                f"/{section}/request/realized_output_tokens",
            )


def run(fixture: FixtureLike) -> CheckResult:
    """The Loop 7 oracle over one fixture (see the module docstring)."""
    fixture.require_schema(FIXTURE_SCHEMA)
    data = fixture.data
    path = fixture.path
    findings: list[Finding] = []

    def emit(code: str, message: str, pointer: str) -> None:
        findings.append(Finding(code, message, location=Location(file=path, pointer=pointer)))

    model = data["cost_model"]
    tick_ms = float(model["tick_ms"])
    if model.get("model_id") != COST_MODEL_ID:
        emit(
            "SLO.SLACK.MODEL_UNKNOWN",
            f"slack needs a named cost model; {model.get('model_id')!r} is not {COST_MODEL_ID!r}",
            "/cost_model/model_id",
        )
    _hidden_leaks(data, emit)
    report: dict[str, Any] = {
        "cost_model": {
            "model_id": COST_MODEL_ID,
            "tick_ms": slo._num(tick_ms),
            "note": "a synthetic unmeasured lower bound, not a calibrated latency predictor",
        }
    }
    charts: list[Mapping[str, Any]] = []
    if "clock_ledger" in data:
        report["clock_ledger"] = check_clock_ledger(data["clock_ledger"], tick_ms, emit)
    if "burst" in data:
        report["burst"] = _run_replays(data["burst"], "burst", tick_ms, emit, charts)
    if "tail_probe" in data:
        report["tail_probe"] = check_tail(data["tail_probe"], emit)
    if "saturation" in data:
        sat = data["saturation"]
        report["saturation"] = {
            "overload": check_overload(sat, tick_ms, emit),
            **_run_replays(sat, "saturation", tick_ms, emit, charts),
        }
    return CheckResult(
        check=NAME,
        subject=path,
        findings=tuple(findings),
        metrics=report,
        evidence_class=EvidenceClass.SYNTHETIC,
        reason=_summary(report),
        charts=tuple(charts),
    )


def _run_replays(
    section: Mapping[str, Any],
    name: str,
    tick_ms: float,
    emit: Emit,
    charts: list[Mapping[str, Any]],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    window = float(section["window_ms"])
    for i, spec in enumerate(section["policies"]):
        label = str(spec["label"])
        report, codes, recorder = replay_section(section, spec, tick_ms, f"loop7-{name}")
        for code in sorted(set(codes)):
            emit(
                "SLO.REPLAY.CONTRACT", f"{label}: the replay raised {code}", f"/{name}/policies/{i}"
            )
        if name == "burst":
            report["decisions"] = recorder.cuts
        out[label] = report
        expect = section.get("expect", {}).get(label)
        if expect is not None:
            ptr = f"/{name}/expect/{label}"
            check_declared_accounting(expect, window, ptr, emit)
            _compare(expect, report, ptr, emit)
    labels = list(out)
    if labels:
        counts = [out[lbl]["counts"] for lbl in labels]
        charts.append(
            {
                "type": "bars",
                "title": f"Loop 7 {name}: offered, admitted, completed and SLO-valid requests",
                "categories": labels,
                "series": {
                    key: [c[key] for c in counts]
                    for key in ("offered", "admitted", "completed", "slo_valid", "rejected")
                },
                "y_label": "requests",
            }
        )
        if name == "burst":
            charts.append(
                {
                    "type": "histogram",
                    "title": "Loop 7 burst: TTFT by policy (ms)",
                    "series": {
                        lbl: [
                            r["ttft_ms"] for r in out[lbl]["requests"] if r["ttft_ms"] is not None
                        ]
                        for lbl in labels
                    },
                    "x_label": "TTFT (ms)",
                }
            )
            charts.append(
                {
                    "type": "histogram",
                    "title": "Loop 7 burst: largest TBT gap per request by policy (ms)",
                    "series": {
                        lbl: [
                            r["tbt_max_ms"]
                            for r in out[lbl]["requests"]
                            if r["tbt_max_ms"] is not None
                        ]
                        for lbl in labels
                    },
                    "x_label": "TBT (ms)",
                }
            )
    if section.get("same_request_goodput") is not None and len(labels) >= 2:
        values = {out[lbl]["rates"]["request_goodput"]["value"] for lbl in labels}
        same = len(values) == 1
        out["same_request_goodput"] = same
        if same != section["same_request_goodput"]:
            emit(
                "SLO.EXPECT.MISMATCH",
                f"declared same_request_goodput={section['same_request_goodput']}, the replays"
                f" give {sorted(v for v in values if v is not None)}",
                f"/{name}/same_request_goodput",
            )
    return out


def _summary(report: Mapping[str, Any]) -> str:
    parts = []
    for section in ("burst", "saturation"):
        for label, r in report.get(section, {}).items():
            if isinstance(r, Mapping) and "counts" in r:
                c = r["counts"]
                parts.append(
                    f"{section}/{label}: {c['slo_valid']}/{c['offered']} valid,"
                    f" {c['rejected']} rejected"
                )
    return "; ".join(parts)
