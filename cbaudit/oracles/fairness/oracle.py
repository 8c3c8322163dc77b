"""Loop 8 oracle (article 0x09A): fairness needs a client, an interval and a cost function.

Deterministic tick-level probes over a `fairness-fixture`, each compared with what the fixture
declares:

`client_flood`   request FIFO vs least-service (and VTC) over two clients' events: the
                 maximum service gap while both stay backlogged, final service, and SLO
                 outcomes per identity beside it (fairness is reported with the SLO clocks).
`vtc_lift`       Algorithm 2's counter lift that prevents idle credit.
`vtc_bound`      U = max(w_p L_input, w_q M) and the 2U bound, with the theorem's assumptions
                 stated; the bound is claimed only when every assumption holds.
`completion_reconciled`   the teaching adaptation's provisional/authoritative counters.
`priority`       static priority starves an old request; aging with q_age lets it win.
`prefix_quota`   reuse-greedy vs a 2:1 hot:cold quota (a teaching quota, not Preble).
`mlfq`           FastServe-style skip-join MLFQ with and without promotion (job liveness, no
                 client bound).

Time is synthetic ticks: at tick t the requests that arrived by t are eligible, the policy
selects up to `slots` of them, and they complete at the end of the tick (cut t+1). Service is
published only from those completions. The report is synthetic contract evidence: it measures
no latency, reproduces no FastServe performance, VTC theorem or Preble algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cbaudit.io.schemas import validate
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError
from cbaudit.oracles.fairness.accounting import (
    VTC_ASSUMPTIONS,
    ServiceSeries,
    aged_priority,
    backlogged_gap,
    completion_reconciled,
    number_json,
    starved,
    vtc_bound,
    vtc_lift,
)
from cbaudit.oracles.fixtures import LoadedFixture

NAME = "fairness-starvation"
FIXTURE_SCHEMA = "fairness-fixture"
SCOPE_NOTE = (
    "synthetic contract evidence: no latency measurement, no FastServe performance, not VTC's"
    " full running-batch algorithm or theorem, not Preble"
)

CODES: Mapping[str, str] = {
    "FAIR.ACCOUNTING.PUBLICATION": "service is published from an event other than completion",
    "FAIR.IDENTITY.MISMATCH": "a client-fairness claim is made over another protected identity",
    "FAIR.FLOOD.GAP": "a declared backlogged service gap differs from the replay",
    "FAIR.FLOOD.SERVICE": "declared final or per-tick service differs from the replay",
    "FAIR.SLO.BY_IDENTITY": "declared SLO outcomes per identity differ from the replay",
    "FAIR.STARVATION.DECLARED": "the declared starved identities differ from the replay",
    "FAIR.VTC.LIFT": "the declared VTC counter lift differs from max(c_i, min active c_j)",
    "FAIR.VTC.BOUND": "the declared U or 2U differs from max(w_p L_input, w_q M)",
    "FAIR.VTC.ASSUMPTION": "the 2U bound is claimed while a theorem assumption is missing",
    "FAIR.RECONCILED.TRACE": "the completion-reconciled counter trace differs",
    "FAIR.PRIORITY.TRACE": "the static/aging priority outcome differs",
    "FAIR.QUOTA.COUNTS": "the reuse-greedy / quota completions differ",
    "FAIR.MLFQ.TRACE": "the MLFQ skip-join/promotion outcome differs",
    "FAIR.CLAIM.MLFQ_CLIENT_BOUND": "FastServe's MLFQ is presented with a client service bound",
    "FAIR.CLAIM.ADAPTATION_THEOREM": "the completion adaptation is presented as theorem-preserving",
    "FAIR.CLAIM.PREBLE": "the teaching cache quota is presented as exact Preble",
    "FAIR.PROBE.MISSING_CLASS": "a pressure probe does not name every protected class",
    "FAIR.PROBE.NO_PRESSURE": "a starvation probe applies no pressure to the protected class",
    "FAIR.CLAIM.INFLATED": "synthetic output is presented as a production scheduler result",
}


class _Sink:
    def __init__(self, fixture: LoadedFixture) -> None:
        self.fixture = fixture
        self.findings: list[Finding] = []

    def add(self, code: str, pointer: str, message: str) -> None:
        if code not in CODES:  # a programming error, caught by the tests
            raise KeyError(code)
        self.findings.append(Finding(code, message, location=self.fixture.locate(pointer)))

    def expect(self, code: str, pointer: str, what: str, declared: Any, derived: Any) -> None:
        if declared != derived:
            self.add(code, pointer, f"{what}: declared {declared!r}, the replay gives {derived!r}")


# --------------------------------------------------------------------------- client flood


@dataclass(frozen=True)
class Event:
    event_id: str
    client: str
    order: int
    cost: int


@dataclass
class FloodRun:
    order: list[str]
    series: ServiceSeries
    completion_tick: dict[str, int]  # event id -> cut at which it completed


def _flood_events(section: Mapping[str, Any], w_p: int, w_q: int) -> list[Event]:
    weight = w_p if section["event_phase"] == "input" else w_q
    events: list[Event] = []
    for client, count in section["clients"].items():
        for k in range(count):
            events.append(
                Event(f"{client}{k}", client, len(events), weight * section["event_rows"])
            )
    return events


def run_flood(events: Sequence[Event], clients: Sequence[str], policy: str, slots: int) -> FloodRun:
    """Serve `events` (all arriving at tick 0) under `fifo`, `least-service` or `vtc`."""
    pending = list(events)
    series = ServiceSeries(tuple(clients))
    counters = dict.fromkeys(clients, 0)  # vtc: charged on selection
    rank = {c: i for i, c in enumerate(clients)}
    order: list[str] = []
    done_at: dict[str, int] = {}
    t = 0
    while pending:
        eligible = {e.client for e in pending}
        chosen: list[Event] = []
        for _ in range(slots):
            left = [e for e in pending if e not in chosen]
            if not left:
                break
            if policy == "fifo":
                pick = min(left, key=lambda e: e.order)
            else:
                active = {e.client for e in left}
                if policy == "vtc":
                    key: dict[str, int] = counters
                else:  # least completed service; this tick's selections count as planned only
                    key = {c: int(series.cuts[-1][c]) for c in clients}
                client = min(active, key=lambda c: (key[c], rank[c]))
                pick = min((e for e in left if e.client == client), key=lambda e: e.order)
                if policy == "vtc":
                    counters[client] += pick.cost
            chosen.append(pick)
        service: dict[str, int] = {}
        completed: dict[str, int] = {}
        for e in chosen:
            pending.remove(e)
            order.append(e.event_id)
            done_at[e.event_id] = t + 1
            service[e.client] = service.get(e.client, 0) + e.cost
            completed[e.client] = completed.get(e.client, 0) + 1
        series.tick(eligible, service, completed)
        t += 1
    return FloodRun(order, series, done_at)


def _longest_zero_run(series: ServiceSeries, identity: str) -> int:
    best = run = 0
    for eligible, done in zip(series.backlogged, series.completed, strict=True):
        if identity in eligible and not done.get(identity):
            run += 1
            best = max(best, run)
        else:
            run = 0
    return best


def _client_flood(
    section: Mapping[str, Any], w_p: int, w_q: int, sink: _Sink, charts: list[dict[str, Any]]
) -> dict[str, Any]:
    clients = list(section["clients"])
    events = _flood_events(section, w_p, w_q)
    deadline = section["deadline_ticks"]
    out: dict[str, Any] = {"events": len(events), "deadline_ticks": deadline}
    f, g = clients[0], clients[1]
    curves: dict[str, list[list[Any]]] = {}
    for policy, declared in section["policies"].items():
        ptr = f"/client_flood/policies/{policy}"
        run = run_flood(events, clients, policy, section.get("slots", 1))
        gap, window = backlogged_gap(run.series, f, g)
        slo: dict[str, dict[str, int]] = {}
        for c in clients:
            mine = [e for e in events if e.client == c]
            on_time = sum(1 for e in mine if run.completion_tick[e.event_id] <= deadline)
            slo[c] = {
                "slo_valid": on_time,
                "completed_miss": len(mine) - on_time,
                "rejected": 0,
                "unfinished": 0,
            }
        result = {
            "order": run.order,
            "final_service": {c: number_json(v) for c, v in run.series.final.items()},
            "completed_events": {c: sum(1 for e in events if e.client == c) for c in clients},
            "max_backlogged_gap": number_json(gap),
            "co_backlogged_cuts": list(window) if window else None,
            "longest_eligible_wait_ticks": {c: _longest_zero_run(run.series, c) for c in clients},
            "starved_over_horizon": [c for c in clients if starved(run.series, c)],
            "slo_by_identity": slo,
            "slo_valid_total": sum(s["slo_valid"] for s in slo.values()),
            "service_curve": {c: run.series.curve(c) for c in clients},
        }
        out[policy] = result
        for c in clients:
            curves[f"{c} ({policy})"] = run.series.curve(c)
        sink.expect(
            "FAIR.FLOOD.GAP",
            f"{ptr}/max_backlogged_gap",
            f"{policy} gap",
            declared.get("max_backlogged_gap"),
            result["max_backlogged_gap"],
        )
        sink.expect(
            "FAIR.FLOOD.SERVICE",
            f"{ptr}/final_service",
            f"{policy} final service",
            declared.get("final_service"),
            result["final_service"],
        )
        sink.expect(
            "FAIR.SLO.BY_IDENTITY",
            f"{ptr}/slo_valid",
            f"{policy} on-time completions by client",
            declared.get("slo_valid"),
            {c: slo[c]["slo_valid"] for c in clients},
        )
        sink.expect(
            "FAIR.STARVATION.DECLARED",
            f"{ptr}/starved",
            f"{policy} starved clients",
            declared.get("starved", []),
            result["starved_over_horizon"],
        )
    charts.append(
        {
            "type": "lines",
            "title": "Client flood: cumulative completed weighted service per client",
            "x_label": "tick (cut)",
            "y_label": "weighted service W (w_p=1, w_q=2)",
            "series": curves,
        }
    )
    return out


# --------------------------------------------------------------------------- VTC


def _vtc_lift(section: Mapping[str, Any], sink: _Sink) -> dict[str, Any]:
    counters = section["counters"]
    lifted = vtc_lift(counters, section["entering"], section["active"], section.get("last_counter"))
    idle_credit = lifted - counters[section["entering"]]
    sink.expect("FAIR.VTC.LIFT", "/vtc_lift/expect", "lifted counter", section["expect"], lifted)
    return {
        "counters_before": dict(counters),
        "entering": section["entering"],
        "active": list(section["active"]),
        "lifted_counter": number_json(lifted),
        "idle_credit_prevented": number_json(idle_credit),
    }


def _vtc_bound(section: Mapping[str, Any], flood: Mapping[str, Any], sink: _Sink) -> dict[str, Any]:
    b = vtc_bound(section["w_p"], section["w_q"], section["L_input"], section["M"])
    want = section["expect"]
    sink.expect("FAIR.VTC.BOUND", "/vtc_bound/expect/U", "U", want.get("U"), b.u)
    sink.expect("FAIR.VTC.BOUND", "/vtc_bound/expect/two_U", "2U", want.get("two_U"), b.two_u)
    assumptions = section.get("assumptions", {})
    failing = [name for name in VTC_ASSUMPTIONS if assumptions.get(name) is not True]
    if section.get("claims_theorem_bound") and failing:
        sink.add(
            "FAIR.VTC.ASSUMPTION",
            "/vtc_bound/assumptions",
            f"the 2U bound is claimed but {failing} do not hold or are not stated; without them"
            " the proof does not justify 2U",
        )
    observed = {
        policy: run["max_backlogged_gap"]
        for policy, run in flood.items()
        if isinstance(run, Mapping) and policy == "vtc"
    }
    return {
        "U": number_json(b.u),
        "two_U": number_json(b.two_u),
        "arithmetic": f"U = max({section['w_p']}*{section['L_input']}, {section['w_q']}*"
        f"{section['M']}) = {b.u}",
        "assumptions": {
            name: {"required": text, "holds": assumptions.get(name) is True}
            for name, text in VTC_ASSUMPTIONS.items()
        },
        "theorem_applies": not failing,
        "when_it_does_not_hold": (
            "remove any assumption (a client stops being backlogged, the lift or charging"
            " changes, the scheduler idles or preempts, or L_input / M are unbounded) and 2U is"
            " no longer justified by this proof; arithmetic alone does not reproduce the theorem"
        ),
        "observed_vtc_flood_gap": observed.get("vtc"),
        "observed_within_two_U": (
            None if "vtc" not in observed else bool(_le(observed["vtc"], b.two_u))
        ),
    }


def _le(a: Any, b: Any) -> bool:
    return bool(a <= b)


def _reconciled(section: Mapping[str, Any], sink: _Sink) -> dict[str, Any]:
    steps, c_sel, w_done = completion_reconciled(section["events"])
    trace = [
        {
            "tick": s.tick,
            "client": s.client,
            "completed": s.completed,
            "C_select": [number_json(v) for v in s.c_select],
            "W_done": [number_json(v) for v in s.w_done],
        }
        for s in steps
    ]
    declared = section.get("expect_trace")
    if declared is not None:
        got = [{k: t[k] for k in ("tick", "C_select", "W_done")} for t in trace]
        sink.expect(
            "FAIR.RECONCILED.TRACE", "/completion_reconciled/expect_trace", "trace", declared, got
        )
    if section.get("claims_theorem"):
        sink.add(
            "FAIR.CLAIM.ADAPTATION_THEOREM",
            "/completion_reconciled/claims_theorem",
            "completion_reconciled_vtc_teaching_v1 changes the charging event and proof state;"
            " VTC's theorem does not transfer to it",
        )
    return {
        "algorithm": "completion_reconciled_vtc_teaching_v1",
        "trace": trace,
        "final_C_select": {k: number_json(v) for k, v in sorted(c_sel.items())},
        "final_W_done": {k: number_json(v) for k, v in sorted(w_done.items())},
        "theorem_transfers": False,
    }


# --------------------------------------------------------------------------- liveness probes


def _serve_one_per_tick(
    horizon: int,
    arrivals: Callable[[int], list[tuple[str, str, int, int]]],
    key: Callable[[tuple[str, str, int, int], int], tuple[Any, ...]],
    identities: Sequence[str],
) -> tuple[ServiceSeries, list[str]]:
    """One slot per tick; items are (item_id, identity, base_priority, arrival)."""
    series = ServiceSeries(tuple(identities))
    pending: list[tuple[str, str, int, int]] = []
    served: list[str] = []
    for t in range(horizon):
        pending += arrivals(t)
        eligible = {p[1] for p in pending}
        if pending:
            pick = min(pending, key=lambda p: key(p, t))
            pending.remove(pick)
            served.append(pick[0])
            series.tick(eligible, {pick[1]: 1}, {pick[1]: 1})
        else:
            series.tick(eligible, {})
    return series, served


def _priority(section: Mapping[str, Any], sink: _Sink) -> dict[str, Any]:
    old, high = section["old"], section["high"]
    q_age, horizon = section["q_age"], section["horizon"]

    def arrivals(t: int) -> list[tuple[str, str, int, int]]:
        out = [(f"high-{t}", "high", high["priority"], t)]
        if t == old["arrival"]:
            out.insert(0, ("old", "old", old["priority"], t))
        return out

    out: dict[str, Any] = {"q_age": q_age, "horizon": horizon}
    keys: dict[str, Callable[[tuple[str, str, int, int], int], tuple[Any, ...]]] = {
        "static": lambda p, t: (p[2], p[3], p[0]),
        "aging": lambda p, t: (aged_priority(p[2], t, p[3], q_age), p[3], p[0]),
    }
    for name, key in keys.items():
        series, served = _serve_one_per_tick(horizon, arrivals, key, ("old", "high"))
        first = served.index("old") if "old" in served else None
        result = {
            "old_first_service_tick": first,
            "old_completed": served.count("old"),
            "high_completed": len(served) - served.count("old"),
            "starved": [i for i in ("old", "high") if starved(series, i)],
        }
        out[name] = result
        declared = section["expect"][name]
        for field in declared:
            sink.expect(
                "FAIR.PRIORITY.TRACE",
                f"/priority/expect/{name}/{field}",
                f"{name} {field}",
                declared[field],
                result.get(field),
            )
    return out


def _prefix_quota(section: Mapping[str, Any], sink: _Sink) -> dict[str, Any]:
    groups = ("hot", "cold")
    missing = [g for g in groups if g not in section.get("protected_groups", [])]
    if missing:
        sink.add(
            "FAIR.PROBE.MISSING_CLASS",
            "/prefix_quota/protected_groups",
            f"the cache-hit probe does not protect {missing}",
        )
    if section.get("label") != "teaching_quota":
        sink.add(
            "FAIR.CLAIM.PREBLE",
            "/prefix_quota/label",
            f"label {section.get('label')!r}: the 2:1 cycle is a teaching quota, not Preble's"
            " proportional priority-group sampling",
        )
    horizon = section["horizon"]
    hot_q, cold_q = section["quota"]["hot"], section["quota"]["cold"]
    out: dict[str, Any] = {"horizon": horizon, "quota_cycle": {"hot": hot_q, "cold": cold_q}}
    for name in ("greedy", "quota"):
        pending = {"hot": [], "cold": [f"cold-{k}" for k in range(section["cold_requests"])]}
        series = ServiceSeries(groups)
        counts = {"hot": 0, "cold": 0}
        for t in range(horizon):
            pending["hot"] += [f"hot-{t}-{k}" for k in range(section["hot_arrivals_per_tick"])]
            eligible = {g for g in groups if pending[g]}
            if name == "greedy":
                prefer = ["hot", "cold"]
            else:
                prefer = ["hot", "cold"] if t % (hot_q + cold_q) < hot_q else ["cold", "hot"]
            group = next((g for g in prefer if pending[g]), None)
            if group is None:
                series.tick(eligible, {})
                continue
            pending[group].pop(0)
            counts[group] += 1
            series.tick(eligible, {group: 1}, {group: 1})
        result = {**counts, "starved": [g for g in groups if starved(series, g)]}
        out[name] = result
        declared = section["expect"][name]
        for field in declared:
            sink.expect(
                "FAIR.QUOTA.COUNTS",
                f"/prefix_quota/expect/{name}/{field}",
                f"{name} {field}",
                declared[field],
                result.get(field),
            )
    return out


def _mlfq_join(quanta: Sequence[int], cost: int) -> int:
    """Skip-join: the first queue whose quantum covers the job's first cost."""
    return next((j for j, q in enumerate(quanta) if q >= cost), len(quanta) - 1)


