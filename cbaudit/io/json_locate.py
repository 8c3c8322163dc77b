"""Find things in JSON text by position, lazily, only when a finding needs a line.

Nothing here runs on the fast path of a valid document. `locate_pointer` walks the text to
the value an RFC 6901 pointer names, skipping sibling values with the C decoder. `walk` is a
small iterative tokenizer (no recursion, so any depth is safe) that yields one event per
value and per object key with its JSON pointer, character offset and depth; the strict
parser uses it to say where a duplicate key, a non-finite number, an over-long integer or
an over-deep nesting sits.
"""

from __future__ import annotations

import json
import json.decoder
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

# Public in CPython's json.decoder (C-accelerated) but missing from typeshed.
scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
# Python's json also reads these three; strict loading refuses them, so they must be found.
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_SKIPPER = json.JSONDecoder()

OBJECT = "object"
ARRAY = "array"
STRING = "string"
NUMBER = "number"
LITERAL = "literal"
KEY = "key"


class Event(NamedTuple):
    """One token of interest: `pointer` is the value's pointer (for KEY: the object's)."""

    kind: str
    pointer: str
    pos: int
    depth: int
    token: str | None


class ScanError(Exception):
    """The text is not JSON at `pos`; `pointer` names the innermost open container."""

    def __init__(self, pos: int, pointer: str, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.pointer = pointer
        self.message = message


def escape_token(token: str) -> str:
    """One RFC 6901 reference token, escaped."""
    return token.replace("~", "~0").replace("/", "~1")


def split_pointer(pointer: str) -> list[str]:
    """The unescaped reference tokens of an RFC 6901 pointer (`""` is the whole document)."""
    if not pointer:
        return []
    parts = pointer.split("/")
    if parts[0] != "":
        parts.insert(0, "")  # tolerate a missing leading slash
    return [p.replace("~1", "/").replace("~0", "~") for p in parts[1:]]


def line_col(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column (in characters) of character offset `pos`."""
    pos = max(0, min(pos, len(text)))
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, column


def skip_ws(text: str, pos: int) -> int:
    """Offset of the first non-whitespace character at or after `pos`."""
    match = _WS.match(text, pos)
    return match.end() if match else pos


def first_value_pos(text: str) -> int:
    """Offset of the first non-whitespace character (the top-level value)."""
    return skip_ws(text, 0)


def locate_pointer(text: str, pointer: str) -> int:
    """Offset of the value at `pointer`, or of its deepest existing ancestor.

    Never raises: on text it cannot follow it returns the last offset it reached.
    """
    pos = first_value_pos(text)
    try:
        for token in split_pointer(pointer):
            found = _step(text, pos, token)
            if found is None:
                return pos
            pos = found
    except (ValueError, IndexError, RecursionError):
        return pos
    return pos


def _step(text: str, pos: int, token: str) -> int | None:
    """Offset of member/element `token` of the container starting at `pos`."""
    opener = text[pos : pos + 1]
    if opener == "{":
        return _step_object(text, pos, token)
    if opener == "[":
        if not token.isdigit():
            return None
        return _step_array(text, pos, int(token))
    return None


def _step_object(text: str, pos: int, token: str) -> int | None:
    pos = skip_ws(text, pos + 1)
    found: int | None = None
    while text.startswith('"', pos):
        key, end = scanstring(text, pos + 1)
        pos = skip_ws(text, end)
        if not text.startswith(":", pos):
            return found
        pos = skip_ws(text, pos + 1)
        if key == token:
            found = pos  # keep going: with duplicate keys Python keeps the last one
        _, end = _SKIPPER.raw_decode(text, pos)
        pos = skip_ws(text, end)
        if not text.startswith(",", pos):
            break
        pos = skip_ws(text, pos + 1)
    return found


def _step_array(text: str, pos: int, index: int) -> int | None:
    pos = skip_ws(text, pos + 1)
    if text.startswith("]", pos):
        return None
    for _ in range(index):
        _, end = _SKIPPER.raw_decode(text, pos)
        pos = skip_ws(text, end)
        if not text.startswith(",", pos):
            return None
        pos = skip_ws(text, pos + 1)
    return pos


def walk(text: str) -> Iterator[Event]:
    """Every value and key of `text` in document order; ScanError where it stops being JSON."""
    pos = skip_ws(text, 0)
    # A frame is [is_object, container_pointer, next_index].
    stack: list[list[object]] = []
    pointer = ""
    while True:
        depth = len(stack)
        ch = text[pos : pos + 1]
        if ch in ("{", "["):
            is_object = ch == "{"
            yield Event(OBJECT if is_object else ARRAY, pointer, pos, depth + 1, None)
            pos = skip_ws(text, pos + 1)
            if text.startswith("}" if is_object else "]", pos):
                pos += 1
            else:
                stack.append([is_object, pointer, 0])
                if is_object:
                    key, end = _read_key(text, pos, pointer)
                    yield Event(KEY, pointer, pos, depth + 1, key)
                    pos = _after_colon(text, end, pointer)
                    pointer = pointer + "/" + escape_token(key)
                else:
                    pointer = pointer + "/0"
                continue
        elif ch == '"':
            try:
                value, end = scanstring(text, pos + 1)
            except ValueError as err:
                raise ScanError(getattr(err, "pos", pos), pointer, _msg(err)) from None
            yield Event(STRING, pointer, pos, depth, value)
            pos = end
        else:
            match = _NUMBER.match(text, pos)
            if match is not None:
                yield Event(NUMBER, pointer, pos, depth, match.group())
                pos = match.end()
            else:
                literal = next((w for w in _LITERALS if text.startswith(w, pos)), None)
                if literal is None:
                    what = "unexpected end of text" if pos >= len(text) else "expected a value"
                    raise ScanError(pos, pointer, what)
                yield Event(LITERAL, pointer, pos, depth, literal)
                pos += len(literal)
        # After a value: close finished containers, then move to the next member or element.
        while True:
            pos = skip_ws(text, pos)
            if not stack:
                if pos != len(text):
                    raise ScanError(pos, pointer, "extra data after the top-level value")
                return
            frame = stack[-1]
            is_object, base = bool(frame[0]), str(frame[1])
            ch = text[pos : pos + 1]
            if ch == ",":
                pos = skip_ws(text, pos + 1)
                if is_object:
                    key, end = _read_key(text, pos, base)
                    yield Event(KEY, base, pos, len(stack), key)
                    pos = _after_colon(text, end, base)
                    pointer = base + "/" + escape_token(key)
                else:
                    index = int(str(frame[2])) + 1
                    frame[2] = index
                    pointer = f"{base}/{index}"
                break
            if ch == ("}" if is_object else "]"):
                stack.pop()
                pointer = base
                pos += 1
                continue
            if not ch:
                raise ScanError(pos, base, "unexpected end of text")
            closer = "'}'" if is_object else "']'"
            raise ScanError(pos, base, f"expected ',' or {closer}")


def _read_key(text: str, pos: int, pointer: str) -> tuple[str, int]:
    """Read the object key starting at `pos`; returns the key and the offset just past it."""
    if not text.startswith('"', pos):
        what = "unexpected end of text" if pos >= len(text) else "expected a quoted key"
        raise ScanError(pos, pointer, what)
    try:
        return scanstring(text, pos + 1)
    except ValueError as err:
        raise ScanError(getattr(err, "pos", pos), pointer, _msg(err)) from None


def _after_colon(text: str, pos: int, pointer: str) -> int:
    """Offset of the member value, given the offset just past its key."""
    pos = skip_ws(text, pos)
    if not text.startswith(":", pos):
        raise ScanError(pos, pointer, "expected ':' after an object key")
    return skip_ws(text, pos + 1)


def _msg(err: ValueError) -> str:
    return str(getattr(err, "msg", err))
