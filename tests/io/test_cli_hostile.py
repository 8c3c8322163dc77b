"""Every subcommand that reads a file: unusable input is exit 2 with its located code.

One matrix: each file a subcommand reads (a slot) gets each hostile file (truncated, the wrong
top-level type, nested past the depth limit, not UTF-8, a directory, missing, an overflowing
number, an over-long integer, a document of the wrong shape). Every run must exit 2, name the
expected code on a located line (`FILE[:LINE[:COL]][#POINTER]: error CODE: ...`) or in a
JSON report, and print no traceback. The JSON-only loader cases of `loadcases.py` are run on
`validate-plan` by `test_cli_malformed.py`; this file spreads the classes over every reader.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from repo_paths import CONFORMANCE, M52, REPO

VALID_CASE = M52 / "loop2" / "valid.case.json"
VALID_RESULTS = M52 / "bench" / "results-cpu-tiny.json"
VALID_REPORT = M52 / "compare" / "reports" / "orca-seed1.json"
VALID_FORMULAS = REPO / "registry" / "formula_registry.yaml"
CONFORM_CORPUS = CONFORMANCE / "corpus"


@dataclass(frozen=True)
class Hostile:
    """A hostile file: its bytes (None: a directory; absent: never written) and its code."""

    id: str
    content: bytes | None
    code: str  # the exact code, or a prefix ending in "." (any SCHEMA.* for a wrong shape)
    missing: bool = False


HOSTILE = [
    Hostile("truncated", b'{"a": [1, 2', "LOAD.SYNTAX"),
    Hostile("top-level-list", b"[1, 2]\n", "LOAD.TOP_LEVEL_TYPE"),
    Hostile("deep", b"[" * 50_000 + b"]" * 50_000, "LOAD.DEPTH"),
    Hostile("not-utf8", b'{"a": "caf\xe9"}', "LOAD.ENCODING"),
    Hostile("directory", None, "LOAD.IS_DIRECTORY"),
    Hostile("missing", b"", "LOAD.NOT_FOUND", missing=True),
    Hostile("huge-float", b'{"x": 1e400}', "LOAD.NONFINITE"),
    Hostile("huge-int", b'{"x": 1' + b"0" * 5000 + b"}", "LOAD.INT_TOO_LONG"),
    Hostile("wrong-shape", b'{"zz_unexpected": {"nested": [true]}}', "SCHEMA."),
]


@dataclass(frozen=True)
class Slot:
    """One file a subcommand reads: its argv with `{}` where the hostile file goes."""

    id: str
    argv: tuple[str, ...]
    suffix: str = ".json"
    # hostile ids whose code differs for this reader: {hostile id: code}
    codes: tuple[tuple[str, str], ...] = ()
    skip: tuple[str, ...] = ()  # hostile ids that mean nothing for this reader


# Readers that take several kinds of document name the one they could not recognise.
UNKNOWN_KIND = (("wrong-shape", "COMPARE.INPUT.UNKNOWN_TYPE"),)
NOT_RESULTS = (("wrong-shape", "BENCH.RESULTS.FORMAT"),)


def _slots(tmp: Path) -> list[Slot]:
    """The slots, with their companion inputs under `tmp` (made by `_companions`)."""
    source = tmp / "source"
    out = str(tmp / "out.json")
    return [
        Slot("validate-plan", ("validate-plan", "{}")),
        Slot("validate-plan --trace", ("validate-plan", "--trace", "{}"), suffix=".jsonl"),
        Slot("replay", ("replay", "{}", "--policy", "fifo")),
        Slot(
            "replay sweep",
            ("replay", "sweep", "{}", "--policy", "fifo", "--rates", "1:1:1"),
            codes=(("wrong-shape", "SWEEP.GENERATOR.KIND"),),
        ),
        Slot(
            "mutate",
            ("mutate", "{}"),
            # a directory is a bundle to mutate: without its bundle.yaml, that is not found
            codes=(("wrong-shape", "MUTATE.FIXTURE."), ("directory", "LOAD.NOT_FOUND")),
        ),
        Slot("verify-pin", ("verify-pin", "{}", "--source", str(source))),
        Slot("formula-audit", ("formula-audit", "{}")),
        Slot(
            "formula-audit --article",
            ("formula-audit", str(VALID_FORMULAS), "--article", "{}"),
            suffix=".md",
            codes=(("not-utf8", "FORMULA.ARTICLE.ENCODING"), ("missing", "FORMULA.ARTICLE.")),
            skip=("truncated", "top-level-list", "deep", "huge-float", "huge-int", "wrong-shape"),
        ),
        Slot("compare-results A", ("compare-results", "{}", str(VALID_REPORT)), codes=UNKNOWN_KIND),
        Slot("compare-results B", ("compare-results", str(VALID_REPORT), "{}"), codes=UNKNOWN_KIND),
        Slot(
            "compare-results --registry",
            ("compare-results", "--registry", "{}"),
            codes=UNKNOWN_KIND,
        ),
        Slot(
            "compare-results --metrics",
            ("compare-results", str(VALID_REPORT), str(VALID_REPORT), "--metrics", "{}"),
        ),
        Slot("audit-registries --contracts", ("audit-registries", "--contracts", "{}")),
        Slot("audit-registries --results", ("audit-registries", "--results", "{}")),
        Slot("failure-closure", ("failure-closure", "{}")),
        Slot("bench check", ("bench", "check", "{}"), codes=NOT_RESULTS),
        Slot(
            "bench attach REPORT",
            ("bench", "attach", "{}", str(VALID_RESULTS), "-o", out),
            codes=(("wrong-shape", "BENCH.ATTACH.NOT_A_REPORT"),),
        ),
        Slot(
            "bench attach RESULTS",
            ("bench", "attach", str(VALID_REPORT), "{}", "-o", out),
            codes=NOT_RESULTS,
        ),
        Slot(
            "model --model",
            ("model", "step-time", "--model", "{}", "--hardware", "lecture4-h100-sxm"),
            codes=(("missing", "PROFILE.NOT_FOUND"),),
        ),
        Slot(
            "model --hardware",
            ("model", "step-time", "--model", "lecture4-dense-70b-fp16", "--hardware", "{}"),
            codes=(("missing", "PROFILE.NOT_FOUND"),),
        ),
        Slot(
            "new bundle --article",
            ("new", "bundle", "scaffolded", "--article", "{}", "--dir", str(tmp)),
            suffix=".md",
            # the article is hashed, never parsed: only a path that is no readable file is unusable
            skip=(
                "truncated",
                "top-level-list",
                "deep",
                "not-utf8",
                "huge-float",
                "huge-int",
                "wrong-shape",
            ),
        ),
        Slot(
            "gate bundle.yaml",
            ("gate", "{dir}", "-j", "1"),
            suffix="bundle.yaml",
            codes=(("missing", "GATE.NO_BUNDLE"),),
        ),
        Slot(
            "conform TRACE",
            ("conform", "{}", "--workload", str(CONFORM_CORPUS / "null_block_exact.workload.json")),
            suffix=".jsonl",
            codes=(("wrong-shape", "CONFORM.TRACE.KEY.UNKNOWN"),),
        ),
        Slot(
            "conform --workload",
            ("conform", str(CONFORM_CORPUS / "null_block_exact.vllm-trace.jsonl"), "-w", "{}"),
            codes=(("wrong-shape", "CONFORM.WORKLOAD.KEY.UNKNOWN"),),
        ),
        Slot(
            "replay --engine-config",
            (
                "replay",
                str(M52 / "loop3" / "abc.workload.yaml"),
                "--policy",
                "vllm-v1",
                "--engine-config",
                "{}",
            ),
            codes=(("wrong-shape", "ENGINE_CONFIG.KEY.UNKNOWN"),),
        ),
    ]


def _companions(tmp: Path) -> None:
    (tmp / "source").mkdir()
    (tmp / "source" / "a.py").write_text("x = 1\n")


def _place(slot: Slot, hostile: Hostile, tmp: Path) -> tuple[list[str], Path]:
    """Write the hostile file where `slot` reads it; the argv and the file's path."""
    if slot.suffix == "bundle.yaml":
        folder = tmp / "bundle"
        folder.mkdir()
        path = folder / "bundle.yaml"
    else:
        path = tmp / f"hostile{slot.suffix}"
    if hostile.content is None:
        path.mkdir()
    elif not hostile.missing:
        path.write_bytes(hostile.content)
    argv = [a.replace("{dir}", str(path.parent)).replace("{}", str(path)) for a in slot.argv]
    return argv, path


