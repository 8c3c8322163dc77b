"""Strict JSON: the C decoder on the fast path, a located finding for everything it lets by.

Python's `json` accepts `NaN`/`Infinity`, keeps the last of duplicate keys, turns `1e999`
into infinity, decodes lone surrogate escapes and recurses until the interpreter's limit.
`parse_json` refuses all of these. A valid document costs one `JSONDecoder.decode` with a
duplicate-detecting `object_pairs_hook`, plus a few C-speed text scans; the slow
tokenizer in `json_locate` runs only to say where a problem sits.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

from cbaudit.io import json_locate
from cbaudit.io.json_locate import Event, ScanError, line_col
from cbaudit.io.limits import DEFAULT_MAX_DEPTH
from cbaudit.model import InputError

_MAYBE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NONFINITE_LITERALS = frozenset({"NaN", "Infinity", "-Infinity"})
# Past this offset a syntax error is reported without the (slow) pointer of its container.
_POINTER_SCAN_LIMIT = 4_000_000


class _DuplicateKey(Exception):
    """Raised by the pairs hook; the tokenizer then finds where."""


class _NonFinite(Exception):
    """Raised for NaN/Infinity literals and overflowing floats."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey
    return obj


def _constant(token: str) -> Any:
    raise _NonFinite(token)


def _finite_float(token: str) -> float:
    value = float(token)
    if math.isinf(value):
        raise _NonFinite(token)
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_finite_float
)
# The C scanner behind `decode`; typeshed does not declare the attribute.
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


class FloatWatch:
    """Notes whether the JSON it parsed held a float with a zero fraction (-0.0, 2.0, 1e3).

    Give one to `parse_json` (or `load_text`) and read `integral` afterwards; reset it before
    each document. The decoder calls a hook for every float literal anyway (to refuse
    overflow), so a caller learns at no cost whether a document may write an integer as a
    float (`cbaudit.io.integers`) and can skip the walk that finds where.
    """

    def __init__(self) -> None:
        self.integral = False
        decoder = json.JSONDecoder(
            object_pairs_hook=_pairs, parse_constant=_constant, parse_float=self._float
        )
        self.scan: Callable[[str, int], tuple[Any, int]] = decoder.scan_once  # type: ignore[attr-defined]

    def _float(self, token: str) -> float:
        value = _finite_float(token)
        if value.is_integer():
            self.integral = True
        return value


_JSON_WS = " \t\n\r"


class _Where:
    """Turns character offsets of one text into located InputErrors."""

    def __init__(self, text: str, name: str, line_offset: int) -> None:
        self.text = text
        self.name = name
        self.line_offset = line_offset

    def error(self, code: str, message: str, pos: int, pointer: str | None) -> InputError:
        line, column = line_col(self.text, pos)
        return InputError.at(
            code,
            message,
            self.name,
            pointer=pointer,
            line=line + self.line_offset,
            column=column,
        )


def parse_json(
    text: str,
    *,
    name: str,
    line_offset: int = 0,
    max_depth: int = DEFAULT_MAX_DEPTH,
    watch: FloatWatch | None = None,
) -> Any:
    """Parse `text` as strict JSON; InputError with a located LOAD.* finding otherwise."""
    try:
        data = _decode(text, _SCAN if watch is None else watch.scan)
    except json.JSONDecodeError as err:
        where = _Where(text, name, line_offset)
        raise _syntax_error(where, err.pos, err.msg) from None
    except _DuplicateKey:
        raise _duplicate_key_error(_Where(text, name, line_offset)) from None
    except _NonFinite:
        raise _nonfinite_error(_Where(text, name, line_offset)) from None
    except RecursionError:
        raise _depth_error(_Where(text, name, line_offset), max_depth) from None
    except ValueError as err:  # int(): "Exceeds the limit (4300 digits) for integer string..."
        raise _long_int_error(_Where(text, name, line_offset), str(err)) from None
    if text.count("[") + text.count("{") > max_depth and _too_deep(data, max_depth):
        raise _depth_error(_Where(text, name, line_offset), max_depth)
    if "\\u" in text and _MAYBE_SURROGATE.search(text) and _has_surrogate(data):
        raise _surrogate_error(_Where(text, name, line_offset))
    return data


def _decode(text: str, scan: Callable[[str, int], tuple[Any, int]] = _SCAN) -> Any:
    """`_DECODER.decode` without its Python-level overhead on the common case."""
    start = 0
    if text[:1] in _JSON_WS:
        start = json_locate.first_value_pos(text)
    try:
        data, end = scan(text, start)
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None
    if end != len(text) and text[end:].strip(_JSON_WS):
        raise json.JSONDecodeError("Extra data", text, json_locate.skip_ws(text, end))
    return data


def _too_deep(data: Any, max_depth: int) -> bool:
    """Whether containers nest deeper than `max_depth` (iterative: no recursion)."""
    if type(data) is not dict and type(data) is not list:
        return False
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > max_depth:
            return True
        children = value.values() if type(value) is dict else value
        for child in children:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return False


