"""Help that reads well: the type column of every command's `--help`.

Typer 0.29 labels every parameter with its Python annotation: a flag reads `<bool>`, a
repeatable option `<list[str]>`, a count `<int>` (though `-v 2` is refused: a count takes no
value), a variadic argument `<list[Path]>`. `readable_help` fixes the labels of a built
command once, where the CLI's commands are loaded (`cbaudit.cli.app`): a flag or a count
shows no value at all, and a repeatable option or variadic argument names one item (`<path>`;
a repeatable option's help says that it repeats, and an argument's name ends in `...`).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

from typer.core import TyperArgument, TyperOption


def item_label(annotation: Any) -> str:
    """typer's label for one value of `annotation` (`<path>`, `<int>`, `<text|json>`)."""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "<" + "|".join(str(m.value) for m in annotation) + ">"
    if annotation is Path:
        return "<path>"
    return f"<{getattr(annotation, '__name__', annotation)}>"


def _list_item(param: Any) -> Any:
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    return get_args(annotation)[0] if get_origin(annotation) is list else None


class ItemsArgument(TyperArgument):
    """A variadic argument labelled by one item: `cases... <path>`, not `<list[Path]>`."""

    def display_type_rich(self, ctx: Any) -> str | None:
        item = _list_item(self)
        return item_label(item) if item is not None else super().display_type_rich(ctx)


def readable_help(command: Any, ctx: Any, *, subcommands: bool = True) -> None:
    """Give the parameters of `command` (and of its subcommands) readable type labels.

    `ctx` is a click context; it names the help option, which every command carries.
    """
    for param in command.get_params(ctx):
        if isinstance(param, TyperOption) and param.metavar is None:
            if param.count:
                param.metavar = ""
                param.show_default = False
            elif param.is_flag:
                param.metavar = ""
            elif (item := _list_item(param)) is not None:
                param.metavar = item_label(item)
                if "repeat" not in (param.help or ""):
                    param.help = f"{param.help or ''} (repeatable)".lstrip()
        elif type(param) is TyperArgument and _list_item(param) is not None:
            param.__class__ = ItemsArgument
    if subcommands:
        for sub in getattr(command, "commands", {}).values():
            readable_help(sub, ctx)
