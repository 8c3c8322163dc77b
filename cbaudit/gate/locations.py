"""Where a finding's file is, for annotations that must name it relative to the repository.

Checks report files the way a reader of the report needs them: bundle-relative for what lies
in a bundle (the same from any working directory), a manifest as the user named its folder,
an expected output by its absolute path. GitHub needs one spelling, relative to the root of
the checked-out repository; `repository_paths` finds it by looking where the file really is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path


def repository_paths(
    bundles: Mapping[str, Path], repository: Path, cwd: Path | None = None
) -> Callable[[str, str], str | None]:
    """A map (file, result subject) -> path relative to `repository`, or None.

    A relative file is looked up in the bundle the subject names (`bundle:check`), then in
    `cwd`; an absolute one as it is. None when no such file lies inside the repository.
    """
    top = repository.resolve()
    here = (cwd or Path.cwd()).resolve()
    homes = {name: path.resolve() for name, path in bundles.items()}

    def relpath(file: str, subject: str) -> str | None:
        given = Path(file)
        if given.is_absolute():
            candidates = [given]
        else:
            home = homes.get(subject.split(":", 1)[0])
            candidates = ([home / given] if home is not None else []) + [here / given]
        for candidate in candidates:
            target = candidate.resolve()
            if target.is_file() and (target == top or top in target.parents):
                return target.relative_to(top).as_posix()
        return None

    return relpath
