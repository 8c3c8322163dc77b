"""Loop 5 (article 0x06): admission under output uncertainty.

Admission accepts a policy's estimate of a future trajectory, never a token. For a forecast
total output G_hat and E outputs already emitted, the future append rows are (F24, F25)

    running (resume-ready) request:  A_hat = max(G_hat - E, 0)
    new request:                     A_hat = U + max(G_hat - 1, 0)   (U = uncached prompt rows)

and FIFO request j is admitted iff R_(j-1) + A_hat_j <= C_soft with C_soft = C_hard - W (F28,
F29); the first request that does not fit stops the scan (no younger request jumps it). Rows
are logical K/V rows of the M5.1 ABI (131,072 bytes per all-layer row); this module consumes
that number and never re-derives it from a model architecture.

Three records stay apart: a `ReservationEstimate` (M5.2's intent), an `AllocationRequest`
(issued to the M5.3 allocator) and the allocator's result, which the planner always leaves
`None`: guessing physical block ids would move allocator authority into the scheduler.

Policies: `maximum` (declared max_output_tokens), `point`, `quantile` (a declared quantile,
p90 in the article) and `watermark` (a quantile forecast under a soft ceiling). An `oracle`
policy may read the fixture's hidden realized lengths only when it is labelled as one. The
online planner receives the fixture without `fixture_only_hidden_truth`; a metamorphic check
replans every online policy with all hidden lengths changed and requires byte-identical plans.
Only then does the offline evaluator score over/under-reservation, hard breach, extension and
preemption intent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from cbaudit.model import CheckResult, EvidenceClass, Finding, Location

NAME = "admission-uncertainty"
FIXTURE_SCHEMA = "admission-uncertainty-fixture"
ABI_BYTES_PER_ROW = 131_072  # M5.1 logical K/V row ABI: one all-layer row
KIB = 1024
MIB = 1024 * 1024

# Keys that belong to the physical allocator (M5.3) or to a model architecture: an admission
# fixture that declares them has moved authority (or a derivation) into the wrong owner.
PHYSICAL_KEYS = frozenset(
    {"physical_block_ids", "block_ids", "block_table", "physical_blocks", "page_ids"}
)
ARCHITECTURE_KEYS = frozenset(
    {"num_layers", "layers", "num_kv_heads", "kv_heads", "head_dim", "dtype_bytes", "hidden_size"}
)
FORECAST_SOURCES = ("max_output_tokens", "point", "quantile", "hidden_realized")

CODES: Mapping[str, str] = {
    "ADMISSION.HIDDEN_TRUTH.LEAK": "an online request declaration carries a realized length",
    "ADMISSION.HIDDEN_TRUTH.PLAN_CHANGED": "changing hidden lengths changed an online plan",
    "ADMISSION.ORACLE.UNLABELLED": "a policy reads hidden truth without being labelled oracle",
    "ADMISSION.ORACLE.LABEL_WITHOUT_READ": "a policy labelled oracle does not read hidden truth",
    "ADMISSION.PHYSICAL.FIELD": "the admission planner's input or output names physical blocks",
    "ADMISSION.ABI.REDERIVED": "bytes per row are re-derived from architecture fields",
    "ADMISSION.ABI.MISMATCH": "bytes per row differ from the M5.1 ABI (131,072)",
    "ADMISSION.WATERMARK.ILLEGAL": "the watermark is negative or leaves no admission room",
    "ADMISSION.CEILING.ILLEGAL": "reserved rows exceed the hard ceiling",
    "ADMISSION.FORECAST.ORDER": "a point forecast exceeds its quantile forecast",
    "ADMISSION.FORECAST.ABOVE_MAX": "a forecast exceeds the declared max_output_tokens",
    "ADMISSION.FORECAST.MISSING": "a policy needs a forecast the request does not declare",
    "ADMISSION.HIDDEN_TRUTH.RANGE": "a hidden realized length is missing or exceeds the maximum",
    "ADMISSION.EXPECT.MISMATCH": "a declared expectation differs from the computed value",
    "ADMISSION.EXPECT.UNKNOWN_POLICY": "expectations name a policy the fixture does not run",
}


class FixtureLike(Protocol):
    """What the oracle needs from a loaded fixture (structurally: `oracles.fixtures.Fixture`)."""

    @property
    def data(self) -> Mapping[str, Any]: ...
    @property
    def path(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    def require_schema(self, schema: str) -> None: ...


# ---------------------------------------------------------------------------------------------
# arithmetic


def future_rows(forecast_total: int, emitted: int, *, new: bool, uncached_prompt: int = 0) -> int:
    """Future append rows under the first-token rule (F24 running, F25 new)."""
    if forecast_total < 0 or emitted < 0 or uncached_prompt < 0:
        raise ValueError("forecast, emitted and uncached prompt rows must be >= 0")
    if new:
        return uncached_prompt + max(forecast_total - 1, 0)
    return max(forecast_total - emitted, 0)


def soft_ceiling(hard_rows: int, watermark_rows: int) -> int:
    """C_soft = C_hard - W (F28)."""
    return hard_rows - watermark_rows


def rows_bytes(rows: int, bytes_per_row: int = ABI_BYTES_PER_ROW) -> int:
    """Logical payload bytes of `rows` K/V rows (F26)."""
    return rows * bytes_per_row


def human_bytes(n: int) -> str:
    """`640 KiB`, `1.375 MiB`: the spelling the article uses for logical payloads."""
    if n >= MIB:
        return f"{n / MIB:g} MiB"
    return f"{n / KIB:g} KiB"


# ---------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True, slots=True)
class RequestView:
    """The online view of one request an admission policy may read (no hidden truth)."""

    request_id: str
    request_generation: int
    priority: int
    emitted: int
    new: bool
    uncached_prompt: int
    max_output_tokens: int
    point: int | None
    quantile: int | None


@dataclass(frozen=True, slots=True)
class AdmissionPolicy:
    """One declared admission policy: where its forecast comes from, and its watermark."""

    policy_id: str
    forecast: str  # one of FORECAST_SOURCES
    watermark_rows: int = 0
    oracle: bool = False  # labelled as reading hidden truth (hindsight, not an online policy)

    @property
    def reads_hidden_truth(self) -> bool:
        return self.forecast == "hidden_realized"


@dataclass(frozen=True, slots=True)
class ReservationEstimate:
    """M5.2's reservation intent for one request generation (F24-F29)."""

    policy_id: str
    prediction_version: str
    request_id: str
    request_generation: int
    forecast_total: int
    estimated_rows: int
    estimated_bytes: int
    reserved_before_rows: int
    hard_ceiling_rows: int
    soft_ceiling_rows: int
    admit: bool


