"""Deterministic work done once per scope: parses of the same bytes, replays of the same inputs.

A gate worker runs many checks that repeat the same work: every mutant of a bundle re-reads the
files it did not change, and re-runs the replays whose inputs it did not change. Inside
`reusing()` such work is looked up by a key that holds everything it depends on (`recall`) and
kept when first done (`keep`); outside it, `recall` finds nothing and `keep` keeps nothing, so
every other caller computes as before. What is kept must be the caller's private copy, and what
`recall` gives back is handed out by the caller only as a fresh copy (`fresh`), so that no two
users of one result share anything they could change.

Each kind of work has its own store, bounded by the sizes its caller gives (least recently
used dropped first). The outermost `reusing()` block drops every store when it ends.
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Any

from cbaudit.model.canonical import dumps_canonical

__all__ = ["active", "fresh", "held", "json_key", "keep", "recall", "reusing"]


class _Store:
    """One kind's kept values, least recently used first, with the sum of their sizes."""

    __slots__ = ("held", "values")

    def __init__(self) -> None:
        self.values: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.held = 0


#: The stores of the active scope by kind; None outside `reusing()`.
_SCOPE: dict[str, _Store] | None = None
_ATOMS = frozenset((str, int, float, bool, type(None)))


@contextmanager
def reusing() -> Iterator[None]:
    """Within this block, work kept by `keep` is found by `recall`. Nested blocks share the
    outermost one's stores, which are dropped when it ends."""
    global _SCOPE
    if _SCOPE is not None:
        yield
        return
    _SCOPE = {}
    try:
        yield
    finally:
        _SCOPE = None


def active() -> bool:
    """Whether a `reusing()` block is active."""
    return _SCOPE is not None


def recall(kind: str, key: Hashable) -> Any:
    """The value kept for `key` of `kind` in the active scope, or None."""
    scope = _SCOPE
    if scope is None:
        return None
    store = scope.get(kind)
    if store is None:
        return None
    held = store.values.get(key)
    if held is None:
        return None
    store.values.move_to_end(key)
    return held[0]


def keep(kind: str, key: Hashable, value: Any, *, size: int, limit: int) -> None:
    """Keep `value` (the caller's private copy, never None) for `key` of `kind` in the active
    scope: nothing when none is active or `size` alone exceeds `limit`; otherwise the least
    recently used values of `kind` go until the sizes kept are within `limit`."""
    scope = _SCOPE
    if scope is None or size > limit:
        return
    store = scope.get(kind)
    if store is None:
        store = scope[kind] = _Store()
    old = store.values.pop(key, None)
    if old is not None:
        store.held -= old[1]
    store.values[key] = (value, size)
    store.held += size
    while store.held > limit and store.values:
        store.held -= store.values.popitem(last=False)[1][1]


def held(kind: str) -> int:
    """The sum of the sizes kept for `kind` in the active scope (0 outside one)."""
    store = None if _SCOPE is None else _SCOPE.get(kind)
    return 0 if store is None else store.held


def json_key(*parts: Any) -> str | None:
    """`parts` as canonical JSON (`dumps_canonical`), a key that holds all of them, when they are
    plain JSON data (dicts with string keys, lists, strings, finite numbers, booleans, None);
    else None (work on anything else is not kept: a tuple and a list would dump alike)."""
    if not all(_plain(part) for part in parts):
        return None
    return dumps_canonical(list(parts))


def _plain(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    if kind is float:
        return math.isfinite(value)
    return kind in _ATOMS


def fresh(value: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, strings, numbers, booleans, None) that shares
    nothing mutable with `value`; anything else is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {k: fresh(v) for k, v in value.items()}
    if kind is list:
        return [fresh(v) for v in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)
