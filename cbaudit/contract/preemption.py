"""Preemption and resume records (article 0x0C) and the resume-ticket derivation.

Four records with separate owners, bound by the same four-part key
(request_id, generation, snapshot_sha256, suspension_epoch):

* `PreemptionIntent` (M5.2 policy output): victim, recovery mode, fallback, frozen frontier;
* `ReleaseResult` (M5.3 fact): device K/V released? `reclaimed_bytes` counts only when READY;
* `PreservationResult` (M5.5 fact): exact rows preserved? the longest exact ready prefix;
* `ResumeTicket` (M5.2 derived): the rebuild interval [T_ready, T_target) and the ordinary
  interval after it, with the receipts it relied on.

Other foreign facts (allocation, exact prefix, promotion, layer readiness, placement) are
`ReadinessReceipt`s. An intent only requests actions; a receipt only counts when its owner is
the module that owns that fact and all four binding fields match the intent, which must itself
bind the request's current generation, digest and suspension epoch. A ticket needs the whole
readiness conjunction. Rebuild execution restores K/V only: it emits no output, moves no
semantic frontier and debits no fairness service; its cost is `recompute_overhead_tokens`.

`derive_resume` is pure; `check_case` compares what a case declares with the derivation and
returns `Issue`s with stable codes (listed in `CODES`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from typing import Any, NamedTuple


class Issue(NamedTuple):
    """A preemption/resume contract violation: code, pointer into the case file, message."""

    code: str
    pointer: str
    message: str


class Mode(StrEnum):
    PRESERVE_EXACT = "PRESERVE_EXACT"
    RECOMPUTE = "RECOMPUTE"
    ABORT = "ABORT"


class Fallback(StrEnum):
    RECOMPUTE = "RECOMPUTE"
    REMAIN_SUSPENDED = "REMAIN_SUSPENDED"
    ABORT = "ABORT"


class Status(StrEnum):
    READY = "READY"
    INFLIGHT = "INFLIGHT"
    FAILED = "FAILED"


class Lifecycle(StrEnum):
    RUNNING = "RUNNING"
    PREEMPT_PENDING = "PREEMPT_PENDING"
    SUSPENDED_PRESERVED = "SUSPENDED_PRESERVED"
    SUSPENDED_RECOMPUTE = "SUSPENDED_RECOMPUTE"
    RESUME_PENDING = "RESUME_PENDING"
    CANCELLED = "CANCELLED"


class Outcome(StrEnum):
    """What the scheduler may do with a suspended request generation now."""

    RESUMABLE = "resumable"  # a ResumeTicket exists
    PENDING = "pending"  # a required receipt is in flight or missing
    CANCELLED = "cancelled"  # a successor generation won; every old receipt is stale
    SUSPENDED = "suspended"  # preservation failed and the fallback is REMAIN_SUSPENDED
    ABORTED = "aborted"  # abort intent, or preservation failed with fallback ABORT
    BLOCKED = "blocked"  # a required receipt FAILED with no legal fallback


# Which module owns which fact (article 0x0C: M5.3 release/allocation/prefix identity,
# M5.5 preservation/promotion/layer readiness, M5.6 placement).
OWNERS: Mapping[str, str] = {
    "release": "M5.3",
    "allocation": "M5.3",
    "prefix": "M5.3",
    "preservation": "M5.5",
    "promotion": "M5.5",
    "layer": "M5.5",
    "placement": "M5.6",
}

# Field names that would carry physical or foreign implementation state.
PHYSICAL_FIELDS = frozenset(
    {
        "block_ids",
        "block_id",
        "block_table",
        "physical_blocks",
        "host_address",
        "copy_stream",
        "tier",
        "tier_placement",
        "worker",
        "worker_id",
        "device_pointer",
    }
)

CODES: Mapping[str, str] = {
    "PREEMPT.RECEIPT.WRONG_OWNER": "a receipt is published by a module that does not own it",
    "PREEMPT.RECEIPT.FAILED_READY": "a FAILED preservation receipt claims ready exact rows",
    "PREEMPT.CAPACITY.PENDING": "capacity is published from a release that is not READY",
    "PREEMPT.CAPACITY.MISMATCH": "published reclaimed bytes differ from the READY release",
    "PREEMPT.STALE.MISCLASSIFIED": "the declared stale receipts differ from the binding check",
    "PREEMPT.EPOCH.NOT_MONOTONE": "suspension epochs of one request attempt do not increase",
    "PREEMPT.PHYSICAL.LEAK": "an intent or ticket carries physical or foreign state",
    "PREEMPT.CLAIM.INFLATED": "synthetic contract evidence is claimed as something more",
    "PREEMPT.REPORT.COUNT": "a declared summary count differs from the derived one",
    "RESUME.FRONTIER.INVALID": "T_target is not the frozen frontier, or T_ready is outside it",
    "RESUME.TICKET.NOT_READY": "a ticket is declared while the readiness conjunction fails",
    "RESUME.TICKET.STALE": "a ticket is declared for a stale or cancelled generation",
    "RESUME.TICKET.STALE_RECEIPT": "a ticket relies on a receipt of another binding",
    "RESUME.TICKET.MISSING": "the conjunction holds but no ticket is declared",
    "RESUME.TICKET.BINDING": "the ticket's binding is not the intent's binding",
    "RESUME.TICKET.RECEIPTS": "the ticket's matched receipts are not the current ready ones",
    "RESUME.OUTCOME.MISMATCH": "the declared outcome differs from the derived one",
    "RESUME.FALLBACK.INVALID": "a failed preservation resumes without a RECOMPUTE fallback",
    "RESUME.FALLBACK.NO_HISTORY": "recompute is chosen without immutable token history",
    "RESUME.INTERVAL.WRONG": "the rebuild interval is not [T_ready, T_target)",
    "RESUME.NEXT.INTERVAL": "the ordinary interval after rebuild is not [T_target, T_target+1)",
    "RESUME.REBUILD.OUTPUT": "rebuild execution publishes output events",
    "RESUME.REBUILD.FRONTIER": "rebuild execution advances a semantic frontier",
    "RESUME.REBUILD.SERVICE": "rebuild execution debits fairness service",
    "RESUME.REBUILD.OVERHEAD": "recompute overhead tokens are not T_target - T_ready",
    "RESUME.CLOCK.RESTARTED": "a latency clock restarts at resume instead of at arrival",
}


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True, order=True)
class Binding:
    """The foreign binding; all four fields must match."""

    request_id: str
    generation: int
    snapshot_sha256: str
    suspension_epoch: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Binding:
        return cls(
            data["request_id"],
            data["generation"],
            data["snapshot_sha256"],
            data["suspension_epoch"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "generation": self.generation,
            "snapshot_sha256": self.snapshot_sha256,
            "suspension_epoch": self.suspension_epoch,
        }

    def differences(self, other: Binding) -> list[str]:
        """Names of the binding fields where `other` differs from this binding."""
        return [
            name
            for name in ("request_id", "generation", "snapshot_sha256", "suspension_epoch")
            if getattr(self, name) != getattr(other, name)
        ]


@dataclass(frozen=True, slots=True)
class PreemptionIntent:
    intent_id: str
    binding: Binding
    mode: Mode
    fallback: Fallback
    semantic_target_tokens: int
    reason: str
    policy_id: str
    decision_version: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PreemptionIntent:
        return cls(
            data["intent_id"],
            Binding.from_json(data["binding"]),
            Mode(data["mode"]),
            Fallback(data["fallback"]),
            data["semantic_target_tokens"],
            data["reason"],
            data["policy_id"],
            data["decision_version"],
        )


@dataclass(frozen=True, slots=True)
class Receipt:
    """A foreign fact: ReleaseResult, PreservationResult or another ReadinessReceipt."""

    receipt_id: str
    kind: str
    owner: str
    binding: Binding
    status: Status
    reclaimed_bytes: int | None = None  # release only
    exact_ready_prefix_tokens: int | None = None  # preservation and prefix
    layer: int | None = None  # layer readiness only

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Receipt:
        return cls(
            data["receipt_id"],
            data["kind"],
            data["owner"],
            Binding.from_json(data["binding"]),
            Status(data["status"]),
            data.get("reclaimed_bytes"),
            data.get("exact_ready_prefix_tokens"),
            data.get("layer"),
        )


@dataclass(frozen=True, slots=True)
class RequestSnapshot:
    """The request generation as the scheduler currently publishes it."""

    binding: Binding
    lifecycle: Lifecycle
    prompt_tokens: int
    emitted_tokens: int
    computed_tokens: int
    token_history: bool = True
    requires_promotion: bool = False
    required_layers: int = 0
    prior_epochs: tuple[int, ...] = ()
    client: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestSnapshot:
        return cls(
            Binding.from_json(data),
            Lifecycle(data["lifecycle"]),
            data["prompt_tokens"],
            data["emitted_tokens"],
            data["computed_tokens"],
            data.get("token_history", True),
            data.get("requires_promotion", False),
            data.get("required_layers", 0),
            tuple(data.get("prior_epochs", ())),
            data.get("client"),
        )

    @property
    def frozen_frontier(self) -> int:
        """T_target under the first-token convention: p + e - 1 once decoding, else c."""
        if self.emitted_tokens >= 1:
            return self.prompt_tokens + self.emitted_tokens - 1
        return self.computed_tokens


@dataclass(frozen=True, slots=True)
class ResumeTicket:
    binding: Binding
    semantic_target_tokens: int
    rebuild: tuple[int, int]
    next_ordinary: tuple[int, int]
    matched_receipts: tuple[str, ...]

    @property
    def recompute_overhead_tokens(self) -> int:
        return self.rebuild[1] - self.rebuild[0]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResumeTicket:
        rb, nx = data["rebuild_interval"], data["next_ordinary_interval"]
        return cls(
            Binding.from_json(data["binding"]),
            data["semantic_target_tokens"],
            (rb["start"], rb["end"]),
            (nx["start"], nx["end"]),
            tuple(data["matched_receipts"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "binding": self.binding.to_json(),
            "semantic_target_tokens": self.semantic_target_tokens,
            "rebuild_interval": {"start": self.rebuild[0], "end": self.rebuild[1]},
            "next_ordinary_interval": {
                "start": self.next_ordinary[0],
                "end": self.next_ordinary[1],
            },
            "matched_receipts": list(self.matched_receipts),
            "recompute_overhead_tokens": self.recompute_overhead_tokens,
        }


# --------------------------------------------------------------------------- derivation


@dataclass(frozen=True)
class Derivation:
    """What the scheduler may conclude from one snapshot, intent and receipt set."""

    outcome: Outcome
    ticket: ResumeTicket | None
    stale: tuple[tuple[str, tuple[str, ...]], ...]  # (receipt_id, differing binding fields)
    wrong_owner: tuple[str, ...]
    published_capacity_bytes: int
    t_ready: int | None
    t_target: int
    waiting_on: tuple[str, ...]  # why there is no ticket (empty when resumable)
    issues: tuple[Issue, ...]  # contract violations found while deriving


def _missing_layers(required: int, ready: Mapping[Any, Any], show: int = 16) -> list[int]:
    """The first `show` layers below `required` that are not ready, in time linear in the
    input (a hostile `required_layers` may be enormous; it is never enumerated in full)."""
    out: list[int] = []
    n = 0
    while n < required and len(out) < show:
        if n not in ready:
            out.append(n)
        n += 1
    return out


def _issue(code: str, pointer: str, message: str) -> Issue:
    if code not in CODES:  # a programming error, caught by the tests
        raise KeyError(code)
    return Issue(code, pointer, message)


def derive_resume(
    snapshot: RequestSnapshot,
    intent: PreemptionIntent,
    receipts: Sequence[Receipt],
    *,
    pointer: str = "",
) -> Derivation:
    """Derive the resume outcome and ticket (article 0x0C's `derive_resume_ticket`).

    In order: the frontiers and epochs are checked; the receipts are sorted into current,
    stale and wrong-owner ones; a cancelled or superseded intent, or an abort, ends there;
    then the readiness conjunction (release, allocation, placement, promotion, layers) and
    the exact ready rows decide between blocked, pending and resumable.
    """
    d = _Resume(snapshot, intent, pointer)
    d.check_frontiers()
    d.sort_receipts(receipts)
    if d.cancelled or not d.intent_current:
        return d.result(Outcome.CANCELLED, ["successor generation published"])
    if intent.mode is Mode.ABORT:
        return d.result(Outcome.ABORTED, ["abort intent"])
    waiting, matched = d.readiness()
    rows = d.ready_rows(waiting, matched)
    if isinstance(rows, Derivation):
        return rows
    if rows > d.t_target:
        d.issues.append(
            _issue(
                "RESUME.FRONTIER.INVALID",
                f"{pointer}/receipts",
                f"T_ready {rows} exceeds T_target {d.t_target}: exact rows beyond the frozen"
                " semantic state",
            )
        )
        return d.result(Outcome.BLOCKED, ["T_ready beyond T_target"], rows)
    if waiting:
        return d.result(Outcome.PENDING, waiting, rows)
    return d.resumable(rows, matched)


class _Resume:
    """One derivation in progress: the intent's binding, the receipts sorted by whether they
    count, and the issues found on the way."""

    def __init__(self, snapshot: RequestSnapshot, intent: PreemptionIntent, pointer: str) -> None:
        self.snapshot = snapshot
        self.intent = intent
        self.pointer = pointer
        self.issues: list[Issue] = []
        self.key = intent.binding
        self.identity = snapshot.binding
        self.cancelled = snapshot.lifecycle is Lifecycle.CANCELLED
        self.intent_current = not self.cancelled and not self.key.differences(self.identity)
        self.t_target = intent.semantic_target_tokens
        self.stale: list[tuple[str, tuple[str, ...]]] = []
        self.wrong_owner: list[str] = []
        self.current: dict[str, list[Receipt]] = {}
        self.capacity = 0

    def check_frontiers(self) -> None:
        """Suspension epochs strictly increase; T_target is the frozen frontier."""
        snapshot = self.snapshot
        epochs = [*snapshot.prior_epochs, self.identity.suspension_epoch]
        if any(b <= a for a, b in pairwise(epochs)):
            self.issues.append(
                _issue(
                    "PREEMPT.EPOCH.NOT_MONOTONE",
                    f"{self.pointer}/request/prior_epochs",
                    f"suspension epochs {epochs} are not strictly increasing",
                )
            )
        t_target = self.t_target
        if t_target != snapshot.frozen_frontier or snapshot.computed_tokens != t_target:
            self.issues.append(
                _issue(
                    "RESUME.FRONTIER.INVALID",
                    f"{self.pointer}/intent/semantic_target_tokens",
                    f"T_target {t_target} is not the frozen frontier: p={snapshot.prompt_tokens},"
                    f" e={snapshot.emitted_tokens}, c={snapshot.computed_tokens} give"
                    f" {snapshot.frozen_frontier}",
                )
            )

    def sort_receipts(self, receipts: Sequence[Receipt]) -> None:
        """Wrong-owner receipts never count, stale ones (another binding) neither; the rest
        are current, by kind. A READY release publishes its reclaimed capacity."""
        for i, rc in enumerate(receipts):
            if not self._owned(f"{self.pointer}/receipts/{i}", rc):
                continue
            diff = self.key.differences(rc.binding)
            if not self.intent_current:
                diff = sorted(set(diff) | set(rc.binding.differences(self.identity)))
                diff = diff or ["generation"]
            if diff:
                self.stale.append((rc.receipt_id, tuple(diff)))
                continue
            self.current.setdefault(rc.kind, []).append(rc)
        release = self.ready("release")
        self.capacity = (release.reclaimed_bytes or 0) if release is not None else 0

    def _owned(self, rp: str, rc: Receipt) -> bool:
        """The receipt's owner publishes its kind (else WRONG_OWNER, and it does not count);
        a receipt that is not READY claims no capacity or ready rows."""
        if OWNERS.get(rc.kind) != rc.owner:
            self.wrong_owner.append(rc.receipt_id)
            self.issues.append(
                _issue(
                    "PREEMPT.RECEIPT.WRONG_OWNER",
                    f"{rp}/owner",
                    f"{rc.kind} receipt {rc.receipt_id} comes from {rc.owner};"
                    f" only {OWNERS.get(rc.kind)} publishes {rc.kind} facts",
                )
            )
            return False
        if rc.kind == "release" and rc.status is not Status.READY and rc.reclaimed_bytes:
            self.issues.append(
                _issue(
                    "PREEMPT.CAPACITY.PENDING",
                    f"{rp}/reclaimed_bytes",
                    f"release {rc.receipt_id} is {rc.status.value} but reports"
                    f" {rc.reclaimed_bytes} reclaimed bytes",
                )
            )
        failed = rc.status is Status.FAILED
        if rc.kind == "preservation" and failed and rc.exact_ready_prefix_tokens:
            self.issues.append(
                _issue(
                    "PREEMPT.RECEIPT.FAILED_READY",
                    f"{rp}/exact_ready_prefix_tokens",
                    f"FAILED preservation {rc.receipt_id} claims"
                    f" {rc.exact_ready_prefix_tokens} ready rows",
                )
            )
        return True

    def ready(self, kind: str) -> Receipt | None:
        """The first current READY receipt of `kind`."""
        for rc in self.current.get(kind, ()):
            if rc.status is Status.READY:
                return rc
        return None

    def result(
        self, outcome: Outcome, waiting: list[str], t_ready: int | None = None
    ) -> Derivation:
        """A derivation without a ticket."""
        return Derivation(
            outcome,
            None,
            tuple(self.stale),
            tuple(self.wrong_owner),
            self.capacity if outcome is not Outcome.CANCELLED else 0,
            t_ready,
            self.t_target,
            tuple(waiting),
            tuple(self.issues),
        )

    def readiness(self) -> tuple[list[str], list[Receipt]]:
        """The readiness conjunction: what is not READY yet, and the receipts relied on."""
        waiting: list[str] = []
        matched: list[Receipt] = []
        kinds = ["release", "allocation", "placement"]
        if self.snapshot.requires_promotion:
            kinds.append("promotion")
        for kind in kinds:
            found = self.ready(kind)
            if found is None:
                waiting.append(f"{kind} not READY")
            else:
                matched.append(found)
        if self.snapshot.required_layers:
            layers = {
                rc.layer: rc for rc in self.current.get("layer", ()) if rc.status is Status.READY
            }
            missing = _missing_layers(self.snapshot.required_layers, layers)
            if missing:
                waiting.append(f"layers {missing} not READY")
            matched.extend(layers[n] for n in sorted(k for k in layers if k is not None))
        return waiting, matched

    def ready_rows(self, waiting: list[str], matched: list[Receipt]) -> int | Derivation:
        """T_ready, the exact rows ready to reuse (a derivation when the mode's fallback, or a
        missing token history, already decides the outcome)."""
        if self.intent.mode is not Mode.PRESERVE_EXACT:
            if not self.snapshot.token_history:
                return self._no_history("mode", "recompute chosen", "recompute")
            prefix = self.ready("prefix")
            if prefix is None:
                return 0
            matched.append(prefix)
            return prefix.exact_ready_prefix_tokens or 0
        ok = self.ready("preservation")
        if ok is not None:
            matched.append(ok)
            return ok.exact_ready_prefix_tokens or 0
        if not any(rc.status is Status.FAILED for rc in self.current.get("preservation", [])):
            waiting.append("preservation not READY")
            return 0
        fallback = self.intent.fallback
        if fallback is Fallback.REMAIN_SUSPENDED:
            why = "preservation FAILED; fallback REMAIN_SUSPENDED"
            return self.result(Outcome.SUSPENDED, [why])
        if fallback is Fallback.ABORT:
            return self.result(Outcome.ABORTED, ["preservation FAILED; fallback ABORT"])
        if not self.snapshot.token_history:
            return self._no_history("fallback", "recompute fallback chosen", "recompute fallback")
        return 0

    def _no_history(self, field: str, chosen: str, what: str) -> Derivation:
        """A recompute without the immutable token history it rebuilds from is blocked."""
        self.issues.append(
            _issue(
                "RESUME.FALLBACK.NO_HISTORY",
                f"{self.pointer}/intent/{field}",
                f"{chosen} without immutable token history",
            )
        )
        return self.result(Outcome.BLOCKED, [f"{what} without token history"])

    def resumable(self, t_ready: int, matched: list[Receipt]) -> Derivation:
        """The ticket: rebuild [T_ready, T_target), then the ordinary interval after it."""
        t_target = self.t_target
        ticket = ResumeTicket(
            self.key,
            t_target,
            (t_ready, t_target),
            (t_target, t_target + 1),
            tuple(rc.receipt_id for rc in sorted(matched, key=lambda r: r.receipt_id)),
        )
        return Derivation(
            Outcome.RESUMABLE,
            ticket,
            tuple(self.stale),
            tuple(self.wrong_owner),
            self.capacity,
            t_ready,
            t_target,
            (),
            tuple(self.issues),
        )


@dataclass(frozen=True)
class RebuildEffect:
    """What executing a ticket's rebuild interval publishes (by construction: only overhead)."""

    output_events: int
    semantic_frontier_delta: int
    service_debit: int
    recompute_overhead_tokens: int

    def to_json(self) -> dict[str, int]:
        return {
            "output_events": self.output_events,
            "semantic_frontier_delta": self.semantic_frontier_delta,
            "service_debit": self.service_debit,
            "recompute_overhead_tokens": self.recompute_overhead_tokens,
        }


def execute_rebuild(ticket: ResumeTicket) -> RebuildEffect:
    """Rebuild [T_ready, T_target): K/V restored, nothing semantic published."""
    return RebuildEffect(0, 0, 0, ticket.recompute_overhead_tokens)


def find_physical_fields(data: Any, pointer: str = "") -> list[str]:
    """JSON pointers of keys that name physical or foreign implementation state."""
    out: list[str] = []
    if isinstance(data, Mapping):
        for k, v in data.items():
            here = f"{pointer}/{k}"
            if k in PHYSICAL_FIELDS:
                out.append(here)
            out.extend(find_physical_fields(v, here))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(find_physical_fields(v, f"{pointer}/{i}"))
    return out


def _outcome_code(declared: Outcome, derived: Outcome) -> str:
    if declared is Outcome.RESUMABLE:
        if derived is Outcome.PENDING:
            return "RESUME.TICKET.NOT_READY"
        if derived is Outcome.CANCELLED:
            return "RESUME.TICKET.STALE"
        if derived in (Outcome.SUSPENDED, Outcome.ABORTED):
            return "RESUME.FALLBACK.INVALID"
    if derived is Outcome.RESUMABLE:
        return "RESUME.TICKET.MISSING"
    return "RESUME.OUTCOME.MISMATCH"


def check_case(derivation: Derivation, declared: Mapping[str, Any], *, pointer: str) -> list[Issue]:
    """Compare what a case declares with the derivation; one issue per disagreement."""
    out = list(derivation.issues)
    d = derivation
    dp = f"{pointer}/declared"
    want = Outcome(declared["outcome"])
    if want is not d.outcome and d.outcome is not Outcome.BLOCKED:
        out.append(
            _issue(
                _outcome_code(want, d.outcome),
                f"{dp}/outcome",
                f"declared {want.value}; derived {d.outcome.value}"
                + (f" ({'; '.join(d.waiting_on)})" if d.waiting_on else ""),
            )
        )
    stale_ids = sorted(r for r, _ in d.stale)
    if sorted(declared["stale_receipts"]) != stale_ids:
        out.append(
            _issue(
                "PREEMPT.STALE.MISCLASSIFIED",
                f"{dp}/stale_receipts",
                f"declared stale {sorted(declared['stale_receipts'])}; the binding check finds"
                f" {stale_ids}",
            )
        )
    cap = declared["published_capacity_bytes"]
    if cap != d.published_capacity_bytes:
        code = (
            "PREEMPT.CAPACITY.PENDING"
            if cap > d.published_capacity_bytes == 0
            else ("PREEMPT.CAPACITY.MISMATCH")
        )
        out.append(
            _issue(
                code,
                f"{dp}/published_capacity_bytes",
                f"declared {cap} reclaimed bytes; only a current READY release publishes"
                f" capacity ({d.published_capacity_bytes})",
            )
        )
    if declared.get("ttft_origin", "arrival") != "arrival":
        out.append(
            _issue(
                "RESUME.CLOCK.RESTARTED",
                f"{dp}/ttft_origin",
                f"TTFT measured from {declared['ttft_origin']}; clocks run from original arrival",
            )
        )
    ticket_data = declared.get("ticket")
    if ticket_data is not None and d.ticket is not None:
        out.extend(_check_ticket(d, ResumeTicket.from_json(ticket_data), ticket_data, dp))
    elif ticket_data is not None and want is Outcome.RESUMABLE and d.outcome is Outcome.BLOCKED:
        pass  # the blocking issue is already reported
    elif ticket_data is None and d.ticket is not None and want is Outcome.RESUMABLE:
        out.append(_issue("RESUME.TICKET.MISSING", f"{dp}/ticket", "resumable but no ticket"))
    if ticket_data is not None and d.ticket is None:
        used = set(ticket_data.get("matched_receipts", ()))
        stale_used = sorted(used & set(stale_ids))
        if stale_used:
            out.append(
                _issue(
                    "RESUME.TICKET.STALE_RECEIPT",
                    f"{dp}/ticket/matched_receipts",
                    f"the ticket relies on stale receipts {stale_used}",
                )
            )
    rebuild = declared.get("rebuild")
    if rebuild is not None:
        out.extend(_check_rebuild(d, rebuild, f"{dp}/rebuild"))
    return out


def _check_ticket(
    d: Derivation, got: ResumeTicket, data: Mapping[str, Any], dp: str
) -> list[Issue]:
    want = d.ticket
    assert want is not None
    out: list[Issue] = []
    tp = f"{dp}/ticket"
    if got.binding != want.binding:
        out.append(
            _issue(
                "RESUME.TICKET.BINDING",
                f"{tp}/binding",
                f"ticket binds {got.binding.differences(want.binding)} differently from the intent",
            )
        )
    if got.rebuild != want.rebuild or got.semantic_target_tokens != want.semantic_target_tokens:
        out.append(
            _issue(
                "RESUME.INTERVAL.WRONG",
                f"{tp}/rebuild_interval",
                f"rebuild [{got.rebuild[0]},{got.rebuild[1]}) declared; [T_ready, T_target) is"
                f" [{want.rebuild[0]},{want.rebuild[1]})",
            )
        )
    if got.next_ordinary != want.next_ordinary:
        out.append(
            _issue(
                "RESUME.NEXT.INTERVAL",
                f"{tp}/next_ordinary_interval",
                f"ordinary [{got.next_ordinary[0]},{got.next_ordinary[1]}) declared; the next"
                f" legal interval is [{want.next_ordinary[0]},{want.next_ordinary[1]})",
            )
        )
    stale_ids = {r for r, _ in d.stale}
    stale_used = sorted(set(got.matched_receipts) & stale_ids)
    if stale_used:
        out.append(
            _issue(
                "RESUME.TICKET.STALE_RECEIPT",
                f"{tp}/matched_receipts",
                f"the ticket relies on stale receipts {stale_used}",
            )
        )
    elif sorted(got.matched_receipts) != sorted(want.matched_receipts):
        out.append(
            _issue(
                "RESUME.TICKET.RECEIPTS",
                f"{tp}/matched_receipts",
                f"matched {sorted(got.matched_receipts)}; current ready receipts are"
                f" {sorted(want.matched_receipts)}",
            )
        )
    overhead = data.get("recompute_overhead_tokens")
    if overhead != want.recompute_overhead_tokens:
        out.append(
            _issue(
                "RESUME.REBUILD.OVERHEAD",
                f"{tp}/recompute_overhead_tokens",
                f"declared {overhead}; T_target - T_ready = {want.recompute_overhead_tokens}",
            )
        )
    return out


def _check_rebuild(d: Derivation, rebuild: Mapping[str, Any], rp: str) -> list[Issue]:
    out: list[Issue] = []
    if rebuild["output_events"]:
        out.append(
            _issue(
                "RESUME.REBUILD.OUTPUT",
                f"{rp}/output_events",
                f"rebuild publishes {rebuild['output_events']} output events; it must publish 0",
            )
        )
    if rebuild["semantic_frontier_delta"]:
        out.append(
            _issue(
                "RESUME.REBUILD.FRONTIER",
                f"{rp}/semantic_frontier_delta",
                "rebuild advances the semantic frontier by"
                f" {rebuild['semantic_frontier_delta']}; it must not move",
            )
        )
    if rebuild["service_debit"]:
        out.append(
            _issue(
                "RESUME.REBUILD.SERVICE",
                f"{rp}/service_debit",
                f"rebuild debits {rebuild['service_debit']} fairness service; recompute overhead"
                " is not semantic service",
            )
        )
    if d.ticket is not None:
        effect = execute_rebuild(d.ticket)
        if rebuild["recompute_overhead_tokens"] != effect.recompute_overhead_tokens:
            out.append(
                _issue(
                    "RESUME.REBUILD.OVERHEAD",
                    f"{rp}/recompute_overhead_tokens",
                    f"declared {rebuild['recompute_overhead_tokens']};"
                    f" T_target - T_ready = {effect.recompute_overhead_tokens}",
                )
            )
    return out
