"""The Typer application: one module per command, registered explicitly."""

from __future__ import annotations

import os
import sys
import traceback
from types import ModuleType

import click
import typer

from cbaudit import __version__
from cbaudit.cli import (
    cmd_bench,
    cmd_compare,
    cmd_formula,
    cmd_gate,
    cmd_mutate,
    cmd_pin,
    cmd_replay,
    cmd_schema,
    cmd_validate,
)
from cbaudit.cli.common import fail_input
from cbaudit.model import CbauditError, ExitCode, InputError

COMMAND_MODULES: tuple[ModuleType, ...] = (
    cmd_validate,
    cmd_replay,
    cmd_mutate,
    cmd_pin,
    cmd_formula,
    cmd_compare,
    cmd_bench,
    cmd_gate,
    cmd_schema,
)

app = typer.Typer(
    name="cbaudit",
    help=(
        "Evidence and audit toolkit for claims about LLM-serving schedulers.\n\n"
        "Exit codes: 0 all checks pass, 1 the audit found failures, "
        "2 unusable input or invocation, 3 internal error."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cbaudit {__version__}")
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


for _module in COMMAND_MODULES:
    _module.register(app)


def _is_click_error(err: BaseException) -> bool:
    """Typer vendors its own click; its usage errors are ClickException look-alikes."""
    return callable(getattr(err, "show", None)) and hasattr(err, "exit_code")


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
    except (click.exceptions.Abort, typer.Abort):
        sys.stderr.write("cbaudit: aborted\n")
        return int(ExitCode.UNUSABLE)
    except (click.exceptions.Exit, typer.Exit) as err:
        return int(err.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("cbaudit: interrupted\n")
        return 130
    except Exception as err:  # the top-level handler: a crash never looks like exit 1
        if _is_click_error(err):
            err.show()  # type: ignore[attr-defined]
            code = int(err.exit_code)  # type: ignore[attr-defined]
            return int(ExitCode.UNUSABLE) if code == 1 else code
        if debug:
            traceback.print_exc()
        else:
            sys.stderr.write(
                f"cbaudit: internal error: {type(err).__name__}: {err} (run with --debug)\n"
            )
        return int(ExitCode.INTERNAL)
    return result if isinstance(result, int) else int(ExitCode.OK)
