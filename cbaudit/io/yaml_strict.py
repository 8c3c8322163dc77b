"""Strict YAML: plain data under YAML 1.2 core-schema rules, built from parser events.

PyYAML's loaders follow YAML 1.1, where `no` is false, `0755` is 493 and `1:20` is 80, and
they construct whatever a tag asks for. This module reads only the parser's event stream
(libyaml when available) and builds the Python values itself, iteratively, so that:

* plain scalars resolve by the YAML 1.2 core schema, and the ones YAML 1.1 would have read
  differently (`yes/no/on/off/y/n`, `0755`, `0b101`, `1:20`, `1_000`) are refused, asking the
  author to quote them; timestamps stay strings (1.2 core has no timestamp type);
* only the core tags `!!str !!int !!float !!bool !!null !!map !!seq` (and the non-specific
  `!`) are allowed; every other tag, `!!python/object` included, is refused;
* merge keys `<<` are refused (1.2 has none; write the keys out);
* aliases are counted by their expanded size, memoised per anchor, so a "billion laughs"
  document is refused after a bounded amount of work; an alias to an anchor still being
  built (a cycle) is refused too;
* nesting depth, duplicate keys, non-string keys, non-finite numbers, over-long integers and
  a second document are refused.

Every refusal is an InputError with file, line, column and the JSON pointer of the value.
The marks of every value are kept in a small tree so `locate` can answer later.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import yaml

from cbaudit.io.json_locate import escape_token, line_col, split_pointer
from cbaudit.io.limits import DEFAULT_MAX_ALIAS_NODES, DEFAULT_MAX_DEPTH
from cbaudit.model import InputError

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_CORE = "tag:yaml.org,2002:"
TAG_STR = _CORE + "str"
TAG_INT = _CORE + "int"
TAG_FLOAT = _CORE + "float"
TAG_BOOL = _CORE + "bool"
TAG_NULL = _CORE + "null"
TAG_MAP = _CORE + "map"
TAG_SEQ = _CORE + "seq"
_SCALAR_TAGS = frozenset({TAG_STR, TAG_INT, TAG_FLOAT, TAG_BOOL, TAG_NULL})

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})
_INT10 = re.compile(r"[-+]?[0-9]+")
_INT8 = re.compile(r"0o[0-7]+")
_INT16 = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF_NAN = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")

# YAML 1.1 forms that 1.2 reads differently (as a string, or as another number).
_BOOL11 = re.compile(r"(?:y|yes|n|no|on|off)", re.IGNORECASE)
_LEADING_ZERO = re.compile(r"[-+]?0[0-9_]+")
_BIN11 = re.compile(r"[-+]?0b[01_]+")
_HEX11 = re.compile(r"[-+]?0x[0-9a-fA-F_]+")
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_UNDERSCORED = re.compile(r"[-+]?[0-9_]*\.?[0-9_]*(?:[eE][-+]?[0-9]+)?")
_NUMERIC_START = frozenset("-+.0123456789")


class ScalarError(Exception):
    """A scalar cannot be read as plain data; `code` is the LOAD.* finding code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _ambiguous(value: str, what: str, fix: str | None = None) -> ScalarError:
    fix = fix or f'quote it ("{value}") if it is text'
    return ScalarError("LOAD.YAML_AMBIGUOUS_SCALAR", f"plain scalar {value!r} {what}; {fix}")


def _to_int(digits: str, base: int) -> int:
    try:
        return int(digits, base)
    except ValueError:
        raise ScalarError(
            "LOAD.INT_TOO_LONG",
            f"integer with {len(digits)} digits is longer than the conversion limit; "
            "quote it if it is an identifier",
        ) from None


def _to_float(value: str) -> float:
    number = float(value)
    if math.isinf(number):
        raise ScalarError(
            "LOAD.NONFINITE", f"number {value[:40]!r} overflows to infinity; write a finite number"
        )
    return number


