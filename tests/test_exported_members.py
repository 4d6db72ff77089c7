"""Each package's ``__all__`` names exactly what it exports (as httpx checks its own)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

PACKAGES = [
    "evalboard.core",
    "evalboard.cli",
    "evalboard.demo",
    "datasets_registry",
    "submission_sandbox",
    "evaluator",
    "scoring",
    "leaderboard",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_exist_and_are_public(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(set(exported)) == len(exported), "repeated names in __all__"
    assert sorted(exported) == sorted(set(exported))
    for member in exported:
        assert hasattr(module, member), f"{name}.__all__ names missing {member!r}"
        assert not member.startswith("_") or member == "__version__"


#: The facades whose names load on first use (evalboard.core.lazy).
LAZY = ["evalboard.core", "evalboard.cli", "datasets_registry", "evaluator", "scoring"]


def _type_checking_imports(module: ModuleType) -> set[tuple[str, str]]:
    """(home module, name) of each import under the facade's ``if TYPE_CHECKING:``."""
    tree = ast.parse(Path(str(module.__file__)).read_text())
    guarded = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    return {
        (statement.module or "", alias.name)
        for block in guarded
        for statement in block.body
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }


@pytest.mark.parametrize("name", LAZY)
def test_lazy_facade_shows_mypy_what_it_exports(name: str) -> None:
    # __all__ comes from the homes table; the TYPE_CHECKING imports are what mypy reads.
    module = importlib.import_module(name)
    imports = _type_checking_imports(module)
    assert sorted(imported for _, imported in imports) == module.__all__
    for home, member in imports:
        assert getattr(module, member) is getattr(importlib.import_module(home), member), (
            f"{name}.{member} does not come from {home}, which the TYPE_CHECKING import names"
        )


_SUBMODULE_FIRST = """
import sys
import scoring
board_loaded = "scoring.bootstrap" in sys.modules
import scoring.shift  # imports the module scoring.bootstrap, home of the function bootstrap
from scoring import bootstrap
print(board_loaded, callable(bootstrap), scoring.bootstrap is bootstrap)
"""


def test_a_lazy_export_keeps_its_name_when_its_module_loads_first() -> None:
    # A lazy facade loads a name's module when the name is read; a submodule imported
    # before then (scoring.shift imports scoring.bootstrap) leaves the export its name.
    done = subprocess.run(
        [sys.executable, "-c", _SUBMODULE_FIRST], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True", "True"]
