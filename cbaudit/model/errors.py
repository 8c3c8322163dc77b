"""One base exception for the tool; input problems carry located findings."""

from __future__ import annotations

from collections.abc import Iterable

from cbaudit.model.findings import Finding, Location


class CbauditError(Exception):
    """Base of every error cbaudit raises on purpose."""


class InputError(CbauditError):
    """An input is unusable (exit 2). Carries at least one located finding."""

    def __init__(self, findings: Finding | Iterable[Finding]) -> None:
        items = (findings,) if isinstance(findings, Finding) else tuple(findings)
        if not items:
            raise ValueError("InputError needs at least one finding")
        self.findings: tuple[Finding, ...] = items
        super().__init__(items[0].render())

    @classmethod
    def at(
        cls,
        code: str,
        message: str,
        file: str | None = None,
        *,
        pointer: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> InputError:
        """Build an error with a single finding at a location."""
        loc = Location(file=file, pointer=pointer, line=line, column=column)
        return cls(Finding(code=code, message=message, location=loc))


class UsageError(CbauditError):
    """The invocation is unusable (exit 2): conflicting or missing options."""


def file_error(name: str, err: BaseException) -> InputError:
    """The located `LOAD.*` error for a file that cannot be opened or read.

    One mapping for every reader: `cbaudit.io.loader` and `InputDigest.of` both use it.
    """
    if isinstance(err, IsADirectoryError):
        return InputError.at(
            "LOAD.IS_DIRECTORY", "is a directory; give the path of a file in it", name
        )
    if isinstance(err, FileNotFoundError | NotADirectoryError):
        return InputError.at("LOAD.NOT_FOUND", "no such file; check the path", name)
    reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
    return InputError.at("LOAD.UNREADABLE", f"cannot read the file: {reason}", name)
