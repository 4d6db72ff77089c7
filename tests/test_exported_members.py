"""Each package's ``__all__`` names exactly what it exports (as httpx checks its own)."""

from __future__ import annotations

import importlib

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
