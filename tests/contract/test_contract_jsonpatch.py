"""The small RFC 6902 applier used by negative cases and the mutation helper."""

from __future__ import annotations

import pytest

from cbaudit.io.jsonpatch import PatchError, apply_patch, resolve


def test_add_remove_replace_move_copy_test() -> None:
    """Each operation does what RFC 6902 says and the input is not mutated."""
    doc = {"a": [1, 2, 3], "b": {"c": "x"}}
    out = apply_patch(
        doc,
        [
            {"op": "add", "path": "/a/1", "value": 9},
            {"op": "remove", "path": "/a/0"},
            {"op": "replace", "path": "/b/c", "value": "y"},
            {"op": "copy", "from": "/b", "path": "/d"},
            {"op": "move", "from": "/a/1", "path": "/a/-"},
            {"op": "test", "path": "/d/c", "value": "y"},
            {"op": "add", "path": "/e~1f", "value": True},
        ],
    )
    assert out == {"a": [9, 3, 2], "b": {"c": "y"}, "d": {"c": "y"}, "e/f": True}
    assert doc == {"a": [1, 2, 3], "b": {"c": "x"}}
    assert resolve(out, "/e~1f") is True


@pytest.mark.parametrize(
    ("ops", "index"),
    [
        ([{"op": "remove", "path": "/missing"}], 0),
        ([{"op": "replace", "path": "/a/7", "value": 1}], 0),
        (
            [{"op": "add", "path": "/a/0", "value": 1}, {"op": "test", "path": "/a/0", "value": 2}],
            1,
        ),
        ([{"op": "test", "path": "/a/0", "value": True}], 0),
        ([{"op": "bogus", "path": "/a"}], 0),
        ([{"op": "add", "path": "a", "value": 1}], 0),
        ([{"op": "move", "from": "/a", "path": "/a/0"}], 0),
        ([{"op": "add", "path": "/a/01", "value": 1}], 0),
    ],
)
def test_failures_name_the_operation(ops: list[dict[str, object]], index: int) -> None:
    """A failing operation raises PatchError with its index."""
    with pytest.raises(PatchError) as err:
        apply_patch({"a": [1]}, ops)
    assert err.value.index == index