def _mlfq_arrivals(section: Mapping[str, Any], t: int, jobs: dict[str, dict[str, int]]) -> None:
    """The long job at tick 0, and a short job every `short_arrival_every` ticks."""
    quanta, every = section["quanta"], section.get("short_arrival_every") or 0
    if t == 0:
        first = _mlfq_join(quanta, section["long_first_cost"])
        jobs["long"] = {"queue": first, "arrival": 0, "used": 0, "wait": 0, "order": 0}
        jobs["long"]["left"] = section["long_iterations"]
    if every and t % every == 0:
        short = {"queue": _mlfq_join(quanta, 1), "arrival": t, "used": 0, "wait": 0, "left": 1}
        jobs[f"short-{t}"] = {**short, "order": t + 1}


def _mlfq_trace(section: Mapping[str, Any], promote: bool) -> dict[str, Any]:
    """One MLFQ run over the horizon (with or without promotion after `alpha` waiting ticks)."""
    quanta, long_iters = section["quanta"], section["long_iterations"]
    jobs: dict[str, dict[str, int]] = {}
    series = ServiceSeries(("long", "short"))
    first_long: int | None = None
    long_done = shorts_done = 0
    for t in range(section["horizon"]):
        _mlfq_arrivals(section, t, jobs)
        if promote:
            for job in jobs.values():
                if job["wait"] >= section["alpha"]:
                    job["queue"], job["wait"], job["used"] = 0, 0, 0
        eligible = {"long" if j == "long" else "short" for j in jobs}
        if not jobs:
            series.tick(eligible, {})
            continue
        name_ = min(jobs, key=lambda j: (jobs[j]["queue"], jobs[j]["arrival"], jobs[j]["order"]))
        job = jobs[name_]
        cost = section["long_first_cost"] if name_ == "long" and job["left"] == long_iters else 1
        job["left"] -= 1
        job["used"] += cost
        for other, oj in jobs.items():
            oj["wait"] = 0 if other == name_ else oj["wait"] + 1
        ident = "long" if name_ == "long" else "short"
        if ident == "long":
            long_done += 1
            first_long = t if first_long is None else first_long
        else:
            shorts_done += 1
        series.tick(eligible, {ident: 1}, {ident: 1})
        if job["left"] == 0:
            del jobs[name_]
        elif job["used"] >= quanta[job["queue"]]:
            job["queue"] = min(job["queue"] + section["demotion_distance"], len(quanta) - 1)
            job["used"] = 0
    return {
        "long_first_service_tick": first_long,
        "long_iterations_completed": long_done,
        "short_jobs_completed": shorts_done,
        "starved": [i for i in ("long", "short") if starved(series, i)],
    }


