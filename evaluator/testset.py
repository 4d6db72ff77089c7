"""A dataset as the evaluator sees it: canonical examples plus what the leaderboard needs.

The evaluator is handed these, whether they come from the registry (``from_table``) or
from files on the command line (``from_jsonl``). Examples keep their gold fields here, on
the host; :func:`model_inputs` is the only way examples reach a sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from datasets_registry import canonical_jsonl, sha256_of
from evalboard.core.errors import InvalidDataset

if TYPE_CHECKING:  # the registry's path only: evaluating files needs no database layer
    from evalboard.core.context import Context
    from evalboard.core.tables import Dataset

__all__ = ["PERTURBATIONS", "TestSet", "in_evaluation_order", "model_inputs"]

PERTURBATIONS = ("robustness", "fairness")


def _loads(line: bytes) -> Any:
    """One JSON line: orjson (3x faster), the standard library for what orjson refuses and
    ``json`` reads (NaN, integers beyond 64 bits), so a file reads as ``json`` would."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


@dataclass(frozen=True)
class TestSet:
    """One dataset to evaluate on.

    Attributes:
        name: unique within the task (``r1-test``, ``robustness-r1-test``).
        examples: canonical rows: ``uid``, input fields, gold ``label``/``answers``;
            perturbed rows also ``input_id`` (the original's uid).
        sha256: of the canonical JSONL.
        perturbation: ``robustness`` or ``fairness`` for a derived copy, else None.
        derived_from: the original dataset's name, for a derived copy.
    """

    __test__ = False  # not a pytest test class, despite the name

    name: str
    examples: list[dict[str, Any]]
    sha256: str
    round: int = 0
    access: str = "scoring"
    weight: float = 1.0
    perturbation: str | None = None
    derived_from: str | None = None

    def __post_init__(self) -> None:
        if self.perturbation is not None and self.perturbation not in PERTURBATIONS:
            raise InvalidDataset(
                f"Dataset {self.name!r}: perturbation {self.perturbation!r} is unknown; "
                f"known: {', '.join(PERTURBATIONS)}"
            )
        if self.perturbation and not self.derived_from:
            raise InvalidDataset(f"Dataset {self.name!r} is perturbed but names no original")

    @classmethod
    def from_table(
        cls, ctx: Context, dataset: Dataset, *, derived_from: str | None = None
    ) -> TestSet:
        """Read a registered dataset through the registry (``derived_from``: the original's
        name, for a perturbed copy)."""
        from datasets_registry import read_examples

        return cls(
            name=dataset.name,
            examples=read_examples(ctx, dataset),
            sha256=dataset.sha256,
            round=dataset.round,
            access=dataset.access,
            weight=dataset.weight,
            perturbation=dataset.perturbation,
            derived_from=derived_from,
        )

    @classmethod
    def from_jsonl(cls, path: Path, *, name: str | None = None, weight: float = 1.0) -> TestSet:
        """Read a canonical JSONL file; ``robustness-X``/``fairness-X`` names derive from X.

        The sha256 is the registry's (of the canonical form), so the same examples have
        the same address whether evaluated from a file or from the registry.
        """
        name = name or path.stem
        try:
            data = path.read_bytes()
        except OSError as exc:  # missing, a directory, not readable: the user's to fix
            raise InvalidDataset(f"{path} cannot be read: {exc.strerror or exc}") from None
        examples: list[dict[str, Any]] = []
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = _loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidDataset(f"{path.name}, line {number}: not JSON ({exc})") from None
            if not isinstance(row, dict) or "uid" not in row:
                raise InvalidDataset(
                    f"{path.name}, line {number}: a JSON object with a uid "
                    "is expected (canonical JSONL)"
                )
            examples.append(row)
        perturbation, derived_from = None, None
        for kind in PERTURBATIONS:
            if name.startswith(f"{kind}-"):
                perturbation, derived_from = kind, name.removeprefix(f"{kind}-")
        return cls(
            name=name,
            examples=examples,
            sha256=sha256_of(canonical_jsonl(examples)),
            weight=weight,
            perturbation=perturbation,
            derived_from=derived_from,
        )

    @property
    def scored(self) -> bool:
        """Counts for the leaderboard (``standard`` sets are shown, not scored)."""
        return self.access != "standard"


def model_inputs(
    examples: Iterable[dict[str, Any]], input_names: Sequence[str]
) -> list[dict[str, Any]]:
    """Strip everything but ``uid`` and the task's inputs: gold never enters a sandbox."""
    keep = ("uid", *input_names)
    return [{name: example[name] for name in keep if name in example} for example in examples]


def in_evaluation_order(test_sets: Iterable[TestSet]) -> list[TestSet]:
    """Originals before their perturbed copies, so copies reuse the originals' predictions."""
    items = list(test_sets)
    names = [item.name for item in items]
    if len(set(names)) != len(names):
        raise InvalidDataset(f"Dataset names repeat: {sorted(names)}")
    return sorted(items, key=lambda item: item.perturbation is not None)
