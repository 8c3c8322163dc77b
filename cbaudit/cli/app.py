"""The Typer application: a root group that imports a command's module only when it runs.

`COMMANDS` is the table of top-level commands: the module whose `register(app)` defines each
one, and the one-line summary `cbaudit --help` shows for it. Listing the commands imports
none of them; running one imports its module (and the core it calls) and nothing else, so a
one-file `validate-plan` does not pay for the gate, mutate or the simulator. A test holds each
summary equal to the help of the command it names.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from cbaudit import __version__
from cbaudit.cli.coercion import install_light_coercion
from cbaudit.cli.common import fail_input
from cbaudit.cli.helptext import readable_help
from cbaudit.cli.main import resume_gc
from cbaudit.model import CbauditError, ExitCode, InputError


@dataclass(frozen=True)
class CommandEntry:
    """Where a top-level command is defined, and its summary for `cbaudit --help`."""

    module: str
    summary: str


COMMANDS: dict[str, CommandEntry] = {
    "validate-plan": CommandEntry(
        "cbaudit.cli.cmd_validate",
        "Check plan cases and traces against the scheduler contract (article 0x01A).",
    ),
    "replay": CommandEntry(
        "cbaudit.cli.cmd_replay",
        "Replay WORKLOAD under a policy (`replay WORKLOAD --policy ID`, the same as"
        " `replay run ...`), or sweep offered rates (`replay sweep`).",
    ),
    "mutate": CommandEntry(
        "cbaudit.cli.cmd_mutate",
        "Mutate valid fixtures one invariant at a time; every mutant must be rejected.",
    ),
    "verify-pin": CommandEntry(
        "cbaudit.cli.cmd_pin",
        "Check a pin manifest's hashes, sizes, blob ids and line markers against a source.",
    ),
    "pin": CommandEntry("cbaudit.cli.cmd_pin", "Create pin manifests for runtime sources."),
    "formula-audit": CommandEntry(
        "cbaudit.cli.cmd_formula",
        "Check a formula registry: ids, plain forms, families, units, examples, article hashes.",
    ),
    "compare-results": CommandEntry(
        "cbaudit.cli.cmd_compare",
        "Compare two results, or every pair of a registry: comparability first, then statistics.",
    ),
    "audit-registries": CommandEntry(
        "cbaudit.cli.cmd_compare",
        "Audit the paper-contract and source-reported-result registries (article 0x0E).",
    ),
    "failure-closure": CommandEntry(
        "cbaudit.cli.cmd_compare",
        "Check the failure-closure bindings; --update rewrites their hashes (atomically).",
    ),
    "bench": CommandEntry(
        "cbaudit.cli.cmd_bench",
        "Measure mixed-step timings with torch (extra `bench`), check results files,"
        " attach them to replay reports.",
    ),
    "conform": CommandEntry(
        "cbaudit.cli.cmd_conform",
        "Replay vLLM's workload under vllm-v1 and compare every step with vLLM's decisions.",
    ),
    "gate": CommandEntry(
        "cbaudit.cli.cmd_gate",
        "Run the checks declared by each bundle.yaml under DIR; exit 0 pass, 1 fail, 2 unusable.",
    ),
    "schema": CommandEntry(
        "cbaudit.cli.cmd_schema", "List, show and export the JSON Schemas cbaudit ships."
    ),
    "new": CommandEntry(
        "cbaudit.cli.cmd_new",
        "Scaffold new evidence: `new bundle NAME` writes a bundle that passes the gate.",
    ),
    "model": CommandEntry(
        "cbaudit.cli.cmd_model",
        "Calculators of lecture 4's cost models (derived): mixed-step time, preemption by"
        " recompute or swap, CUDA-graph padding, hybrid state pools.",
    ),
}


def load_command(name: str) -> Any:
    """The click command `name`, built from its module's `register(app)` (imported now).

    Its parameters get the light coercion of `cbaudit.cli.coercion` and the readable type
    labels of `cbaudit.cli.helptext`.
    """
    entry = COMMANDS[name]
    try:
        module = importlib.import_module(entry.module)
        holder = typer.Typer()
        module.register(holder)
        group = typer.main.get_group(holder)
        command = group.commands[name]
        _prepare(command, typer.Context(group))
    finally:
        resume_gc()  # start-up ends here: the command's own work runs with the collector on
    return command


def _prepare(command: Any, ctx: Any, *, subcommands: bool = True) -> None:
    install_light_coercion(command, ctx, subcommands=subcommands)
    readable_help(command, ctx, subcommands=subcommands)


class _LazyCommands(MutableMapping[str, Any]):
    """The root group's commands: the names of `COMMANDS`, each loaded on first use."""

    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        raise TypeError("the command table is fixed: add a command to COMMANDS")

    def __delitem__(self, name: str) -> None:
        raise TypeError("the command table is fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS


class LazyGroup(TyperGroup):
    """A group whose commands come from `COMMANDS`; help and completion list their summaries."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands()
        self._summaries_only = False

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # The root's own options (typer appends the completion ones after building the group);
        # each command gets its light coercion as it loads.
        _prepare(self, ctx, subcommands=False)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self._summaries_only and cmd_name in COMMANDS:
            return TyperCommand(name=cmd_name, help=COMMANDS[cmd_name].summary)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._summaries_only = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._summaries_only = False

    def shell_complete(self, ctx: Any, incomplete: str) -> Any:
        self._summaries_only = True
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self._summaries_only = False


app = typer.Typer(
    name="cbaudit",
    cls=LazyGroup,
    help=(
        "Evidence and audit toolkit for claims about LLM-serving schedulers.\n\n"
        "Exit codes: 0 all checks pass, 1 the audit found failures, "
        "2 unusable input or invocation, 3 internal error."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from cbaudit.io.compiled import describe_build

        typer.echo(f"cbaudit {__version__} ({describe_build()})")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Show the version."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for internal errors."),
) -> None:
    """Evidence and audit toolkit for LLM-serving scheduler claims."""
    if debug:
        os.environ["CBAUDIT_DEBUG"] = "1"


def run(args: list[str]) -> int:
    """Invoke the app; map every outcome onto the documented exit codes."""
    from cbaudit.cli.signals import Interrupted, stop_on_signals

    debug = "--debug" in args or os.environ.get("CBAUDIT_DEBUG") == "1"
    try:
        with stop_on_signals():
            result = app(args=args, prog_name="cbaudit", standalone_mode=False)
    except Interrupted as err:  # SIGINT 130, SIGTERM 143; workers and temp files cleaned up
        sys.stderr.write(f"cbaudit: {err.message}\n")
        return err.exit_code
    except InputError as err:
        return fail_input(err)
    except CbauditError as err:  # UsageError and the rest: unusable invocation
        sys.stderr.write(f"cbaudit: error: {err}\n")
        return int(ExitCode.UNUSABLE)
    except typer.Abort:
        sys.stderr.write("cbaudit: aborted\n")
        return int(ExitCode.UNUSABLE)
    except typer.Exit as err:
        return int(err.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("cbaudit: interrupted\n")
        return 130
    except typer.TyperException as err:  # typer's usage errors (its own copy of click's)
        show = getattr(err, "show", None)
        if callable(show):
            show()
        else:
            sys.stderr.write(f"cbaudit: error: {err.format_message()}\n")
        return int(ExitCode.UNUSABLE) if err.exit_code == 1 else int(err.exit_code)
    except Exception as err:  # the top-level handler: a crash never looks like exit 1
        if debug:
            import traceback

            traceback.print_exc()
        else:
            sys.stderr.write(
                f"cbaudit: internal error: {type(err).__name__}: {err} (run with --debug)\n"
            )
        return int(ExitCode.INTERNAL)
    return result if isinstance(result, int) else int(ExitCode.OK)
