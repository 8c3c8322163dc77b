"""Strict, located loading of JSON, YAML and JSONL inputs.

Every way an input can be unusable ends in an `InputError` carrying one `LOAD.*` finding
with the file, line, column and JSON pointer where they mean something (the CLI prints it
on one line and exits 2). The codes are listed in `docs/loading.md`.

A `Document` is cheap to make: it keeps the text and finds positions only when asked
(`Document.locate`), so a valid JSONL record costs little more than `json.loads`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from cbaudit.io import memo
from cbaudit.io.json_locate import first_value_pos, line_col, locate_pointer, split_pointer
from cbaudit.io.json_strict import FloatWatch, parse_json
from cbaudit.io.limits import (
    DEFAULT_MAX_ALIAS_NODES,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    MAX_BYTES_ENV,
    resolve_max_bytes,
)
from cbaudit.io.reads import note_read
from cbaudit.model import InputError, Location, UsageError
from cbaudit.model.errors import file_error

if TYPE_CHECKING:  # the YAML reader (and PyYAML) load only for YAML input
    from cbaudit.io.yaml_strict import MarkNode

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "Document",
    "iter_jsonl",
    "load_document",
    "load_text",
]

FORMATS = ("json", "yaml", "jsonl")
SUFFIX_FORMATS = {
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
_BOM = b"\xef\xbb\xbf"

Expect = type | tuple[type, ...] | None

#: Inside a reuse scope (`cbaudit.io.memo.reusing`: the gate's workers), a JSON or YAML
#: document whose bytes, name and parse options were parsed before is not parsed again: the
#: caller gets a fresh copy of the first parse's data (its own to change) and its positions.
#: The bytes are still read, recorded and hashed on the caller's path (`load_document`), so a
#: changed file is parsed anew. Up to this many characters of source text are kept; a larger
#: document is parsed every time.
REUSE_LIMIT = 16 << 20
REUSE_MAX_DOCUMENT = 1 << 20
_PARSES = "loader.parse"


@dataclass(frozen=True)
class Document:
    """A parsed input: its data plus what is needed to locate a JSON pointer in it.

    `fmt` is `json`, `yaml` or `jsonl` (a whole JSONL file: `data` is the list of records).
    `line_offset` is the number of lines before this text in its file (JSONL records).
    """

    path: str
    data: Any
    text: str
    fmt: str
    sha256: str
    line_offset: int = 0
    _marks: MarkNode | None = field(default=None, repr=False, compare=False)

    def locate(self, pointer: str) -> Location:
        """File, pointer, line and column of the value at `pointer` (or its nearest ancestor)."""
        if self.fmt == "yaml":
            from cbaudit.io.yaml_strict import locate_marks, parse_yaml

            marks = self._marks
            if marks is None:  # a recorded document (`load_recorded`): parsed when asked
                marks = parse_yaml(self.text, name=self.path)[1]
            line, column = locate_marks(marks, pointer)
        elif self.fmt == "jsonl":
            line, column = _locate_jsonl(self.text, pointer)
        else:
            line, column = line_col(self.text, locate_pointer(self.text, pointer))
        return Location(
            file=self.path, pointer=pointer, line=line + self.line_offset, column=column
        )


def _locate_jsonl(text: str, pointer: str) -> tuple[int, int]:
    """Pointer `/<record>/...` of a whole JSONL document: record index, then inside it."""
    tokens = split_pointer(pointer)
    if not tokens or not tokens[0].isdigit():
        return 1, 1
    wanted = int(tokens[0])
    rest = pointer[len("/" + tokens[0]) :]
    index = -1
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            index += 1
            if index == wanted:
                line_in, column = line_col(line, locate_pointer(line, rest))
                return lineno + line_in - 1, column
    return 1, 1


# -- bytes to text ---------------------------------------------------------------------------


def _decode(raw: bytes, name: str, *, line_offset: int = 0, strip_bom: bool = True) -> str:
    """UTF-8 text of `raw` (a leading UTF-8 BOM is dropped); LOAD.ENCODING otherwise."""
    skip = len(_BOM) if strip_bom and raw.startswith(_BOM) else 0
    try:
        return raw[skip:].decode("utf-8")
    except UnicodeDecodeError as err:
        offset = err.start + skip
        line_start = max(raw.rfind(b"\n", 0, offset) + 1, skip)
        line = raw.count(b"\n", 0, offset) + 1 + line_offset
        column = len(raw[line_start:offset].decode("utf-8", errors="replace")) + 1
        hint = "save it as UTF-8"
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            hint = "it looks like UTF-16; save it as UTF-8"
        message = f"byte 0x{raw[offset]:02x} at byte offset {offset} is not valid UTF-8; {hint}"
        raise InputError.at("LOAD.ENCODING", message, name, line=line, column=column) from None


def _encode(text: str, name: str, line_offset: int) -> bytes:
    """UTF-8 bytes of in-memory text; a lone surrogate (not a character) is LOAD.ENCODING."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as err:
        line, column = line_col(text, err.start)
        message = f"U+{ord(text[err.start]):04X} is a lone surrogate, not a character"
        raise InputError.at(
            "LOAD.ENCODING", message, name, line=line + line_offset, column=column
        ) from None


