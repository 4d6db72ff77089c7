"""The seam every perturbation fits: one method, registered by name.

A perturbation takes one text and returns it changed, or unchanged when it finds nothing
to change. It draws every random choice from the ``rng`` it is given, so that the engine
(``dataset.py``) decides the seed and the output does not depend on example order.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from evalboard.core.errors import UsageError

__all__ = [
    "WORD",
    "ExampleScope",
    "Perturbation",
    "get_perturbation",
    "known_perturbations",
    "match_case",
    "perturbation",
]

# A word: letters (any script) with inner apostrophes, so that "don't" and "she's" are one
# token; digits and underscores are not letters.
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


@dataclass(frozen=True)
class ExampleScope:
    """What a perturbation may know about the example its text comes from.

    Attributes:
        seed: The example's seed, the same for every text field of one example, so that a
            choice that must agree across fields (the new name for "John" in a premise and
            its hypothesis) can be derived from it.
        keep: Words that must stay as they are, such as names that also occur in a field
            the caller did not ask to perturb (a QA context).
        texts: Every text field of the example, for decisions that must agree across
            fields (a word left alone as part of "Peter Pan" in one place stays everywhere).
    """

    seed: int = 0
    keep: frozenset[str] = field(default_factory=frozenset)
    texts: tuple[str, ...] = ()


class Perturbation(Protocol):
    """Changes one text; returns it unchanged when there is nothing to change."""

    def __call__(self, text: str, rng: random.Random, scope: ExampleScope) -> str: ...


_REGISTRY: dict[str, Perturbation] = {}

P = TypeVar("P", bound=Perturbation)


def perturbation(name: str) -> Callable[[P], P]:
    """Register a perturbation under ``name``.

    Args:
        name: The name used in the ``perturbation`` field of perturbed examples.

    Returns:
        A decorator that registers the perturbation and returns it unchanged.
    """

    def register(func: P) -> P:
        if name in _REGISTRY:
            raise ValueError(f"perturbation {name!r} is already registered")
        _REGISTRY[name] = func
        return func

    return register


def known_perturbations() -> tuple[str, ...]:
    """Return the names of every registered perturbation, sorted."""
    return tuple(sorted(_REGISTRY))


def get_perturbation(name: str) -> Perturbation:
    """Return the perturbation registered under ``name``.

    Raises:
        UsageError: No perturbation has that name; the message lists the known ones.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(known_perturbations())
        raise UsageError(f"Unknown perturbation {name!r}; known: {known}") from None


def match_case(template: str, word: str) -> str:
    """Spell ``word`` in the case pattern of ``template`` (lower, Title or UPPER).

    >>> match_case("She", "he"), match_case("HIM", "her"), match_case("mr", "Ms")
    ('He', 'HER', 'ms')
    """
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word.lower()
