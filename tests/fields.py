"""The attributes of a slotted class, in the interpreted build and in the compiled one.

A class of a module that the wheel compiles (hatch_build.py) is a native class there: it lists
its attributes in `__mypyc_attrs__` and has no `__slots__`. Tests that compare objects field
for field read the names from here, so they run against both builds (`make pytest-compiled`).
"""

from __future__ import annotations


def slot_names(cls: type) -> tuple[str, ...]:
    """`cls.__slots__`, or a compiled class's `__mypyc_attrs__`."""
    names = getattr(cls, "__slots__", None)
    if names is None:
        names = getattr(cls, "__mypyc_attrs__", None)
    if names is None:
        raise TypeError(f"{cls.__qualname__} declares neither __slots__ nor __mypyc_attrs__")
    return (names,) if isinstance(names, str) else tuple(names)
