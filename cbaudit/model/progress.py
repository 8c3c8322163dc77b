"""How long-running work reports progress without printing: a callback the caller supplies.

The core calls `progress(done, total, detail)` after each unit of work (a check, a mutation
cell, a sweep cell, a finished request); the CLI turns the calls into a progress bar on a
terminal. `None` means nobody is listening, and the core skips the calls.
"""

from __future__ import annotations

from collections.abc import Callable

#: `progress(done, total, detail)`: `done` of `total` units finished; `detail` names the last
#: one (a check id, a rate) or says what a unit is (`"412 mutants judged"`).
Progress = Callable[[int, int, str], None]

__all__ = ["Progress"]
