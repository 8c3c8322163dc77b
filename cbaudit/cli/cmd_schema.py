"""`cbaudit schema list|show NAME|export DIR`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from cbaudit.cli.common import atomic_write
from cbaudit.io.schemas import list_schemas, load_schema
from cbaudit.model import UsageError

schema_app = typer.Typer(help="List, show and export the JSON Schemas cbaudit ships.")


@schema_app.command("list")
def schema_list() -> int:
    """List the shipped schemas with their $id."""
    for name in list_schemas():
        typer.echo(f"{name}\t{load_schema(name).get('$id', '')}")
    return 0


@schema_app.command("show")
def schema_show(name: str = typer.Argument(..., help="Schema name, e.g. iteration-plan.")) -> int:
    """Print one schema as JSON."""
    typer.echo(json.dumps(load_schema(name), indent=2, sort_keys=True))
    return 0


@schema_app.command("export")
def schema_export(directory: Path = typer.Argument(..., help="Directory to write into.")) -> int:
    """Write every schema into DIR as <name>.schema.json."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory}: not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    for name in list_schemas():
        text = json.dumps(load_schema(name), indent=2, sort_keys=True) + "\n"
        atomic_write(directory / f"{name}.schema.json", text)
    typer.echo(f"wrote {len(list_schemas())} schemas to {directory}")
    return 0


def register(app: typer.Typer) -> None:
    app.add_typer(schema_app, name="schema")