def _refuse_yaml11(value: str) -> None:
    """Raise for plain scalars YAML 1.1 reads as something a 1.2 reader would not."""
    if _BOOL11.fullmatch(value):
        raise _ambiguous(value, "is a boolean in YAML 1.1 but a string in YAML 1.2")
    if value[:1] not in _NUMERIC_START:
        return
    if _LEADING_ZERO.fullmatch(value):
        raise _ambiguous(
            value,
            "is octal in YAML 1.1 but decimal in YAML 1.2",
            "quote it if it is text, or write the number without leading zeros (0o for octal)",
        )
    if _BIN11.fullmatch(value) or (_HEX11.fullmatch(value) and not _INT16.fullmatch(value)):
        raise _ambiguous(value, "is an integer in YAML 1.1 but a string in YAML 1.2")
    if _SEXAGESIMAL.fullmatch(value):
        raise _ambiguous(value, "is a base-60 number in YAML 1.1 but a string in YAML 1.2")
    if "_" in value and _UNDERSCORED.fullmatch(value) and any(c.isdigit() for c in value):
        raise _ambiguous(
            value, "is a number with '_' separators in YAML 1.1 but a string in YAML 1.2"
        )


def _nonfinite(value: str) -> ScalarError:
    return ScalarError(
        "LOAD.NONFINITE", f"{value} is not a finite number; cbaudit inputs hold finite numbers"
    )


def resolve_plain(value: str) -> Any:
    """The value of an untagged plain scalar under the YAML 1.2 core schema, strictly."""
    if value in _NULLS:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    _refuse_yaml11(value)
    if value[:1] not in _NUMERIC_START:
        return value
    if _INT10.fullmatch(value):
        return _to_int(value, 10)
    if _INT8.fullmatch(value):
        return _to_int(value[2:], 8)
    if _INT16.fullmatch(value):
        return _to_int(value[2:], 16)
    if _FLOAT.fullmatch(value):
        return _to_float(value)
    if _INF_NAN.fullmatch(value):
        raise _nonfinite(value)
    return value


def resolve_tagged(tag: str, value: str) -> Any:
    """The value of a scalar with an explicit core tag (`!!int 12`, `!!str on`, ...)."""
    if tag == TAG_STR:
        return value
    if tag == TAG_NULL:
        if value in _NULLS:
            return None
    elif tag == TAG_BOOL:
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
    elif tag in (TAG_INT, TAG_FLOAT):
        _refuse_yaml11(value)
        if _INF_NAN.fullmatch(value):
            raise _nonfinite(value)
        if _INT10.fullmatch(value):
            return _to_float(value) if tag == TAG_FLOAT else _to_int(value, 10)
        if tag == TAG_INT and _INT8.fullmatch(value):
            return _to_int(value[2:], 8)
        if tag == TAG_INT and _INT16.fullmatch(value):
            return _to_int(value[2:], 16)
        if tag == TAG_FLOAT and _FLOAT.fullmatch(value):
            return _to_float(value)
    raise ScalarError(
        "LOAD.YAML_TAG_VALUE", f"{value[:40]!r} is not a valid {short_tag(tag)} value"
    )


def short_tag(tag: str) -> str:
    """`!!int` for `tag:yaml.org,2002:int`; other tags as written."""
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


class MarkNode:
    """Where a value starts (1-based line/column) and the marks of its children."""

    __slots__ = ("children", "column", "line")

    def __init__(
        self, line: int, column: int, children: dict[str, MarkNode] | list[MarkNode] | None
    ) -> None:
        self.line = line
        self.column = column
        self.children = children


def locate_marks(root: MarkNode, pointer: str) -> tuple[int, int]:
    """Line and column of the value at `pointer`, or of its deepest existing ancestor."""
    node = root
    for token in split_pointer(pointer):
        children = node.children
        child: MarkNode | None = None
        if isinstance(children, dict):
            child = children.get(token)
        elif isinstance(children, list) and token.isdigit() and int(token) < len(children):
            child = children[int(token)]
        if child is None:
            break
        node = child
    return node.line, node.column


