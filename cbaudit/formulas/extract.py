"""Display equations of an article, in order: `$$...$$`, `\\[...\\]`, display environments
(`equation`, `align`, `gather`, `multline`, `displaymath`, `eqnarray`, starred or not) and
display MathML (`<math display="block">`) in HTML.

Inline math (`$...$`, `\\(...\\)`) is not a display equation. Inside a display, nothing is
scanned for further openers, so `\\begin{aligned}` inside `$$...$$` stays part of that display.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

_ENVS = r"equation|align|gather|multline|displaymath|eqnarray"
_OPENER = re.compile(
    r"(?P<dollars>\$\$)"
    r"|(?P<bracket>\\\[)"
    rf"|(?P<env>\\begin\{{(?P<envname>(?:{_ENVS})\*?)\}})"
    r"|(?P<mathml><math\b[^>]*\bdisplay\s*=\s*[\"']block[\"'][^>]*>)",
    re.IGNORECASE,
)
_TEX_ANNOTATION = re.compile(
    r"<annotation\b[^>]*encoding\s*=\s*[\"']application/x-tex[\"'][^>]*>(.*?)</annotation>",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class DisplayEquation:
    """One display equation: 1-based order, 1-based start line, how it was written, body."""

    index: int
    line: int
    kind: str  # "dollars", "bracket", "env", "mathml"
    body: str  # LaTeX between the delimiters, or MathML markup when no TeX annotation
    is_mathml: bool = False


@dataclass(frozen=True, slots=True)
class ExtractProblem:
    """An opener without its closer."""

    line: int
    message: str


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _escaped(text: str, pos: int) -> bool:
    """True when the character at `pos` is preceded by an odd number of backslashes."""
    n = 0
    while pos - n - 1 >= 0 and text[pos - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def extract_equations(text: str) -> tuple[list[DisplayEquation], list[ExtractProblem]]:
    """All display equations of `text` in reading order, and any unterminated openers."""
    found: list[DisplayEquation] = []
    problems: list[ExtractProblem] = []
    pos = 0
    while True:
        m = _OPENER.search(text, pos)
        if m is None:
            break
        start = m.start()
        if _escaped(text, start):
            pos = start + 1
            continue
        kind = str(m.lastgroup if m.lastgroup != "envname" else "env")
        if m.group("env"):
            kind = "env"
        if kind == "dollars":
            close = _find_unescaped(text, "$$", m.end())
            closer_len = 2
        elif kind == "bracket":
            close = _find_unescaped(text, "\\]", m.end())
            closer_len = 2
        elif kind == "env":
            closer = "\\end{" + m.group("envname") + "}"
            close = text.find(closer, m.end())
            closer_len = len(closer)
        else:
            close = text.lower().find("</math>", m.end())
            closer_len = len("</math>")
        line = _line_of(text, start)
        if close < 0:
            problems.append(
                ExtractProblem(
                    line,
                    f"display equation opened at line {line} by {m.group()[:20]!r} is never closed",
                )
            )
            break
        body = text[m.end() : close]
        is_mathml = False
        if kind == "mathml":
            tex = _TEX_ANNOTATION.search(body)
            if tex:
                body = html.unescape(tex.group(1))
            else:
                is_mathml = True
        found.append(DisplayEquation(len(found) + 1, line, kind, body, is_mathml))
        pos = close + closer_len
    return found, problems


def _find_unescaped(text: str, needle: str, pos: int) -> int:
    while True:
        i = text.find(needle, pos)
        if i < 0 or not _escaped(text, i):
            return i
        pos = i + 1