@dataclass(frozen=True, slots=True)
class AllocationRequest:
    """What M5.2 asks the M5.3 allocator for; not an allocation."""

    owner: str
    request_id: str
    request_generation: int
    allocation_epoch: int
    requested_append_rows: int
    requested_bytes: int


@dataclass(frozen=True, slots=True)
class AdmissionDecision:
    """One FIFO step of a plan. `physical_allocation_result` is M5.3's and stays None here."""

    estimate: ReservationEstimate
    allocation_request: AllocationRequest | None
    outcome: str  # ADMIT_INTENT | DEFER_CAPACITY | DEFER_FIFO_BREAK
    physical_allocation_result: None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "estimate": asdict(self.estimate),
            "allocation_request": (
                None if self.allocation_request is None else asdict(self.allocation_request)
            ),
            "outcome": self.outcome,
            "physical_allocation_result": None,
        }


@dataclass(frozen=True, slots=True)
class AdmissionPlan:
    """The frozen online plan of one policy over the FIFO queue."""

    policy_id: str
    decisions: tuple[AdmissionDecision, ...]
    reserved_after_rows: int

    @property
    def admitted(self) -> tuple[str, ...]:
        return tuple(d.estimate.request_id for d in self.decisions if d.outcome == "ADMIT_INTENT")

    def to_json(self) -> dict[str, Any]:
        return {
            "policy_id": self.policy_id,
            "decisions": [d.to_json() for d in self.decisions],
            "admitted": list(self.admitted),
            "reserved_after_rows": self.reserved_after_rows,
        }


@dataclass(frozen=True, slots=True)
class Ceiling:
    hard_rows: int
    reserved_rows: int
    allocation_epoch: int
    bytes_per_row: int = ABI_BYTES_PER_ROW


def forecast_of(policy: AdmissionPolicy, view: RequestView, hidden: Mapping[str, int]) -> int:
    """The forecast total output a policy uses for a request (KeyError when undeclared)."""
    if policy.forecast == "max_output_tokens":
        return view.max_output_tokens
    if policy.forecast == "point":
        if view.point is None:
            raise KeyError("point")
        return view.point
    if policy.forecast == "quantile":
        if view.quantile is None:
            raise KeyError("quantile")
        return view.quantile
    return hidden[view.request_id]  # hidden_realized: only a labelled oracle may get here