# -- files -----------------------------------------------------------------------------------


def _stat(path: Path, name: str) -> os.stat_result:
    try:
        info = path.stat()
    except (OSError, ValueError) as err:
        raise file_error(name, err) from None
    if stat.S_ISDIR(info.st_mode):
        raise file_error(name, IsADirectoryError())
    return info


def _too_large(
    name: str, size: int | str, cap: int, what: str = "the file", line: int | None = None
) -> InputError:
    return InputError.at(
        "LOAD.TOO_LARGE",
        f"{what} is {size} bytes, over the {cap}-byte input cap; "
        f"if it is trusted, raise the cap with {MAX_BYTES_ENV}",
        name,
        line=line,
    )


def _open(path: Path, name: str) -> BinaryIO:
    _stat(path, name)
    note_read(path, name)  # the gate's read log: confined, then hashed into the report
    try:
        return path.open("rb")
    except OSError as err:
        raise file_error(name, err) from None


def read_bounded(path: str | Path, name: str, max_bytes: int) -> bytes:
    """The bytes of `path`, refusing it (before reading, where the size is known) past the cap."""
    p = Path(path)
    info = _stat(p, name)
    if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
        raise _too_large(name, info.st_size, max_bytes)
    # read one past the cap (pipes and devices have no size), or one past a regular file's
    # size, so that a small file does not cost a buffer of the cap's size; a file that grew
    # since `stat` is read on, up to one past the cap
    first = min(max_bytes, info.st_size) + 1 if stat.S_ISREG(info.st_mode) else max_bytes + 1
    with _open(p, name) as fh:
        try:
            raw = fh.read(first)
            if len(raw) == first and first <= max_bytes:
                raw += fh.read(max_bytes + 1 - first)
        except OSError as err:
            raise file_error(name, err) from None
    if len(raw) > max_bytes:
        raise _too_large(name, f"more than {max_bytes}", max_bytes)
    return raw


def _sniff(text: str) -> str:
    return "json" if text.lstrip()[:1] in ("{", "[") else "yaml"


def _format_for(path: Path, fmt: str | None) -> str | None:
    if fmt is not None:
        if fmt not in FORMATS:
            raise UsageError(f"unknown input format {fmt!r} (known: {', '.join(FORMATS)})")
        return fmt
    return SUFFIX_FORMATS.get(path.suffix.lower())


# -- text to data ----------------------------------------------------------------------------


_TYPE_WORDS = {
    dict: "an object (mapping)",
    list: "an array (sequence)",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}


def _describe(kind: type) -> str:
    return _TYPE_WORDS.get(kind, kind.__name__)


