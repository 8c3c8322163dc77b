"""Paths tests share: the repository, its evidence folder, and the shared folder beside it.

Import these from here (`from repo_paths import REPO`), never from a `conftest` module: several
test folders have their own conftest, and `import conftest` would pick whichever came first.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVIDENCE = REPO / "evidence"
SHARED = REPO.parent / "shared"
