"""Content identities of a file: sha256 of its bytes and its git blob id."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def git_blob_id(data: bytes) -> str:
    """The id git gives `data` as a blob: sha1 of `blob <len>\\0<bytes>`."""
    header = b"blob " + str(len(data)).encode("ascii") + b"\0"
    return hashlib.sha1(header + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True, slots=True)
class ContentId:
    """What a pin records about one file's bytes."""

    sha256: str
    size: int
    git_blob: str

    @classmethod
    def of(cls, data: bytes) -> ContentId:
        return cls(sha256=sha256_hex(data), size=len(data), git_blob=git_blob_id(data))


def eol_variants(data: bytes) -> dict[str, bytes]:
    """The bytes a line-ending filter could have produced from, or turned into, `data`.

    Keys name the conversion that would undo a checkout filter: `crlf_to_lf` (the checkout
    has CRLF where the blob has LF) and `lf_to_crlf` (the reverse).
    """
    out: dict[str, bytes] = {}
    if b"\r\n" in data:
        out["crlf_to_lf"] = data.replace(b"\r\n", b"\n")
    if b"\n" in data:
        lf_only = data.replace(b"\r\n", b"\n")
        out["lf_to_crlf"] = lf_only.replace(b"\n", b"\r\n")
    return out


def split_lines(data: bytes) -> list[str]:
    """Lines of `data` as text (1-based index = list index + 1), without their line ends.

    Undecodable bytes survive as surrogate escapes, so an exact comparison stays exact.
    """
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
