"""CSV request-trace importers: Splitwise/Vidur and Azure formats, streamed, located errors."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from cbaudit.model import InputError
from cbaudit.sim.importers import TraceFormat, iter_trace_rows, read_int_column, trace_format
from cbaudit.sim.workload_gen import import_trace, import_trace_json, load_workload
from tests.conftest import SHARED

DATA = Path(__file__).resolve().parent / "data"
SPLITWISE = SHARED / "traces" / "splitwise_code.csv"
needs_splitwise = pytest.mark.skipif(
    not SPLITWISE.is_file(), reason=f"shared trace {SPLITWISE} is not present in this checkout"
)


def _csv(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(excinfo: pytest.ExceptionInfo[InputError]) -> tuple[str, int | None, int | None]:
    f = excinfo.value.findings[0]
    return f.code, f.location.line, f.location.column


@needs_splitwise
def test_splitwise_trace_imports_every_row_with_hidden_decode_lengths() -> None:
    """The shared Splitwise trace gives 8,819 requests; decode tokens become hidden truth."""
    m = load_workload(SPLITWISE)
    assert len(m.requests) == 8819
    first, third = m.requests[0], m.requests[2]
    assert (first.request_id, first.arrival, first.prompt_tokens) == ("splitwise-000000", 0, 4808)
    assert (third.arrival, third.prompt_tokens, third.max_output_tokens) == (98.189, 110, 27)
    assert m.hidden_truth is not None
    assert m.hidden_truth["splitwise-000000"] == 10
    assert m.requests[-1].arrival == 3435948.056
    assert [r.arrival_order for r in m.requests[:3]] == [0, 1, 2]
    assert m.clock.unit == "ms"
    assert m.description is not None and "trace-derived cap" in m.description


@needs_splitwise
def test_splitwise_cap_option_clips_realized_and_sets_max() -> None:
    """A declared cap becomes max_output_tokens and clips the realized lengths."""
    data = import_trace_json(SPLITWISE, max_output_tokens=16, limit=5)
    assert [r["max_output_tokens"] for r in data["requests"]] == [16] * 5
    realized = data["fixture_only_hidden_truth"]["realized_output_tokens"]
    assert list(realized.values()) == [10, 8, 16, 14, 12]  # trace: 10, 8, 27, 14, 12
    assert "declared cap 16" in data["description"]


def test_azure_timestamps_become_ms_after_the_first_row() -> None:
    """Azure datetime strings (7 fractional digits) convert exactly to ms from the first row."""
    m = load_workload(DATA / "azure_small.csv")
    assert [r.arrival for r in m.requests] == [0, 4314.579, 4314.579, 14319.41]
    assert [r.prompt_tokens for r in m.requests] == [374, 396, 879, 2]
    assert m.hidden_truth == {
        "azure-000000": 44,
        "azure-000001": 109,
        "azure-000002": 143,
        "azure-000003": 7,
    }


def test_time_scale_compresses_arrivals_exactly() -> None:
    """time_scale multiplies every arrival (0.5 replays the trace twice as fast)."""
    rows = list(iter_trace_rows(DATA / "azure_small.csv", time_scale="0.5"))
    assert [r.arrival_ms for r in rows] == [
        0,
        Decimal("2157.2895"),
        Decimal("2157.2895"),
        Decimal("7159.705"),
    ]


def test_trace_import_defaults_policy_and_budgets_and_accepts_overrides() -> None:
    """A bare trace gets documented default policy/budgets; callers can override them."""
    m = import_trace(
        DATA / "azure_small.csv",
        policy={"policy_id": "vllm-like", "policy_version": "0.23"},
        budgets={"token_budget": 2048, "sequence_budget": 128},
        workload_id="az",
    )
    assert (m.workload_id, m.policy.policy_id, m.budgets.token_budget) == ("az", "vllm-like", 2048)
    d = load_workload(DATA / "azure_small.csv")
    assert (d.policy.policy_id, d.budgets.token_budget, d.budgets.sequence_budget) == (
        "unspecified",
        8192,
        256,
    )


def test_format_detected_from_header() -> None:
    """The header decides the format; a declared format must agree with it."""
    assert trace_format(DATA / "azure_small.csv") is TraceFormat.AZURE
    with pytest.raises(InputError) as exc:
        trace_format(DATA / "azure_small.csv", "splitwise")
    assert _error(exc) == ("TRACE.MISSING_COLUMN", 1, 1)


def test_missing_column_is_located_on_the_header(tmp_path: Path) -> None:
    """A header with only some of a format's columns names the missing one at line 1."""
    path = _csv(tmp_path, "arrived_at,num_prefill_tokens\n0.0,10\n")
    with pytest.raises(InputError) as exc:
        load_workload(path)
    assert _error(exc) == ("TRACE.MISSING_COLUMN", 1, 1)
    assert "num_decode_tokens" in exc.value.findings[0].message