def _check_top(data: Any, expect: Expect, name: str, line: int, column: int) -> None:
    if expect is None or isinstance(data, expect):
        return
    wanted = expect if isinstance(expect, tuple) else (expect,)
    words = " or ".join(_describe(k) for k in wanted)
    raise InputError.at(
        "LOAD.TOP_LEVEL_TYPE",
        f"the top-level value is {_describe(type(data))}; expected {words}",
        name,
        pointer="",
        line=line,
        column=column,
    )


def _check_not_empty(text: str, name: str, line_offset: int = 0) -> None:
    if not text.strip():
        raise InputError.at(
            "LOAD.EMPTY", "the input is empty (or only whitespace)", name, line=line_offset + 1
        )


def load_text(
    text: str | bytes,
    *,
    name: str,
    fmt: str | None = "json",
    expect: Expect = dict,
    line_offset: int = 0,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_alias_nodes: int = DEFAULT_MAX_ALIAS_NODES,
    watch: FloatWatch | None = None,
) -> Document:
    """Parse one document held in memory (`fmt` json, yaml, jsonl, or None to sniff).

    `watch` (JSON only) notes whether the document held a float with a zero fraction."""
    if isinstance(text, bytes):
        raw = text
        decoded = _decode(raw, name, line_offset=line_offset)
    else:
        raw = _encode(text, name, line_offset)
        decoded = text[1:] if text.startswith("\ufeff") else text
    kind = fmt if fmt is not None else _sniff(decoded)
    if kind not in FORMATS:
        raise UsageError(f"unknown input format {kind!r} (known: {', '.join(FORMATS)})")
    digest = hashlib.sha256(raw).hexdigest()
    if kind == "jsonl":
        records = _jsonl_records(decoded, name, expect, line_offset, max_depth)
        return Document(name, records, decoded, kind, digest, line_offset)
    key: tuple[Any, ...] | None = None
    if watch is None and memo.active():
        key = (digest, kind, name, expect, line_offset, max_depth, max_alias_nodes)
        held = memo.recall(_PARSES, key)
        if held is not None:
            return Document(name, memo.fresh(held[0]), decoded, kind, digest, line_offset, held[1])
    _check_not_empty(decoded, name, line_offset)
    marks: MarkNode | None = None
    if kind == "json":
        data = parse_json(
            decoded, name=name, line_offset=line_offset, max_depth=max_depth, watch=watch
        )
        if expect is not None and not isinstance(data, expect):
            line, column = line_col(decoded, first_value_pos(decoded))
            _check_top(data, expect, name, line + line_offset, column)
    else:
        from cbaudit.io.yaml_strict import parse_yaml

        data, marks = parse_yaml(
            decoded, name=name, max_depth=max_depth, max_alias_nodes=max_alias_nodes
        )
        if expect is not None and not isinstance(data, expect):
            _check_top(data, expect, name, marks.line + line_offset, marks.column)
    if key is not None and len(decoded) <= REUSE_MAX_DOCUMENT:
        # (kept as a private copy: the caller owns `data`)
        memo.keep(_PARSES, key, (memo.fresh(data), marks), size=len(decoded), limit=REUSE_LIMIT)
    return Document(name, data, decoded, kind, digest, line_offset, marks)


def load_recorded(raw: bytes, *, name: str, fmt: str, recorded: Mapping[str, Any]) -> Document:
    """`load_text(raw, name=name, fmt=fmt)` for bytes that were parsed before.

    `recorded` maps the sha256 of such bytes to the data that parsing them gave (a record its
    owner keeps current, e.g. the shipped profiles' index): bytes it holds are not parsed
    again, and their positions are found only if asked (`Document.locate`). Bytes it does
    not hold are parsed as usual.
    """
    digest = hashlib.sha256(raw).hexdigest()
    data = recorded.get(digest)
    if data is None:
        return load_text(raw, name=name, fmt=fmt)
    return Document(name, data, _decode(raw, name), fmt, digest)


