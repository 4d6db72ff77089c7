"""``leaderboard.loop.__all__`` names exactly its public API (as tests/test_exported_members)."""

from __future__ import annotations

import leaderboard.loop as loop


def test_all_names_exist_and_are_public() -> None:
    exported = loop.__all__
    assert sorted(exported) == sorted(set(exported))
    for member in exported:
        assert hasattr(loop, member), f"leaderboard.loop.__all__ names missing {member!r}"
        assert not member.startswith("_")
