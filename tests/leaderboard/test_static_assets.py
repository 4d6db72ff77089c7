"""The pages' third-party script: plotly.js's basic bundle, kept in static/vendor/, is the
npm package package.json pins, byte for byte (package-lock.json holds its integrity)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.app import PLOTLY_JS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "plotly.js-basic-dist-min"


def test_the_vendored_plotly_is_the_pinned_npm_package() -> None:
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"][PACKAGE]
    locked = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    assert locked[f"node_modules/{PACKAGE}"]["version"] == pinned
    assert locked[f"node_modules/{PACKAGE}"]["integrity"].startswith("sha512-")
    assert f"plotly.js (basic - minified) v{pinned}" in PLOTLY_JS.read_text()[:200]
    installed = ROOT / "node_modules" / PACKAGE / "plotly-basic.min.js"
    if not installed.exists():
        pytest.skip("the npm packages are not installed: run scripts/bootstrap.sh (npm ci)")
    assert installed.read_bytes() == PLOTLY_JS.read_bytes()
