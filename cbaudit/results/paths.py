"""Where the shipped registries are, and how paths inside result files are resolved."""

from __future__ import annotations

from pathlib import Path

from cbaudit.model import InputError

REGISTRY_PREFIX = "registry:"


def registry_root() -> Path:
    """The registry directory: inside an installed wheel, else the source checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_registry"
    if packaged.is_dir():
        return packaged
    return here.parent / "registry"


def shipped(name: str) -> Path:
    """A file of the shipped registry (`paper_contracts.yaml`, `metrics.yaml`, ...)."""
    return registry_root() / name


def split_selector(arg: str) -> tuple[str, str | None]:
    """`FILE#ID` -> (FILE, ID); `FILE` -> (FILE, None)."""
    if "#" in arg:
        path, _, sel = arg.rpartition("#")
        return path, sel or None
    return arg, None


def resolve_input(arg: str, base: Path | None = None) -> Path:
    """A user path, or `registry:NAME` for a shipped registry file."""
    if arg.startswith(REGISTRY_PREFIX):
        name = arg[len(REGISTRY_PREFIX) :]
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise InputError.at("COMPARE.INPUT.REGISTRY_NAME", f"bad registry name {name!r}", arg)
        found = shipped(name)
        if not found.exists() and not Path(name).suffix:
            found = shipped(name + ".yaml")  # `registry:metrics` means metrics.yaml
        return found
    path = Path(arg)
    if base is not None and not path.is_absolute():
        path = base / path
    return path
