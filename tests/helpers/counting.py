"""Names that count how often they are compared: a complexity check without a clock.

A ranking that looks a model up with ``list.index`` or ``name in a_tuple`` compares the
name with every other one, so the comparisons grow with the square of the board's size;
a dict lookup or a sort grows as ``n`` or ``n log n``. Counting the comparisons of
:class:`CountedName` keys measures that exactly, whatever the machine's load.
"""

from __future__ import annotations

from typing import ClassVar


class CountedName(str):
    """A ``str`` that counts its ``==`` and ``<`` comparisons (in :attr:`compared`).

    Hashing is ``str``'s, so dict lookups by the same object compare nothing.
    """

    compared: ClassVar[int] = 0

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        CountedName.compared += 1
        return str.__eq__(self, other)

    def __lt__(self, other: str) -> bool:
        CountedName.compared += 1
        return str.__lt__(self, other)

    @classmethod
    def reset(cls) -> None:
        cls.compared = 0
