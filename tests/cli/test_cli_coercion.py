"""The CLI's light value coercion: used by every parameter, and equal to typer's own."""

from __future__ import annotations

import math
import subprocess
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any, get_origin

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._coercion import build_runtime_param, resolve_type_descriptor
from typer.models import OptionInfo

from cbaudit.cli.app import COMMANDS, load_command
from cbaudit.cli.coercion import LightParam, light_param


def _params(command: Any, ctx: Any) -> list[tuple[str, Any]]:
    found = [(f"{command.name} {p.name}", p) for p in command.get_params(ctx)]
    for sub in getattr(command, "commands", {}).values():
        found += _params(sub, ctx)
    return found


def _all_params() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name in COMMANDS:
        command = load_command(name)
        found += _params(command, typer.Context(command))
    return found


def test_every_parameter_uses_light_coercion() -> None:
    """No parameter of any command falls back to typer's pydantic coercion."""
    for where, param in _all_params():
        assert isinstance(param.get_runtime_param(), LightParam), where


def test_a_real_command_never_imports_pydantic(tmp_path: Path) -> None:
    """A command run with options of every kind of value starts without pydantic."""
    code = (
        "import sys; from cbaudit.cli.app import run;"
        " rc = run(['schema', 'export', sys.argv[1]]);"
        " rc2 = run(['bench', 'spec', '1q1s1k', '--geometry', 'tiny', '-f', 'json', '-vv']);"
        " print(rc, rc2, 'pydantic' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.stdout.splitlines()[-1] == "0 0 False", proc.stdout + proc.stderr


class _Color(StrEnum):
    red = "red"
    green = "green"


# One entry per kind of parameter the CLI declares: (annotation, typer options).
KINDS: list[tuple[Any, dict[str, Any]]] = [
    (int, {}),
    (int, {"min": 1}),
    (float, {}),
    (float, {"min": 0.001}),
    (float, {"min": 0, "max": 100}),
    (str, {}),
    (Path, {}),
    (_Color, {}),
    (list[int], {"min": 1}),
    (list[str], {}),
    (list[Path], {}),
]

_GARBLED = st.text(alphabet="0123456789+-._ eEinfatyINF\t\xa0\u0661", max_size=8)
_ODD = st.one_of(
    _GARBLED,
    st.sampled_from(["red", "RED", "green ", "", ".", "a/b", "-0", "1_000", "+nan", "Infinity"]),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
)
# Numbers as people write them on a command line.
_WRITTEN = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(-1e6, 1e6).map(lambda f: f"{f:.3f}"),
    st.integers(0, 10**6).map(lambda i: f"{i:_}"),
    st.sampled_from(["inf", "-inf", "nan", "1e3", "2.5E-3", ".5", "7.", "+4", "text", "json"]),
).flatmap(lambda s: st.sampled_from([s, f" {s}", f"{s} "]))


def _outcome(runtime: Any, value: Any) -> tuple[str, Any]:
    try:
        got = runtime._coerce_value(value, None, None)
    except typer.BadParameter:
        return ("rejected", None)
    if isinstance(got, float) and math.isnan(got):
        return ("nan", None)
    return ("value", got)


def _both(annotation: Any, options: dict[str, Any]) -> tuple[Any, Any]:
    info = OptionInfo(**options)
    descriptor = resolve_type_descriptor(annotation, info)

    class _Param:
        type_descriptor = descriptor
        is_flag = False

    ours = light_param(_Param())
    assert ours is not None
    return ours, build_runtime_param(descriptor)


def _value(annotation: Any, raw: Any, many: int) -> Any:
    return tuple([raw] * many) if get_origin(annotation) is list else raw


@pytest.mark.parametrize("annotation,options", KINDS, ids=repr)
@settings(max_examples=300, deadline=None)
@given(raw=_WRITTEN, many=st.integers(1, 3))
def test_light_coercion_equals_typers_on_written_values(
    annotation: Any, options: dict[str, Any], raw: str, many: int
) -> None:
    """On values as people write them, accepted values, results and rejections are typer's."""
    ours, theirs = _both(annotation, options)
    value = _value(annotation, raw, many)
    assert _outcome(ours, value) == _outcome(theirs, value)


@pytest.mark.parametrize("annotation,options", KINDS, ids=repr)
@settings(max_examples=300, deadline=None)
@given(raw=_ODD, many=st.integers(1, 3))
def test_light_coercion_never_accepts_what_typer_refuses(
    annotation: Any, options: dict[str, Any], raw: Any, many: int
) -> None:
    """On garbled values it may refuse more than typer (`0-5`, which typer reads as -5), but
    whatever it accepts, typer accepts as the same value."""
    ours, theirs = _both(annotation, options)
    value = _value(annotation, raw, many)
    mine = _outcome(ours, value)
    if mine[0] != "rejected":
        assert mine == _outcome(theirs, value)
