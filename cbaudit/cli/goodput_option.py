"""`--goodput ttft:MS tpot:MS e2el:MS`: the option as `vllm bench serve` spells it.

vLLM declares `--goodput` with `nargs="+"` (vllm/benchmarks/serve.py, `add_cli_args`): one
option followed by space-separated `KEY:VALUE` pairs. Click options take one value each, so
the commands that accept `--goodput` use `GoodputCommand`, which joins the `KEY:VALUE` words
after `--goodput` into that option's one value before Click parses; `parse_goodput` then
splits it. The older spellings keep working: `--goodput ttft:30,tpot:20` and a repeated
`--goodput`.
"""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperCommand

OPTION = "--goodput"
#: One `KEY:VALUE` word: a lower-case key, and a value that is no path.
_PAIR = re.compile(r"^[a-z][a-z0-9_]*:[^/\\]*$")
_FILE_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml", ".csv")


def _is_pair(word: str) -> bool:
    return bool(_PAIR.match(word)) and not word.lower().endswith(_FILE_SUFFIXES)


def join_goodput_words(args: list[str]) -> list[str]:
    """`[..., "--goodput", "ttft:30", "tpot:20", "w.yaml"]` ->
    `[..., "--goodput", "ttft:30 tpot:20", "w.yaml"]` (also for `--goodput=ttft:30 ...`)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            out.extend(args[i:])
            break
        if word == OPTION or word.startswith(OPTION + "="):
            values = [word.split("=", 1)[1]] if "=" in word else []
            j = i + 1
            while j < len(args) and _is_pair(args[j]):
                values.append(args[j])
                j += 1
            if values:
                out += [OPTION, " ".join(values)]
                i = j
                continue
        out.append(word)
        i += 1
    return out


class GoodputCommand(TyperCommand):
    """A command whose `--goodput` takes space-separated pairs, as vLLM's does."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, join_goodput_words(list(args)))
