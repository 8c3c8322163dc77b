"""`cbaudit validate-plan` on malformed files: exit 2 and a located finding with the code.

Load errors may reach the user two ways: as an errored result in the report (what
validate-plan does now) or as a one-line `cbaudit: <location>: error <CODE>: ...` message on
stderr (the top-level handler). These tests accept either and check the location.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from loadcases import CASES, Case

# Run in a real subprocess: one case per family (startup costs ~0.3-0.6 s each).
SUBPROCESS_IDS = (
    "json-truncated",
    "json-duplicate-key",
    "json-not-utf8",
    "yaml-python-tag",
    "yaml-alias-bomb",
    "yaml-NO",
    "jsonl-bad-line",
)

_STDERR_LINE = re.compile(r"^cbaudit: (?P<loc>\S+): error (?P<code>[A-Z][A-Z0-9_.]+): ")


def _params(cases: tuple[Case, ...] | list[Case]) -> list[Any]:
    return [pytest.param(c, id=c.id) for c in cases]


def _args(path: Path | str, case: Case) -> list[str | Path]:
    return ["validate-plan", "--trace", path] if case.is_jsonl else ["validate-plan", path]


def _findings(out: str, err: str) -> list[dict[str, Any]]:
    """Findings from a JSON report on stdout, else from one-line messages on stderr."""
    found: list[dict[str, Any]] = []
    if out.strip():
        report = json.loads(out)
        for result in report["results"]:
            found.extend(result["findings"])
    for line in err.splitlines():
        match = _STDERR_LINE.match(line)
        if match:
            found.append({"code": match["code"], "rendered": match["loc"]})
    return found


def _expected_location(path: Path, case: Case) -> str:
    where = f"{path}:{case.line}"
    if case.column is not None:
        where += f":{case.column}"
    return where


@pytest.mark.parametrize("case", _params(CASES))
def test_malformed_file_exits_2_with_located_code(
    tmp_path: Path, cli: Callable[..., Any], case: Case
) -> None:
    """validate-plan refuses each malformed file: exit 2, its code at its file/line/column."""
    path = tmp_path / case.filename
    path.write_bytes(case.content)
    run = cli(*_args(path, case), "--format", "json")
    assert run.code == 2, (run.out, run.err)
    assert "Traceback" not in run.out + run.err
    matching = [f for f in _findings(run.out, run.err) if f["code"] == case.code]
    assert len(matching) == 1, (run.out, run.err)
    (finding,) = matching
    if "rendered" in finding:
        assert finding["rendered"].startswith(_expected_location(path, case))
    else:
        loc = finding["location"]
        assert (loc["file"], loc["line"]) == (str(path), case.line)
        if case.column is not None:
            assert loc["column"] == case.column
        if case.pointer is not None:
            assert loc["pointer"] == case.pointer
        assert "\n" not in finding["message"]


@pytest.mark.parametrize("case", _params([c for c in CASES if c.id in SUBPROCESS_IDS]))
def test_malformed_file_in_subprocess_text_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli_proc: Callable[..., Any],
    case: Case,
) -> None:
    """In a real process with text output: exit status 2, no traceback, a located code line."""
    (tmp_path / case.filename).write_bytes(case.content)
    monkeypatch.chdir(tmp_path)  # short relative names keep each finding on one text line
    run = cli_proc(*_args(case.filename, case))
    assert run.code == 2, (run.out, run.err)
    assert "Traceback" not in run.out + run.err
    where = _expected_location(Path(case.filename), case)
    lines = [line for line in (run.out + run.err).splitlines() if case.code in line]
    assert len(lines) == 1, (run.out, run.err)
    assert where in lines[0]


def test_deep_nesting_in_subprocess(tmp_path: Path, cli_proc: Callable[..., Any]) -> None:
    """50,000 nested arrays (past the interpreter's recursion limit) give exit 2, LOAD.DEPTH."""
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * 50_000 + b"]" * 50_000)
    run = cli_proc("validate-plan", path, "--format", "json")
    assert run.code == 2
    assert "Traceback" not in run.out + run.err
    codes = [f["code"] for f in _findings(run.out, run.err)]
    assert codes == ["LOAD.DEPTH"]


def test_missing_and_directory_paths_exit_2(tmp_path: Path, cli_proc: Callable[..., Any]) -> None:
    """A missing file and a directory each give exit 2 and their LOAD.* code."""
    missing = cli_proc("validate-plan", tmp_path / "absent.json")
    assert missing.code == 2
    assert "LOAD.NOT_FOUND" in missing.out + missing.err
    folder = tmp_path / "dir.json"
    folder.mkdir()
    directory = cli_proc("validate-plan", folder)
    assert directory.code == 2
    assert "LOAD.IS_DIRECTORY" in directory.out + directory.err
    assert "Traceback" not in missing.err + directory.err


def test_size_cap_from_environment_exits_2(tmp_path: Path, cli_proc: Callable[..., Any]) -> None:
    """CBAUDIT_MAX_INPUT_BYTES below the file's size gives exit 2 and LOAD.TOO_LARGE."""
    path = tmp_path / "case.json"
    path.write_text('{"a": "' + "x" * 4000 + '"}')
    run = cli_proc("validate-plan", path, env={"CBAUDIT_MAX_INPUT_BYTES": "1k"})
    assert run.code == 2
    assert "LOAD.TOO_LARGE" in run.out + run.err