def plan_admission(
    policy: AdmissionPolicy,
    queue: Sequence[RequestView],
    ceiling: Ceiling,
    prediction_version: str,
    hidden: Mapping[str, int] | None = None,
) -> AdmissionPlan:
    """FIFO admission intents under `policy`; the first refusal stops the scan (ORCA break).

    `hidden` is passed only to a policy that reads hidden truth; online policies get `{}`.
    """
    soft = soft_ceiling(ceiling.hard_rows, policy.watermark_rows)
    reserved = ceiling.reserved_rows
    decisions: list[AdmissionDecision] = []
    blocked = False
    for view in queue:
        total = forecast_of(policy, view, hidden or {})
        rows = future_rows(total, view.emitted, new=view.new, uncached_prompt=view.uncached_prompt)
        fits = not blocked and reserved + rows <= soft
        estimate = ReservationEstimate(
            policy_id=policy.policy_id,
            prediction_version=prediction_version,
            request_id=view.request_id,
            request_generation=view.request_generation,
            forecast_total=total,
            estimated_rows=rows,
            estimated_bytes=rows_bytes(rows, ceiling.bytes_per_row),
            reserved_before_rows=reserved,
            hard_ceiling_rows=ceiling.hard_rows,
            soft_ceiling_rows=soft,
            admit=fits,
        )
        if fits:
            request = AllocationRequest(
                owner="M5.3",
                request_id=view.request_id,
                request_generation=view.request_generation,
                allocation_epoch=ceiling.allocation_epoch,
                requested_append_rows=rows,
                requested_bytes=rows_bytes(rows, ceiling.bytes_per_row),
            )
            decisions.append(AdmissionDecision(estimate, request, "ADMIT_INTENT"))
            reserved += rows
        else:
            outcome = "DEFER_FIFO_BREAK" if blocked else "DEFER_CAPACITY"
            decisions.append(AdmissionDecision(estimate, None, outcome))
            blocked = True
    return AdmissionPlan(policy.policy_id, tuple(decisions), reserved)


def evaluate_offline(
    plan: AdmissionPlan,
    queue: Sequence[RequestView],
    ceiling: Ceiling,
    watermark_rows: int,
    hidden: Mapping[str, int],
) -> dict[str, Any]:
    """Score a frozen plan against hidden realized lengths (offline only).

    Over-reservation is withheld-but-unused rows, under-reservation rows that need an
    extension (F27, signed per request). If realized demand stays within the soft ceiling the
    extensions need no victim; within the hard ceiling they spend the watermark; beyond it the
    scheduler names a preemption intent for the lowest-priority admitted request (larger
    priority number, then later FIFO position). An intent is not a release.
    """
    by_id = {v.request_id: v for v in queue}
    bpr = ceiling.bytes_per_row
    soft = soft_ceiling(ceiling.hard_rows, watermark_rows)
    per_request = []
    over = under = realized_rows_total = 0
    extensions = []
    admitted = [d for d in plan.decisions if d.outcome == "ADMIT_INTENT"]
    for d in admitted:
        view = by_id[d.estimate.request_id]
        real = future_rows(
            hidden[view.request_id],
            view.emitted,
            new=view.new,
            uncached_prompt=view.uncached_prompt,
        )
        err = d.estimate.estimated_rows - real
        over += max(err, 0)
        under += max(-err, 0)
        realized_rows_total += real
        per_request.append(
            {
                "request": f"{view.request_id}:{view.request_generation}",
                "estimated_rows": d.estimate.estimated_rows,
                "realized_rows": real,
                "error_rows": err,
            }
        )
        if err < 0:
            extensions.append(
                {"request": f"{view.request_id}:{view.request_generation}", "extension_rows": -err}
            )
    realized_total = ceiling.reserved_rows + realized_rows_total
    breach = max(realized_total - ceiling.hard_rows, 0)
    victim: dict[str, Any] | None = None
    if breach > 0 and admitted:
        order = {d.estimate.request_id: i for i, d in enumerate(plan.decisions)}
        worst = max(
            (by_id[d.estimate.request_id] for d in admitted),
            key=lambda v: (v.priority, order[v.request_id]),
        )
        victim = {
            "kind": "PreemptionIntent",
            "request": f"{worst.request_id}:{worst.request_generation}",
            "reason": "HARD_CEILING_BREACH",
            "rows_short": breach,
            "release_result": None,  # M5.3's fact, not the scheduler's
        }
    if not extensions:
        recovery = "NONE_NEEDED"
    elif realized_total <= soft:
        recovery = "EXTENSION_WITHIN_SOFT_CEILING"
    elif realized_total <= ceiling.hard_rows:
        recovery = "EXTENSION_USES_WATERMARK"
    else:
        recovery = "PREEMPTION_INTENT"
    return {
        "admitted": [f"{d.estimate.request_id}:{d.estimate.request_generation}" for d in admitted],
        "deferred": [
            f"{d.estimate.request_id}:{d.estimate.request_generation}"
            for d in plan.decisions
            if d.outcome != "ADMIT_INTENT"
        ],
        "reserved_after_rows": plan.reserved_after_rows,
        "over_reservation_rows": over,
        "over_reservation_bytes": rows_bytes(over, bpr),
        "over_reservation": human_bytes(rows_bytes(over, bpr)),
        "under_reservation_rows": under,
        "under_reservation_bytes": rows_bytes(under, bpr),
        "under_reservation": human_bytes(rows_bytes(under, bpr)),
        "realized_total_rows": realized_total,
        "soft_ceiling_rows": soft,
        "hard_breach_rows": breach,
        "hard_breach_bytes": rows_bytes(breach, bpr),
        "extensions": extensions,
        "recovery": recovery,
        "preemption_intent": victim,
        "per_request": per_request,
    }


