"""Console entry point: a fast `--version`, then the Typer app under a top-level handler.

Start-up (importing typer and the command's modules, building the command) allocates many
objects and frees almost none, so the cyclic garbage collector would only walk them, again
and again; it is paused until the command is built (`cbaudit.cli.app.load_command` resumes
it, and so does the end of `main`), and what start-up made is then moved out of its sight
(`gc.freeze`): the command's own collections walk only the command's objects.
"""

from __future__ import annotations

import gc
import sys

_gc_paused = False


def resume_gc() -> None:
    """Turn the collector back on if `main` paused it for start-up (else do nothing)."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.freeze()  # what start-up made lives to the end: later collections skip it
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    """Run cbaudit; returns (and exits with) the documented exit code."""
    global _gc_paused
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        # Answer without importing typer/rich so `cbaudit --version` starts fast.
        from cbaudit import __version__
        from cbaudit.io.compiled import describe_build

        sys.stdout.write(f"cbaudit {__version__} ({describe_build()})\n")
        sys.exit(0)
    if gc.isenabled():
        gc.disable()
        _gc_paused = True
    try:
        from cbaudit.cli.app import run

        code = run(args)
    finally:
        resume_gc()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
