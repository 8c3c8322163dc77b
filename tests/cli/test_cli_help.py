"""Every command's `--help` reads well: no Python type names, no emoji, no phantom options."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import typer
from repo_paths import M52

from cbaudit.cli.app import COMMANDS, load_command

_OPTION_MENTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
# Emoji and pictographs rich substitutes for `:name:` codes (e.g. `A:B:N` -> `A🅱N`).
_EMOJI = re.compile("[\u2600-\u27bf\U0001f000-\U0001faff]")
_OTHER_COMMAND = re.compile(r"cbaudit [a-z][^)`]*")
_ROOT_OPTIONS = {"--help", "--version", "--debug", "--install-completion", "--show-completion"}


def _command_paths() -> Iterator[tuple[list[str], Any]]:
    for name in COMMANDS:
        command = load_command(name)
        yield [name], command
        for sub_name, sub in getattr(command, "commands", {}).items():
            yield [name, sub_name], sub


PATHS = [pytest.param(path, command, id=" ".join(path)) for path, command in _command_paths()]


def _options(command: Any) -> set[str]:
    """The command's options, and those of its subcommands (a group's help may show them)."""
    names = set(_ROOT_OPTIONS)
    for param in command.get_params(typer.Context(command)):
        names.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
    for sub in getattr(command, "commands", {}).values():
        names |= _options(sub)
    return names


def _help(cli: Callable[..., Any], *path: str) -> str:
    os.environ["COLUMNS"] = "120"
    try:
        run = cli(*path, "--help")
    finally:
        os.environ.pop("COLUMNS", None)
    assert run.code == 0, run.err
    return str(run.out)


@pytest.mark.parametrize("path,command", PATHS)
def test_help_reads_well(cli: Callable[..., Any], path: list[str], command: Any) -> None:
    """No `<bool>`/`<list[...]>` labels, no emoji, and every `--option` it names exists."""
    text = _help(cli, *path)
    assert "<bool>" not in text
    assert "<list[" not in text
    assert not _EMOJI.search(text), _EMOJI.findall(text)
    flat = re.sub(r"\s*│\s*", " ", text)  # options split over two table rows read whole
    flat = _OTHER_COMMAND.sub("", flat)  # an example of another command names its options
    unknown = set(_OPTION_MENTION.findall(flat)) - _options(command)
    assert not unknown, f"{' '.join(path)} --help mentions {sorted(unknown)}"


@pytest.mark.parametrize("path,command", PATHS)
def test_repeatable_options_say_so(cli: Callable[..., Any], path: list[str], command: Any) -> None:
    """A repeatable option is labelled by one item and its help says that it repeats."""
    for param in command.params:
        if getattr(param, "multiple", False):
            assert param.metavar and "list" not in param.metavar, param.name
            assert "repeat" in (param.help or ""), param.name


def test_root_help_lists_every_command(cli: Callable[..., Any]) -> None:
    """`cbaudit --help` lists each command with its summary, and no type labels."""
    text = _help(cli)
    for name in COMMANDS:
        assert name in text
    assert "<bool>" not in text


def test_verbose_is_a_count_flag(cli: Callable[..., Any]) -> None:
    """`-v` takes no value (`-vv` is the next level) and its help shows no `<int>`."""
    case = M52 / "loop2" / "valid.case.json"
    assert cli("validate-plan", case, "-vv").code == 0
    assert cli("validate-plan", case, "-v", "2").code == 2
    line = next(x for x in _help(cli, "validate-plan").splitlines() if "--verbose" in x)
    assert "<int>" not in line
    assert "-vv" in line


def test_rates_are_not_emoji(cli: Callable[..., Any]) -> None:
    """`replay sweep --help` shows `A:B:N` as typed (rich once made it `A🅱N`)."""
    assert "A:B:N" in _help(cli, "replay", "sweep")


def test_list_policies_lists_every_registered_policy(cli: Callable[..., Any]) -> None:
    """`replay --list-policies` (which `replay run --help` points to) prints all 21 policies."""
    from cbaudit.policies.registry import POLICIES

    for path in (["replay"], ["replay", "run"]):
        run = cli(*path, "--list-policies")
        assert run.code == 0, run.err
        lines = run.out.splitlines()
        assert [line.split()[0] for line in lines] == POLICIES.ids()
        assert len(lines) == 21
        for line, pid in zip(lines, POLICIES.ids(), strict=True):
            assert line.split(None, 1)[1] == POLICIES.summary(pid)
    assert "--list-policies" in _help(cli, "replay", "run")


def test_shell_completion_is_on() -> None:
    """typer's completion answers for the `cbaudit` program (commands, then options)."""

    def complete(words: str, cword: int) -> list[str]:
        env = {
            **os.environ,
            "_CBAUDIT_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
        }
        proc = subprocess.run(
            [sys.executable, "-m", "cbaudit"], env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert complete("cbaudit val", 1) == ["validate-plan"]
    assert "--format" in complete("cbaudit validate-plan --f", 2)
