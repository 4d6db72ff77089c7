"""Package facades whose names load on first use (PEP 562 module ``__getattr__``).

A facade that imported every module it re-exports would make ``import package`` cost
what its heaviest module costs (sqlalchemy, docker, codecarbon...), and the CLI's start
pays that for every package it touches. With ``lazy_exports`` each name's module loads
when the name is first read. The table of homes is the one list of what a facade exports
(its ``__all__`` is made from it); the ``TYPE_CHECKING`` imports beside it show the same
names to mypy (``implicit_reexport`` for the lazy facades), and a test checks that the two
agree (``tests/test_exported_members.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import ModuleType

__all__ = ["lazy_exports", "load"]

#: Each lazy facade's exported names.
_EXPORTS: dict[str, frozenset[str]] = {}


class _Facade(ModuleType):
    """A lazy facade's module. Importing a submodule binds it on its package; where the
    facade exports a name alike (``scoring.bootstrap``, home of the function ``bootstrap``),
    the export keeps the name, as an eager ``from scoring.bootstrap import bootstrap``
    would have left it, whichever of the two loads first."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, ModuleType) and name in _EXPORTS.get(self.__name__, ()):
            return
        super().__setattr__(name, value)


def lazy_exports(
    package: str, homes: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """A facade's ``__getattr__``, ``__dir__`` and ``__all__``, from each module's names.

    Args:
        package: the facade's ``__name__``.
        homes: module (absolute) -> the names the facade takes from it.
    """
    home_of = {name: module for module, names in homes.items() for name in names}
    _EXPORTS[package] = frozenset(home_of)
    sys.modules[package].__class__ = _Facade

    def __getattr__(name: str) -> object:
        home = home_of.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(load(home), name)
        vars(sys.modules[package])[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home_of})

    return __getattr__, __dir__, sorted(home_of)


def load(module: str) -> ModuleType:
    """Import ``module`` (absolute) by the interpreter's own import statement, which
    ``python -X importtime`` reports in full (``importlib.import_module`` leaves out the
    module's own line, so a lazily loaded module's time went missing from the startup
    benchmark's sum)."""
    __import__(module)
    return sys.modules[module]
