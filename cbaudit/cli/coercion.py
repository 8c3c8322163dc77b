"""Light value coercion for the CLI's parameters, so a command starts without pydantic.

Typer 0.29 turns every parameter value into its annotated type through a pydantic
`TypeAdapter`, built on first use; importing pydantic and building the adapters costs about
60 ms, more than half of what a whole small command may take (issue 13). cbaudit's parameters
use a handful of plain types (`str`, `int` and `float` with optional `min`/`max`, `Path`,
a `StrEnum`, flags, and lists of these), which this module converts by typer's rules: a
differential test holds it equal to typer's own coercion on values as people write them,
and shows it never accepts what typer refuses (it does refuse some garbled spellings that
pydantic reads, such as `0-5` for -5).

Anything else (a custom parser, clamping, path checks beyond the defaults, case-insensitive
choices, any other type) keeps typer's coercion: this module only ever replaces it where it
knows the answer, and where typer's internals are not what it expects it changes nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

try:  # typer's internal coercion contract; without it typer keeps its own coercion
    from typer._coercion import RuntimeParam
except ImportError:  # pragma: no cover - a typer that reorganized its internals
    RuntimeParam = None  # type: ignore[assignment,misc]

from typer import BadParameter

Convert = Callable[[Any], Any]

_DIGITS = r"[0-9](?:_?[0-9])*"
_INT = re.compile(rf"[+-]?{_DIGITS}(?:\.0+)?")
_FLOAT_WORDS = frozenset(
    sign + word for sign in ("", "+", "-") for word in ("inf", "infinity", "nan")
)
_FLOAT = re.compile(rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?")


def _parse_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _INT.fullmatch(text):
            return int(text.split(".", 1)[0].replace("_", ""))
    raise ValueError(f"{value!r} is not a valid integer.")


def _parse_float(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        # typer (through pydantic) refuses digit separators next to surrounding blanks
        grouped_and_padded = "_" in text and text != value
        if text.lower() in _FLOAT_WORDS or (_FLOAT.fullmatch(text) and not grouped_and_padded):
            return float(text)
    raise ValueError(f"{value!r} is not a valid number.")


def _ranged(parse: Callable[[Any], Any], low: Any, high: Any) -> Convert:
    if low is None and high is None:
        return parse

    def convert(value: Any) -> Any:
        number = parse(value)
        # NaN fails both comparisons, as it does in typer's own check.
        if low is not None and not number >= low:
            raise ValueError(f"{number!r} is not in the range x>={low}.")
        if high is not None and not number <= high:
            raise ValueError(f"{number!r} is not in the range x<={high}.")
        return number

    return convert


def _parse_flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"{value!r} is not a valid boolean.")


def _parse_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"{value!r} is not a valid string.")


def _parse_path(value: Any) -> Path:
    """A Path; an existing one must be readable (typer's default path checks)."""
    if isinstance(value, Path):
        path = value
    elif isinstance(value, str):
        path = Path(value)
    else:
        raise ValueError(f"{value!r} is not a valid path.")
    try:
        os.stat(path)
    except (OSError, ValueError):
        return path
    if not os.access(path, os.R_OK):
        raise ValueError(f"Path {str(value)!r} is not readable.")
    return path


def _choice(enum: type[Enum]) -> Convert:
    members = {str(m.value): m for m in enum}

    def convert(value: Any) -> Any:
        if isinstance(value, enum):
            return value
        member = members.get(value) if isinstance(value, str) else None
        if member is None:
            known = ", ".join(repr(k) for k in members)
            raise ValueError(f"{value!r} is not one of {known}.")
        return member

    return convert


def _default_path_checks(info: Any) -> bool:
    return (
        not info.exists
        and info.file_okay
        and info.dir_okay
        and info.readable
        and not info.writable
        and not info.resolve_path
        and not info.allow_dash
        and info.path_type is None
    )


def converter(annotation: Any, info: Any) -> Convert | None:
    """How to convert one value of `annotation`; None when typer's own coercion must do it."""
    if info.parser is not None or info.clamp:
        return None
    ranged = info.min is not None or info.max is not None
    if annotation is int:
        return _ranged(_parse_int, info.min, info.max)
    if annotation is float:
        return _ranged(_parse_float, info.min, info.max)
    if ranged:
        return None
    if annotation is str:
        return _parse_str
    if annotation is Path and _default_path_checks(info):
        return _parse_path
    if isinstance(annotation, type) and issubclass(annotation, Enum) and info.case_sensitive:
        return _choice(annotation)
    return None


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class LightParam(RuntimeParam):
        """typer's coercion contract (None and multi-value handling) with a plain converter."""

        convert: Convert
        many: bool

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                if self.many:
                    items = value if isinstance(value, list | tuple) else [value]
                    return [self.convert(item) for item in items]
                return self.convert(value)
            except ValueError as err:
                raise BadParameter(str(err), ctx=ctx, param=param) from None


def light_param(param: Any) -> Any:
    """A LightParam for a typer parameter, or None where typer's coercion stays."""
    descriptor = getattr(param, "type_descriptor", None)
    if RuntimeParam is None or descriptor is None or descriptor.file_annotation is not None:
        return None
    annotation = descriptor.annotation
    many = get_origin(annotation) is list
    item = get_args(annotation)[0] if many else annotation
    convert: Convert | None
    if item is bool:  # a flag's value is already a bool, or None when it has no default
        convert = _parse_flag if getattr(param, "is_flag", False) and not many else None
    else:
        convert = converter(item, descriptor.parameter_info)
    if convert is None:
        return None
    return LightParam(
        parameter_info=descriptor.parameter_info,
        annotation=annotation,
        convert=convert,
        many=many,
    )


def install_light_coercion(command: Any, ctx: Any, *, subcommands: bool = True) -> None:
    """Give every parameter of `command` (and of its subcommands) a LightParam it can use.

    `ctx` is a click context; it names the help option, which every command carries.
    """
    for param in command.get_params(ctx):
        if getattr(param, "_runtime_param", "absent") is None:
            light = light_param(param)
            if light is not None:
                param._runtime_param = light
    if subcommands:
        for sub in getattr(command, "commands", {}).values():
            install_light_coercion(sub, ctx)