def _mlfq(section: Mapping[str, Any], sink: _Sink) -> dict[str, Any]:
    quanta: list[int] = section["quanta"]
    if not section.get("short_arrival_every"):
        sink.add(
            "FAIR.PROBE.NO_PRESSURE",
            "/mlfq/short_arrival_every",
            "no short job arrives in the highest queue: the probe cannot test promotion",
        )
    if section.get("claims_client_bound"):
        sink.add(
            "FAIR.CLAIM.MLFQ_CLIENT_BOUND",
            "/mlfq/claims_client_bound",
            "promotion is a job-liveness rule; it proves no weighted-service bound between"
            " clients (VTC's bound does not apply)",
        )
    join = _mlfq_join(quanta, section["long_first_cost"])
    out: dict[str, Any] = {"quanta": quanta, "long_join_queue": join}
    for name, promote in (("no_promotion", False), ("promotion", True)):
        result = out[name] = _mlfq_trace(section, promote)
        declared = section["expect"][name]
        for field in declared:
            sink.expect(
                "FAIR.MLFQ.TRACE",
                f"/mlfq/expect/{name}/{field}",
                f"{name} {field}",
                declared[field],
                result.get(field),
            )
    sink.expect(
        "FAIR.MLFQ.TRACE",
        "/mlfq/expect/long_join_queue",
        "skip-join queue",
        section["expect"].get("long_join_queue"),
        out["long_join_queue"],
    )
    return out