_LINE = re.compile(r"^cbaudit: (?P<loc>\S+): error (?P<code>[A-Z][A-Z0-9_.]+): ")


def _codes(out: str, err: str) -> list[tuple[str, str]]:
    """(location, code) of every finding: one-line messages, or a JSON report's findings."""
    found = [(m["loc"], m["code"]) for m in map(_LINE.match, err.splitlines()) if m]
    if out.strip().startswith("{"):
        for result in json.loads(out)["results"]:
            for f in result["findings"]:
                where = f["location"]
                found.append((f"{where['file']}#{where['pointer']}", f["code"]))
    return found


def _matrix() -> list[Any]:
    params = []
    for slot in _slots(Path("unused")):
        for hostile in HOSTILE:
            if hostile.id not in slot.skip:
                params.append(pytest.param(slot.id, hostile, id=f"{slot.id}::{hostile.id}"))
    return params


@pytest.mark.parametrize("slot_id,hostile", _matrix())
def test_unusable_input_exits_2_with_its_code(
    cli: Callable[..., Any], tmp_path: Path, slot_id: str, hostile: Hostile
) -> None:
    """Each reader refuses each hostile file: exit 2, its code at the file, no traceback."""
    _companions(tmp_path)
    slot = next(s for s in _slots(tmp_path) if s.id == slot_id)
    argv, path = _place(slot, hostile, tmp_path)
    no_report = slot.argv[:2] in (("bench", "attach"), ("new", "bundle"))  # they write files
    fmt = [] if no_report else ["--format", "json"]
    run = cli(*argv, *fmt)
    assert run.code == 2, (run.code, run.out[-2000:], run.err[-2000:])
    assert "Traceback" not in run.out + run.err
    want = dict(slot.codes).get(hostile.id, hostile.code)
    found = _codes(run.out, run.err)
    matching = [
        (loc, code)
        for loc, code in found
        if (code.startswith(want) if want.endswith(".") else code == want)
    ]
    assert matching, (want, found, run.err[-2000:])
    assert all(str(path) in loc or loc.startswith(str(path.parent)) for loc, _ in matching), found
    assert len(found) == len(set(found)), found  # each problem is said once