# ---------------------------------------------------------------------------------------------
# the fixture


@dataclass(frozen=True)
class Loop5Fixture:
    ceiling: Ceiling
    prediction_version: str
    queue: tuple[RequestView, ...]
    policies: tuple[AdmissionPolicy, ...]
    hidden: Mapping[str, int]
    budgets: Mapping[str, int]
    expect: Mapping[str, Any]
    quantile_label: str


def _find_keys(node: Any, keys: frozenset[str], pointer: str) -> list[str]:
    """JSON pointers of every mapping key in `keys` under `node`."""
    out: list[str] = []
    if isinstance(node, Mapping):
        for k, v in node.items():
            p = f"{pointer}/{k}"
            if k in keys:
                out.append(p)
            out.extend(_find_keys(v, keys, p))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_find_keys(v, keys, f"{pointer}/{i}"))
    return out


def _f(code: str, message: str, file: str, pointer: str) -> Finding:
    return Finding(code, message, location=Location(file=file, pointer=pointer))


def _online_leaks(data: Mapping[str, Any], path: str, findings: list[Finding]) -> None:
    """Physical block identity, or a realized length, in the online part of the fixture."""
    online = {k: v for k, v in data.items() if k != "fixture_only_hidden_truth"}
    for ptr in _find_keys(online, PHYSICAL_KEYS, ""):
        findings.append(
            _f(
                "ADMISSION.PHYSICAL.FIELD",
                "physical block identity belongs to the M5.3 allocator result, not to admission",
                path,
                ptr,
            )
        )
    for i, r in enumerate(data["requests"]):
        if "realized_output_tokens" in r:
            findings.append(
                _f(
                    "ADMISSION.HIDDEN_TRUTH.LEAK",
                    f"request {r['request_id']} declares its realized length online",
                    path,
                    f"/requests/{i}/realized_output_tokens",
                )
            )


def _ceiling(data: Mapping[str, Any], path: str, findings: list[Finding]) -> Ceiling:
    """The ceiling in rows, with bytes per row consumed from the M5.1 ABI (never re-derived)."""
    abi = data["abi"]
    for ptr in _find_keys(abi, ARCHITECTURE_KEYS, "/abi"):
        findings.append(
            _f(
                "ADMISSION.ABI.REDERIVED",
                "bytes per row are consumed from the M5.1 ABI; architecture fields re-derive them",
                path,
                ptr,
            )
        )
    bpr = int(abi["bytes_per_row"])
    if bpr != ABI_BYTES_PER_ROW:
        findings.append(
            _f(
                "ADMISSION.ABI.MISMATCH",
                f"bytes_per_row {bpr} is not the M5.1 ABI value {ABI_BYTES_PER_ROW}",
                path,
                "/abi/bytes_per_row",
            )
        )
    c = data["ceiling"]
    ceiling = Ceiling(int(c["hard_rows"]), int(c["reserved_rows"]), int(c["allocation_epoch"]), bpr)
    if ceiling.reserved_rows > ceiling.hard_rows:
        findings.append(
            _f(
                "ADMISSION.CEILING.ILLEGAL",
                f"{ceiling.reserved_rows} reserved rows exceed the {ceiling.hard_rows}-row ceiling",
                path,
                "/ceiling/reserved_rows",
            )
        )
    return ceiling