@dataclass(slots=True)
class _Anchor:
    value: Any
    marks: MarkNode
    size: int  # nodes in the expanded value
    height: int  # levels of collections in the expanded value (a scalar has 0)


class _Frame:
    """A mapping or sequence being built."""

    __slots__ = (
        "anchor",
        "column",
        "height",
        "is_map",
        "key",
        "line",
        "marks",
        "pointer",
        "start_count",
        "value",
    )

    def __init__(
        self, is_map: bool, pointer: str, anchor: str | None, start: int, line: int, col: int
    ) -> None:
        self.is_map = is_map
        self.value: dict[str, Any] | list[Any] = {} if is_map else []
        self.marks: dict[str, MarkNode] | list[MarkNode] = {} if is_map else []
        self.pointer = pointer
        self.anchor = anchor
        self.start_count = start
        self.height = 1
        self.key: str | None = None  # mapping: the key whose value comes next
        self.line = line
        self.column = col


_IN_PROGRESS = object()
_UNSET = object()


def parse_yaml(
    text: str,
    *,
    name: str,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_alias_nodes: int = DEFAULT_MAX_ALIAS_NODES,
) -> tuple[Any, MarkNode]:
    """Plain data and its marks from one YAML document; InputError with a LOAD.* finding."""
    return _Composer(text, name, max_depth, max_alias_nodes).run()


