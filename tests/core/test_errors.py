from __future__ import annotations

import pytest

from evalboard.core.errors import NotFound


@pytest.mark.parametrize(
    ("known", "fix", "message"),
    [
        ([], "", "Phase 'x' not found; known: none yet"),
        (["a", "b"], "", "Phase 'x' not found; known: a, b"),
        (["a"], "Open one", "Phase 'x' not found; known: a. Open one"),
        (range(10), "", "Phase 'x' not found; known: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9"),
        (range(11), "", "Phase 'x' not found; known: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 (and 1 more)"),
    ],
)
def test_not_found_among_lists_the_known_names_up_to_a_cap(
    known: list[object], fix: str, message: str
) -> None:
    found = NotFound.among("Phase 'x'", known, fix=fix)
    assert isinstance(found, NotFound) and found.message == message