def _jsonl_records(
    text: str, name: str, expect: Expect, line_offset: int, max_depth: int
) -> list[Any]:
    records: list[Any] = []
    for index, line in enumerate(text.split("\n")):
        if line.strip():
            records.append(_record(line, name, expect, line_offset + index, max_depth))
    if not records:
        _check_not_empty("", name, line_offset)
    return records


def _record(line: str, name: str, expect: Expect, line_offset: int, max_depth: int) -> Any:
    data = parse_json(line, name=name, line_offset=line_offset, max_depth=max_depth)
    if expect is not None and not isinstance(data, expect):
        _, column = line_col(line, first_value_pos(line))
        _check_top(data, expect, name, line_offset + 1, column)
    return data


def load_document(
    path: str | Path,
    *,
    fmt: str | None = None,
    max_bytes: int | None = None,
    expect: Expect = dict,
    display: str | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_alias_nodes: int = DEFAULT_MAX_ALIAS_NODES,
    schema: str | None = None,
) -> Document:
    """Read and parse the file at `path`.

    The format is `fmt`, else the suffix (.json, .yaml/.yml, .jsonl/.ndjson), else JSON when
    the text starts with `{` or `[` and YAML otherwise. `max_bytes` defaults to
    $CBAUDIT_MAX_INPUT_BYTES or 64 MiB. `expect` is the required top-level type (for JSONL:
    of each record); `display` is the name used in findings. With `schema` (a shipped schema
    name) a document that does not satisfy it is unusable too: InputError with its located
    `SCHEMA.*` findings.
    """
    p = Path(path)
    name = display if display is not None else str(path)
    kind = _format_for(p, fmt)
    raw = read_bounded(p, name, resolve_max_bytes(max_bytes))
    doc = load_text(
        raw,
        name=name,
        fmt=kind,
        expect=expect,
        max_depth=max_depth,
        max_alias_nodes=max_alias_nodes,
    )
    if schema is not None:
        from cbaudit.io.schemas import validate

        findings = validate(doc.data, schema, file=doc.path, locate=doc.locate)
        if findings:
            raise InputError(findings)
    return doc


def iter_jsonl(
    path: str | Path,
    *,
    display: str | None = None,
    max_line_bytes: int | None = None,
    expect: Expect = dict,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Iterator[Document]:
    """One Document per non-blank line of a JSONL file, streamed in bounded memory.

    Each Document's `line_offset` is its line number minus one, so its findings carry file
    lines. The first bad line raises InputError located at that line. A line longer than
    `max_line_bytes` (default: the input cap) is refused with LOAD.TOO_LARGE; the file as
    a whole has no cap. Blank lines are skipped; `\\r\\n` endings are accepted.
    """
    p = Path(path)
    name = display if display is not None else str(path)
    cap = resolve_max_bytes(max_line_bytes)
    fh = _open(p, name)
    with fh:
        lineno = 0
        records = 0
        while True:
            try:
                raw = fh.readline(cap + 1)
            except OSError as err:
                raise file_error(name, err) from None
            if not raw:
                break
            lineno += 1
            body = raw[:-1] if raw.endswith(b"\n") else raw
            if len(body) > cap:
                raise _too_large(name, f"more than {cap}", cap, what="the line", line=lineno)
            if body.endswith(b"\r"):
                body = body[:-1]
            if not body.strip():
                continue
            yield _jsonl_document(body, name, lineno, expect, max_depth)
            records += 1
        if records == 0:
            _check_not_empty("", name)


def _jsonl_document(
    body: bytes, name: str, lineno: int, expect: Expect, max_depth: int
) -> Document:
    text = _decode(body, name, line_offset=lineno - 1, strip_bom=lineno == 1)
    data = _record(text, name, expect, lineno - 1, max_depth)
    return Document(name, data, text, "json", hashlib.sha256(body).hexdigest(), lineno - 1)
