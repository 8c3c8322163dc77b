"""Whose stretch declarations the replay engine takes on their word.

A policy that declares `decode_stretch` (or `chunk_stretch`) promises that for so many cuts it
answers with the same plan, shifted. The engine then skips the cuts inside a stretch and asks
the policy only at the stretch's last one (`cbaudit.sim.stretch`). A policy that breaks the
promise at one cut inside a stretch and keeps it again at the last one is not seen there: the
cuts in between are never shown to it. So a declaration is only as good as the code behind it,
and the engine believes one only from code whose promise was checked:

* the policy is an instance of one of cbaudit's own policy classes (defined at the top level
  of a module of this package), not of a subclass or a copy made elsewhere, and its instance
  holds no function of its own;
* every module of this package that is loaded has the bytes recorded in `verified_sources.json`
  (the sources on which the differential tests ran: `make verify-policies` runs them and then
  records the digests; a test fails while the record and the sources differ); a module loaded
  from a compiled extension (the wheel's, `hatch_build.py`) counts only when the wheel's build
  record says it was compiled from those same bytes (`cbaudit.io.compiled`);
* no function of those classes and modules was rebound in this process to one defined
  elsewhere (a test's or a plugin's function, a mock): a function they hold comes from
  cbaudit's own files or from the standard library.

Anything else runs every cut through the policy and the checks (the per-iteration path): the
same report, found at the same iteration, only slower. `docs/replay.md` ("Whose promise is
believed") gives the reasons and what is still outside the check.

    python -m cbaudit.policies.verified                 # check, exit 1 when a source differs
    python -m cbaudit.policies.verified --write [FILE]  # record the sources' digests now
"""

from __future__ import annotations

import json
import os
import sys
import types
from dataclasses import is_dataclass
from functools import cache, partial
from pathlib import Path

from cbaudit.io.compiled import compiled_source_digest, source_digest

PACKAGE = "cbaudit.policies"
HERE = Path(__file__).resolve().parent
RECORD = HERE / "verified_sources.json"
RECORD_ENV = "CBAUDIT_VERIFIED_SOURCES"
_CBAUDIT = str(HERE.parent) + os.sep
_STDLIB = os.path.dirname(os.path.realpath(os.__file__)) + os.sep  # (lib-dynload is inside)


def stretch_claim_refusal(policy: object) -> str | None:
    """None when the engine may take `policy`'s stretch declarations on its word; otherwise
    why not, in one sentence (the replay prints it)."""
    cls = type(policy)
    name = f"{cls.__module__}.{cls.__qualname__}"
    module = sys.modules.get(cls.__module__)
    if (
        not cls.__module__.startswith(PACKAGE + ".")
        or module is None
        or getattr(module, cls.__qualname__, None) is not cls
    ):
        return f"the policy's class {name} is not one of cbaudit's own policy classes"
    for attr, value in getattr(policy, "__dict__", {}).items():
        if _is_function_like(value):
            return f"the policy instance holds a function of its own ({attr})"
    changed = _changed_sources()
    if changed:
        return (
            f"cbaudit/policies: {', '.join(changed)} "
            f"{'differs' if len(changed) == 1 else 'differ'} from the recorded sources on which"
            " the stretch property was verified (verified_sources.json, make verify-policies)"
        )
    classes = [k for k in cls.__mro__ if k.__module__.startswith("cbaudit.")]
    for mod_name, mod in _loaded():
        for attr, value in vars(mod).items():
            if isinstance(value, type):
                if value.__module__ == mod_name and value not in classes:
                    classes.append(value)  # a class of the module (the plan builder...)
                continue
            where = _foreign(value)
            if where is not None:
                return f"{mod_name}.{attr} is rebound to {where}"
    for klass in classes:
        generated = _generated(klass)
        for attr, value in vars(klass).items():
            func = value.__func__ if isinstance(value, staticmethod) else value
            if (
                attr in generated
                and isinstance(func, types.FunctionType)
                and func.__code__.co_filename == "<string>"
            ):
                continue  # made by `dataclasses` or `namedtuple` from the class's fields
            where = _foreign(value)
            if where is not None:
                return f"{klass.__qualname__}.{attr} is rebound to {where}"
    return None


_DATACLASS_METHODS = frozenset(
    (
        "__init__",
        "__repr__",
        "__eq__",
        "__hash__",
        "__setattr__",
        "__delattr__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__getstate__",
        "__setstate__",
    )
)


def _generated(klass: type) -> frozenset[str]:
    """The methods the standard library writes for `klass` from source text (their code says
    `<string>`): a dataclass's, a named tuple's `__new__`."""
    if is_dataclass(klass):
        return _DATACLASS_METHODS
    if issubclass(klass, tuple) and hasattr(klass, "_fields"):
        return frozenset(("__new__",))
    return frozenset()


def no_stretch_note(why: str) -> str:
    """What a replay tells the user when a declaration is not believed (stderr, not the
    report: the report is the same either way)."""
    return f"every iteration ran through the policy and the checks (no stretches): {why}"