def _has_surrogate(data: Any) -> bool:
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        if type(value) is str:
            if _SURROGATE.search(value):
                return True
        elif type(value) is dict:
            stack.extend(value.keys())
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return False


def _first(where: _Where, match: Callable[[Event], bool]) -> Event | ScanError | None:
    """The first tokenizer event `match` accepts; the ScanError if the text breaks first."""
    try:
        for event in json_locate.walk(where.text):
            if match(event):
                return event
    except ScanError as err:
        return err
    return None


def _syntax_error(where: _Where, pos: int, detail: str) -> InputError:
    text = where.text
    pointer: str | None = None
    if pos <= _POINTER_SCAN_LIMIT:
        found = _first(where, lambda _e: False)
        if isinstance(found, ScanError):
            pointer = found.pointer
    if pos >= len(text.rstrip()):
        message = f"unexpected end of text: the document is truncated or unclosed ({detail})"
    else:
        message = f"not valid JSON: {detail}"
    return where.error("LOAD.SYNTAX", message, pos, pointer)


def _from_scan(
    where: _Where, found: Event | ScanError | None, code: str, message: str
) -> InputError:
    if isinstance(found, ScanError):
        return _syntax_error(where, found.pos, found.message)
    if found is None:  # the decoder and the tokenizer disagree: still say what was wrong
        return where.error(code, message, json_locate.first_value_pos(where.text), None)
    return where.error(code, message, found.pos, found.pointer)


def _duplicate_key_error(where: _Where) -> InputError:
    seen: dict[str, dict[str, int]] = {}
    first_pos = [0]

    def match(event: Event) -> bool:
        if event.kind == json_locate.OBJECT:
            seen[event.pointer] = {}
            return False
        if event.kind != json_locate.KEY or event.token is None:
            return False
        keys = seen.setdefault(event.pointer, {})
        if event.token in keys:
            first_pos[0] = keys[event.token]
            return True
        keys[event.token] = event.pos
        return False

    found = _first(where, match)
    if isinstance(found, Event) and found.token is not None:
        first_line, _ = line_col(where.text, first_pos[0])
        pointer = found.pointer + "/" + json_locate.escape_token(found.token)
        message = (
            f"duplicate key {found.token!r} (first at line {first_line + where.line_offset}); "
            "each key may appear once in an object"
        )
        return where.error("LOAD.DUPLICATE_KEY", message, found.pos, pointer)
    return _from_scan(where, found, "LOAD.DUPLICATE_KEY", "duplicate key in an object")


def _nonfinite_error(where: _Where) -> InputError:
    def match(event: Event) -> bool:
        if event.kind == json_locate.LITERAL:
            return event.token in _NONFINITE_LITERALS
        if event.kind == json_locate.NUMBER and event.token is not None:
            return math.isinf(float(event.token))
        return False

    found = _first(where, match)
    if isinstance(found, Event):
        if found.kind == json_locate.LITERAL:
            message = f"{found.token} is not a JSON number; write a finite number or null"
        else:
            message = (
                f"number {_clip(found.token or '')} overflows to infinity; "
                "write a finite number or null"
            )
        return where.error("LOAD.NONFINITE", message, found.pos, found.pointer)
    return _from_scan(where, found, "LOAD.NONFINITE", "non-finite number")


def _long_int_error(where: _Where, detail: str) -> InputError:
    limit = sys.get_int_max_str_digits()

    def match(event: Event) -> bool:
        token = event.token
        if event.kind != json_locate.NUMBER or token is None or limit == 0:
            return False
        return token.lstrip("-").isdigit() and len(token.lstrip("-")) > limit

    found = _first(where, match)
    if isinstance(found, Event):
        digits = len((found.token or "").lstrip("-"))
        message = (
            f"integer with {digits} digits is longer than the {limit}-digit conversion limit; "
            "write it as a string if it is an identifier"
        )
        return where.error("LOAD.INT_TOO_LONG", message, found.pos, found.pointer)
    if isinstance(found, ScanError):
        return _syntax_error(where, found.pos, found.message)
    return where.error("LOAD.SYNTAX", f"not valid JSON: {_clip(detail)}", 0, None)


def _depth_error(where: _Where, max_depth: int) -> InputError:
    found = _first(
        where,
        lambda e: e.kind in (json_locate.OBJECT, json_locate.ARRAY) and e.depth > max_depth,
    )
    message = f"nesting deeper than {max_depth} levels of arrays/objects; flatten the input"
    return _from_scan(where, found, "LOAD.DEPTH", message)


def _surrogate_error(where: _Where) -> InputError:
    found = _first(
        where,
        lambda e: (
            e.kind in (json_locate.STRING, json_locate.KEY)
            and e.token is not None
            and _SURROGATE.search(e.token) is not None
        ),
    )
    if isinstance(found, Event) and found.kind == json_locate.KEY and found.token is not None:
        found = found._replace(pointer=found.pointer + "/" + json_locate.escape_token(found.token))
    message = (
        "string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), "
        "which is not a character; fix the escape"
    )
    return _from_scan(where, found, "LOAD.LONE_SURROGATE", message)


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
