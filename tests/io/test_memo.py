"""`cbaudit.io.memo`: what a reuse scope keeps, gives back and drops."""

from __future__ import annotations

import json

from cbaudit.io import memo


def test_nothing_is_kept_or_found_outside_a_scope() -> None:
    memo.keep("k", "a", 1, size=1, limit=10)
    assert memo.recall("k", "a") is None
    assert not memo.active() and memo.held("k") == 0


def test_a_scope_keeps_by_key_replaces_and_drops_the_least_recently_used() -> None:
    with memo.reusing():
        assert memo.active()
        memo.keep("k", "a", "A", size=4, limit=10)
        memo.keep("k", "a", "A2", size=3, limit=10)  # replaced: its size counted once
        assert memo.recall("k", "a") == "A2" and memo.held("k") == 3
        memo.keep("k", "b", "B", size=3, limit=10)
        memo.keep("other", "a", "O", size=9, limit=10)  # another kind, another store
        assert memo.recall("k", "a") == "A2"  # now the most recently used of "k"
        memo.keep("k", "c", "C", size=5, limit=10)  # 3 + 3 + 5 > 10: "b" goes first
        assert memo.recall("k", "b") is None
        assert memo.recall("k", "a") == "A2" and memo.recall("k", "c") == "C"
        assert memo.held("k") == 8 and memo.recall("other", "a") == "O"
        memo.keep("k", "big", "X", size=11, limit=10)  # larger than the limit: not kept
        assert memo.recall("k", "big") is None and memo.held("k") == 8
        with memo.reusing():  # nested: the same stores
            assert memo.recall("k", "c") == "C"
        assert memo.recall("k", "c") == "C"
    assert not memo.active() and memo.recall("k", "c") is None


def test_fresh_copies_share_nothing_mutable() -> None:
    value = {"a": [1, {"b": 2.5}], "s": {1, 2}, "t": (3, [4])}
    copy = memo.fresh(value)
    assert copy == value
    assert copy["a"] is not value["a"] and copy["a"][1] is not value["a"][1]
    assert copy["s"] is not value["s"] and copy["t"][1] is not value["t"][1]


def test_a_json_key_holds_plain_data_only() -> None:
    key = memo.json_key({"b": 1, "a": [1.5, None, True]}, "x")
    assert key is not None and json.loads(key) == [{"a": [1.5, None, True], "b": 1}, "x"]
    assert key == memo.json_key({"a": [1.5, None, True], "b": 1}, "x")  # key order aside
    assert memo.json_key({"a": 1}, 1) != memo.json_key({"a": 1}, 1.0)
    assert memo.json_key({"a": 1}, True) != memo.json_key({"a": 1}, 1)
    for odd in ((1, 2), {1: "a"}, float("nan"), float("inf"), {"a": {1, 2}}):
        assert memo.json_key({"k": odd}) is None