def test_gate_expected_output_nested_past_the_limit(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """A 200,000-deep expected-output file is LOAD.DEPTH (exit 2), not a crashed check."""
    root = tmp_path / "b"
    root.mkdir()
    (root / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: demo\ntitle: Demo\ninclude: []\nchecks:\n"
        "  - {id: v, kind: plan_case, case: c.json, expected: out.json}\n"
    )
    (root / "c.json").write_bytes(VALID_CASE.read_bytes())
    (root / "out.json").write_bytes(b"[" * 200_000 + b"]" * 200_000)
    run = cli("gate", root, "-j", "1", "--format", "json")
    assert run.code == 2
    codes = [code for _, code in _codes(run.out, run.err)]
    assert codes == ["LOAD.DEPTH"]


def test_every_file_reading_subcommand_is_in_the_matrix() -> None:
    """Each top-level command that reads files has at least one slot above."""
    from cbaudit.cli.app import COMMANDS

    reads_files = set(COMMANDS) - {"schema", "pin"}  # schema reads none; pin create: below
    covered = {s.argv[0] for s in _slots(Path("unused"))}
    assert reads_files <= covered, reads_files - covered


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_pin_create_refuses_what_is_not_a_file(
    cli: Callable[..., Any], tmp_path: Path, what: str
) -> None:
    """`pin create --file` of a missing path or a directory: exit 2, PIN.FILE.MISSING there."""
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    name = "absent.py" if what == "missing" else "sub"
    run = cli(
        "pin", "create", "--source", source, "--file", name, "--runtime", "t",
        "--runtime-version", "1",
    )  # fmt: skip
    assert run.code == 2
    assert _codes(run.out, run.err) == [(name, "PIN.FILE.MISSING")]
