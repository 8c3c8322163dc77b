"""The samples file a replay streams on request (`cbaudit replay --samples-out FILE.jsonl`).

A replay's report holds summaries; the raw samples compare-results tests on live in a JSON
Lines file beside it, one line per record, in a fixed order (byte-identical for the same run):

1. a header `{"format": "cbaudit-replay-samples", "version": 1, "unit": "ms" | "tick", ...}`;
2. one line per declared request, in declaration order: `{"request": ID, "queue_delay": v,
   "ttft": v, "e2e_latency": v, "tpot": v, ...}` (null where undefined; values in `unit`) plus
   the request's per-request record;
3. a last line `{"tbt": [[value, count], ...]}`: every gap between two output tokens as counts
   of distinct values, ascending (a nearest-rank percentile, a median CI or a rank test needs
   the multiset, not the order).

The report names the file and its sha256 (`metrics.samples_file`); compare-results reads it from
there (relative to the report) and refuses a file that is missing, changed or malformed.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from cbaudit.model import InputError

FORMAT = "cbaudit-replay-samples"
VERSION = 1
#: per-request sample metrics, in the order compare-results lists them
REQUEST_METRICS = ("queue_delay", "ttft", "e2e_latency", "tpot")


def read_samples(report_path: str, ref: Any, pointer: str) -> tuple[dict[str, list[float]], str]:
    """The samples (metric -> values: requests in order, tbt ascending) and their unit, read
    from the file a report's `samples_file` entry names."""
    if not isinstance(ref, dict) or not isinstance(ref.get("path"), str):
        raise InputError.at(
            "COMPARE.REPLAY.SAMPLES_FILE", "samples_file needs a path", report_path, pointer=pointer
        )
    path = Path(ref["path"])
    if not path.is_absolute():
        path = Path(report_path).parent / path
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError.at(
            "COMPARE.REPLAY.SAMPLES_FILE",
            f"cannot read the samples file {path}: {err.strerror or err}",
            report_path,
            pointer=pointer,
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if ref.get("sha256") != digest:
        raise InputError.at(
            "COMPARE.REPLAY.SAMPLES_FILE.CHANGED",
            f"{path} has sha256 {digest}, the report names {ref.get('sha256')!r}",
            report_path,
            pointer=pointer,
        )
    where = str(path)
    lines = data.decode("utf-8", errors="replace").splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except ValueError:
        header = None
    if (
        not isinstance(header, dict)
        or header.get("format") != FORMAT
        or header.get("version") != VERSION
        or header.get("unit") not in ("ms", "tick")
    ):
        raise InputError.at(
            "COMPARE.REPLAY.SAMPLES_FILE.FORMAT",
            f"line 1 is not a {FORMAT} version {VERSION} header",
            where,
        )
    out: dict[str, list[float]] = {name: [] for name in (*REQUEST_METRICS, "tbt")}
    seen_tbt = False
    for n, line in enumerate(lines[1:], start=2):
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or seen_tbt:
            raise InputError.at(
                "COMPARE.REPLAY.SAMPLES_FILE.FORMAT", f"line {n} is not a samples record", where
            )
        if "tbt" in rec:
            seen_tbt = True
            pairs = rec["tbt"]
            if not isinstance(pairs, list):
                pairs = None
            for pair in pairs or [None]:
                if pairs == []:
                    break
                if (
                    not isinstance(pair, list)
                    or len(pair) != 2
                    or not _finite(pair[0])
                    or not isinstance(pair[1], int)
                    or isinstance(pair[1], bool)
                    or pair[1] < 1
                ):
                    raise InputError.at(
                        "COMPARE.REPLAY.SAMPLES_FILE.FORMAT",
                        f"line {n}: tbt must be [[value, count >= 1], ...]",
                        where,
                    )
                out["tbt"].extend([float(pair[0])] * pair[1])
            continue
        for name in REQUEST_METRICS:
            v = rec.get(name)
            if v is None:
                continue
            if not _finite(v):
                raise InputError.at(
                    "COMPARE.REPLAY.SAMPLES_FILE.FORMAT",
                    f"line {n}: {name} must be a finite number or null",
                    where,
                )
            out[name].append(v)
    if not seen_tbt:
        raise InputError.at(
            "COMPARE.REPLAY.SAMPLES_FILE.FORMAT", "the tbt line is missing (truncated file?)", where
        )
    return {k: v for k, v in out.items() if v}, str(header["unit"])


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(float(v))