def _request_view(
    data: Mapping[str, Any], i: int, path: str, findings: list[Finding]
) -> RequestView:
    """One queued request's online view; its forecasts must be ordered and within its maximum."""
    r = data["requests"][i]
    fc = r.get("forecast", {})
    view = RequestView(
        request_id=str(r["request_id"]),
        request_generation=int(r.get("request_generation", 0)),
        priority=int(r.get("priority", 0)),
        emitted=int(r["emitted"]),
        new=r.get("state", "running") == "new",
        uncached_prompt=int(r.get("uncached_prompt", 0)),
        max_output_tokens=int(r["max_output_tokens"]),
        point=fc.get("point"),
        quantile=fc.get("quantile"),
    )
    base = f"/requests/{i}/forecast"
    for name in ("point", "quantile"):
        value = getattr(view, name)
        if value is not None and value > view.max_output_tokens:
            findings.append(
                _f(
                    "ADMISSION.FORECAST.ABOVE_MAX",
                    f"{view.request_id}: {name} forecast {value} exceeds max_output_tokens"
                    f" {view.max_output_tokens}",
                    path,
                    f"{base}/{name}",
                )
            )
    if view.point is not None and view.quantile is not None and view.point > view.quantile:
        findings.append(
            _f(
                "ADMISSION.FORECAST.ORDER",
                f"{view.request_id}: point forecast {view.point} exceeds the"
                f" {data['prediction'].get('quantile', 'quantile')} forecast {view.quantile}",
                path,
                f"{base}/point",
            )
        )
    return view


def _policy(
    p: Mapping[str, Any],
    ptr: str,
    ceiling: Ceiling,
    queue: list[RequestView],
    path: str,
    findings: list[Finding],
) -> AdmissionPolicy:
    """One admission policy: its oracle label matches what it reads; its watermark leaves room;
    every request carries the forecast it needs."""
    pol = AdmissionPolicy(
        policy_id=str(p["policy_id"]),
        forecast=str(p["forecast"]),
        watermark_rows=int(p.get("watermark_rows", 0)),
        oracle=bool(p.get("oracle", False)),
    )
    if pol.reads_hidden_truth and not pol.oracle:
        findings.append(
            _f(
                "ADMISSION.ORACLE.UNLABELLED",
                f"policy {pol.policy_id} reads hidden realized lengths but is not labelled"
                " oracle: its results would look online while using the answer",
                path,
                f"{ptr}/forecast",
            )
        )
    if pol.oracle and not pol.reads_hidden_truth:
        findings.append(
            _f(
                "ADMISSION.ORACLE.LABEL_WITHOUT_READ",
                f"policy {pol.policy_id} is labelled oracle but forecasts from {pol.forecast}",
                path,
                f"{ptr}/oracle",
            )
        )
    room = ceiling.hard_rows - ceiling.reserved_rows
    if pol.watermark_rows < 0 or pol.watermark_rows >= room:
        findings.append(
            _f(
                "ADMISSION.WATERMARK.ILLEGAL",
                f"policy {pol.policy_id}: watermark {pol.watermark_rows} rows must be >= 0"
                f" and leave admission room below the {room} free rows",
                path,
                f"{ptr}/watermark_rows",
            )
        )
    needs = {"point": "point", "quantile": "quantile"}.get(pol.forecast)
    if needs is not None:
        for j, view in enumerate(queue):
            if getattr(view, needs) is None:
                findings.append(
                    _f(
                        "ADMISSION.FORECAST.MISSING",
                        f"policy {pol.policy_id} needs a {needs} forecast for {view.request_id}",
                        path,
                        f"/requests/{j}/forecast",
                    )
                )
    return pol


