"""Metamorphic relations: change an input in a way that must not matter, and check it didn't.

Each relation is a named check with its own result line:

`hidden-output-invariance`
    Change every realized output length in the fixture's hidden truth and replay under
    several policies. The policies see only the online projection, so every plan made from
    an identical published state must be byte-identical; the runs may diverge only after a
    hidden length takes effect through a completed result (offline scores may change).
`request-order-permutation`
    Permute the order of the workload's request list (declared arrival orders kept). Under
    the declared tie-break every plan and every per-request metric must be identical.
`time-scaling`
    Multiply every time (arrivals, SLO limits, step cost) by k. Plans and states must be
    identical except the clock, and every TTFT/TBT/E2E/queue-delay value scales by k.
`chunk-partition-invariance`
    Split one prompt into seeded random chunk partitions and run the Loop 6 oracle: every
    partition must process exactly the S(S+1)/2 causal pairs of the full triangle, miss none,
    add none, and reproduce full attention bitwise.

Replays run the `cbaudit.sim` engine directly, with contract validation on, under a declared
linear step cost on a millisecond clock (integer milliseconds, so scaling by an integer k is
exact in floating point) or one tick per iteration on a tick clock.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from cbaudit.model import CheckResult, EvidenceClass, Finding, Location
from cbaudit.oracles.chunked_prefill import tri
from cbaudit.oracles.fixture_oracle import run_fixture
from cbaudit.oracles.fixtures import Fixture
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, ReplayRun, StepCost, Validation
from cbaudit.sim.metrics import summarize
from cbaudit.sim.step import StepShape
from cbaudit.sim.workload import Workload, workload_from_data

DEFAULT_POLICIES = (
    "decode-first",
    "prefill-first",
    "orca",
    "sarathi-serve",
    "vllm-v1",
    "least-slack",
    "static",
)
_MS_FIELDS = ("queue_delay_ms", "ttft_ms", "e2e_ms", "tpot_ms", "tbt_max_ms")
_UNIT_FIELDS = ("queue_delay", "ttft", "e2e", "tpot", "tbt_max")
Records = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class LinearStepCost:
    """A declared synthetic step cost: `base_ms + per_token_ms * tokens` (integers)."""

    base_ms: int = 4
    per_token_ms: int = 1
    scale: int = 1

    def step_time_ms(self, step: StepShape) -> float:
        return float(self.scale * (self.base_ms + self.per_token_ms * step.tokens))


@dataclass(frozen=True)
class MetamorphicOptions:
    """What the relations run on: seed, policies, the workload, and the scale factor."""

    seed: int = 0
    policies: tuple[str, ...] = DEFAULT_POLICIES
    workload: Mapping[str, Any] | None = None  # a workload manifest (with hidden truth)
    scale: int = 3
    partitions: int = 8
    sequence_length: int = 12


def small_workload(seed: int) -> dict[str, Any]:
    """A seeded ten-request workload on a millisecond clock, with SLOs and hidden truth."""
    rng = random.Random(f"metamorphic-workload|{seed}")
    requests = []
    realized = {}
    arrival = 0
    for i in range(10):
        max_out = rng.randint(4, 16)
        rid = f"m{i}"
        requests.append(
            {
                "request_id": rid,
                "arrival": arrival,
                "arrival_order": i,
                "prompt_tokens": rng.randint(1, 12),
                "max_output_tokens": max_out,
                "client": f"client-{rng.choice('abc')}",
                "priority": rng.randint(0, 2),
                "slo": {"ttft_ms": 60, "tbt_ms": 20},
            }
        )
        realized[rid] = rng.randint(max_out // 2, max_out - 1)
        arrival += rng.choice((0, 5, 10))
    return {
        "schema_version": 1,
        "workload_id": f"metamorphic-{seed}",
        "clock": {"unit": "ms"},
        "policy": {
            "policy_id": "declared-by-replay",
            "policy_version": "1",
            "tie_break": {
                "key": ["phase_rank", "priority_rank", "arrival_order", "request_id"],
                "phase_order": ["DECODE_ROW", "PREFILL_CHUNK"],
            },
        },
        "budgets": {"token_budget": 16, "sequence_budget": 4},
        "requests": requests,
        "fixture_only_hidden_truth": {"realized_output_tokens": realized},
    }


class _Sink:
    def __init__(self) -> None:
        self.records: Records = []

    def write(self, kind: str, data: Mapping[str, Any]) -> None:
        self.records.append((kind, json.loads(json.dumps(data))))


def default_cost(workload: Workload) -> StepCost:
    """The linear step cost on a millisecond clock; one tick per iteration on a tick clock."""
    if workload.clock.unit.value == "ms":
        return LinearStepCost()
    return UnitCostModel()


def replay(workload: Workload, policy_id: str, cost: StepCost) -> tuple[Records, ReplayRun]:
    """One traced replay (contract validation on) of `workload` under a registered policy."""
    sink = _Sink()
    policy = POLICIES.create(policy_id, {})
    engine = Engine(workload, policy, cost, validation=Validation.CONTRACT, trace=sink)
    return sink.records, engine.run()


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _of(records: Records, kind: str) -> list[dict[str, Any]]:
    return [data for k, data in records if k == kind]


def _where(relation: str, policy: str, suffix: str = "") -> Location:
    return Location(file=f"metamorphic:{relation}", pointer=f"/{policy}{suffix}")


def _engine_findings(relation: str, policy: str, run_: ReplayRun) -> list[Finding]:
    return [
        Finding(
            "MUTATE.METAMORPHIC.CONTRACT",
            f"{policy}: iteration {f.iteration}: {f.code}: {f.message}",
            location=_where(relation, policy, f"/iterations/{f.iteration}"),
        )
        for f in run_.findings
    ]


def _workload(options: MetamorphicOptions) -> Workload:
    data = options.workload if options.workload is not None else small_workload(options.seed)
    return workload_from_data(data, "metamorphic-workload")


def _result(
    name: str, findings: list[Finding], metrics: dict[str, Any], reason: str
) -> CheckResult:
    return CheckResult(
        check="metamorphic",
        subject=name,
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=EvidenceClass.SYNTHETIC,
        reason=reason,
    )


# ------------------------------------------------------------------ hidden-output invariance


def changed_truth(workload: Workload, rng: random.Random) -> dict[str, int]:
    """A new realized length for every request (different wherever max_output allows)."""
    out: dict[str, int] = {}
    for req in workload.requests:
        old = workload.realized_output(req)
        # Longer where the maximum allows: the runs then share a longer identical prefix.
        longer = list(range(old + 1, req.max_output_tokens + 1))
        shorter = list(range(1, old))
        choices = longer or shorter
        out[req.request_id] = rng.choice(choices) if choices else old
    return out


def compare_same_state_plans(a: Records, b: Records) -> tuple[int, int | None, int | None]:
    """Plans made from byte-identical published states must be byte-identical.

    Walks both traces in step while the published states agree. Returns (plans compared,
    index of the first differing plan made from an identical state or None, index of the
    first differing state or None).
    """
    states_a, plans_a = _of(a, "state"), _of(a, "plan")
    states_b, plans_b = _of(b, "state"), _of(b, "plan")
    compared = 0
    for i in range(min(len(plans_a), len(plans_b), len(states_a), len(states_b))):
        if _canon(states_a[i]) != _canon(states_b[i]):
            return compared, None, i
        compared += 1
        if _canon(plans_a[i]) != _canon(plans_b[i]):
            return compared, i, None
    return compared, None, None


def hidden_output_invariance(options: MetamorphicOptions) -> CheckResult:
    """Every online plan is unchanged by a change of every hidden realized length."""
    name = "hidden-output-invariance"
    base = _workload(options)
    rng = random.Random(f"{options.seed}|{name}")
    other = replace(base, hidden_realized=changed_truth(base, rng))
    findings: list[Finding] = []
    if _canon(base.to_manifest()) != _canon(other.to_manifest()):
        findings.append(
            Finding(
                "MUTATE.METAMORPHIC.PROJECTION",
                "the online projections differ: hidden truth reaches the online manifest",
                location=_where(name, "workload"),
            )
        )
    per_policy: dict[str, Any] = {}
    cost = default_cost(base)
    for policy in options.policies:
        rec_a, run_a = replay(base, policy, cost)
        rec_b, run_b = replay(other, policy, cost)
        findings += _engine_findings(name, policy, run_a) + _engine_findings(name, policy, run_b)
        compared, bad, diverged = compare_same_state_plans(rec_a, rec_b)
        if bad is not None:
            findings.append(
                Finding(
                    "MUTATE.METAMORPHIC.HIDDEN_OUTPUT",
                    f"{policy}: plan {bad} differs although its published state is identical:"
                    " the policy depends on hidden output lengths",
                    location=_where(name, policy, f"/plans/{bad}"),
                )
            )
        if compared == 0:
            findings.append(
                Finding(
                    "MUTATE.METAMORPHIC.VACUOUS",
                    f"{policy}: no plan was compared (the runs diverge at once)",
                    location=_where(name, policy),
                )
            )
        m_a, m_b = summarize(run_a), summarize(run_b)
        per_policy[policy] = {
            "plans_compared": compared,
            "plans": [len(_of(rec_a, "plan")), len(_of(rec_b, "plan"))],
            "first_state_divergence": diverged,
            "offline_output_tokens": [m_a["output_tokens"], m_b["output_tokens"]],
            "offline_e2e_mean_ms": [
                m_a["latency"]["e2e"]["ms"]["mean"] if m_a["latency"]["e2e"]["ms"] else None,
                m_b["latency"]["e2e"]["ms"]["mean"] if m_b["latency"]["e2e"]["ms"] else None,
            ],
        }
    total = sum(p["plans_compared"] for p in per_policy.values())
    metrics = {
        "seed": options.seed,
        "realized_before": {r.request_id: base.realized_output(r) for r in base.requests},
        "realized_after": {r.request_id: other.realized_output(r) for r in other.requests},
        "policies": per_policy,
        "plans_compared": total,
    }
    reason = f"{total} plans from identical states compared under {len(per_policy)} policies"
    return _result(name, findings, metrics, reason)


# ------------------------------------------------------------------ request-order permutation


def permuted(workload: Workload, rng: random.Random) -> tuple[Workload, list[str]]:
    """The same manifest with its request list shuffled, loaded again (arrival orders kept).

    Returns the reloaded workload and the shuffled listing order.
    """
    data = workload.to_manifest(include_hidden=True)
    reqs = list(data["requests"])
    order = list(range(len(reqs)))
    if len(reqs) >= 2:
        while order == sorted(order):
            rng.shuffle(order)
    data["requests"] = [reqs[i] for i in order]
    listing = [str(r["request_id"]) for r in data["requests"]]
    return workload_from_data(data, workload.source), listing


def request_order_permutation(options: MetamorphicOptions) -> CheckResult:
    """Plans and per-request metrics do not depend on the order requests are listed in."""
    name = "request-order-permutation"
    base = _workload(options)
    other, listing = permuted(base, random.Random(f"{options.seed}|{name}"))
    findings: list[Finding] = []
    per_policy: dict[str, Any] = {}
    cost = default_cost(base)
    for policy in options.policies:
        rec_a, run_a = replay(base, policy, cost)
        rec_b, run_b = replay(other, policy, cost)
        findings += _engine_findings(name, policy, run_a) + _engine_findings(name, policy, run_b)
        plans_a, plans_b = _of(rec_a, "plan"), _of(rec_b, "plan")
        first = next(
            (
                i
                for i, (x, y) in enumerate(zip(plans_a, plans_b, strict=False))
                if _canon(x) != _canon(y)
            ),
            None,
        )
        if first is None and len(plans_a) != len(plans_b):
            first = min(len(plans_a), len(plans_b))
        if first is not None:
            findings.append(
                Finding(
                    "MUTATE.METAMORPHIC.ORDER",
                    f"{policy}: plan {first} changes when the request list is permuted",
                    location=_where(name, policy, f"/plans/{first}"),
                )
            )
        m_a, m_b = summarize(run_a), summarize(run_b)
        if _canon(m_a) != _canon(m_b):
            findings.append(
                Finding(
                    "MUTATE.METAMORPHIC.ORDER",
                    f"{policy}: replay metrics change when the request list is permuted",
                    location=_where(name, policy, "/metrics"),
                )
            )
        per_policy[policy] = {"plans": len(plans_a), "identical": first is None}
    metrics = {
        "seed": options.seed,
        "listing_order": listing,
        "policies": per_policy,
    }
    total = sum(p["plans"] for p in per_policy.values())
    return _result(
        name, findings, metrics, f"{total} plans compared under {len(per_policy)} policies"
    )


# ------------------------------------------------------------------ time scaling


def scaled(workload: Workload, k: int) -> Workload:
    """Every declared time (arrival, SLO limit) multiplied by k."""
    data = workload.to_manifest(include_hidden=True)
    for req in data["requests"]:
        req["arrival"] = req["arrival"] * k
        slo = req.get("slo")
        if isinstance(slo, dict):
            req["slo"] = {key: value * k for key, value in slo.items()}
    return workload_from_data(data, workload.source)


def _scaled_state(state: Mapping[str, Any], k: int) -> dict[str, Any]:
    out = dict(state)
    if isinstance(out.get("monotonic_now"), int | float):
        out["monotonic_now"] = out["monotonic_now"] / k
    return out


def compare_scaled(a: Mapping[str, Any], b: Mapping[str, Any], k: int) -> list[str]:
    """Per-request metric differences other than the time fields scaling by exactly k."""
    problems: list[str] = []
    for rid, rec in sorted(a.items()):
        other = b.get(rid)
        if other is None:
            problems.append(f"{rid}: missing after scaling")
            continue
        for key in sorted(set(rec) | set(other)):
            x, y = rec.get(key), other.get(key)
            if key in _MS_FIELDS or key in _UNIT_FIELDS or key == "arrival":
                ok = (x is None and y is None) or (
                    x is not None
                    and y is not None
                    and abs(float(x) * k - float(y)) <= 1e-9 * max(1.0, abs(float(y)))
                )
            else:
                ok = x == y
            if not ok:
                problems.append(f"{rid}.{key}: {x} -> {y}")
    return problems


def time_scaling(options: MetamorphicOptions) -> CheckResult:
    """Every time x k: TTFT/TBT/E2E scale by k, plans and everything else are unchanged."""
    name = "time-scaling"
    k = options.scale
    base = _workload(options)
    if base.clock.unit.value != "ms":
        data = base.to_manifest(include_hidden=True)
        tick = base.clock.tick_ms or 1.0
        data["clock"] = {"unit": "ms"}
        for req in data["requests"]:
            req["arrival"] = req["arrival"] * tick
        base = workload_from_data(data, base.source)
    other = scaled(base, k)
    findings: list[Finding] = []
    per_policy: dict[str, Any] = {}
    for policy in options.policies:
        rec_a, run_a = replay(base, policy, LinearStepCost())
        rec_b, run_b = replay(other, policy, LinearStepCost(scale=k))
        findings += _engine_findings(name, policy, run_a) + _engine_findings(name, policy, run_b)
        plans_same = [_canon(p) for p in _of(rec_a, "plan")] == [
            _canon(p) for p in _of(rec_b, "plan")
        ]
        states_same = [_canon(s) for s in _of(rec_a, "state")] == [
            _canon(_scaled_state(s, k)) for s in _of(rec_b, "state")
        ]
        m_a, m_b = summarize(run_a), summarize(run_b)
        problems = compare_scaled(m_a["requests"], m_b["requests"], k)
        tbt_a = sorted((round(x * k, 9), n) for x, n in run_a.tbt_counts.items())
        if _merged(tbt_a) != _merged(sorted((round(x, 9), n) for x, n in run_b.tbt_counts.items())):
            problems.append("TBT samples do not scale by k")
        if not plans_same:
            problems.append("plans differ")
        if not states_same:
            problems.append("published states differ beyond the clock")
        if run_a.iterations != run_b.iterations:
            problems.append(f"iterations {run_a.iterations} -> {run_b.iterations}")
        for text in problems[:20]:
            findings.append(
                Finding(
                    "MUTATE.METAMORPHIC.TIME_SCALE",
                    f"{policy} (k={k}): {text}",
                    location=_where(name, policy),
                )
            )
        ttft_a = m_a["latency"]["ttft"]["ms"]
        ttft_b = m_b["latency"]["ttft"]["ms"]
        per_policy[policy] = {
            "plans": len(_of(rec_a, "plan")),
            "ttft_mean_ms": [
                ttft_a["mean"] if ttft_a else None,
                ttft_b["mean"] if ttft_b else None,
            ],
            "tbt_samples": sum(run_a.tbt_counts.values()),
            "violations": len(problems),
        }
    metrics = {"seed": options.seed, "k": k, "policies": per_policy}
    total = sum(p["plans"] for p in per_policy.values())
    return _result(
        name, findings, metrics, f"k={k}: {total} plans compared under {len(per_policy)} policies"
    )


# ------------------------------------------------------------------ chunk partitions


def random_partitions(length: int, count: int, rng: random.Random) -> list[list[tuple[int, int]]]:
    """`count` distinct seeded partitions of [0, length) into contiguous ascending chunks."""
    seen: set[tuple[int, ...]] = set()
    out: list[list[tuple[int, int]]] = []
    attempts = 0
    while len(out) < count and attempts < 50 * count:
        attempts += 1
        cuts = (
            tuple(sorted(rng.sample(range(1, length), rng.randint(1, max(1, length - 1)))))
            if length > 1
            else ()
        )
        if cuts in seen:
            continue
        seen.add(cuts)
        bounds = [0, *cuts, length]
        out.append([(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)])
    return out


def chunk_partition_invariance(
    options: MetamorphicOptions, partitions: Sequence[Sequence[tuple[int, int]]] | None = None
) -> CheckResult:
    """Every chunk partition processes exactly the causal pairs of the full triangle."""
    name = "chunk-partition-invariance"
    length = options.sequence_length
    rng = random.Random(f"{options.seed}|{name}")
    parts = (
        [list(p) for p in partitions]
        if partitions is not None
        else random_partitions(length, options.partitions, rng)
    )
    data = {
        "schema_version": 1,
        "oracle": "chunked-prefill",
        "equivalence": {
            "sequence_length": length,
            "head_dim": 2,
            "seed": options.seed,
            "partitions": [
                {"label": f"P{i}", "chunks": [{"start": s, "end": e} for s, e in part]}
                for i, part in enumerate(parts)
            ],
            "expect": {"causal_pairs": tri(length)},
        },
    }
    fixture = Fixture(
        data, f"metamorphic:{name}", "", lambda p: Location(file=f"metamorphic:{name}", pointer=p)
    )
    result = run_fixture("chunked-prefill", fixture)
    findings = [
        Finding(
            "MUTATE.METAMORPHIC.CHUNK_PARTITION",
            f"{f.code}: {f.message}",
            location=f.location,
        )
        for f in result.findings
    ]
    reports = (result.metrics.get("equivalence") or {}).get("partitions") or []
    for rep in reports:
        if (
            rep.get("pairs_total") != tri(length)
            or rep.get("missing_pairs")
            or rep.get("extra_pairs")
            or not rep.get("bitwise_equal")
        ):
            findings.append(
                Finding(
                    "MUTATE.METAMORPHIC.CHUNK_PARTITION",
                    f"{rep.get('label')}: {rep.get('pairs_total')} pairs"
                    f" ({rep.get('missing_pairs')} missing, {rep.get('extra_pairs')} extra),"
                    f" bitwise equal: {rep.get('bitwise_equal')}",
                    location=Location(file=f"metamorphic:{name}", pointer=f"/{rep.get('label')}"),
                )
            )
    metrics = {
        "seed": options.seed,
        "sequence_length": length,
        "causal_pairs": tri(length),
        "partitions": [
            {
                "chunks": [list(c) for c in part],
                "pairs_total": rep.get("pairs_total"),
                "bitwise_equal": rep.get("bitwise_equal"),
            }
            for part, rep in zip(parts, reports, strict=False)
        ],
    }
    reason = f"{len(parts)} partitions of S={length}, each {tri(length)} causal pairs expected"
    return _result(name, findings, metrics, reason)


RELATIONS: Mapping[str, Callable[[MetamorphicOptions], CheckResult]] = MappingProxyType(
    {
        "hidden-output-invariance": hidden_output_invariance,
        "request-order-permutation": request_order_permutation,
        "time-scaling": time_scaling,
        "chunk-partition-invariance": chunk_partition_invariance,
    }
)


def run_relations(names: Sequence[str], options: MetamorphicOptions) -> list[CheckResult]:
    """Run the named relations (all when `names` is empty), in registry order."""
    chosen = [n for n in RELATIONS if not names or n in names]
    return [RELATIONS[n](options) for n in chosen]


def _merged(pairs: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """Sorted (value, count) pairs with equal values merged (a multiset, canonically)."""
    out: list[tuple[float, int]] = []
    for v, n in pairs:
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1] + n)
        else:
            out.append((v, n))
    return out
