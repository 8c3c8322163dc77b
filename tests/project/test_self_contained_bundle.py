"""The M5.2 bundle is self-contained: copied into an empty git repository it passes exactly as
in place, run from that repository or from any other folder.

The bundles hold the files they bind that the repository also publishes (the vLLM pin
manifests and the formula registry); the published copies must stay byte-identical.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from m52_in_place import InPlaceGate, gate_env
from repo_paths import CONFORMANCE, EVIDENCE, M52, REPO

#: bundle copy -> published copy (the bundle's is the evidence the gate binds).
PUBLISHED = {
    M52 / "pins" / "vllm-v0.23.0.yaml": REPO / "pinned" / "vllm-v0.23.0.yaml",
    CONFORMANCE / "pins" / "vllm-v0.23.0-scheduler-rules.yaml": REPO
    / "pinned"
    / "vllm-v0.23.0-scheduler-rules.yaml",
    M52 / "pins" / "formula_registry.yaml": REPO / "registry" / "formula_registry.yaml",
}


@pytest.mark.parametrize("bundle_copy", list(PUBLISHED), ids=lambda p: p.name)
def test_published_copies_equal_the_bundle(bundle_copy: Path) -> None:
    """pinned/ and registry/ publish byte-identical copies of what the bundle binds."""
    published = PUBLISHED[bundle_copy]
    assert published.read_bytes() == bundle_copy.read_bytes(), (
        f"{published.relative_to(REPO)} differs from the bundle's copy; the bundle's file is"
        f" the source of truth: cp {bundle_copy.relative_to(REPO)} {published.relative_to(REPO)}"
    )


def _gate(evidence: Path, cwd: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "cbaudit", "gate", str(evidence), "--format", "json"],
        cwd=cwd,
        env=gate_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def _outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {r["subject"]: r["status"] for r in report["results"]}


@pytest.mark.slow
def test_bundle_copied_into_an_empty_repository_passes_as_in_place(
    tmp_path: Path, m52_in_place: InPlaceGate
) -> None:
    """evidence/ alone in a fresh git repository (no pyproject.toml, pinned/ or registry/) gives
    the same result for every check as in place, from the repository and from elsewhere.

    The in-place result is the session's run of the whole gate from the repository, with the
    same environment (`m52_in_place`); tests/gate/test_inputs.py reads the same run."""
    scratch = tmp_path / "scratch"
    shutil.copytree(EVIDENCE, scratch / "evidence")
    subprocess.run(["git", "init", "-q", str(scratch)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    in_place = m52_in_place.report()
    assert in_place["exit_code"] == 0, in_place["counts"]
    from_repo = _gate(Path("evidence"), scratch)
    from_elsewhere = _gate(scratch / "evidence", elsewhere)

    assert from_repo["counts"] == in_place["counts"]
    assert from_elsewhere["counts"] == in_place["counts"]
    assert _outcomes(from_repo) == _outcomes(in_place)
    assert _outcomes(from_elsewhere) == _outcomes(in_place)
    assert in_place["counts"]["passed"] > 300