# --------------------------------------------------------------------------- entry points


def evaluate(fixture: LoadedFixture) -> CheckResult:
    """Run every Loop 8 probe the fixture declares (InputError when it is unusable)."""
    schema_findings = validate(
        dict(fixture.data), FIXTURE_SCHEMA, file=fixture.path, locate=fixture.locate
    )
    if schema_findings:
        raise InputError(schema_findings)
    data = fixture.data
    sink = _Sink(fixture)
    acc = data["accounting"]
    if acc["publication_event"] != "completed_intervals":
        sink.add(
            "FAIR.ACCOUNTING.PUBLICATION",
            "/accounting/publication_event",
            f"service published at {acc['publication_event']!r}: planned or failed work must be"
            " zero authoritative service; only completed intervals publish",
        )
    if acc.get("guarantee") == "client_service_bound" and acc["protected_identity"] != "client":
        sink.add(
            "FAIR.IDENTITY.MISMATCH",
            "/accounting/protected_identity",
            f"a client-service guarantee over identity {acc['protected_identity']!r}: request"
            " liveness and client fairness are orthogonal",
        )
    claim = data["claim"]
    inflated = sorted(k for k, v in claim["scope"].items() if v)
    if claim["evidence_class"] != EvidenceClass.SYNTHETIC.value or inflated:
        sink.add(
            "FAIR.CLAIM.INFLATED",
            "/claim",
            f"claim evidence_class {claim['evidence_class']!r}, scope {inflated}: {SCOPE_NOTE}",
        )
    w_p, w_q = acc["w_p"], acc["w_q"]
    charts: list[dict[str, Any]] = []
    metrics: dict[str, Any] = {
        "fixture": data["fixture"],
        "accounting": dict(acc),
        "scope": SCOPE_NOTE,
        "evidence_class": EvidenceClass.SYNTHETIC.value,
    }
    flood: dict[str, Any] = {}
    if "client_flood" in data:
        flood = _client_flood(data["client_flood"], w_p, w_q, sink, charts)
        metrics["client_flood"] = flood
    if "vtc_lift" in data:
        metrics["vtc_lift"] = _vtc_lift(data["vtc_lift"], sink)
    if "vtc_bound" in data:
        metrics["vtc_bound"] = _vtc_bound(data["vtc_bound"], flood, sink)
    if "completion_reconciled" in data:
        metrics["completion_reconciled"] = _reconciled(data["completion_reconciled"], sink)
    if "priority" in data:
        metrics["priority"] = _priority(data["priority"], sink)
    if "prefix_quota" in data:
        metrics["prefix_quota"] = _prefix_quota(data["prefix_quota"], sink)
    if "mlfq" in data:
        metrics["mlfq"] = _mlfq(data["mlfq"], sink)
    reason = None
    if flood:
        parts = [
            f"{p} gap {flood[p]['max_backlogged_gap']}"
            for p in flood
            if isinstance(flood[p], Mapping)
        ]
        reason = "client flood: " + ", ".join(parts)
    return CheckResult(
        check=NAME,
        subject=fixture.path,
        findings=tuple(sink.findings),
        metrics=metrics,
        evidence_class=EvidenceClass.SYNTHETIC,
        reason=reason,
        charts=tuple(charts),
    )
