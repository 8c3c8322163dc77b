"""`reuse-greedy` and `prefix-quota`: cache-hit groups competing for slots (article 0x09A).

The replay engine has no prefix cache, so the cache-hit group of a request is declared by its
`client` label (e.g. `hot` for large exact-prefix hits, `cold` for unique prompts).
`reuse-greedy` serves groups in the declared `groups` order (default hot, cold): the hot group
takes every slot while it has work, and the cold group can starve. `prefix-quota` walks a
weighted cycle (`quota`, default hot 2 : cold 1): iteration k prefers the group owning slot
k mod the cycle length and falls back to the others when it has no ready work.

A teaching quota, not Preble: Preble samples priority groups proportionally by cached-token
percentage. Two clients inside one group can still receive unequal service.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.least_service import client_of, live, select_in_order

DEFERRED_GROUP_QUOTA = "DEFERRED_GROUP_QUOTA"


def _groups(options: Mapping[str, Any], default: list[str]) -> list[str]:
    groups = options.get("groups", default)
    if not isinstance(groups, list) or not groups or not all(isinstance(g, str) for g in groups):
        raise ValueError("policy option 'groups' must be a non-empty list of group names")
    return groups


def _order(reqs: list[LiveRequest], groups: list[str]) -> list[LiveRequest]:
    rank = {g: i for i, g in enumerate(groups)}
    return sorted(reqs, key=lambda r: (rank.get(client_of(r), len(rank)), r.arrival_order, r.rid))


class ReuseGreedyPolicy:
    policy_id = "reuse-greedy"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = sorted(set(options) - {"groups"})
        if unknown:
            raise ValueError(f"unknown policy options {unknown} (known: groups)")
        self.groups = _groups(options, ["hot", "cold"])

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        select_in_order(view, plan, _order(live(view), self.groups), DEFERRED_GROUP_QUOTA)


class PrefixQuotaPolicy:
    policy_id = "prefix-quota"
    policy_version = "teaching-quota.1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = sorted(set(options) - {"quota"})
        if unknown:
            raise ValueError(f"unknown policy options {unknown} (known: quota)")
        quota = options.get("quota", {"hot": 2, "cold": 1})
        if (
            not isinstance(quota, Mapping)
            or not quota
            or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in quota.values()
            )
        ):
            raise ValueError("policy option 'quota' must map group names to integers >= 1")
        self.cycle = [g for g, n in quota.items() for _ in range(n)]
        self.groups = list(quota)

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        slot = self.cycle[(view.iteration - 1) % len(self.cycle)]
        groups = [slot, *[g for g in self.groups if g != slot]]
        select_in_order(view, plan, _order(live(view), groups), DEFERRED_GROUP_QUOTA)
