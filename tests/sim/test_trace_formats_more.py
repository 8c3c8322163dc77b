"""BurstGPT's CSV and Mooncake's JSON Lines traces: read, refused where they are wrong (code,
line and column), the same workload on the direct and the manifest path, and BurstGPT's
failed requests (0 response tokens) refused unless a spec asks to leave them out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cbaudit.model import InputError
from cbaudit.sim.importers import TraceFormat, iter_trace_rows, read_plain_trace, trace_format
from cbaudit.sim.workload import load_workload
from cbaudit.sim.workload_gen import load_workload_json
from tests.sim.helpers import check_plain_trace

BURST = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"
BURST_ROWS = [
    "5,ChatGPT,472,18,490,Conversation log",
    "45,ChatGPT,1087,250,1337,Conversation log",
    "45.25,GPT-4,300,7,307,API log",
    "118,ChatGPT,417,276,693,Conversation log",
]
MOON_ROWS = [
    {"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]},
    {"timestamp": 0, "input_length": 7322, "output_length": 490, "hash_ids": [0, 14]},
    {"timestamp": 3059, "input_length": 2290, "output_length": 3, "hash_ids": []},
    {"timestamp": 3059.5, "input_length": 100, "output_length": 1},
]


def _write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _burst(tmp_path: Path, rows: list[str] = BURST_ROWS, name: str = "burst.csv") -> Path:
    return _write(tmp_path, BURST + "\n" + "\n".join(rows) + "\n", name)


def _moon(tmp_path: Path, rows: list[object] = MOON_ROWS, name: str = "moon.jsonl") -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    return _write(tmp_path, "\n".join(lines) + "\n", name)


def _refused(path: Path) -> tuple[str, int | None, int | None, str]:
    with pytest.raises(InputError) as exc:
        load_workload(path)
    f = exc.value.findings[0]
    return f.code, f.location.line, f.location.column, f.message


def test_burstgpt_rows_become_requests_in_seconds(tmp_path: Path) -> None:
    path = _burst(tmp_path)
    assert trace_format(path) is TraceFormat.BURSTGPT
    w = load_workload(path)
    assert [r.arrival for r in w.requests] == [5000, 45000, 45250, 118000]
    assert [r.prompt_tokens for r in w.requests] == [472, 1087, 300, 417]
    assert w.hidden_realized is not None
    assert list(w.hidden_realized.values()) == [18, 250, 7, 276]
    assert w.requests[0].request_id == "burstgpt-000000"
    check_plain_trace(path)


def test_mooncake_lines_become_requests_in_milliseconds(tmp_path: Path) -> None:
    """`timestamp` is in ms already; `hash_ids` and any other key are not read."""
    path = _moon(tmp_path)
    assert trace_format(path) is TraceFormat.MOONCAKE
    w = load_workload(path)
    assert [r.arrival for r in w.requests] == [0, 0, 3059, 3059.5]
    assert [r.prompt_tokens for r in w.requests] == [6758, 7322, 2290, 100]
    assert w.hidden_realized is not None
    assert list(w.hidden_realized.values()) == [500, 490, 3, 1]
    assert w.requests[3].request_id == "mooncake-000003"
    assert read_plain_trace(path) is not None
    check_plain_trace(path)


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ("45.1,GPT-4,300,0,300,API log", 16),
        # a failed row with 0 request tokens too: refused at the output all the same
        ("45.1,GPT-4,0,0,0,API log", 14),
    ],
)
def test_a_failed_burstgpt_request_is_refused_with_the_way_out(
    tmp_path: Path, row: str, column: int
) -> None:
    path = _burst(tmp_path, [*BURST_ROWS[:2], row, *BURST_ROWS[2:]])
    assert read_plain_trace(path) is None
    code, line, at, message = _refused(path)
    assert (code, line, at) == ("TRACE.BAD_ROW", 4, column)
    assert "Response tokens='0'" in message and "skip_failed" in message


def test_a_zero_prompt_is_refused_when_the_request_did_not_fail(tmp_path: Path) -> None:
    path = _burst(tmp_path, [*BURST_ROWS[:2], "45.1,GPT-4,0,3,3,API log"])
    code, line, at, message = _refused(path)
    assert (code, line, at) == ("TRACE.BAD_ROW", 4, 12)
    assert "Request tokens='0'" in message and "skip_failed" not in message
    with pytest.raises(InputError) as exc:
        list(iter_trace_rows(path, skip_failed=True))
    assert exc.value.findings[0].code == "TRACE.BAD_ROW"


def test_skip_failed_leaves_failed_rows_out_and_says_how_many(tmp_path: Path) -> None:
    rows = [
        *BURST_ROWS[:2],
        "45.1,GPT-4,300,0,300,API log",
        *BURST_ROWS[2:],
        "119,GPT-4,0,0,0,API log",
    ]
    _burst(tmp_path, rows)
    spec = _write(
        tmp_path,
        "schema_version: 1\nkind: workload-generator\nworkload_id: burst\nseed: 1\n"
        "clock: {unit: ms}\ntrace: {path: burst.csv, skip_failed: true, limit: 3}\n"
        "policy: {policy_id: fcfs, policy_version: '2'}\n"
        "budgets: {token_budget: 4096, sequence_budget: 64}\n",
        "spec.yaml",
    )
    data = load_workload_json(spec)
    assert [r["arrival"] for r in data["requests"]] == [5000, 45000, 45250]  # limit: rows kept
    assert "1 failed requests (0 output tokens) left out" in data["description"]
    skipped: list[int] = []
    kept = list(iter_trace_rows(tmp_path / "burst.csv", skip_failed=True, skipped=skipped))
    assert [r.line for r in kept] == [2, 3, 5, 6] and skipped == [4, 7]


def test_skip_failed_still_checks_the_rows_it_leaves_out(tmp_path: Path) -> None:
    path = _burst(tmp_path, ["45,ChatGPT,10,3,13,x", "5,GPT-4,300,0,300,API log"])
    with pytest.raises(InputError) as exc:
        list(iter_trace_rows(path, skip_failed=True))
    f = exc.value.findings[0]
    assert (f.code, f.location.line, f.location.column) == ("TRACE.UNSORTED", 3, 1)


@pytest.mark.parametrize(
    ("line", "code", "column", "says"),
    [
        ('{"timestamp": 5, "input_length": 3', "TRACE.BAD_ROW", 35, "not JSON"),
        ("[1, 2, 3]", "TRACE.BAD_ROW", 1, "one JSON object"),
        ('{"timestamp": 5, "input_length": 3}', "TRACE.BAD_ROW", 1, "no 'output_length'"),
        ('{"timestamp": "5", "input_length": 3, "output_length": 1}', "TRACE.BAD_ROW", 2, "ms"),
        (
            '{"timestamp": -1, "input_length": 3, "output_length": 1}',
            "TRACE.BAD_ROW",
            2,
            "negative",
        ),
        (
            '{"timestamp": 5, "input_length": 3.0, "output_length": 1}',
            "TRACE.BAD_ROW",
            18,
            "integer",
        ),
        ('{"timestamp": 5, "input_length": 0, "output_length": 1}', "TRACE.BAD_ROW", 18, ">= 1"),
        (
            '{"timestamp": 5, "input_length": 3, "output_length": 0}',
            "TRACE.BAD_ROW",
            37,
            "skip_failed",
        ),
        (
            '{"timestamp": 5, "input_length": 0, "output_length": 0}',
            "TRACE.BAD_ROW",
            37,
            "skip_failed",
        ),
        (
            '{"timestamp": 5, "input_length": true, "output_length": 1}',
            "TRACE.BAD_ROW",
            18,
            "integer",
        ),
        (
            '{"timestamp": 5, "timestamp": 6, "input_length": 3, "output_length": 1}',
            "TRACE.BAD_ROW",
            1,
            "duplicate",
        ),
        (
            '{"timestamp": 2.5, "input_length": 3, "output_length": 1}',
            "TRACE.UNSORTED",
            2,
            "earlier",
        ),
        ('{"timestamp": NaN, "input_length": 3, "output_length": 1}', "TRACE.BAD_ROW", 2, "ms"),
    ],
)
def test_bad_mooncake_lines_are_refused_where_they_stand(
    tmp_path: Path, line: str, code: str, column: int, says: str
) -> None:
    """The bad line is the third: the direct reader declines, the manifest path locates it."""
    path = _moon(
        tmp_path, [*MOON_ROWS[:2], {"timestamp": 3, "input_length": 1, "output_length": 1}, line]
    )
    assert read_plain_trace(path) is None
    assert _refused(path)[:3] == (code, 4, column)
    assert says in _refused(path)[3]


def test_an_empty_jsonl_trace_is_empty(tmp_path: Path) -> None:
    path = _write(tmp_path, "\n\n", "empty.jsonl")
    assert _refused(path)[:3] == ("TRACE.EMPTY", 1, None)


def test_a_declared_format_must_match_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        list(iter_trace_rows(_moon(tmp_path), "splitwise"))
    assert exc.value.findings[0].code == "TRACE.MISSING_COLUMN"
    with pytest.raises(InputError) as exc:
        list(iter_trace_rows(_burst(tmp_path), "mooncake"))
    assert exc.value.findings[0].code == "TRACE.MISSING_COLUMN"
    with pytest.raises(InputError) as exc:
        list(iter_trace_rows(_burst(tmp_path), "vidur"))
    assert exc.value.findings[0].code == "TRACE.OPTION.RANGE"
    assert "burstgpt" in exc.value.findings[0].message


def test_cli_replays_both_and_refuses_a_bad_line_with_exit_2(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    for path in (_burst(tmp_path), _moon(tmp_path)):
        res = cli("replay", "run", str(path), "-p", "vllm-v1", "-q", "-f", "json")
        assert res.code == 0, res.err
        assert json.loads(res.out)["results"][0]["status"] == "passed"
    bad = _moon(tmp_path, [*MOON_ROWS, '{"timestamp": 1}'], name="bad.jsonl")
    res = cli("replay", "run", str(bad), "-p", "vllm-v1")
    assert res.code == 2
    assert "TRACE.BAD_ROW" in res.err and "bad.jsonl:5:1" in res.err


def test_skip_failed_leaves_failed_mooncake_lines_out(tmp_path: Path) -> None:
    failed = {"timestamp": 0, "input_length": 0, "output_length": 0}
    path = _moon(tmp_path, [MOON_ROWS[0], failed, *MOON_ROWS[1:]])
    skipped: list[int] = []
    kept = list(iter_trace_rows(path, skip_failed=True, skipped=skipped))
    assert [r.line for r in kept] == [1, 3, 4, 5] and skipped == [2]
