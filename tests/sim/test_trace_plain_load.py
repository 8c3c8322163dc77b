"""A plain trace CSV loads straight into the replay's Workload, without the manifest JSON in
between: the same workload the manifest path builds, field for field and type for type.
Anything not plain goes the manifest way and is refused there, with the codes and locations
it always had."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from cbaudit.model import InputError
from cbaudit.sim.importers import read_plain_trace
from cbaudit.sim.workload import _from_expanded, load_workload
from tests.sim.helpers import check_plain_trace

SPLITWISE = "arrived_at,num_prefill_tokens,num_decode_tokens"
AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens"


def _write(tmp_path: Path, text: str | bytes, name: str = "t.csv") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    return path


def test_splitwise_arrivals_of_every_shape_match_the_manifest_path(tmp_path: Path) -> None:
    """Integral, short, long (20-decimal, float-inexact) and repeated arrivals: the same ms."""
    rows = [
        "0,5,3",
        "0.0,4,1",
        "0.052,3180,8",
        "1.5,7,2",
        "1.5,7,2",
        "199.96150599999999,161,11",
        "200.0001,9,9",
        "12345678.12345678901234567890,1,1",
    ]
    w = check_plain_trace(_write(tmp_path, SPLITWISE + "\n" + "\n".join(rows) + "\n"))
    assert [r.arrival for r in w.requests][:4] == [0, 0, 52, 1500]
    assert type(w.requests[1].arrival) is int
    assert [r.request_id for r in w.requests][:2] == ["splitwise-000000", "splitwise-000001"]


def test_random_splitwise_traces_match_the_manifest_path(tmp_path: Path) -> None:
    """Seeded random traces (CRLF or LF, with or without a final newline, a BOM, extra and
    reordered columns): every field equal to the manifest path's."""
    rng = random.Random(16)
    for case in range(12):
        t = shown_before = 0
        lines = []
        for _ in range(60):
            t += rng.choice([0, 1, 7, 10 ** rng.randint(0, 27) + rng.randint(0, 999)])
            k = rng.randint(0, 20)  # decimals shown: t (in 10^-20 s) truncated to k of them
            if (t // 10 ** (20 - k)) * 10 ** (20 - k) < shown_before:
                k = 20  # (t itself: never before an earlier row's truncation)
            shown = t // 10 ** (20 - k)
            shown_before = shown * 10 ** (20 - k)
            text = str(shown // 10**k) + ("." + str(shown % 10**k).zfill(k) if k else "")
            lines.append((text, rng.randint(1, 9000), rng.randint(1, 900)))
        reordered = case % 3 == 2
        head = "num_decode_tokens,note,arrived_at,num_prefill_tokens" if reordered else SPLITWISE
        body = [
            f"{o},x{i},{a},{p}" if reordered else f"{a},{p},{o}"
            for i, (a, p, o) in enumerate(lines)
        ]
        end = "\r\n" if case % 2 else "\n"
        text = head + end + end.join(body) + (end if case % 4 else "")
        data = text.encode() if case % 5 else b"\xef\xbb\xbf" + text.encode()
        check_plain_trace(_write(tmp_path, data, f"r{case}.csv"))


def test_azure_timestamps_match_the_manifest_path(tmp_path: Path) -> None:
    """Fractions of 0 to 12 digits, a `T`, midnight, a month end and a leap day: the same ms
    after the first row."""
    stamps = [
        "2024-02-28 23:59:59.9999999",
        "2024-02-29 00:00:00",
        "2024-02-29T00:00:00.5",
        "2024-02-29 23:59:59.123456789012",
        "2024-03-01 00:00:01.1",
        "2024-03-01 00:00:01.1000",
    ]
    text = AZURE + "\r\n" + "\r\n".join(f"{s},{i + 1},{i + 2}" for i, s in enumerate(stamps))
    w = check_plain_trace(_write(tmp_path, text))
    assert w.requests[0].arrival == 0 and w.requests[0].request_id == "azure-000000"
    assert w.requests[5].arrival == w.requests[4].arrival


@pytest.mark.parametrize(
    "body",
    [
        "0.0,5,3\n\n1.0,4,2\n",  # a blank line (skipped)
        '0.0,"5",3\n1.0,4,2\n',  # a quoted field
        "0.0, 5,3\n1.0,4,2\n",  # a padded field
        "0.123456789012345678901,5,3\n",  # 21 decimals
        "1e3,5,3\n",  # an exponent
    ],
)
def test_valid_but_not_plain_goes_the_manifest_way(tmp_path: Path, body: str) -> None:
    """A trace the direct reader does not take still loads, exactly as before."""
    path = _write(tmp_path, SPLITWISE + "\n" + body)
    assert read_plain_trace(path) is None
    assert load_workload(path) == _from_expanded(path, str(path), None)


def test_zoned_azure_timestamps_match_the_manifest_path(tmp_path: Path) -> None:
    """The 2024 Azure traces' shape (`+00:00` on every row, microseconds left out when 0),
    `Z`, offsets with and without a colon on either side of UTC, and naive rows among them
    (read as UTC): the direct reader takes them, with the manifest path's ms."""
    stamps = [
        "2024-05-10 00:00:00+00:00",
        "2024-05-10 00:00:00.009930+00:00",
        "2024-05-10 00:00:01+00:00",
        "2024-05-10 00:00:01.5Z",
        "2024-05-10 01:00:02+01:00",  # 00:00:02 UTC
        "2024-05-09 23:00:02.25-0100",  # 00:00:02.25 UTC
        "2024-05-10 05:30:03+05:30",  # 00:00:03 UTC
        "2024-05-10 00:00:03.000000000001",
    ]
    text = AZURE + "\n" + "\n".join(f"{s},{i + 1},{i + 2}" for i, s in enumerate(stamps)) + "\n"
    path = _write(tmp_path, text)
    assert read_plain_trace(path) is not None
    w = check_plain_trace(path)
    ms = [0, 9.93, 1000, 1500, 2000, 2250, 3000, 3000.000000001]
    assert [r.arrival for r in w.requests] == ms


def test_a_zone_that_goes_back_in_time_is_refused_located(tmp_path: Path) -> None:
    """01:00+01:00 is midnight UTC, before the first row's second: the direct reader declines
    and the manifest path refuses the row where it stands."""
    path = _write(tmp_path, AZURE + "\n2024-05-10 00:00:01Z,3,4\n2024-05-10 01:00:00+01:00,3,4\n")
    assert read_plain_trace(path) is None
    with pytest.raises(InputError) as exc:
        load_workload(path)
    finding = exc.value.findings[0]
    assert finding.code == "TRACE.BAD_ROW"
    assert (finding.location.line, finding.location.column) == (3, 1)


@pytest.mark.parametrize(
    ("text", "code", "line", "column"),
    [
        (SPLITWISE + "\n0.0,eight,3\n", "TRACE.BAD_ROW", 2, 5),
        (SPLITWISE + "\n0.0,5,0\n", "TRACE.BAD_ROW", 2, 7),
        (SPLITWISE + "\n-1,5,3\n", "TRACE.BAD_ROW", 2, 1),
        (SPLITWISE + "\n0.0,5,3,9\n", "TRACE.BAD_ROW", 2, 1),
        (SPLITWISE + "\n1.0,5,3\n0.5,4,2\n", "TRACE.UNSORTED", 3, 1),
        (SPLITWISE + "\r\n1.0,5,3\r\n0.99999999999999999999,4,2\r\n", "TRACE.UNSORTED", 3, 1),
        (SPLITWISE + "\n", "TRACE.EMPTY", 2, None),
        ("", "TRACE.EMPTY", 1, 1),
        ("arrived_at,num_prefill_tokens\n0.0,5\n", "TRACE.MISSING_COLUMN", 1, 1),
        (AZURE + "\n2024-13-01 00:00:00,5,3\n", "TRACE.BAD_ROW", 2, 1),
        (AZURE + "\n2024-01-01 24:00:00,5,3\n", "TRACE.BAD_ROW", 2, 1),
        (AZURE + "\n2024-01-01 00:00:01,5,3\n2024-01-01 00:00:00.5,5,3\n", "TRACE.BAD_ROW", 3, 1),
        (b"\xef\xbb\xbf" + SPLITWISE.encode() + b"\n0,5,3\n1,4,\xe9\n", "LOAD.ENCODING", 3, 5),
    ],
)
def test_bad_traces_keep_their_located_codes(
    tmp_path: Path, text: str | bytes, code: str, line: int, column: int | None
) -> None:
    """The direct reader declines every bad trace; the manifest path refuses it, located."""
    path = _write(tmp_path, text)
    assert read_plain_trace(path) is None
    with pytest.raises(InputError) as exc:
        load_workload(path)
    loc = exc.value.findings[0].location
    assert (exc.value.findings[0].code, loc.line, loc.column) == (code, line, column)


def test_cli_replay_of_a_bad_plain_looking_trace_is_exit_2(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A trace that goes back in time is TRACE.UNSORTED at its line, exit 2, no report."""
    path = _write(tmp_path, SPLITWISE + "\n0.5,5,3\n0.25,4,2\n")
    out = tmp_path / "r.json"
    r = cli("replay", path, "--policy", "orca", "-o", out)
    assert r.code == 2 and "TRACE.UNSORTED" in r.err and f"{path}:3:1" in r.err
    assert not out.exists()


def test_cli_replay_report_is_the_same_either_way(tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The whole JSON report of a plain trace is byte-identical with the direct path off."""
    import cbaudit.sim.workload as workload_mod

    path = _write(tmp_path, SPLITWISE + "\n0,50,3\n0.001,40,2\n0.0025,60,4\n0.0025,8,1\n")
    args = ("replay", path, "--policy", "vllm-v1", "--format", "json", "--per-request")
    direct = cli(*args)
    monkeypatch.setattr(workload_mod, "_from_trace", lambda *_a: None)
    manifest = cli(*args)
    assert direct.code == manifest.code == 0, direct.err
    assert direct.out == manifest.out


def test_rows_read_a_few_at_a_time_give_the_same_workload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The direct reader matches rows a chunk at a time; with chunks of a row or two the
    workload is the same, and a row going back in time across a chunk boundary is still
    declined (and refused, located, by the manifest path)."""
    import cbaudit.sim.importers as importers

    monkeypatch.setattr(importers, "_PLAIN_CHUNK", 12)
    rows = [f"{i // 3}.{i:03d},{i + 1},{i % 4 + 1}" for i in range(40)]
    check_plain_trace(_write(tmp_path, SPLITWISE + "\n" + "\n".join(rows) + "\n", "s.csv"))
    stamps = [f"2024-01-0{1 + i // 20} 0{i % 10}:00:0{i % 6}.{i},3,4" for i in range(40)]
    stamps.sort()
    check_plain_trace(_write(tmp_path, AZURE + "\r\n" + "\r\n".join(stamps), "a.csv"))
    back = _write(tmp_path, SPLITWISE + "\n" + "\n".join([*rows[:20], "0.5,1,1"]) + "\n", "b.csv")
    assert read_plain_trace(back) is None
    with pytest.raises(InputError) as exc:
        load_workload(back)
    assert (exc.value.findings[0].code, exc.value.findings[0].location.line) == (
        "TRACE.UNSORTED",
        22,
    )


def test_blocks_cut_after_a_line_feed_never_split_a_character(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The direct reader reads a few bytes at a time and completes the last line: a
    multi-byte character in an extra column (read bytes cut inside it) decodes whole, so the
    workload is the same as the manifest path's; a lone CR in a later block still declines."""
    import cbaudit.sim.importers as importers

    monkeypatch.setattr(importers, "_PLAIN_CHUNK", 5)
    rows = [f"{i}.5,{i + 2},{i % 3 + 1},h\u00e9\u00e9\u20ac{i}" for i in range(30)]
    path = _write(tmp_path, SPLITWISE + ",note\n" + "\n".join(rows) + "\n")
    assert len(check_plain_trace(path).requests) == 30
    bad = _write(tmp_path, SPLITWISE + "\n" + "\n".join(["0,1,1"] * 9 + ["1,2,2\r"]), "cr.csv")
    assert read_plain_trace(bad) is None
