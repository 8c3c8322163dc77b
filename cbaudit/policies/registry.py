"""The explicit policy registry: id -> factory(options). Duplicates are refused.

Adding a policy is adding one module and one `register(...)` line below.
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

    def register(self, policy_id: str, factory: Factory) -> None:
        if policy_id in self._items:
            raise ValueError(f"policy {policy_id!r} is already registered")
        self._items[policy_id] = factory

    def ids(self) -> list[str]:
        return sorted(self._items)

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


POLICIES = Registry()
POLICIES.register("static", _no_options(StaticPolicy))
POLICIES.register("orca", OrcaPolicy)
POLICIES.register("sarathi-serve", _no_options(SarathiServePolicy))
POLICIES.register("vllm-v1", VllmV1Policy)
POLICIES.register("decode-first", DecodeFirstPolicy)
POLICIES.register("prefill-first", PrefillFirstPolicy)
POLICIES.register("least-slack", LeastSlackPolicy)
POLICIES.register("bounded-admission", BoundedAdmissionPolicy)
for _mode in RESERVATION_MODES:
    POLICIES.register(f"reservation-{_mode}", reservation_factory(_mode))
# Fairness and starvation (article 0x09A, issue 4 part B).
POLICIES.register("fifo", FifoPolicy)
POLICIES.register("least-service", LeastServicePolicy)
POLICIES.register("vtc", VtcPolicy)
POLICIES.register("vtc-completion-reconciled", VtcCompletionReconciledPolicy)
POLICIES.register("fastserve-mlfq", FastServeMlfqPolicy)
POLICIES.register("static-priority", StaticPriorityPolicy)
POLICIES.register("priority-aging", PriorityAgingPolicy)
POLICIES.register("reuse-greedy", ReuseGreedyPolicy)
POLICIES.register("prefix-quota", PrefixQuotaPolicy)
