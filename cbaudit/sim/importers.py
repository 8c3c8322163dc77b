"""Request-trace importers: public request traces streamed into workload request declarations.

Four public formats are recognised, CSV ones by their header:

* Splitwise / Vidur: `arrived_at,num_prefill_tokens,num_decode_tokens`, arrival in seconds;
* Azure LLM inference trace (2023 and 2024): `TIMESTAMP,ContextTokens,GeneratedTokens`,
  timestamps as datetime strings (naive, read as UTC, or with a zone), converted to seconds
  after the first row;
* BurstGPT: `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`, arrival
  in seconds (`Timestamp`); a failed request is logged with 0 response tokens;
* Mooncake (JSON Lines, `.jsonl`): one object a line with `timestamp` (milliseconds),
  `input_length` and `output_length` (other keys, such as `hash_ids`, are not read).

Each data row becomes one request: prompt = prefill/context tokens, realized output = decode/
generated tokens (fixture-only hidden truth), arrival in milliseconds. `max_output_tokens` is a
declared cap (then the realized value is clipped to it, since a request cannot emit more), or,
by default, the realized value itself, which the manifest's description labels a trace-derived
cap.

Rows are read one at a time with the `csv` module; nothing is held but the requests made.
Every problem is an `InputError` located at `file:line:column`.
"""

from __future__ import annotations

import codecs
import csv
import json
import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

from cbaudit.io.reads import open_input
from cbaudit.model import InputError


class TraceFormat(StrEnum):
    """Supported trace layouts."""

    SPLITWISE = "splitwise"
    AZURE = "azure"
    BURSTGPT = "burstgpt"
    MOONCAKE = "mooncake"  # JSON Lines


@dataclass(frozen=True, slots=True)
class TraceColumns:
    arrival: str
    prompt: str
    output: str


