"""Console entry point: a fast `--version`, then the Typer app under a top-level handler."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run cbaudit; returns (and exits with) the documented exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        # Answer without importing typer/rich so `cbaudit --version` starts fast.
        from cbaudit import __version__

        sys.stdout.write(f"cbaudit {__version__}\n")
        sys.exit(0)
    from cbaudit.cli.app import run

    sys.exit(run(args))


if __name__ == "__main__":  # pragma: no cover
    main()
