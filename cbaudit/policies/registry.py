"""The explicit policy registry: id -> factory(options) and a one-line summary.

Adding a policy is adding one module and one `register(...)` line below. Duplicates are
refused, and so is a policy without a one-line summary (`cbaudit replay --list-policies`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from cbaudit.policies.base import Policy
from cbaudit.policies.bounded_admission import BoundedAdmissionPolicy
from cbaudit.policies.fastserve_mlfq import FastServeMlfqPolicy
from cbaudit.policies.fifo_fair import FifoPolicy
from cbaudit.policies.least_service import LeastServicePolicy
from cbaudit.policies.least_slack import LeastSlackPolicy
from cbaudit.policies.orca import OrcaPolicy
from cbaudit.policies.phase_first import DecodeFirstPolicy, PrefillFirstPolicy
from cbaudit.policies.prefix_quota import PrefixQuotaPolicy, ReuseGreedyPolicy
from cbaudit.policies.priority_aging import PriorityAgingPolicy, StaticPriorityPolicy
from cbaudit.policies.reservation import MODES as RESERVATION_MODES
from cbaudit.policies.reservation import factory as reservation_factory
from cbaudit.policies.sarathi import SarathiServePolicy
from cbaudit.policies.static import StaticPolicy
from cbaudit.policies.vllm_v1 import VllmV1Policy
from cbaudit.policies.vtc import VtcCompletionReconciledPolicy, VtcPolicy

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
    _no_options(StaticPolicy),
    "a fixed request batch: nobody joins until its longest member finishes",
)
POLICIES.register(
    "orca", OrcaPolicy, "iteration-level FCFS (ORCA), optionally reserving max_tokens per request"
)
POLICIES.register(
    "sarathi-serve",
    _no_options(SarathiServePolicy),
    "stall-free batching (Sarathi-Serve): decodes, then partial prefills, then chunked admissions",
)
POLICIES.register(
    "vllm-v1",
    VllmV1Policy,
    "the decision shape of the pinned vLLM v0.23.0 V1 scheduler, preempting by recompute",
)
POLICIES.register(
    "decode-first",
    DecodeFirstPolicy,
    "decode rows take the token budget before prefill (optional prefill reserve)",
)
POLICIES.register(
    "prefill-first",
    PrefillFirstPolicy,
    "prefill takes the token budget before decode rows (optional decode reserve)",
)
POLICIES.register(
    "least-slack",
    LeastSlackPolicy,
    "least predicted slack to the TTFT/TBT deadline first (article 0x07)",
)
POLICIES.register(
    "bounded-admission",
    BoundedAdmissionPolicy,
    "a live-request cap (rejecting the rest) in front of least-slack selection",
)
for _mode in RESERVATION_MODES:
    POLICIES.register(
        f"reservation-{_mode}", reservation_factory(_mode), _RESERVATION_SUMMARIES[_mode]
    )
# Fairness and starvation (article 0x09A, issue 4 part B).
POLICIES.register("fifo", FifoPolicy, "request FIFO, blind to clients (the fairness baseline)")
POLICIES.register(
    "least-service",
    LeastServicePolicy,
    "the client with the least completed weighted service first",
)
POLICIES.register(
    "vtc",
    VtcPolicy,
    "virtual token counters per client (VTC, Algorithm 2 shape)",
)
POLICIES.register(
    "vtc-completion-reconciled",
    VtcCompletionReconciledPolicy,
    "VTC with provisional charges settled by completed rows (the article's teaching variant)",
)
POLICIES.register(
    "fastserve-mlfq",
    FastServeMlfqPolicy,
    "skip-join multi-level feedback queue with demotion and starvation promotion",
)
POLICIES.register(
    "static-priority",
    StaticPriorityPolicy,
    "fixed numeric priority, lower first (can starve old low-priority requests)",
)
POLICIES.register(
    "priority-aging",
    PriorityAgingPolicy,
    "priority that improves with waiting time, so a waiting request eventually wins",
)
POLICIES.register(
    "reuse-greedy",
    ReuseGreedyPolicy,
    "cache-hit groups served greedily in declared order (the cold group can starve)",
)
POLICIES.register(
    "prefix-quota",
    PrefixQuotaPolicy,
    "cache-hit groups served by a weighted quota cycle (default hot 2 : cold 1)",
)