FORMATS: dict[TraceFormat, TraceColumns] = {
    TraceFormat.SPLITWISE: TraceColumns("arrived_at", "num_prefill_tokens", "num_decode_tokens"),
    TraceFormat.AZURE: TraceColumns("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    TraceFormat.BURSTGPT: TraceColumns("Timestamp", "Request tokens", "Response tokens"),
    TraceFormat.MOONCAKE: TraceColumns("timestamp", "input_length", "output_length"),
}
# The CSV formats, told apart by their header; a `.jsonl` trace is Mooncake's.
CSV_FORMATS = (TraceFormat.SPLITWISE, TraceFormat.AZURE, TraceFormat.BURSTGPT)
# A workload path with one of these suffixes is a request trace (any other: a YAML or JSON
# manifest or generator spec).
TRACE_SUFFIXES = (".csv", ".jsonl")


def is_trace_path(path: str | Path) -> bool:
    """Whether a workload path names a request trace (by its suffix)."""
    return Path(path).suffix.lower() in TRACE_SUFFIXES


def _jsonl(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".jsonl"


_MS_PER_S = Decimal(1000)
# Used only when a bare CSV trace is loaded without a policy or budgets; documented defaults
# (the replay of a plain trace reads them here, without loading the workload generators).
DEFAULT_TIE_BREAK: dict[str, list[str]] = {
    "key": ["phase_rank", "priority_rank", "arrival_order", "request_id", "request_generation"],
    "phase_order": ["DECODE_ROW", "PREFILL_CHUNK"],
}
DEFAULT_TRACE_POLICY: dict[str, Any] = {
    "policy_id": "unspecified",
    "policy_version": "0",
    "tie_break": DEFAULT_TIE_BREAK,
}
DEFAULT_TRACE_BUDGETS: dict[str, int] = {"token_budget": 8192, "sequence_budget": 256}


_TIMESTAMP_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,12}))?"
    r"(Z|[+-]\d{2}:?\d{2})?$"
)


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One data row: where it was, arrival in ms (exact decimal), prompt and output tokens."""

    line: int
    arrival_ms: Decimal
    prompt_tokens: int
    output_tokens: int


def _error(code: str, message: str, file: str, line: int, column: int | None = None) -> InputError:
    return InputError.at(code, message, file, line=line, column=column)


def _decoded(lines: Iterable[bytes], name: str) -> Iterator[str]:
    """UTF-8 text of each line (a leading BOM dropped); LOAD.ENCODING, located, otherwise."""
    for line_no, raw in enumerate(lines, start=1):
        if line_no == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as err:
            column = len(raw[: err.start].decode("utf-8", errors="replace")) + 1
            raise _error(
                "LOAD.ENCODING",
                f"byte 0x{raw[err.start]:02X} is not UTF-8; save the trace as UTF-8",
                name,
                line_no,
                column,
            ) from None


def detect_format(header: list[str], file: str = "<trace>") -> TraceFormat:
    """The format whose columns the header holds; TRACE.MISSING_COLUMN otherwise."""
    names = {h.strip() for h in header}
    best: tuple[int, TraceFormat] | None = None
    for fmt in CSV_FORMATS:
        cols = FORMATS[fmt]
        have = sum(c in names for c in (cols.arrival, cols.prompt, cols.output))
        if have == 3:
            return fmt
        if have and (best is None or have > best[0]):
            best = (have, fmt)
    if best is not None:
        cols = FORMATS[best[1]]
        missing = [c for c in (cols.arrival, cols.prompt, cols.output) if c not in names]
        raise _error(
            "TRACE.MISSING_COLUMN",
            f"header looks like the {best[1].value} format but lacks {', '.join(missing)}",
            file,
            1,
            1,
        )
    expected = "; ".join(
        f"{fmt.value}: {c.arrival},{c.prompt},{c.output}"
        for fmt, c in ((f, FORMATS[f]) for f in CSV_FORMATS)
    )
    raise _error(
        "TRACE.MISSING_COLUMN",
        f"header {','.join(header)!r} matches no known trace format ({expected})",
        file,
        1,
        1,
    )


def _timestamp_seconds(text: str) -> Decimal:
    """Exact seconds since 1970-01-01 of a datetime string (naive times are read as UTC)."""
    m = _TIMESTAMP_RE.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a YYYY-MM-DD HH:MM:SS[.fraction] timestamp")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    whole = datetime(year, month, day, hour, minute, second)
    seconds = Decimal((whole - datetime(1970, 1, 1)) // timedelta(seconds=1))
    if m.group(7):
        seconds += Decimal("0." + m.group(7))
    zone = m.group(8)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "+" else 1
        hh, mm = int(zone[1:3]), int(zone[-2:])
        seconds += sign * (hh * 3600 + mm * 60)
    return seconds


def _bad_field(
    file: str,
    line: int,
    header: list[str],
    fields: list[str],
    offsets: list[int],
    i: int,
    what: str,
) -> InputError:
    return _error(
        "TRACE.BAD_ROW", f"{header[i].strip()}={fields[i]!r}: {what}", file, line, offsets[i]
    )


def _columns_offsets(fields: list[str]) -> list[int]:
    """1-based character column where each field starts (exact for unquoted CSV)."""
    out: list[int] = []
    col = 1
    for f in fields:
        out.append(col)
        col += len(f) + 1
    return out


def trace_format(
    path: str | Path, fmt: TraceFormat | str = "auto", *, display: str | None = None
) -> TraceFormat:
    """The format of a trace file, read from its header (and checked against `fmt`)."""
    name = display if display is not None else str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError.at("TRACE.NOT_FOUND", "no such trace file", name)
    if _jsonl(p):
        return _declared(fmt, TraceFormat.MOONCAKE, name, "the file is JSON Lines (mooncake)")
    with open_input(p, name) as fh:
        return _header(next(_decoded(fh, name), ""), fmt, name)[0]


def _declared(fmt: TraceFormat | str, detected: TraceFormat, name: str, what: str) -> TraceFormat:
    """`fmt` (a declared format, or `auto`) checked against the one the file shows."""
    if fmt not in ("auto", *(f.value for f in TraceFormat)):
        known = ", ".join(("auto", *(f.value for f in TraceFormat)))
        raise InputError.at("TRACE.OPTION.RANGE", f"unknown trace format {fmt!r} ({known})", name)
    chosen = TraceFormat(fmt) if fmt != "auto" else detected
    if chosen is not detected:
        raise _error(
            "TRACE.MISSING_COLUMN",
            f"declared format {chosen.value} but {what}",
            name,
            1,
            1,
        )
    return chosen


def _header(line: str, fmt: TraceFormat | str, name: str) -> tuple[TraceFormat, list[str]]:
    if not line.strip():
        raise _error("TRACE.EMPTY", "the trace has no header row", name, 1, 1)
    header = next(csv.reader([line]))
    detected = detect_format(header, name)
    return _declared(fmt, detected, name, f"the header is {detected.value}'s"), header


def iter_trace_rows(
    path: str | Path,
    fmt: TraceFormat | str = "auto",
    *,
    display: str | None = None,
    limit: int | None = None,
    time_scale: Decimal | int | float | str = 1,
    skip_failed: bool = False,
    skipped: list[int] | None = None,
) -> Iterator[TraceRow]:
    """Stream validated rows of a trace (CSV, or Mooncake's JSON Lines), in file order.

    Arrivals must not decrease (TRACE.UNSORTED); token counts must be integers, prompt >= 1
    and output >= 1 (TRACE.BAD_ROW). `skip_failed` leaves out the rows with 0 output tokens
    (BurstGPT logs a failed request so) instead, appending their lines to `skipped`; their
    other fields are still checked, and `limit` counts the rows kept. `time_scale` multiplies
    every arrival (0.5 replays the trace twice as fast). Azure timestamps count from the first
    row.
    """
    name = display if display is not None else str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError.at("TRACE.NOT_FOUND", "no such trace file", name)
    scale = Decimal(str(time_scale))
    if not scale > 0:
        raise InputError.at("TRACE.OPTION.RANGE", f"time_scale must be > 0, got {scale}", name)
    with open_input(p, name) as fh:
        lines = _decoded(fh, name)
        reader: _RowReader | _JsonlReader
        if _jsonl(p):
            _declared(fmt, TraceFormat.MOONCAKE, name, "the file is JSON Lines (mooncake)")
            reader = _JsonlReader(name, skip_failed)
            unit, first_line = _ONE, 1
        else:
            chosen, header = _header(next(lines, ""), fmt, name)
            reader = _RowReader(name, chosen, header, skip_failed)
            unit, first_line = _MS_PER_S, 2
        produced = 0
        for line_no, raw in enumerate(lines, start=first_line):
            if limit is not None and produced >= limit:
                return
            if not raw.strip():
                continue
            arrival, prompt, output = reader.read(line_no, raw)
            if not output:  # (0 only when skip_failed)
                if skipped is not None:
                    skipped.append(line_no)
                continue
            produced += 1
            yield TraceRow(line_no, arrival * unit * scale, prompt, output)
        if produced == 0:
            raise _error("TRACE.EMPTY", "the trace has no data rows", name, first_line)


_ONE = Decimal(1)
_FAILED_HINT = (
    " (BurstGPT logs a failed request with 0 response tokens: `skip_failed: true` in a"
    " generator spec's `trace` leaves such rows out)"
)


class _RowReader:
    """Reads one data row at a time: its arrival (not before the previous one's) and its two
    token counts, each refused with the row's line and the field's column."""

    def __init__(
        self, name: str, chosen: TraceFormat, header: list[str], skip_failed: bool = False
    ) -> None:
        self.name = name
        self.chosen = chosen
        self.header = header
        self.skip_failed = skip_failed
        cols = FORMATS[chosen]
        index = {h.strip(): i for i, h in enumerate(header)}
        self.i_arr, self.i_prompt, self.i_out = (
            index[cols.arrival],
            index[cols.prompt],
            index[cols.output],
        )
        self.width = len(header)
        self.first: Decimal | None = None  # Azure: timestamps count from the first row
        self.previous: Decimal | None = None

    def read(self, line_no: int, raw: str) -> tuple[Decimal, int, int]:
        """(arrival seconds, prompt tokens, output tokens) of one data row."""
        fields = next(csv.reader([raw.rstrip("\r\n")]))
        offsets = _columns_offsets(fields)
        if len(fields) != self.width:
            raise _error(
                "TRACE.BAD_ROW",
                f"expected {self.width} fields, found {len(fields)}",
                self.name,
                line_no,
                1,
            )
        seconds = self._arrival(line_no, fields, offsets)
        # a failed request (0 output tokens; its prompt count may be 0 too, as BurstGPT logs it):
        # refused at its output count, with the way out, or left out with `skip_failed`
        out = fields[self.i_out].strip()
        failed = out.isdigit() and int(out) == 0
        if failed and not self.skip_failed:
            self._count(line_no, fields, offsets, self.i_out)  # (raises, with the hint)
        prompt = self._count(line_no, fields, offsets, self.i_prompt, failed)
        output = self._count(line_no, fields, offsets, self.i_out, self.skip_failed)
        return seconds, prompt, output

    def _arrival(self, line_no: int, fields: list[str], offsets: list[int]) -> Decimal:
        i_arr = self.i_arr
        text = fields[i_arr].strip()
        try:
            if self.chosen is TraceFormat.AZURE:
                seconds = _timestamp_seconds(text)
                if self.first is None:
                    self.first = seconds
                seconds -= self.first
            else:
                seconds = Decimal(text)
                if not seconds.is_finite():
                    raise InvalidOperation
        except (ValueError, InvalidOperation):
            raise self._bad(line_no, fields, offsets, i_arr, "not a valid arrival time") from None
        if seconds < 0:
            raise self._bad(line_no, fields, offsets, i_arr, "arrival is negative")
        if self.previous is not None and seconds < self.previous:
            raise _error(
                "TRACE.UNSORTED",
                f"arrival {text} is earlier than the previous row's; sort the trace by"
                " arrival first",
                self.name,
                line_no,
                offsets[i_arr],
            )
        self.previous = seconds
        return seconds

    def _count(
        self, line_no: int, fields: list[str], offsets: list[int], i: int, zero: bool = False
    ) -> int:
        """A token count >= 1 (0 too with `zero`: a failed request's, left out)."""
        value = fields[i].strip()
        if not value.isdigit():
            raise self._bad(line_no, fields, offsets, i, "not an integer token count")
        n = int(value)
        if n < 1 and not (zero and n == 0):
            hint = _FAILED_HINT if i == self.i_out and n == 0 else ""
            raise self._bad(line_no, fields, offsets, i, "token count must be >= 1" + hint)
        return n

    def _bad(
        self, line_no: int, fields: list[str], offsets: list[int], i: int, why: str
    ) -> InputError:
        return _bad_field(self.name, line_no, self.header, fields, offsets, i, why)


class _JsonlReader:
    """Reads one line of a Mooncake trace at a time: a JSON object with `timestamp` (ms, not
    before the previous line's), `input_length` and `output_length`, each refused with the
    line and the column where its key stands."""

    def __init__(self, name: str, skip_failed: bool = False) -> None:
        self.name = name
        self.skip_failed = skip_failed
        self.previous: Decimal | None = None

    def read(self, line_no: int, raw: str) -> tuple[Decimal, int, int]:
        """(arrival ms, prompt tokens, output tokens) of one line."""
        raw = raw.rstrip("\r\n")
        try:
            obj = json.loads(raw, parse_float=Decimal, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as err:
            raise _error(
                "TRACE.BAD_ROW", f"not JSON: {err.msg}", self.name, line_no, err.colno
            ) from None
        except ValueError as err:  # a duplicate key
            raise _error("TRACE.BAD_ROW", str(err), self.name, line_no, 1) from None
        if not isinstance(obj, dict):
            raise _error("TRACE.BAD_ROW", "a line must hold one JSON object", self.name, line_no, 1)
        cols = FORMATS[TraceFormat.MOONCAKE]
        for key in (cols.arrival, cols.prompt, cols.output):
            if key not in obj:
                raise _error(
                    "TRACE.BAD_ROW",
                    f"no {key!r} (a Mooncake line has {cols.arrival}, {cols.prompt} and"
                    f" {cols.output})",
                    self.name,
                    line_no,
                    1,
                )
        ts = obj[cols.arrival]
        if isinstance(ts, bool) or not isinstance(ts, int | Decimal):
            raise self._bad(line_no, raw, cols.arrival, ts, "not a number of ms")
        ms = Decimal(ts)
        if ms < 0:
            raise self._bad(line_no, raw, cols.arrival, ts, "arrival is negative")
        if self.previous is not None and ms < self.previous:
            raise _error(
                "TRACE.UNSORTED",
                f"timestamp {ts} is earlier than the previous line's; sort the trace by"
                " timestamp first",
                self.name,
                line_no,
                _key_column(raw, cols.arrival),
            )
        self.previous = ms
        # a failed request (output 0): refused at its output, or left out with `skip_failed`
        failed = obj[cols.output] == 0 and type(obj[cols.output]) is int
        if failed and not self.skip_failed:
            self._count(line_no, raw, obj, cols.output, False)  # (raises, with the hint)
        prompt = self._count(line_no, raw, obj, cols.prompt, failed)
        output = self._count(line_no, raw, obj, cols.output, self.skip_failed)
        return ms, prompt, output

    def _count(self, line_no: int, raw: str, obj: dict[str, Any], key: str, zero: bool) -> int:
        n = obj[key]
        if isinstance(n, bool) or not isinstance(n, int):
            raise self._bad(line_no, raw, key, n, "not an integer token count")
        if n < 1 and not (zero and n == 0):
            hint = _FAILED_HINT if key == "output_length" and n == 0 else ""
            raise self._bad(line_no, raw, key, n, "token count must be >= 1" + hint)
        return n

    def _bad(self, line_no: int, raw: str, key: str, value: Any, why: str) -> InputError:
        return _error(
            "TRACE.BAD_ROW", f"{key}={value!r}: {why}", self.name, line_no, _key_column(raw, key)
        )


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return out


def _key_column(raw: str, key: str) -> int:
    """1-based column of `"key"` in a JSON line (1 when it is written with escapes)."""
    return raw.find(f'"{key}"') + 1 or 1


def read_int_column(path: str | Path, column: str, *, display: str | None = None) -> list[int]:
    """All values of one integer column of a CSV (for length resampling); located errors."""
    name = display if display is not None else str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError.at("TRACE.NOT_FOUND", "no such trace file", name)
    out: list[int] = []
    with open_input(p, name) as fh:
        reader = csv.reader(_decoded(fh, name))
        header = [h.strip() for h in next(reader, [])]
        if column not in header:
            raise _error(
                "TRACE.MISSING_COLUMN",
                f"no column {column!r} (columns: {', '.join(header)})",
                name,
                1,
                1,
            )
        idx = header.index(column)
        for fields in reader:
            if not fields or not "".join(fields).strip():
                continue
            line_no = reader.line_num
            if len(fields) <= idx:
                raise _error("TRACE.BAD_ROW", f"row has no {column!r} field", name, line_no, 1)
            value = fields[idx].strip()
            if not value.isdigit() or int(value) < 1:
                raise _error(
                    "TRACE.BAD_ROW",
                    f"{column}={value!r}: not a positive integer",
                    name,
                    line_no,
                    _columns_offsets(fields)[idx],
                )
            out.append(int(value))
    if not out:
        raise _error("TRACE.EMPTY", f"column {column!r} has no values", name, 2)
    return out


def ms_number(value: Decimal) -> int | float:
    """An exact decimal of milliseconds as the JSON number the manifest stores."""
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def trace_request(
    row: TraceRow,
    index: int,
    *,
    prefix: str,
    max_output_tokens: int | None,
) -> tuple[dict[str, Any], int]:
    """The online declaration of one row and its hidden realized output length."""
    realized = row.output_tokens
    cap = realized if max_output_tokens is None else max_output_tokens
    decl: dict[str, Any] = {
        "request_id": f"{prefix}-{index:06d}",
        "request_generation": 0,
        "arrival": ms_number(row.arrival_ms),
        "arrival_order": index,
        "prompt_tokens": row.prompt_tokens,
        "max_output_tokens": cap,
    }
    return decl, min(realized, cap)


def describe_trace_source(fmt: str, path: str, cap: int | None, rows: int, skipped: int = 0) -> str:
    cap_text = (
        "max_output_tokens = the realized decode length (a trace-derived cap, not an online"
        " declaration)"
        if cap is None
        else f"max_output_tokens = declared cap {cap} (realized lengths clipped to it)"
    )
    left_out = f"; {skipped} failed requests (0 output tokens) left out" if skipped else ""
    return f"imported from {fmt} trace {Path(path).name} ({rows} requests{left_out}); {cap_text}"


# --------------------------------------------------------------------------- whole-file reading

# (No size cap: the direct reader holds one block of text and the columns, a few tens of bytes
# a row, where the manifest path holds a dict a row: 5.5x the peak RSS and 15x the time at
# 176k rows. A trace of any size is read the direct way when it is plain.)
_PLAIN_CHUNK = 1 << 14  # bytes of rows read and matched at a time (about 500 rows)
_POW10 = tuple(10**k for k in range(25))
_EPOCH_ORDINAL = datetime(1970, 1, 1).toordinal()
# One data field of a plain row: no quote, carriage return, NUL or surrounding space.
_PLAIN_OTHER = r'[^,\n\r"\x00]*'
_PLAIN_COUNT = r"([0-9]{1,18})"
# seconds: up to 8 integer digits and 20 decimals (28 digits: exact in Decimal arithmetic)
_PLAIN_SECONDS = r"([0-9]{1,8})(?:\.([0-9]{1,20}))?"
_PLAIN_ARRIVAL = {
    TraceFormat.SPLITWISE: _PLAIN_SECONDS,
    TraceFormat.BURSTGPT: _PLAIN_SECONDS,
    # a timestamp, up to 12 decimals of a second, naive (read as UTC) or with a zone: `Z` or
    # an offset `+HH:MM` / `+HHMM` (the 2024 Azure traces write `+00:00` on every row)
    TraceFormat.AZURE: r"([0-9]{4})-([0-9]{2})-([0-9]{2})[ T]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,12}))?(Z|[+-][0-9]{2}:?[0-9]{2})?",
}


@dataclass(frozen=True, slots=True)
class TraceTable:
    """A whole trace as columns: arrival in ms (the JSON number `ms_number` gives), prompt and
    realized output tokens, in file order."""

    format: TraceFormat
    arrival_ms: list[int | float]
    prompt_tokens: array[int]
    output_tokens: array[int]


def read_plain_trace(path: str | Path, *, display: str | None = None) -> TraceTable | None:
    """The whole trace at once, when every byte of it is plain: UTF-8, no quotes, no blank or
    padded fields, LF or CRLF line ends, arrivals in the strict shapes above and not
    decreasing, token counts >= 1. None otherwise (and for any unreadable file):
    `iter_trace_rows` then streams the same file and refuses its first problem, located,
    exactly as it always has. On a plain trace the columns hold the very values
    `iter_trace_rows` + `trace_request` give (time scale 1): an arrival is read as an exact
    integer and divided once, correctly rounded, as `ms_number` rounds the exact decimal."""
    name = display if display is not None else str(path)
    p = Path(path)
    try:
        if not p.is_file():
            return None
        if _jsonl(p):
            return _read_jsonl(p, name)
        with open_input(p, name) as fh:
            return _read_plain(fh, name)
    except (OSError, UnicodeDecodeError, InputError, csv.Error):
        return None


def _read_jsonl(path: Path, name: str) -> TraceTable:
    """A Mooncake trace as columns: each line parsed by `iter_trace_rows` itself (a JSON
    object a line leaves no shorter way), so the values are the manifest path's by
    construction; its first problem is raised for `read_plain_trace` to decline."""
    arrivals: list[int | float] = []
    prompts: array[int] = array("q")
    outputs: array[int] = array("q")
    for row in iter_trace_rows(path, display=name):
        arrivals.append(ms_number(row.arrival_ms))
        prompts.append(row.prompt_tokens)
        outputs.append(row.output_tokens)
    return TraceTable(TraceFormat.MOONCAKE, arrivals, prompts, outputs)


def _read_plain(fh: BinaryIO, name: str) -> TraceTable | None:
    """`read_plain_trace` on an open file: the header line, then the rows a block of whole
    lines at a time (about `_PLAIN_CHUNK` bytes, cut after a line feed, which no UTF-8
    sequence contains), so neither the file's text nor its matched fields are ever held
    whole; the token counts go straight into C arrays."""
    head = fh.readline()
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    chosen, header = _header(head.decode("utf-8"), "auto", name)
    cols = FORMATS[chosen]
    index = {h.strip(): i for i, h in enumerate(header)}
    i_arr, i_prompt, i_out = index[cols.arrival], index[cols.prompt], index[cols.output]
    parts: list[str] = []
    for i in range(len(header)):
        if i == i_arr:
            parts.append(_PLAIN_ARRIVAL[chosen])
        elif i in (i_prompt, i_out):
            parts.append(_PLAIN_COUNT)
        else:
            parts.append(_PLAIN_OTHER)
    pattern = re.compile("^" + ",".join(parts) + "$", re.MULTILINE | re.ASCII)
    # the capture groups in column order: the arrival's, then the two counts in column order
    seconds = chosen is not TraceFormat.AZURE
    n_arr = 2 if seconds else 8
    pos: dict[int, int] = {}
    g = 0
    for i in sorted((i_arr, i_prompt, i_out)):
        pos[i] = g
        g += n_arr if i == i_arr else 1
    a, gp, go = pos[i_arr], pos[i_prompt], pos[i_out]
    arrival = _PlainSeconds() if seconds else _PlainTimestamps()
    arrivals: list[int | float] = []
    prompts: array[int] = array("q")
    outputs: array[int] = array("q")
    lines = 0
    while True:
        block = fh.read(_PLAIN_CHUNK)
        if not block:
            break
        if not block.endswith(b"\n"):
            block += fh.readline()  # the rest of the block's last line
        text = block.decode("utf-8")
        if "\r" in text:  # a CR LF pair never spans two blocks: each ends after its LF
            if text.count("\r") != text.count("\r\n"):
                return None
            text = text.replace("\r\n", "\n")  # what each row's rstrip("\r\n") drops
        lines += text.count("\n") + (0 if text.endswith("\n") else 1)
        rows = pattern.findall(text)
        prompts.extend([int(r[gp]) for r in rows])
        outputs.extend([int(r[go]) for r in rows])
        if not arrival.read(rows, a, arrivals):
            return None
    if not prompts or len(prompts) != lines:
        return None  # a blank, padded, quoted or malformed row: streamed and located
    if min(prompts) < 1 or min(outputs) < 1:
        return None
    return TraceTable(chosen, arrivals, prompts, outputs)


class _PlainSeconds:
    """Arrival ms of decimal-seconds fields, row after row (refused if one goes back)."""

    def __init__(self) -> None:
        self.previous = -1

    def read(self, rows: list[tuple[str, ...]], a: int, out: list[int | float]) -> bool:
        previous = self.previous
        pow10 = _POW10
        for r in rows:
            whole, frac = r[a], r[a + 1]
            k = len(frac)
            n = int(whole + frac)  # the arrival in units of 10^-k s
            at = n * pow10[20 - k]  # ... and in 10^-20 s, for the order check
            if at < previous:
                return False
            previous = at
            if k <= 3:
                out.append(n * pow10[3 - k])
            else:
                d = pow10[k - 3]
                out.append(n // d if n % d == 0 else n / d)
        self.previous = previous
        return True


class _PlainTimestamps:
    """Arrival ms of timestamps after the first row's, row after row (refused if one is not a
    date or goes back in time). A zone's offset is taken off, as `_timestamp_seconds` does:
    `+01:00` is an hour ahead of UTC."""

    def __init__(self) -> None:
        self.days: dict[tuple[str, str, str], int] = {}
        self.first: int | None = None
        self.previous = 0

    def read(self, rows: list[tuple[str, ...]], a: int, out: list[int | float]) -> bool:
        days = self.days
        first = self.first
        previous = self.previous
        pow10 = _POW10
        unit = pow10[9]  # 10^-12 s per ms / 10^-3
        for r in rows:
            y, mo, d, hh, mm, ss, frac, zone = r[a : a + 8]
            day = days.get((y, mo, d))
            if day is None:
                try:
                    day = datetime(int(y), int(mo), int(d)).toordinal() - _EPOCH_ORDINAL
                except ValueError:
                    return False
                days[(y, mo, d)] = day
            h, m, s = int(hh), int(mm), int(ss)
            if h > 23 or m > 59 or s > 59:
                return False
            at = day * 86400 + h * 3600 + m * 60 + s
            if zone and zone != "Z":
                offset = int(zone[1:3]) * 3600 + int(zone[-2:]) * 60
                at = at - offset if zone[0] == "+" else at + offset
            at *= pow10[12]
            if frac:
                at += int(frac) * pow10[12 - len(frac)]
            if first is None:
                first = at
            at -= first
            if at < previous:
                return False
            previous = at
            out.append(at // unit if at % unit == 0 else at / unit)
        self.first = first
        self.previous = previous
        return True
