"""Gate kind `pin`: manifest self-checks always; an unavailable source is not run, never passed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from _pin_trees import make_repo, manifest_data, write_manifest, write_tree
from repo_paths import EVIDENCE

from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.model import CheckResult, CheckStatus, InputError
from cbaudit.oracles.binding import PIN


def run_pin(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(PIN, spec, ctx)


CHECKS = EVIDENCE / "m5-2-continuous-batching" / "pins" / "checks.yaml"


def _ctx(bundle: Path, repo: Path | None = None) -> GateContext:
    return GateContext(
        base_dir=bundle / "pins",
        manifest="pins/checks.yaml",
        pointer="/checks/0",
        bundle_root=bundle,
        root=repo,
    )


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A bundle holding a toy pin next to its checks file."""
    root = tmp_path / "bundle"
    (root / "pins").mkdir(parents=True)
    src = write_tree(tmp_path / "src")
    write_manifest(root / "pins" / "toy.yaml", manifest_data(src))
    return root


def _status(results) -> dict[str, CheckStatus]:
    return {r.subject: r.outcome for r in results}


def test_no_source_declared_is_not_run(bundle: Path) -> None:
    """Without source fields the manifest passes and verification is not run."""
    results = run_pin({"id": "p", "kind": "pin", "manifest": "toy.yaml"}, _ctx(bundle))
    assert _status(results) == {
        "manifest": CheckStatus.PASSED,
        "verify:source": CheckStatus.NOT_RUN,
    }


def test_unset_variable_is_not_run(bundle: Path, monkeypatch) -> None:
    """A source from an unset environment variable is not run, with the variable named."""
    monkeypatch.delenv("CBAUDIT_TEST_SRC", raising=False)
    spec = {"id": "p", "kind": "pin", "manifest": "toy.yaml", "source": "${CBAUDIT_TEST_SRC}"}
    results = run_pin(spec, _ctx(bundle))
    not_run = [r for r in results if r.outcome is CheckStatus.NOT_RUN]
    assert len(not_run) == 1 and "CBAUDIT_TEST_SRC" in (not_run[0].reason or "")


def test_variable_naming_a_missing_path_is_not_run(bundle: Path, tmp_path, monkeypatch) -> None:
    """A variable pointing at a path that does not exist is not run, never passed."""
    monkeypatch.setenv("CBAUDIT_TEST_SRC", str(tmp_path / "absent"))
    spec = {"id": "p", "kind": "pin", "manifest": "toy.yaml", "source": "${CBAUDIT_TEST_SRC}"}
    assert _status(run_pin(spec, _ctx(bundle)))["verify:source"] is CheckStatus.NOT_RUN


def test_available_source_is_verified(bundle: Path, tmp_path: Path, monkeypatch) -> None:
    """With the variable set, each file is verified and a drift fails."""
    monkeypatch.setenv("CBAUDIT_TEST_SRC", str(tmp_path / "src"))
    spec = {"id": "p", "kind": "pin", "manifest": "toy.yaml", "source": "${CBAUDIT_TEST_SRC}"}
    assert set(_status(run_pin(spec, _ctx(bundle))).values()) == {CheckStatus.PASSED}
    (tmp_path / "src" / "pkg" / "config.py").write_text("changed\n")
    results = run_pin(spec, _ctx(bundle))
    failed = [r for r in results if r.outcome is CheckStatus.FAILED]
    assert [r.subject for r in failed] == ["pkg/config.py"]
    assert "PIN.FILE.SHA256" in {f.code for f in failed[0].findings}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_dir_from_environment(bundle: Path, tmp_path: Path, monkeypatch) -> None:
    """git_dir verifies the pinned commit and reports the revision."""
    repo, commit = make_repo(tmp_path / "repo")
    write_manifest(bundle / "pins" / "toy.yaml", manifest_data(repo, commit=commit))
    monkeypatch.setenv("CBAUDIT_TEST_GIT", str(repo))
    spec = {"id": "p", "kind": "pin", "manifest": "toy.yaml", "git_dir": "${CBAUDIT_TEST_GIT}"}
    status = _status(run_pin(spec, _ctx(bundle)))
    assert status["revision"] is CheckStatus.PASSED and len(status) == 4


def test_manifest_drift_fails_without_source(bundle: Path) -> None:
    """An inconsistent manifest fails even when no source is available."""
    data = yaml.safe_load((bundle / "pins" / "toy.yaml").read_text())
    data["files"][0]["markers"][0]["line"] = 999
    (bundle / "pins" / "toy.yaml").write_text(yaml.safe_dump(data))
    results = run_pin({"id": "p", "kind": "pin", "manifest": "toy.yaml"}, _ctx(bundle))
    manifest = next(r for r in results if r.subject == "manifest")
    assert [f.code for f in manifest.findings] == [
        "PIN.MANIFEST.LINE_RANGE",
        "PIN.MANIFEST.OCCURRENCES",
    ]
    assert manifest.outcome is CheckStatus.FAILED


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"id": "p", "kind": "pin"}, "GATE.SPEC.MISSING_FIELD"),
        ({"id": "p", "kind": "pin", "manifest": "../../x.yaml"}, "GATE.PATH.ESCAPE"),
        ({"id": "p", "kind": "pin", "manifest": {"repo_path": "../x.yaml"}}, "GATE.PATH.ESCAPE"),
        ({"kind": "pin", "manifest": "toy.yaml"}, "GATE.SPEC.MISSING_FIELD"),
        ({"id": "p", "manifest": "toy.yaml", "evidence_class": "vibes"}, "GATE.SPEC.INVALID"),
        ({"id": "p", "manifest": "toy.yaml", "sources": "x"}, "GATE.SPEC.UNKNOWN_FIELD"),
        ({"id": "p", "manifest": "toy.yaml", "source": "nope"}, "GATE.SPEC.SOURCE"),
    ],
)
def test_unusable_specs_raise(bundle: Path, spec, code: str) -> None:
    """Unusable spec fields raise InputError with a located code."""
    with pytest.raises(InputError) as err:
        run_pin(spec, _ctx(bundle, repo=bundle))
    assert err.value.findings[0].code == code


def test_bundle_checks_file_runs(monkeypatch) -> None:
    """The M5.2 pins checks file: the vLLM pin self-checks pass; sources are not run here."""
    monkeypatch.delenv("CBAUDIT_VLLM_GIT_DIR", raising=False)
    monkeypatch.delenv("CBAUDIT_VLLM_SOURCE", raising=False)
    checks = yaml.safe_load(CHECKS.read_text())["checks"]
    spec = next(c for c in checks if c["kind"] == "pin")
    bundle = CHECKS.parent.parent
    ctx = GateContext(
        base_dir=CHECKS.parent, manifest="pins/checks.yaml", pointer="/checks/0",
        bundle_root=bundle,
    )  # fmt: skip
    status = _status(run_pin(spec, ctx))
    assert status == {
        "manifest": CheckStatus.PASSED,
        "verify:git_dir": CheckStatus.NOT_RUN,
        "verify:source": CheckStatus.NOT_RUN,
    }
