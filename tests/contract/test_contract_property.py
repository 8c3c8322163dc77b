"""Random mutations of the valid case never crash `validate-plan` (exit 0, 1 or 2 only)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from _contract_paths import VALID
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cbaudit.cli.app import run

BASE: dict[str, Any] = json.loads(VALID.read_text())

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=12),
    st.sampled_from(["", "req-A", "req-Z", "DECODE_ROW", "finished", "1.0.0"]),
    st.lists(st.integers(min_value=0, max_value=6), max_size=3),
    st.just({}),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


PATHS = [p for p in _paths(BASE) if p]


def _mutate(data: dict[str, Any], path: tuple[Any, ...], action: str, value: Any) -> None:
    parent: Any = data
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if action == "drop":
        del parent[last]
    else:
        parent[last] = value


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(PATHS), st.sampled_from(["set", "drop"]), _VALUES),
        min_size=1,
        max_size=3,
    )
)
def test_mutated_case_never_crashes(tmp_path: Path, edits: list[Any], capsys: Any) -> None:
    """Changed values, dropped keys and changed types give exit 0, 1 or 2, never a crash."""
    data = copy.deepcopy(BASE)
    for path, action, value in edits:
        try:
            _mutate(data, path, action, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path
    case = tmp_path / "mutant.case.json"
    case.write_text(json.dumps(data))
    code = run(["validate-plan", str(case), "--format", "json"])
    captured = capsys.readouterr()
    assert code in (0, 1, 2), captured.err
    assert "internal error" not in captured.err
    assert "Traceback" not in captured.err
    report = json.loads(captured.out)
    assert report["exit_code"] == code
