"""The README's CI examples are correct as written: the workflow uploads the report the gate
writes, installs cbaudit from a place it can be installed from, and the pre-commit example names
hooks this repository has, at a revision that can exist."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import yaml
from repo_paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _yaml_blocks() -> list[Any]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", README, flags=re.S)]


def _workflow() -> dict[str, Any]:
    found = [b for b in _yaml_blocks() if isinstance(b, dict) and "jobs" in b]
    assert len(found) == 1
    return found[0]


def test_workflow_installs_from_git_and_uploads_the_html_report() -> None:
    """pip installs from a git URL (cbaudit is not on PyPI); the HTML report the gate writes is
    uploaded with actions/upload-artifact even when the gate fails."""
    steps = _workflow()["jobs"]["gate"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    install = next(r for r in runs if r.startswith("pip install"))
    assert re.fullmatch(r'pip install "cbaudit @ git\+https://\S+@\S+"', install)
    gate = next(r for r in runs if r.startswith("cbaudit gate"))
    html = re.search(r"--html (\S+)", gate)
    assert html is not None
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"
    assert html.group(1) in upload["with"]["path"].split()


def test_pre_commit_example_names_existing_hooks_at_a_commit() -> None:
    """The example's hook ids are in .pre-commit-hooks.yaml; its rev is a commit placeholder or
    a tag that exists (there is no v0.1.0)."""
    hooks = {h["id"] for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    configs = [b for b in _yaml_blocks() if isinstance(b, dict) and "repos" in b]
    assert len(configs) == 1
    (repo,) = configs[0]["repos"]
    assert {h["id"] for h in repo["hooks"]} == hooks
    tags = subprocess.run(
        ["git", "tag", "--list"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.split()
    assert repo["rev"] == "COMMIT" or repo["rev"] in tags