def _loaded() -> list[tuple[str, types.ModuleType]]:
    """The modules of this package that are loaded, by name."""
    return sorted(
        (name, mod)
        for name, mod in list(sys.modules.items())
        if (name == PACKAGE or name.startswith(PACKAGE + ".")) and mod is not None
    )


def _source(mod: types.ModuleType) -> Path | None:
    """The source file a loaded module came from (for a compiled extension built from a module
    of this package, the `.py` beside it)."""
    file = getattr(mod, "__file__", None)
    if not file:
        return None
    path = Path(file)
    if path.suffix != ".py":
        path = path.with_name(path.name.split(".", 1)[0] + ".py")
    return path


def _changed_sources() -> list[str]:
    """The loaded modules of this package whose source is not the recorded one (by file name;
    a module with no source or no record counts as changed)."""
    record = _record()
    out = []
    for _, mod in _loaded():
        path = _source(mod)
        if path is None:
            out.append(getattr(mod, "__name__", "?"))
            continue
        rel = path.name if path.parent.resolve() == HERE else str(path)
        want = record.get(rel)
        have = _digest(str(path))
        if want is None or want != have:
            out.append(rel)
        elif (
            str(getattr(mod, "__file__", "")) != str(path) and compiled_source_digest(path) != have
        ):
            # a compiled extension: what runs is what the build record says it was built from
            out.append(f"{rel} (compiled from other sources)")
    return sorted(set(out))


@cache
def _record() -> dict[str, str]:
    """The recorded digests by file name ({} when they cannot be read): `verified_sources.json`,
    or the file `CBAUDIT_VERIFIED_SOURCES` names (`make verify-policies` runs the differential
    tests against a candidate record of the edited sources, and keeps it only if they pass)."""
    path = os.environ.get(RECORD_ENV) or RECORD
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        sources = data["sources"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(sources, dict):
        return {}
    return {str(k): str(v) for k, v in sources.items()}


@cache
def _digest(path: str) -> str | None:
    try:
        return digest(Path(path).read_bytes())
    except OSError:
        return None


def digest(source: bytes) -> str:
    """A source file's digest, line endings normalised (a checkout with CRLF endings holds
    the same code); the same digest as the compiled build's record."""
    return source_digest(source)


def _is_function_like(value: object) -> bool:
    return (
        isinstance(
            value, types.FunctionType | types.MethodType | staticmethod | classmethod | partial
        )
        or type(value).__module__ == "unittest.mock"
    )


def _foreign(value: object) -> str | None:
    """Where a function held by a class or module of this package was defined, when that is
    neither cbaudit's own files nor the standard library (None: it is, or it is no function).
    A mock counts as foreign: the package holds none of its own."""
    if type(value).__module__ == "unittest.mock":
        return f"a {type(value).__name__}"
    func: object = value
    for _ in range(8):  # through the wrappers a class or module may hold
        if isinstance(func, staticmethod | classmethod):
            func = func.__func__
        elif isinstance(func, property):
            func = func.fget
        elif isinstance(func, partial):
            func = func.func
        elif type(func).__module__ == "functools" and hasattr(func, "__wrapped__"):
            func = func.__wrapped__  # (`functools.cache` and its kin)
        else:
            break
    if type(func).__module__ == "unittest.mock":
        return f"a {type(func).__name__}"
    if not isinstance(func, types.FunctionType):
        return None
    if _ours(func.__code__.co_filename):
        return None
    return f"a function defined in {func.__code__.co_filename}"


@cache
def _ours(filename: str) -> bool:
    """Whether code compiled from `filename` is cbaudit's own or the standard library's."""
    file = os.path.realpath(filename)
    return file.startswith(_CBAUDIT) or file.startswith(_STDLIB)


def current_sources() -> dict[str, str]:
    """The digest of every module file of this package, by file name."""
    return {path.name: digest(path.read_bytes()) for path in sorted(HERE.glob("*.py"))}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not (args == [] or (args[:1] == ["--write"] and len(args) <= 2)):
        sys.stderr.write("usage: python -m cbaudit.policies.verified [--write [FILE]]\n")
        return 2
    now = current_sources()
    if args:
        target = Path(args[1]) if len(args) == 2 else RECORD
        body = {
            "about": (
                "Digests of cbaudit/policies/*.py on which the differential tests of the"
                " stretch property ran (make verify-policies); the replay engine believes a"
                " policy's stretch declarations only while the loaded sources match."
            ),
            "sources": now,
        }
        tmp = target.with_name(target.name + ".tmp")
        try:
            tmp.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, target)
        except OSError as err:
            sys.stderr.write(f"cannot write {target}: {err.strerror or err}\n")
            return 2
        sys.stdout.write(f"wrote {target}: {len(now)} sources\n")
        return 0
    record = _record()
    stale = sorted(n for n in set(now) | set(record) if now.get(n) != record.get(n))
    if stale:
        sys.stdout.write(
            f"differ from {RECORD.name}: {', '.join(stale)} (make verify-policies records them"
            " once the differential tests pass)\n"
        )
        return 1
    sys.stdout.write(f"{len(now)} sources match {RECORD.name}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