def test_unknown_header_is_missing_columns(tmp_path: Path) -> None:
    """A header that matches no format is TRACE.MISSING_COLUMN listing both layouts."""
    with pytest.raises(InputError) as exc:
        load_workload(_csv(tmp_path, "a,b,c\n1,2,3\n"))
    assert _error(exc)[0] == "TRACE.MISSING_COLUMN"
    assert "arrived_at" in exc.value.findings[0].message


def test_bad_token_count_is_located_at_line_and_column(tmp_path: Path) -> None:
    """A non-integer token count is TRACE.BAD_ROW at its file:line:column."""
    path = _csv(tmp_path, "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,10,3\n0.5,1x,4\n")
    with pytest.raises(InputError) as exc:
        load_workload(path)
    assert _error(exc) == ("TRACE.BAD_ROW", 3, 5)
    assert exc.value.findings[0].location.render() == f"{path}:3:5"


def test_zero_output_tokens_is_a_bad_row(tmp_path: Path) -> None:
    """A row whose decode length is 0 cannot become a request (max_output_tokens >= 1)."""
    path = _csv(tmp_path, "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,10,0\n")
    with pytest.raises(InputError) as exc:
        load_workload(path)
    assert _error(exc) == ("TRACE.BAD_ROW", 2, 8)


def test_wrong_field_count_and_bad_arrival_are_bad_rows(tmp_path: Path) -> None:
    """Too few fields, or an arrival that is not a number, are TRACE.BAD_ROW."""
    head = "arrived_at,num_prefill_tokens,num_decode_tokens\n"
    with pytest.raises(InputError) as exc:
        load_workload(_csv(tmp_path, head + "0.0,10\n", "a.csv"))
    assert _error(exc) == ("TRACE.BAD_ROW", 2, 1)
    with pytest.raises(InputError) as exc:
        load_workload(_csv(tmp_path, head + "soon,10,2\n", "b.csv"))
    assert _error(exc) == ("TRACE.BAD_ROW", 2, 1)
    with pytest.raises(InputError) as exc:
        load_workload(
            _csv(tmp_path, "TIMESTAMP,ContextTokens,GeneratedTokens\n18:00,1,1\n", "c.csv")
        )
    assert _error(exc) == ("TRACE.BAD_ROW", 2, 1)


def test_unsorted_arrivals_are_refused_where_they_go_back(tmp_path: Path) -> None:
    """An arrival earlier than the previous row's is TRACE.UNSORTED at that row."""
    path = _csv(
        tmp_path,
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,10,3\n2.0,10,3\n\n1.5,10,3\n",
    )
    with pytest.raises(InputError) as exc:
        load_workload(path)
    assert _error(exc) == ("TRACE.UNSORTED", 5, 1)


def test_header_only_trace_is_empty(tmp_path: Path) -> None:
    """A trace without data rows is TRACE.EMPTY (no empty workload is produced)."""
    with pytest.raises(InputError) as exc:
        load_workload(_csv(tmp_path, "arrived_at,num_prefill_tokens,num_decode_tokens\n"))
    assert _error(exc)[0] == "TRACE.EMPTY"


def test_read_int_column_streams_values_and_locates_bad_ones(tmp_path: Path) -> None:
    """Column resampling reads one integer column; a bad value is TRACE.BAD_ROW located."""
    assert read_int_column(DATA / "azure_small.csv", "GeneratedTokens") == [44, 109, 143, 7]
    path = _csv(tmp_path, "x,y\n1,2\n3,-4\n")
    with pytest.raises(InputError) as exc:
        read_int_column(path, "y")
    assert _error(exc) == ("TRACE.BAD_ROW", 3, 3)
    with pytest.raises(InputError) as exc:
        read_int_column(path, "z")
    assert _error(exc) == ("TRACE.MISSING_COLUMN", 1, 1)
