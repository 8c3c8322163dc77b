"""The CLI frame: version, exit codes, the top-level handler, schema commands."""

from __future__ import annotations

import json
from pathlib import Path

from cbaudit.cli import app as app_module


def test_version_fast_path(cli_proc) -> None:
    """`cbaudit --version` prints the version and exits 0."""
    r = cli_proc("--version")
    assert r.code == 0
    assert r.out.startswith("cbaudit ")


def test_unknown_option_is_usage_error(cli) -> None:
    """An unknown option exits 2."""
    assert cli("gate", "--no-such-option").code == 2


def test_internal_error_is_exit_3_without_traceback(cli, monkeypatch) -> None:
    """A crash inside a command exits 3 with a one-line message and no traceback."""

    def boom(*args: object, **kwargs: object) -> int:
        raise RuntimeError("kaboom")

    monkeypatch.setattr("cbaudit.gate.runner.run_gate", boom)
    r = cli("gate", ".")
    assert r.code == 3
    assert "internal error: RuntimeError: kaboom" in r.err
    assert "Traceback" not in r.err


def test_schema_list_and_export(cli, tmp_path: Path) -> None:
    """`schema list` names the bundle schema; `schema export` writes parseable files."""
    r = cli("schema", "list")
    assert r.code == 0
    assert "bundle\thttps://cbaudit.invalid/schemas/bundle.schema.json" in r.out
    r = cli("schema", "export", tmp_path / "out")
    assert r.code == 0
    exported = json.loads((tmp_path / "out" / "bundle.schema.json").read_text())
    assert exported["$id"].endswith("bundle.schema.json")


def test_unknown_schema_is_exit_2(cli) -> None:
    """`schema show` of an unknown name exits 2 with the SCHEMA.UNKNOWN code."""
    r = cli("schema", "show", "no-such-schema")
    assert r.code == 2
    assert "SCHEMA.UNKNOWN" in r.err
    # located at the schema file it looked for, never at a placeholder
    assert "<input>" not in r.err
    assert "no-such-schema.schema.json: error SCHEMA.UNKNOWN" in r.err


def test_command_table_summaries_match_each_command() -> None:
    """Each entry of the lazy command table loads its command, and its summary is that help."""
    import inspect

    for name, entry in app_module.COMMANDS.items():
        command = app_module.load_command(name)
        assert command.name == name
        first = inspect.cleandoc(command.help or "").split("\n\n")[0].replace("\n", " ")
        assert entry.summary == first, name


def test_top_level_help_imports_no_command_module(cli_proc) -> None:
    """`cbaudit --help` lists every command from the table without importing one."""
    code = (
        "import sys; from cbaudit.cli.app import run; rc = run(['--help']);"
        " print(sorted(m for m in sys.modules if m.startswith('cbaudit.cli.cmd_')))"
    )
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("[]")
    for name in app_module.COMMANDS:
        assert name in proc.stdout
