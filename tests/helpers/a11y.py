"""The accessibility check of the browser tests: axe-core, run in the page under test.

axe-core comes from the npm registry, pinned in package.json / package-lock.json and
installed by ``scripts/bootstrap.sh`` (``npm ci``) into ``node_modules/``. It is injected
with ``page.evaluate``, which the pages' Content-Security-Policy (``script-src 'self'``)
does not block, so the page is checked as a visitor gets it, policy included.

A serious or critical violation fails the test with a readable list: the rule, its
impact, what it asks for, and where on the page (at most a few elements per rule).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: The impacts that fail a test; axe's "minor" and "moderate" findings are reported only.
BLOCKING = ("serious", "critical")
#: The elements named per rule in a failure message.
SHOWN_NODES = 5

_RUN = """
async () => {
  const result = await window.axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help, url: v.helpUrl,
    nodes: v.nodes.map(n => ({
      target: n.target.join(" "),
      summary: (n.failureSummary || "").split("\\n").slice(1).join(" ").trim(),
    })),
  }));
}
"""


def _axe_source() -> str:
    if not AXE_JS.exists():
        pytest.skip("axe-core is not installed: run scripts/bootstrap.sh (npm ci)")
    return AXE_JS.read_text(encoding="utf-8")


def axe_violations(page: Any, *, impacts: tuple[str, ...] = BLOCKING) -> list[dict[str, Any]]:
    """axe-core's violations on ``page`` as it is now, of the given impacts."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_source())
    found: list[dict[str, Any]] = page.evaluate(_RUN)
    return [v for v in found if v["impact"] in impacts]


def describe(violations: list[dict[str, Any]]) -> str:
    """One paragraph per violated rule: what it asks and the first elements that fail it."""
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']} - {v['url']}")
        for node in v["nodes"][:SHOWN_NODES]:
            lines.append(f"    {node['target']}: {node['summary']}")
        if len(v["nodes"]) > SHOWN_NODES:
            lines.append(f"    ... and {len(v['nodes']) - SHOWN_NODES} more")
    return "\n".join(lines)


def assert_accessible(page: Any, where: str = "") -> None:
    """Fail on any serious or critical axe-core violation on ``page``."""
    violations = axe_violations(page)
    if violations:
        place = where or page.url
        pytest.fail(f"axe-core finds on {place}:\n{describe(violations)}", pytrace=False)
