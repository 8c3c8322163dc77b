"""Every input hashed: the report's `inputs` list every file any check read, with its sha256.

The whole M5.2 gate runs once in a subprocess whose audit hook (`sys.addaudithook`) notes every
file opened for reading; worker processes are forked from it and keep the hook (the session's
`m52_in_place` run, tests/m52_in_place.py). Every file of the bundle (and of the shipped
registry) that was opened must be among the inputs.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from m52_in_place import ARTICLE, InPlaceGate
from repo_paths import M52, REPO

from cbaudit.results.paths import registry_root


@pytest.fixture(scope="module")
def hooked_run(m52_in_place: InPlaceGate) -> tuple[dict[str, Any], set[Path]]:
    """The gate's JSON report over evidence/, and every file the run opened for reading."""
    return m52_in_place.report(), m52_in_place.opened()


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
