"""`benchmarks/replay_speed.py`'s trace handling: the rows every tool gets, at the trace's own
arrival rate and scaled (`--rate-scale`), are the rows cbaudit reads."""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def speed() -> ModuleType:
    path = REPO / "benchmarks" / "replay_speed.py"
    spec = importlib.util.spec_from_file_location("replay_speed_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(
        "arrived_at,num_prefill_tokens,num_decode_tokens\n"
        "10.5,100,7\n10.500001,20,3\n13.25,64,1\n17.000003,8,2\n"
    )
    return path


def test_rows_are_offsets_from_the_first_arrival(speed: ModuleType, tmp_path: Path) -> None:
    rows = speed.read_trace(_trace(tmp_path))
    assert rows == [
        (Decimal("0"), 100, 7),
        (Decimal("0.000001"), 20, 3),
        (Decimal("2.75"), 64, 1),
        (Decimal("6.500003"), 8, 2),
    ]


def test_scaled_rows_divide_the_offsets_and_keep_the_tokens(
    speed: ModuleType, tmp_path: Path
) -> None:
    rows = speed.read_trace(_trace(tmp_path))
    fast = speed.scaled(rows, Decimal("2.5"))
    assert [(p, d) for _, p, d in fast] == [(p, d) for _, p, d in rows]
    # 0.000001 / 2.5 = 0.0000004 rounds to 0 us; 6.500003 / 2.5 = 2.6000012 to 2.600001
    assert [t for t, _, _ in fast] == [
        Decimal("0"),
        Decimal("0"),
        Decimal("1.1"),
        Decimal("2.600001"),
    ]
    slow = speed.scaled(rows, Decimal("0.5"))
    assert [t for t, _, _ in slow] == [
        Decimal("0"),
        Decimal("0.000002"),
        Decimal("5.5"),
        Decimal("13.000006"),
    ]


def test_the_scaled_trace_cbaudit_reads_is_the_scaled_rows(
    speed: ModuleType, tmp_path: Path
) -> None:
    """What cbaudit is given (a Splitwise CSV) reads back as exactly the rows the peers get."""
    rows = speed.scaled(speed.read_trace(_trace(tmp_path)), Decimal("3"))
    out = tmp_path / "scaled.csv"
    speed.write_splitwise(rows, out)
    assert speed.read_trace(out) == rows


def _burstgpt(tmp_path: Path) -> Path:
    path = tmp_path / "burst.csv"
    path.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "6,ChatGPT,1087,0,1087,Conversation log\n"
        "9,GPT-4,200,31,231,API log\n"
    )
    return path


def test_failed_rows_are_refused_unless_left_out(speed: ModuleType, tmp_path: Path) -> None:
    """A BurstGPT file with a failed request (0 response tokens) stops the benchmark, naming
    cbaudit's refusal; `--skip-failed` (a `skipped` list) leaves the row out for every tool."""
    path = _burstgpt(tmp_path)
    with pytest.raises(SystemExit) as stop:
        speed.read_trace(path)
    message = str(stop.value)
    assert "TRACE.BAD_ROW" in message and "cannot be compared" in message
    assert message.endswith("(here: --skip-failed)")
    skipped: list[int] = []
    rows = speed.read_trace(path, None, skipped)
    assert rows == [(Decimal("0"), 472, 18), (Decimal("4"), 200, 31)]
    assert skipped == [3]  # the file's third line
    out = tmp_path / "kept.csv"
    speed.write_splitwise(rows, out)
    assert speed.read_trace(out) == rows


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "x"])
def test_a_rate_scale_must_be_a_positive_number(speed: ModuleType, text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        speed.rate_scale(text)


def test_a_rate_scale_reads_decimals(speed: ModuleType) -> None:
    assert speed.rate_scale("2.5") == Decimal("2.5")


@pytest.mark.parametrize("text", ["0", "-3", "2.5", "x", ""])
def test_a_row_limit_must_be_a_positive_whole_number(speed: ModuleType, text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        speed.row_count(text)


def test_each_limit_is_measured_on_its_own_prefix(
    speed: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--limit` is repeatable: one measurement per N, each on the trace's first N rows (the
    whole command really runs, one round, no peer; `--cbaudit` names the command, so no wheel
    is built)."""
    trace = _trace(tmp_path)
    command = f"{shlex.quote(sys.executable)} -m cbaudit"
    argv = ["replay_speed.py", "--trace", str(trace), "--rounds", "1", "--limit", "1"]
    argv += ["--cbaudit", command]
    monkeypatch.setattr(sys, "argv", [*argv, "--limit", "3"])
    assert speed.main() == 0
    out = capsys.readouterr().out
    assert "t.csv (first 1 rows): 1 requests" in out
    assert "t.csv (first 3 rows): 3 requests" in out
    assert out.count("cbaudit        min") == 2
