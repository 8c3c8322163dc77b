"""Every input hashed: the report's `inputs` list every file any check read, with its sha256.

The whole M5.2 gate runs once in a subprocess whose audit hook (`sys.addaudithook`) notes every
file opened for reading; worker processes are forked from it and keep the hook. Every file of
the bundle (and of the shipped registry) that was opened must be among the inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from repo_paths import EVIDENCE, M52, REPO, SHARED

from cbaudit.results.paths import registry_root

ARTICLE = SHARED / "seeds" / "000_723c321e7155665c.txt"

HOOKED_GATE = """
import os, sys
log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)

def hook(event, args):
    if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    mode, flags = args[1], args[2]
    reading = ("r" in mode and "+" not in mode) if mode else (flags & 3) == os.O_RDONLY
    if reading:
        os.write(log, os.fsencode(os.path.realpath(os.fspath(args[0]))) + b"\\n")

sys.addaudithook(hook)
from cbaudit.cli.app import run
sys.exit(run(["gate", sys.argv[2], "-q", "-j", "2", "-f", "json", "-o", sys.argv[3]]))
"""


@pytest.fixture(scope="module")
def hooked_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], set[Path]]:
    """The gate's JSON report over evidence/, and every file the run opened for reading."""
    tmp = tmp_path_factory.mktemp("inputs")
    log, out = tmp / "opened.txt", tmp / "report.json"
    env = dict(os.environ)
    if ARTICLE.is_file():
        env["CBAUDIT_M52_ARTICLE"] = str(ARTICLE)
    proc = subprocess.run(
        [sys.executable, "-c", HOOKED_GATE, str(log), str(EVIDENCE), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    opened = {Path(line) for line in log.read_text().splitlines()}
    return json.loads(out.read_text()), opened


def _inputs(report: dict[str, Any]) -> dict[Path, str]:
    return {(REPO / d["path"]).resolve(): d["sha256"] for d in report["inputs"]}


@pytest.mark.slow
def test_every_file_a_check_opened_is_an_input(
    hooked_run: tuple[dict[str, Any], set[Path]],
) -> None:
    """No file of the bundle or of the shipped registry is read without being listed."""
    report, opened = hooked_run
    inputs = _inputs(report)
    tops = (M52.resolve(), registry_root().resolve())
    read = {p for p in opened if any(t in p.parents for t in tops) and p.is_file()}
    assert read, "the audit hook saw no read"
    assert sorted(read - set(inputs)) == []


@pytest.mark.slow
def test_inputs_are_the_files_read_each_once_sorted_with_their_sha256(
    hooked_run: tuple[dict[str, Any], set[Path]],
) -> None:
    """Each input is listed once, sorted, relative to where the gate ran, with the sha256 of
    its bytes; fixtures, expected outputs, registries, pins and the article are among them."""
    report, _ = hooked_run
    paths = [d["path"] for d in report["inputs"]]
    assert paths == sorted(set(paths))
    assert not any(os.path.isabs(p) for p in paths)
    for path, digest in _inputs(report).items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, path
    names = set(paths)
    prefix = "evidence/m5-2-continuous-batching/"
    for rel in (
        "bundle.yaml",
        "loop2/valid.case.json",
        "loop2/iterations-5-6.trace.jsonl",
        "loop3/expected/fixed-batch.json",
        "loop5/admission_uncertainty.yaml",
        "loop9/negative/wrong-owner-release.yaml",
        "loop10-runtime/snapshots/s1-mixed.json",
        "loop11/failure_closure.json",
        "pins/vllm-v0.23.0.yaml",
        "pins/formula_registry.yaml",
        "bench/results-cpu-tiny.json",
    ):
        assert prefix + rel in names, rel
    assert {"registry/paper_contracts.yaml", "registry/source_reported_results.yaml"} <= names
    if ARTICLE.is_file():
        assert os.path.relpath(ARTICLE, REPO) in names
