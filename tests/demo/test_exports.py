"""``evalboard.demo`` exports what its ``__all__`` says, and nothing private."""

from __future__ import annotations

import evalboard.demo


def test_all_names_exist_and_are_public() -> None:
    exported = evalboard.demo.__all__
    assert len(set(exported)) == len(exported)
    for member in exported:
        assert hasattr(evalboard.demo, member), member
        assert not member.startswith("_")
