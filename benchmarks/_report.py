"""What every benchmark's results file carries: where it was measured, written one way."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["machine", "save"]


def machine() -> dict[str, Any]:
    """The machine and versions a figure was measured with (spread out into a report)."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }


def save(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` as indented JSON at ``path`` (its folder made if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
