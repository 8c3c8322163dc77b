"""The path-copying JSON Patch applier agrees with the RFC 6902 reference and never mutates."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from _mutate_paths import LOOP2_VALID
from hypothesis import given, settings
from hypothesis import strategies as st

from cbaudit.io.jsonpatch import PatchError, apply_patch
from cbaudit.mutate.patch import apply_shared, get_at, pointer_of

DOC: dict[str, Any] = json.loads(LOOP2_VALID.read_text(encoding="utf-8"))

OPS = [
    [{"op": "replace", "path": "/plan/selected/0/start", "value": 2}],
    [{"op": "add", "path": "/plan/selected/-", "value": {"x": 1}}],
    [{"op": "remove", "path": "/result"}],
    [{"op": "move", "from": "/plan/selected/0", "path": "/plan/selected/-"}],
    [{"op": "copy", "from": "/state/requests/1", "path": "/state/requests/-"}],
    [
        {"op": "add", "path": "/plan/block_table", "value": [[0]]},
        {"op": "remove", "path": "/plan/not_selected/0"},
    ],
    [{"op": "test", "path": "/plan/decision_id", "value": 5}],
]


@pytest.mark.parametrize("ops", OPS, ids=[str(i) for i in range(len(OPS))])
def test_same_result_as_the_reference(ops: list[dict[str, Any]]) -> None:
    """Every op kind gives the same document as the deep-copying reference applier."""
    assert apply_shared(DOC, ops) == apply_patch(DOC, ops)


@pytest.mark.parametrize("ops", OPS, ids=[str(i) for i in range(len(OPS))])
def test_input_is_never_mutated(ops: list[dict[str, Any]]) -> None:
    """The original document is byte-identical after applying a patch."""
    before = json.dumps(DOC, sort_keys=True)
    apply_shared(DOC, ops)
    assert json.dumps(DOC, sort_keys=True) == before


def test_untouched_subtrees_are_shared() -> None:
    """Only containers on the patched path are copied; siblings are the same objects."""
    out = apply_shared(DOC, [{"op": "replace", "path": "/plan/decision_id", "value": 9}])
    assert out["plan"] is not DOC["plan"]
    assert out["state"] is DOC["state"]
    assert out["plan"]["selected"] is DOC["plan"]["selected"]


def test_written_values_are_not_aliased() -> None:
    """A value written by add is a copy: two mutants from one patch do not share it."""
    ops = [{"op": "add", "path": "/plan/extra", "value": {"a": [1]}}]
    one, two = apply_shared(DOC, ops), apply_shared(DOC, ops)
    one["plan"]["extra"]["a"].append(2)
    assert two["plan"]["extra"] == {"a": [1]}


@pytest.mark.parametrize(
    ("ops", "index"),
    [
        ([{"op": "replace", "path": "/plan/nope", "value": 1}], 0),
        ([{"op": "remove", "path": "/result"}, {"op": "remove", "path": "/result"}], 1),
        ([{"op": "test", "path": "/plan/decision_id", "value": 6}], 0),
        ([{"op": "add", "path": "/plan/selected/9", "value": 1}], 0),
    ],
)
def test_failures_name_the_operation(ops: list[dict[str, Any]], index: int) -> None:
    """A patch that cannot apply raises PatchError with the failing operation's index."""
    with pytest.raises(PatchError) as err:
        apply_shared(DOC, ops)
    assert err.value.index == index


def test_pointer_helpers_escape_tokens() -> None:
    """pointer_of escapes '/' and '~'; get_at reads through it."""
    doc = {"a/b": {"c~d": 3}}
    assert pointer_of("a/b", "c~d") == "/a~1b/c~0d"
    assert get_at(doc, pointer_of("a/b", "c~d")) == 3


_paths = st.sampled_from(
    [
        "/plan/decision_id",
        "/plan/selected/1/end",
        "/state/requests/0/ready",
        "/workload/budgets/token_budget",
        "/result/service_debits/0/tokens",
    ]
)


@settings(max_examples=60, deadline=None)
@given(path=_paths, value=st.one_of(st.integers(), st.booleans(), st.text(max_size=4)))
def test_replace_matches_reference_for_any_value(path: str, value: Any) -> None:
    """Property: replace at any pointer equals the reference and leaves the input intact."""
    before = copy.deepcopy(DOC)
    ops = [{"op": "replace", "path": path, "value": value}]
    assert apply_shared(DOC, ops) == apply_patch(DOC, ops)
    assert before == DOC