class _Composer:
    def __init__(self, text: str, name: str, max_depth: int, max_alias_nodes: int) -> None:
        self.text = text
        self.name = name
        self.max_depth = max_depth
        self.max_alias_nodes = max_alias_nodes
        self.stack: list[_Frame] = []
        self.anchors: dict[str, Any] = {}  # name -> _Anchor, or _IN_PROGRESS
        self.count = 0  # nodes so far, aliases counted expanded
        self.alias_nodes = 0  # nodes added by expanding aliases
        self.documents = 0
        self.root: Any = _UNSET
        self.root_marks = MarkNode(1, 1, None)

    # -- errors ------------------------------------------------------------------------------

    def error(self, code: str, message: str, mark: Any, pointer: str | None) -> InputError:
        line = getattr(mark, "line", None)
        column = getattr(mark, "column", None)
        return InputError.at(
            code,
            message,
            self.name,
            pointer=pointer,
            line=None if line is None else line + 1,
            column=None if column is None else column + 1,
        )

    def syntax(self, err: yaml.YAMLError) -> InputError:
        pointer = self.stack[-1].pointer if self.stack else None
        line: int | None = None
        column: int | None = None
        if isinstance(err, yaml.MarkedYAMLError):
            parts = [p for p in (err.context, err.problem) if p]
            message = "; ".join(parts) or "not valid YAML"
            mark = err.problem_mark or err.context_mark
            if mark is not None:
                line, column = mark.line + 1, mark.column + 1
        elif isinstance(err, yaml.reader.ReaderError):
            line, column = line_col(self.text, err.position)
            char = err.character
            code_point = char if isinstance(char, int) else ord(str(char)[:1] or "\0")
            message = f"character U+{code_point:04X} is not allowed in YAML ({err.reason})"
        else:
            message = str(err)
        message = " ".join(message.split())
        code = "LOAD.SYNTAX"
        if "maximum nesting depth" in message:
            code = "LOAD.DEPTH"
            message = f"nesting deeper than the parser allows ({message}); flatten the input"
        elif not message.startswith("character"):
            message = f"not valid YAML: {message}"
        return InputError.at(code, message, self.name, pointer=pointer, line=line, column=column)

    # -- driving -----------------------------------------------------------------------------

    def run(self) -> tuple[Any, MarkNode]:
        try:
            for event in yaml.parse(self.text, Loader=_LOADER):
                self.on_event(event)
        except yaml.YAMLError as err:
            raise self.syntax(err) from None
        except RecursionError:
            raise InputError.at(
                "LOAD.DEPTH", "nesting too deep to parse; flatten the input", self.name
            ) from None
        if self.documents == 0 or self.root is _UNSET:
            raise InputError.at(
                "LOAD.EMPTY", "no YAML document (only comments or directives)", self.name, line=1
            )
        return self.root, self.root_marks

    def on_event(self, event: Any) -> None:
        kind = type(event)
        if kind is yaml.ScalarEvent:
            self.on_scalar(event)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            self.on_start(event, kind is yaml.MappingStartEvent)
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            self.on_end()
        elif kind is yaml.AliasEvent:
            self.on_alias(event)
        elif kind is yaml.DocumentStartEvent:
            self.documents += 1
            if self.documents > 1:
                raise self.error(
                    "LOAD.MULTI_DOCUMENT",
                    "a second YAML document ('---'); put one document in each file",
                    event.start_mark,
                    None,
                )

    def next_pointer(self) -> str:
        """Pointer of the value the next event builds (for a key: its mapping's pointer)."""
        if not self.stack:
            return ""
        frame = self.stack[-1]
        if frame.is_map:
            if frame.key is None:
                return frame.pointer
            return frame.pointer + "/" + escape_token(frame.key)
        return f"{frame.pointer}/{len(frame.value)}"

    def awaiting_key(self) -> bool:
        return bool(self.stack) and self.stack[-1].is_map and self.stack[-1].key is None

    # -- events ------------------------------------------------------------------------------

    def on_start(self, event: Any, is_map: bool) -> None:
        pointer = self.next_pointer()
        mark = event.start_mark
        if len(self.stack) + 1 > self.max_depth:
            raise self.error(
                "LOAD.DEPTH",
                f"nesting deeper than {self.max_depth} levels; flatten the input",
                mark,
                pointer,
            )
        self.check_collection_tag(event.tag, is_map, mark, pointer)
        if self.awaiting_key():
            raise self.error(
                "LOAD.KEY_TYPE",
                "a mapping key is a collection; keys must be strings",
                mark,
                pointer,
            )
        if event.anchor is not None:
            self.anchors[event.anchor] = _IN_PROGRESS
        frame = _Frame(is_map, pointer, event.anchor, self.count, mark.line + 1, mark.column + 1)
        self.count += 1
        self.stack.append(frame)

    def on_end(self) -> None:
        frame = self.stack.pop()
        marks = MarkNode(frame.line, frame.column, frame.marks)
        if frame.anchor is not None:
            size = self.count - frame.start_count
            self.anchors[frame.anchor] = _Anchor(frame.value, marks, size, frame.height)
        self.attach(frame.value, marks, frame.height)

    def on_scalar(self, event: Any) -> None:
        pointer = self.next_pointer()
        mark = event.start_mark
        is_key = self.awaiting_key()
        try:
            value = self.scalar_value(event)
        except ScalarError as err:
            where = pointer + "/" + escape_token(event.value) if is_key else pointer
            raise self.error(err.code, err.message, mark, where) from None
        self.count += 1
        marks = MarkNode(mark.line + 1, mark.column + 1, None)
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchor(value, marks, 1, 0)
        if is_key:
            plain = event.tag is None and event.style in (None, "")
            self.set_key(value, mark, pointer, merge=plain and value == "<<")
        else:
            self.attach(value, marks, 0)

    def on_alias(self, event: Any) -> None:
        pointer = self.next_pointer()
        mark = event.start_mark
        anchor = self.anchors.get(event.anchor, _UNSET)
        if anchor is _UNSET:
            raise self.error(
                "LOAD.SYNTAX", f"alias *{event.anchor} names no anchor before it", mark, pointer
            )
        if anchor is _IN_PROGRESS:
            raise self.error(
                "LOAD.YAML_RECURSIVE_ALIAS",
                f"alias *{event.anchor} refers to a node that contains it",
                mark,
                pointer,
            )
        assert isinstance(anchor, _Anchor)
        self.alias_nodes += anchor.size
        self.count += anchor.size
        if self.alias_nodes > self.max_alias_nodes:
            raise self.error(
                "LOAD.YAML_ALIAS_BOMB",
                f"aliases expand to more than {self.max_alias_nodes} nodes; "
                "write the data out or use fewer aliases",
                mark,
                pointer,
            )
        if len(self.stack) + anchor.height > self.max_depth:
            raise self.error(
                "LOAD.DEPTH",
                f"alias *{event.anchor} expands deeper than {self.max_depth} levels",
                mark,
                pointer,
            )
        if self.awaiting_key():
            self.set_key(anchor.value, mark, pointer, merge=False)
        else:
            marks = MarkNode(mark.line + 1, mark.column + 1, anchor.marks.children)
            self.attach(anchor.value, marks, anchor.height)

    # -- building ----------------------------------------------------------------------------

    def scalar_value(self, event: Any) -> Any:
        tag = event.tag
        if tag is None:
            if event.style in (None, "") and event.implicit[0]:
                return resolve_plain(event.value)
            return event.value
        if tag == "!":
            return event.value
        if tag in _SCALAR_TAGS:
            return resolve_tagged(tag, event.value)
        if tag in (TAG_MAP, TAG_SEQ):
            raise ScalarError(
                "LOAD.YAML_TAG_VALUE", f"{short_tag(tag)} is on a scalar, not a collection"
            )
        raise _tag_refused(tag)

    def check_collection_tag(self, tag: str | None, is_map: bool, mark: Any, pointer: str) -> None:
        if tag is None or tag == "!" or tag == (TAG_MAP if is_map else TAG_SEQ):
            return
        if tag in _SCALAR_TAGS or tag in (TAG_MAP, TAG_SEQ):
            what = "mapping" if is_map else "sequence"
            raise self.error(
                "LOAD.YAML_TAG_VALUE", f"{short_tag(tag)} is on a {what}", mark, pointer
            )
        err = _tag_refused(tag)
        raise self.error(err.code, err.message, mark, pointer)

    def set_key(self, key: Any, mark: Any, pointer: str, *, merge: bool) -> None:
        frame = self.stack[-1]
        if merge:
            raise self.error(
                "LOAD.YAML_MERGE_KEY",
                "merge key '<<' is YAML 1.1 only; write the keys out in this mapping",
                mark,
                pointer + "/<<",
            )
        if not isinstance(key, str):
            raise self.error(
                "LOAD.KEY_TYPE",
                f"mapping key {key!r} is {type(key).__name__}, not a string; quote it",
                mark,
                pointer,
            )
        member = pointer + "/" + escape_token(key)
        assert isinstance(frame.marks, dict)
        if key in frame.marks:
            first = frame.marks[key]
            raise self.error(
                "LOAD.DUPLICATE_KEY",
                f"duplicate key {key!r} (value first at line {first.line}); "
                "each key may appear once in a mapping",
                mark,
                member,
            )
        frame.key = key

    def attach(self, value: Any, marks: MarkNode, height: int) -> None:
        if not self.stack:
            self.root = value
            self.root_marks = marks
            return
        frame = self.stack[-1]
        if frame.is_map:
            key = frame.key
            assert key is not None and isinstance(frame.value, dict)
            assert isinstance(frame.marks, dict)
            frame.value[key] = value
            frame.marks[key] = marks
            frame.key = None
        else:
            assert isinstance(frame.value, list) and isinstance(frame.marks, list)
            frame.value.append(value)
            frame.marks.append(marks)
        frame.height = max(frame.height, height + 1)


def _tag_refused(tag: str) -> ScalarError:
    return ScalarError(
        "LOAD.YAML_TAG",
        f"tag {short_tag(tag)} is not allowed: cbaudit reads plain data only "
        "(core tags !!str !!int !!float !!bool !!null !!map !!seq)",
    )
