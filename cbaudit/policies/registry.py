"""The explicit policy registry: id -> factory(options) and a one-line summary.

Adding a policy is adding one module, its loader (a function that imports the module and builds
the policy) and one `register(...)` line below. A policy's module loads only when the policy is
created, so a replay under one policy does not pay for the other twenty (issue 13, start-up).
Duplicates are refused, and so is a policy without a one-line summary (`cbaudit replay
--list-policies`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from cbaudit.policies.base import Policy

Factory = Callable[[Mapping[str, Any]], Policy]


class _ReadOptions(Mapping[str, Any]):
    """Options that remember which keys a policy asked for (to refuse the ones it never did)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._data = dict(options)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class Registry:
    """A dict of factories that refuses a second registration under the same id."""

    def __init__(self) -> None:
        self._items: dict[str, Factory] = {}
        self._summaries: dict[str, str] = {}

    def register(self, policy_id: str, factory: Factory, summary: str) -> None:
        if policy_id in self._items:
            raise ValueError(f"policy {policy_id!r} is already registered")
        if not summary.strip() or "\n" in summary:
            raise ValueError(f"policy {policy_id!r} needs a one-line summary")
        self._items[policy_id] = factory
        self._summaries[policy_id] = summary

    def ids(self) -> list[str]:
        return sorted(self._items)

    def summary(self, policy_id: str) -> str:
        """The policy's one-line description."""
        return self._summaries[policy_id]

    def __contains__(self, policy_id: object) -> bool:
        return policy_id in self._items

    def create(self, policy_id: str, options: Mapping[str, Any] | None = None) -> Policy:
        """Instantiate `policy_id` with `options` (KeyError if unknown, ValueError if bad).

        An option the policy never reads while it is built is refused: a misspelt option
        silently falling back to its default would replay a different policy than declared.
        """
        tracked = _ReadOptions(options or {})
        policy = self._items[policy_id](tracked)
        unread = sorted(set(tracked) - tracked.read)
        if unread:
            known = sorted(tracked.read)
            raise ValueError(
                f"policy {policy_id!r} has no option {', '.join(map(repr, unread))}"
                + (f" (options it looked for: {', '.join(known)})" if known else "")
            )
        return policy


def _no_options(cls: Callable[[], Policy]) -> Factory:
    def make(options: Mapping[str, Any]) -> Policy:
        if options:
            raise ValueError(f"this policy takes no options (got {sorted(options)})")
        return cls()

    return make


# Each policy's module loads when the policy is created (a replay under `fifo` does not load
# the other policies); the ids, summaries and duplicate checks below need none of them.