def _hidden_lengths(
    data: Mapping[str, Any], queue: list[RequestView], path: str, findings: list[Finding]
) -> dict[str, int]:
    """The realized lengths (offline only): each declared, between emitted and the maximum."""
    hidden_raw = data.get("fixture_only_hidden_truth", {}).get("realized_output_tokens", {})
    hidden: dict[str, int] = {}
    for j, view in enumerate(queue):
        value = hidden_raw.get(view.request_id)
        ptr = f"/fixture_only_hidden_truth/realized_output_tokens/{view.request_id}"
        if value is None or value > view.max_output_tokens or value < view.emitted:
            findings.append(
                _f(
                    "ADMISSION.HIDDEN_TRUTH.RANGE",
                    f"{view.request_id}: realized length {value!r} must be declared, at least"
                    f" the {view.emitted} emitted outputs and at most max_output_tokens"
                    f" {view.max_output_tokens}",
                    path,
                    ptr if value is not None else f"/requests/{j}",
                )
            )
        else:
            hidden[view.request_id] = int(value)
    return hidden


def parse_fixture(data: Mapping[str, Any], path: str) -> tuple[Loop5Fixture, list[Finding]]:
    """Build the fixture's records; contract findings (not shape errors) are returned."""
    findings: list[Finding] = []
    _online_leaks(data, path, findings)
    ceiling = _ceiling(data, path, findings)
    queue = [_request_view(data, i, path, findings) for i in range(len(data["requests"]))]
    policies = [
        _policy(p, f"/policies/{i}", ceiling, queue, path, findings)
        for i, p in enumerate(data["policies"])
    ]
    hidden = _hidden_lengths(data, queue, path, findings)
    fixture = Loop5Fixture(
        ceiling=ceiling,
        prediction_version=str(data["prediction"]["prediction_version"]),
        queue=tuple(queue),
        policies=tuple(policies),
        hidden=hidden,
        budgets=dict(data.get("budgets", {})),
        expect=dict(data.get("expect", {})),
        quantile_label=str(data["prediction"].get("quantile", "quantile")),
    )
    return fixture, findings


def _perturbed(fx: Loop5Fixture) -> dict[str, int]:
    """Every hidden length moved (to 1 or to the maximum): online plans must not notice."""
    out = {}
    for v in fx.queue:
        real = fx.hidden.get(v.request_id, 1)
        out[v.request_id] = (
            v.max_output_tokens if real != v.max_output_tokens else max(v.emitted, 1)
        )
    return out


def _canonical(plan: AdmissionPlan) -> str:
    return json.dumps(plan.to_json(), sort_keys=True, separators=(",", ":"))


def _next_iteration(
    plan: AdmissionPlan, queue: Sequence[RequestView], budgets: Mapping[str, int]
) -> dict[str, Any]:
    """Rows the admitted requests ask of the next iteration (one decode row each when running)."""
    admitted = set(plan.admitted)
    tokens = sequences = 0
    for v in queue:
        if v.request_id not in admitted:
            continue
        tokens += v.uncached_prompt if v.new else 1
        sequences += 1
    return {
        "tokens_used": tokens,
        "sequences_used": sequences,
        "token_budget": budgets.get("token_budget"),
        "sequence_budget": budgets.get("sequence_budget"),
        "fits": (budgets.get("token_budget") is None or tokens <= budgets["token_budget"])
        and (budgets.get("sequence_budget") is None or sequences <= budgets["sequence_budget"]),
    }


def _compare(expect: Any, actual: Any, pointer: str, path: str) -> list[Finding]:
    """Every declared expectation leaf must equal the computed value at the same path."""
    if isinstance(expect, Mapping):
        out: list[Finding] = []
        for k, v in expect.items():
            if not isinstance(actual, Mapping) or k not in actual:
                out.append(
                    _f(
                        "ADMISSION.EXPECT.MISMATCH",
                        f"expectation {pointer}/{k} names a value the oracle does not compute",
                        path,
                        f"{pointer}/{k}",
                    )
                )
                continue
            out.extend(_compare(v, actual[k], f"{pointer}/{k}", path))
        return out
    if expect != actual or isinstance(expect, bool) != isinstance(actual, bool):
        return [
            _f(
                "ADMISSION.EXPECT.MISMATCH",
                f"declared {expect!r}, computed {actual!r}",
                path,
                pointer,
            )
        ]
    return []


