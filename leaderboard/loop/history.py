"""One case's history in one lineage, and what the release gate reads from it.

A case is one example of an original dataset. Each release of a lineage that was scored
on the case passed it or not (the task's per-example correctness rule,
:func:`leaderboard.loop.answers.is_right`). From those verdicts, in release order: which
release first passed it, which later releases lost it (failed it right after a release
that passed), and so whether a new release regresses on it: it does when it fails a case
that any earlier release passed, not only the latest one.

Pure: the server builds histories from stored predictions (:mod:`leaderboard.loop.cases`), the
offline gate from a suite file (:mod:`leaderboard.loop.suite_file`); both read them here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CaseHistory", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """A release's verdict on the case: its submission id, and whether it passed."""

    release: int
    passed: bool


@dataclass(frozen=True)
class CaseHistory:
    """The verdicts of a lineage's scored releases on one case, oldest release first."""

    lineage: int
    verdicts: tuple[Verdict, ...]

    @property
    def passed_by(self) -> list[int]:
        """Every release that passed the case."""
        return [v.release for v in self.verdicts if v.passed]

    @property
    def first_passed(self) -> int | None:
        """The first release that passed the case (None: none has)."""
        return next((v.release for v in self.verdicts if v.passed), None)

    @property
    def lost_by(self) -> list[int]:
        """Each release that failed the case right after a scored release that passed it."""
        return [
            new.release
            for old, new in zip(self.verdicts, self.verdicts[1:], strict=False)
            if old.passed and not new.passed
        ]

    @property
    def passing(self) -> bool | None:
        """The latest scored release's verdict (None: no release was scored on it)."""
        return self.verdicts[-1].passed if self.verdicts else None
