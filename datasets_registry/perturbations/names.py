"""First names by demographic group and gender, read from Faker's locale data.

Faker's person providers carry first-name lists by locale and gender, compiled from
national statistics; we read them as static data (no Faker generator, no Faker randomness)
and pick from them with our own seeded RNG. Groups are locales standing in for
demographic groups, as in name-swap studies: a name is replaced by one from a different
group and the other gender, so that the fairness family tests both at once and stays
coherent with its pronoun swaps ("John said he" -> "Priya said she").

The lists change between Faker releases, so the perturbed bytes do too: Faker is pinned
in pyproject.toml, and ``fingerprint`` (see dataset.py) covers these lists.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from datasets_registry.perturbations.wordlists import GENDER_SWAPS, NOT_NAMES

__all__ = ["GROUPS", "FirstName", "NameBook", "name_book"]

Gender = Literal["female", "male"]

# group -> Faker locales whose first names stand for it. The attribute pairs read are
# first_names_male / first_names_female (or the romanized ones for Japanese).
GROUPS: dict[str, tuple[str, ...]] = {
    "anglo_american": ("en_US",),
    "hispanic": ("es_MX",),
    "south_asian": ("en_IN",),
    "west_african": ("yo_NG", "ig_NG", "ha_NG"),
    "north_african_arab": ("fr_DZ",),
    "east_asian": ("ja_JP",),
}


@dataclass(frozen=True)
class FirstName:
    """A recognised first name: its group and genders (both for unisex names)."""

    group: str
    genders: frozenset[Gender]


@dataclass(frozen=True)
class NameBook:
    """Names to draw from, by group and gender, and the lexicon that recognises names."""

    draw: dict[tuple[str, Gender], tuple[str, ...]]
    lexicon: dict[str, FirstName]

    def lookup(self, word: str) -> FirstName | None:
        """Return what is known of ``word`` as a first name, or None."""
        return self.lexicon.get(word)


def _usable(names: Iterable[str]) -> list[str]:
    # One word of letters, title case, and not a word we know to be mostly not a name.
    return [
        n
        for n in names
        if n.isalpha()
        and len(n) > 1
        and n[0].isupper()
        and n[1:].islower()
        and n.lower() not in NOT_NAMES
        and n.lower() not in GENDER_SWAPS
    ]


def _read(locale: str, gender: Gender) -> list[str]:
    module = importlib.import_module(f"faker.providers.person.{locale}")
    provider = module.Provider
    attr = f"first_romanized_names_{gender}"
    if not hasattr(provider, attr):
        attr = f"first_names_{gender}"
    # Some lists are OrderedDicts of name -> frequency; only the names matter here.
    return _usable(getattr(provider, attr))


@functools.cache
def name_book() -> NameBook:
    """Build the name book once per process (about 10 ms)."""
    draw: dict[tuple[str, Gender], tuple[str, ...]] = {}
    genders_of: dict[str, set[Gender]] = {}
    group_of: dict[str, str] = {}
    genders: tuple[Gender, Gender] = ("female", "male")
    for group, locales in GROUPS.items():
        for gender in genders:
            names = sorted({n for loc in locales for n in _read(loc, gender)})
            draw[(group, gender)] = tuple(names)
            for n in names:
                group_of.setdefault(n, group)
                genders_of.setdefault(n, set()).add(gender)
    lexicon = {n: FirstName(group_of[n], frozenset(genders_of[n])) for n in sorted(group_of)}
    return NameBook(draw=draw, lexicon=lexicon)
