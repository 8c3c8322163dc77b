"""A progress bar on stderr for long commands, fed by the core's `Progress` callback.

Shown only when stderr is a terminal and `-q` was not given; otherwise the core gets `None` and
reports nothing. The bar is transient (it disappears when the work ends, so the report prints
alone) and appears only once the work has run for `delay_s`, so short runs never flash one.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cbaudit.model.progress import Progress


def wanted(quiet: bool) -> bool:
    """Whether a bar may be shown: stderr is a terminal and `-q` was not given."""
    return not quiet and sys.stderr.isatty()


@contextmanager
def progress_bar(
    label: str, unit: str, *, quiet: bool, delay_s: float = 0.5
) -> Iterator[Progress | None]:
    """Yield a `Progress` callback drawing `label  done/total unit  detail`, or None."""
    if not wanted(quiet):
        yield None
        return
    from rich import progress as rp
    from rich.console import Console

    started = time.monotonic()
    state: dict[str, Any] = {}

    def update(done: int, total: int, detail: str) -> None:
        if "bar" not in state:
            if time.monotonic() - started < delay_s:
                return
            bar = rp.Progress(
                rp.TextColumn("[bold]{task.description}"),
                rp.BarColumn(),
                rp.MofNCompleteColumn(),
                rp.TextColumn(unit, markup=False),
                rp.TimeElapsedColumn(),
                rp.TextColumn("{task.fields[detail]}", markup=False),
                console=Console(file=sys.stderr),
                transient=True,
            )
            bar.start()
            state["bar"] = bar
            state["task"] = bar.add_task(label, total=total, detail="")
        state["bar"].update(state["task"], completed=done, total=total, detail=detail)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].stop()
