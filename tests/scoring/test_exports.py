"""scoring's public surface and its purity."""

from __future__ import annotations

import subprocess
import sys

import scoring


def test_all_names_exist() -> None:
    for name in scoring.__all__:
        assert hasattr(scoring, name), name
    assert sorted(scoring.__all__) == sorted(set(scoring.__all__))


def test_importing_scoring_loads_no_database_web_or_sandbox() -> None:
    code = (
        "import sys, scoring\n"
        "heavy = {'sqlalchemy', 'docker', 'fsspec', 'fastapi', 'httpx', 'pydantic', 'pandas'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
