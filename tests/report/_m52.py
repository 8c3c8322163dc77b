"""The real M5.2 bundle's gate reports in every format, made once per test session.

`m52_pass`: `cbaudit gate evidence/` over the repository as it is. `m52_fail`: the same over a
tampered copy (the repository's pyproject, evidence, pinned and registry folders in a temporary
project), where three edits make one check of each problem kind:

* Loop 2's iteration-5 case lowers its token budget from 4 to 3: a FAIL
  (`PLAN.BUDGET.TOKEN_EXCEEDED`), and the mutation campaigns on it see an unclean baseline;
* the lesson's expected static report changes one number: a FAIL (`GATE.EXPECTED.DRIFT`);
* the lesson's expected continuous-batching report is cut short: an ERROR (`LOAD.SYNTAX`;
  an unusable expected file is unusable input, not drift).

The GPU additivity check stays NOT RUN on a machine without CUDA measurements.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMATS = ("html", "markdown", "junit", "sarif")


@dataclass(frozen=True)
class GateRun:
    """One `cbaudit gate` run: where it ran, its exit code and every report it wrote."""

    cwd: Path
    code: int
    files: dict[str, Path]

    def text(self, fmt: str) -> str:
        return self.files[fmt].read_text(encoding="utf-8")

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.text("json"))
        return data

    def to_dict(self) -> dict[str, Any]:
        """The run as JSON-able data (what `run_once` hands between xdist workers)."""
        return {
            "cwd": str(self.cwd),
            "code": self.code,
            "files": {k: str(v) for k, v in self.files.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateRun:
        return cls(Path(data["cwd"]), data["code"], {k: Path(v) for k, v in data["files"].items()})


def run_gate_cli(cwd: Path, out: Path, *extra: str) -> GateRun:
    """`cbaudit gate evidence/` in `cwd`, writing every format under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "html": out / "report.html",
        "markdown": out / "report.md",
        "junit": out / "junit.xml",
        "sarif": out / "report.sarif",
        "json": out / "report.json",
    }
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CBAUDIT_VLLM", "CBAUDIT_M52", "GITHUB_"))
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cbaudit",
            "gate",
            "evidence/",
            "-q",
            *[a for fmt in FORMATS for a in (f"--{fmt}", str(files[fmt]))],
            "-f",
            "json",
            "-o",
            str(files["json"]),
            *extra,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode in (0, 1, 2), proc.stderr[-3000:]
    return GateRun(cwd, proc.returncode, files)


def tamper(project: Path) -> None:
    """The three edits the module docstring lists."""
    bundle = project / "evidence" / "m5-2-continuous-batching"
    case = bundle / "loop2" / "valid.case.json"
    text = case.read_text(encoding="utf-8")
    assert '"token_budget": 4' in text
    case.write_text(text.replace('"token_budget": 4', '"token_budget": 3', 1), encoding="utf-8")
    expected = bundle / "lesson" / "expected" / "static.json"
    doc = json.loads(expected.read_text(encoding="utf-8"))
    doc["end_time"] += 1
    expected.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    report = bundle / "lesson" / "expected" / "continuous.json"
    text = report.read_text(encoding="utf-8")
    report.write_text(text[: len(text) // 2], encoding="utf-8")