def _bounded_admission(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.bounded_admission import BoundedAdmissionPolicy

    return BoundedAdmissionPolicy(options)


def _fast_serve_mlfq(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.fastserve_mlfq import FastServeMlfqPolicy

    return FastServeMlfqPolicy(options)


def _fifo(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.fifo_fair import FifoPolicy

    return FifoPolicy(options)


def _least_service(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.least_service import LeastServicePolicy

    return LeastServicePolicy(options)


def _least_slack(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.least_slack import LeastSlackPolicy

    return LeastSlackPolicy(options)


def _orca(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.orca import OrcaPolicy

    return OrcaPolicy(options)


def _decode_first(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.phase_first import DecodeFirstPolicy

    return DecodeFirstPolicy(options)


def _prefill_first(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.phase_first import PrefillFirstPolicy

    return PrefillFirstPolicy(options)


def _prefix_quota(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.prefix_quota import PrefixQuotaPolicy

    return PrefixQuotaPolicy(options)


def _reuse_greedy(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.prefix_quota import ReuseGreedyPolicy

    return ReuseGreedyPolicy(options)


def _priority_aging(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.priority_aging import PriorityAgingPolicy

    return PriorityAgingPolicy(options)


def _static_priority(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.priority_aging import StaticPriorityPolicy

    return StaticPriorityPolicy(options)


def _sarathi_serve(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.sarathi import SarathiServePolicy

    return _no_options(SarathiServePolicy)(options)


def _static(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.static import StaticPolicy

    return _no_options(StaticPolicy)(options)


def _vllm_v1(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.vllm_v1 import VllmV1Policy

    return VllmV1Policy(options)


def _vtc_completion_reconciled(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.vtc import VtcCompletionReconciledPolicy

    return VtcCompletionReconciledPolicy(options)


def _vtc(options: Mapping[str, Any]) -> Policy:
    from cbaudit.policies.vtc import VtcPolicy

    return VtcPolicy(options)


class _Reservation:
    """The factory of one reservation mode (`cbaudit.policies.reservation`, loaded on use)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __call__(self, options: Mapping[str, Any]) -> Policy:
        from cbaudit.policies.reservation import ReservationPolicy

        return ReservationPolicy(self.mode, options)


_RESERVATION_SUMMARIES = {
    "maximum": "reservation admission, FIFO: reserve the declared max_output_tokens (never"
    " under-reserves)",
    "point": "reservation admission, FIFO: reserve a point forecast (point_fraction of"
    " max_output_tokens)",
    "quantile": "reservation admission, FIFO: reserve quantile_fraction (default 0.9) of"
    " max_output_tokens",
    "watermark": "reservation admission, FIFO: the quantile forecast under a soft ceiling"
    " (capacity less watermark_rows)",
}

POLICIES = Registry()
POLICIES.register(
    "static",
    _static,
    "a fixed request batch: nobody joins until its longest member finishes",
)
POLICIES.register(
    "orca", _orca, "iteration-level FCFS (ORCA), optionally reserving max_tokens per request"
)
POLICIES.register(
    "sarathi-serve",
    _sarathi_serve,
    "stall-free batching (Sarathi-Serve): decodes, then partial prefills, then chunked admissions",
)
POLICIES.register(
    "vllm-v1",
    _vllm_v1,
    "the decision shape of the pinned vLLM v0.23.0 V1 scheduler, preempting by recompute",
)
POLICIES.register(
    "decode-first",
    _decode_first,
    "decode rows take the token budget before prefill (optional prefill reserve)",
)
POLICIES.register(
    "prefill-first",
    _prefill_first,
    "prefill takes the token budget before decode rows (optional decode reserve)",
)
POLICIES.register(
    "least-slack",
    _least_slack,
    "least predicted slack to the TTFT/TBT deadline first (article 0x07)",
)
POLICIES.register(
    "bounded-admission",
    _bounded_admission,
    "a live-request cap (rejecting the rest) in front of least-slack selection",
)
for _mode, _summary in _RESERVATION_SUMMARIES.items():  # a test holds these reservation.MODES
    POLICIES.register(f"reservation-{_mode}", _Reservation(_mode), _summary)
# Fairness and starvation (article 0x09A, issue 4 part B).
POLICIES.register("fifo", _fifo, "request FIFO, blind to clients (the fairness baseline)")
POLICIES.register(
    "least-service",
    _least_service,
    "the client with the least completed weighted service first",
)
POLICIES.register(
    "vtc",
    _vtc,
    "virtual token counters per client (VTC, Algorithm 2 shape)",
)
POLICIES.register(
    "vtc-completion-reconciled",
    _vtc_completion_reconciled,
    "VTC with provisional charges settled by completed rows (the article's teaching variant)",
)
POLICIES.register(
    "fastserve-mlfq",
    _fast_serve_mlfq,
    "skip-join multi-level feedback queue with demotion and starvation promotion",
)
POLICIES.register(
    "static-priority",
    _static_priority,
    "fixed numeric priority, lower first (can starve old low-priority requests)",
)
POLICIES.register(
    "priority-aging",
    _priority_aging,
    "priority that improves with waiting time, so a waiting request eventually wins",
)
POLICIES.register(
    "reuse-greedy",
    _reuse_greedy,
    "cache-hit groups served greedily in declared order (the cold group can starve)",
)
POLICIES.register(
    "prefix-quota",
    _prefix_quota,
    "cache-hit groups served by a weighted quota cycle (default hot 2 : cold 1)",
)
