"""Normalization of display-equation LaTeX before hashing (versioned; see docs/formulas.md).

Rules of `cbaudit-latex-norm/1`, applied in order to the body between the delimiters:

1. Unicode NFC; CRLF and CR become LF.
2. `%` comments (an unescaped `%` to the end of its line) are removed.
3. `\\label{..}`, `\\tag{..}`, `\\tag*{..}`, `\\nonumber`, `\\notag` and `\\displaystyle`
   are removed.
4. Spacing commands are removed: `\\,` `\\:` `\\;` `\\>` `\\!`, a control space (backslash then
   whitespace), `\\quad` and `\\qquad`. A line break `\\\\` is kept.
5. Whitespace is removed, except one space kept between a control word and a following
   letter (`\\mathcal C`), and inside the braces of text-mode commands (`\\text`, `\\textrm`,
   `\\textit`, `\\textbf`, `\\textsf`, `\\texttt`, `\\textnormal`, `\\mbox`), where each run of
   whitespace becomes one space.
6. Trailing `.`, `,` and `;` at the very end are removed (sentence punctuation).

The hash is the sha256 of the UTF-8 bytes of the result. Display MathML without a TeX
annotation is hashed as markup: rule 1, then whitespace between tags removed and other
whitespace runs collapsed to one space.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

NORMALIZATION_ID = "cbaudit-latex-norm/1"
RULES: tuple[str, ...] = (
    "unicode NFC; CRLF and CR become LF",
    "remove % comments (unescaped % to end of line)",
    "remove \\label{..}, \\tag{..}, \\tag*{..}, \\nonumber, \\notag, \\displaystyle",
    "remove spacing commands \\, \\: \\; \\> \\! control-space \\quad \\qquad; keep \\\\",
    "remove whitespace, except one space between a control word and a following letter and"
    " one space per whitespace run inside text-mode braces (\\text, \\textrm, \\textit,"
    " \\textbf, \\textsf, \\texttt, \\textnormal, \\mbox)",
    "strip trailing . , ; at the end",
    "hash: sha256 of the UTF-8 bytes; display MathML without a TeX annotation: whitespace"
    " between tags removed, other whitespace runs collapsed",
)

_TEXT_MODE = frozenset(
    {"text", "textrm", "textit", "textbf", "textsf", "texttt", "textnormal", "mbox"}
)
_DROP_WORDS = frozenset({"nonumber", "notag", "displaystyle", "quad", "qquad"})
_DROP_WITH_ARG = re.compile(r"\\(?:label|tag\*?)\s*\{")
_SPACING = frozenset(",:;>! \t\n")


def _strip_comments(text: str) -> str:
    out = []
    for line in text.split("\n"):
        i = 0
        while True:
            i = line.find("%", i)
            if i < 0:
                break
            n = 0
            while i - n - 1 >= 0 and line[i - n - 1] == "\\":
                n += 1
            if n % 2 == 0:
                line = line[:i]
                break
            i += 1
        out.append(line)
    return "\n".join(out)


def _drop_with_arg(text: str) -> str:
    while True:
        m = _DROP_WITH_ARG.search(text)
        if m is None:
            return text
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        text = text[: m.start()] + text[j:]


def normalize_latex(body: str) -> str:
    """Apply `cbaudit-latex-norm/1` to one display body."""
    text = unicodedata.normalize("NFC", body).replace("\r\n", "\n").replace("\r", "\n")
    text = _drop_with_arg(_strip_comments(text))
    out: list[str] = []
    last_word = False  # the last emitted token is a control word
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "\\":
                out.append("\\\\")
                last_word = False
                i += 2
                continue
            if nxt in _SPACING:
                i += 2
                continue
            if nxt.isalpha():
                j = i + 1
                while j < n and text[j].isalpha():
                    j += 1
                word = text[i + 1 : j]
                i = j
                if word in _DROP_WORDS:
                    continue
                out.append("\\" + word)
                last_word = True
                if word in _TEXT_MODE:
                    k = i
                    while k < n and text[k].isspace():
                        k += 1
                    if k < n and text[k] == "{":
                        depth, e = 1, k + 1
                        while e < n and depth:
                            depth += {"{": 1, "}": -1}.get(text[e], 0)
                            e += 1
                        inner = re.sub(r"\s+", " ", text[k + 1 : e - 1])
                        out.append("{" + inner + "}")
                        last_word = False
                        i = e
                continue
            out.append(ch + nxt)
            last_word = False
            i += 2
            continue
        if ch.isspace():
            j = i
            while j < n and text[j].isspace():
                j += 1
            if last_word and j < n and text[j].isalpha():
                out.append(" ")
            i = j
            last_word = False
            continue
        out.append(ch)
        last_word = False
        i += 1
    return "".join(out).rstrip(".,;")


def normalize_mathml(markup: str) -> str:
    """Normalize display MathML markup that carries no TeX annotation."""
    text = unicodedata.normalize("NFC", markup).replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r">\s+<", "><", text.strip())
    return re.sub(r"\s+", " ", text)


def equation_hash(body: str, *, mathml: bool = False) -> str:
    """sha256 (hex) of the normalized body."""
    norm = normalize_mathml(body) if mathml else normalize_latex(body)
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()