def run(fixture: FixtureLike) -> CheckResult:
    """The Loop 5 oracle over one fixture (see the module docstring)."""
    fixture.require_schema(FIXTURE_SCHEMA)
    path = fixture.path
    fx, findings = parse_fixture(fixture.data, path)
    blocking = {
        "ADMISSION.FORECAST.MISSING",
        "ADMISSION.HIDDEN_TRUTH.RANGE",
        "ADMISSION.WATERMARK.ILLEGAL",
        "ADMISSION.CEILING.ILLEGAL",
    }
    report: dict[str, Any] = {
        "abi": {"bytes_per_row": fx.ceiling.bytes_per_row, "source": "M5.1 logical row ABI"},
        "ceiling": {
            "hard_rows": fx.ceiling.hard_rows,
            "hard_bytes": rows_bytes(fx.ceiling.hard_rows, fx.ceiling.bytes_per_row),
            "hard": human_bytes(rows_bytes(fx.ceiling.hard_rows, fx.ceiling.bytes_per_row)),
            "reserved_rows": fx.ceiling.reserved_rows,
            "allocation_epoch": fx.ceiling.allocation_epoch,
        },
        "prediction_version": fx.prediction_version,
        "note": (
            "synthetic logical payload numbers: they do not measure prediction quality,"
            " latency, physical fragmentation or a production allocator"
        ),
    }
    if any(f.code in blocking for f in findings):
        return _result(path, findings, report)
    policies: dict[str, Any] = {}
    perturbed = _perturbed(fx)
    for i, pol in enumerate(fx.policies):
        # Online policies get the online projection (no hidden lengths). The metamorphic
        # check hands every policy the hidden lengths twice, once moved: a policy whose plan
        # changes reads hidden truth, whatever its label says.
        reads = pol.reads_hidden_truth
        plan = plan_admission(
            pol, fx.queue, fx.ceiling, fx.prediction_version, fx.hidden if reads else {}
        )
        seen = plan_admission(pol, fx.queue, fx.ceiling, fx.prediction_version, fx.hidden)
        moved = plan_admission(pol, fx.queue, fx.ceiling, fx.prediction_version, perturbed)
        metamorphic = _canonical(seen) == _canonical(moved)
        online = not reads
        if not metamorphic and not pol.oracle:
            findings.append(
                _f(
                    "ADMISSION.HIDDEN_TRUTH.PLAN_CHANGED",
                    f"policy {pol.policy_id}: changing hidden lengths changed its plan",
                    path,
                    f"/policies/{i}",
                )
            )
        scored = evaluate_offline(plan, fx.queue, fx.ceiling, pol.watermark_rows, fx.hidden)
        policies[pol.policy_id] = {
            "forecast": pol.forecast,
            "watermark_rows": pol.watermark_rows,
            "label": "oracle (reads hidden truth, hindsight only)" if pol.oracle else "online",
            "online": online,
            "hidden_lengths_invariant": metamorphic,
            "plan": plan.to_json(),
            "next_iteration": _next_iteration(plan, fx.queue, fx.budgets),
            **scored,
        }
    report["policies"] = policies
    for name in fx.expect:
        if name not in policies:
            findings.append(
                _f(
                    "ADMISSION.EXPECT.UNKNOWN_POLICY",
                    f"expectations name policy {name!r}, which the fixture does not declare",
                    path,
                    f"/expect/{name}",
                )
            )
            continue
        findings.extend(_compare(fx.expect[name], policies[name], f"/expect/{name}", path))
    return _result(path, findings, report)


def _result(path: str, findings: list[Finding], report: dict[str, Any]) -> CheckResult:
    pols = report.get("policies", {})
    charts: tuple[Mapping[str, Any], ...] = ()
    if pols:
        names = list(pols)
        charts = (
            {
                "type": "bars",
                "title": "Loop 5: reservation error by policy (logical K/V rows)",
                "categories": names,
                "series": {
                    "over-reserved (unused)": [pols[n]["over_reservation_rows"] for n in names],
                    "under-reserved": [pols[n]["under_reservation_rows"] for n in names],
                    "hard breach": [pols[n]["hard_breach_rows"] for n in names],
                },
                "y_label": "rows (131,072 bytes each)",
            },
        )
    summary = ", ".join(
        f"{n}: admits {len(p['admitted'])}, {p['recovery'].lower()}" for n, p in pols.items()
    )
    return CheckResult(
        check=NAME,
        subject=path,
        findings=tuple(findings),
        metrics=report,
        evidence_class=EvidenceClass.DERIVED,
        reason=summary or None,
        charts=charts,
    )
