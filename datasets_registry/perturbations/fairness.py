"""Fairness perturbations: gendered words and first names swapped.

``gender`` swaps pronouns and gendered nouns and titles both ways (he <-> she,
king <-> queen, Mr <-> Ms), choosing between "his" and "him" for "her" from the next word.
``names`` replaces first names with names from another demographic group and the other
gender. Places, organisations and surnames are left alone: only a capitalised word found
in the first-name lexicon is a candidate, and the rules below skip it where it is a
surname ("Mr. Taylor", "John Taylor"), part of a place or business ("Madison Avenue",
"Santa Monica", "Wendy's"), or a common word or place that also serves as a name.
"""

from __future__ import annotations

import functools
import random
import re
import zlib
from collections.abc import Iterable, Iterator

from datasets_registry.perturbations.names import FirstName, Gender, name_book
from datasets_registry.perturbations.transform import WORD, ExampleScope, match_case, perturbation
from datasets_registry.perturbations.wordlists import (
    ADDRESS_TERMS,
    ENTITY_FOLLOWERS,
    ENTITY_OPENERS,
    FUNCTION_WORDS,
    GENDER_SWAPS,
    HONORIFICS,
    NAME_LEADERS,
    POSSESSIVE_BRANDS,
    ROYAL_TITLES,
)

__all__ = ["swap_gendered_words", "swap_first_names"]

_PRONOUNS_NEEDING_CONTEXT = frozenset({"her", "his"})
_APOSTROPHE = re.compile(r"['’]")
_SENTENCE_BREAK = re.compile(r"[.!?:;\"“”(\[\n]")


def _split_clitic(token: str) -> tuple[str, str]:
    """Split "she's" into ("she", "'s"); "ma'am" stays whole."""
    if token.lower().replace("’", "'") == "ma'am":
        return token, ""
    m = _APOSTROPHE.search(token)
    return (token[: m.start()], token[m.start() :]) if m else (token, "")


def _next_word(text: str, end: int) -> str | None:
    """Return the word right after position ``end`` ("" for a number), or None."""
    rest = text[end:].lstrip(" \t")
    if not rest:
        return None
    if rest[0].isdigit():
        return ""
    m = WORD.match(rest)
    return m.group(0).lower() if m else None


def _her_or_his(base: str, text: str, end: int) -> str:
    """The counterpart of "her" or "his", read from the word after it.

    "her" is possessive before a noun or adjective ("her car" -> "his car") and an object
    otherwise ("told her that" -> "told him that"); "his" before a noun stays a determiner
    ("his car" -> "her car") and otherwise stands alone ("it is his." -> "it is hers.").
    """
    following = _next_word(text, end)
    noun_follows = following is not None and _split_clitic(following)[0] not in FUNCTION_WORDS
    if base.lower() == "her":
        return "his" if noun_follows else "him"
    return "her" if noun_follows else "hers"


@perturbation("gender")
def swap_gendered_words(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Swap gendered pronouns, nouns and titles, keeping their case.

    >>> swap_gendered_words("She gave her keys to her brother, not him.",
    ...                     random.Random(0), ExampleScope())
    'He gave his keys to his sister, not her.'
    >>> swap_gendered_words("I told her that Mrs. Lee's son is his.",
    ...                     random.Random(0), ExampleScope())
    "I told him that Mr. Lee's daughter is hers."
    """
    words = list(WORD.finditer(text))
    edits: list[tuple[re.Match[str], str]] = []
    for i, m in enumerate(words):
        base, clitic = _split_clitic(m.group(0))
        low = base.lower()
        nxt = _split_clitic(words[i + 1].group(0))[0] if i + 1 < len(words) else ""
        title_follows = _is_title(nxt) and not text[m.end() : words[i + 1].start()].strip(" .")
        if low in _PRONOUNS_NEEDING_CONTEXT:
            new = _her_or_his(low, text, m.end())
        elif low in ROYAL_TITLES and title_follows and nxt.lower() not in ENTITY_FOLLOWERS:
            new = GENDER_SWAPS[low]  # "King Charles" -> "Queen <a woman's name>"
        elif low in GENDER_SWAPS and _is_title(base) and low not in ADDRESS_TERMS:
            # Mid-sentence "King" or "Brothers" is most likely part of a name.
            starts_sentence = i == 0 or bool(
                _SENTENCE_BREAK.search(text[words[i - 1].end() : m.start()])
            )
            new = GENDER_SWAPS[low] if starts_sentence and not title_follows else low
        elif low == "sir" and title_follows:
            new = "dame"  # "Sir Elton John" -> "Dame Elton John"
        elif low == "miss":
            # "Miss Smith" is a title; "miss" alone is a verb.
            new = "mr" if base == "Miss" and title_follows else low
        else:
            new = GENDER_SWAPS.get(low, low)
        if new != low:
            edits.append((m, match_case(base, new) + clitic))
    return _replaced(text, edits)


def _replaced(text: str, edits: Iterable[tuple[re.Match[str], str]]) -> str:
    """``text`` with each matched word (in order) replaced; itself when there is none."""
    out: list[str] = []
    last = 0
    for m, new in edits:
        out += [text[last : m.start()], new]
        last = m.end()
    return "".join(out) + text[last:] if out else text


def _is_title(word: str) -> bool:
    return len(word) > 1 and word[0].isupper() and word[1:].islower()


def _pick(book_name: FirstName, original: str, scope: ExampleScope) -> str:
    """Choose the replacement for ``original``: the same in every field of one example."""
    book = name_book()
    pick = random.Random(zlib.crc32(f"{scope.seed}:{original}".encode()))
    groups = sorted({g for g, _ in book.draw} - {book_name.group})
    group = pick.choice(groups)
    genders: list[Gender] = ["female", "male"]
    if len(book_name.genders) == 1:
        gender: Gender = "male" if "female" in book_name.genders else "female"
    else:
        gender = pick.choice(genders)
    return pick.choice(book.draw[(group, gender)])


def _names_something_else(
    text: str, words: list[re.Match[str]], i: int, clitic: str, after_name: bool
) -> bool:
    """Whether the first name at ``words[i]`` is a surname, a place or a business here."""
    base = _split_clitic(words[i].group(0))[0]
    before = words[i - 1] if i else None
    after = words[i + 1] if i + 1 < len(words) else None
    gap_before = text[before.end() : words[i].start()] if before else ""
    gap_after = text[words[i].end() : after.start()] if after else ""
    prev = _split_clitic(before.group(0))[0] if before else ""
    nxt = _split_clitic(after.group(0))[0] if after else ""
    adjacent_before = before is not None and not gap_before.strip()
    adjacent_after = after is not None and not gap_after.strip()
    if prev.lower() in HONORIFICS and gap_before.strip() in ("", "."):
        # "Mr. Taylor" is a surname; "Dr. John Smith" starts with a first name.
        return not (adjacent_after and _is_title(nxt))
    if prev.lower() in ENTITY_OPENERS and gap_before.strip() in ("", "."):
        return True  # "Santa Monica", "St. Helena"
    if adjacent_before and _is_title(prev):
        if after_name:
            return True  # a surname: "John Taylor"
        # A capitalised word before the name, where the sentence did not make it so,
        # is part of a longer name: "Trader Joe", "Red Robin" (but "Hi John").
        prev_starts = i == 1 or bool(
            _SENTENCE_BREAK.search(text[words[i - 2].end() : words[i - 1].start()])
        )
        if (
            not prev_starts
            and prev.lower() not in NAME_LEADERS
            and prev.lower() not in GENDER_SWAPS
        ):
            return True
    if adjacent_after and _is_title(nxt) and nxt.lower() in ENTITY_FOLLOWERS:
        return True  # "Madison Avenue", "Howard Air"
    return clitic.replace("’", "'").lower() == "'s" and base.lower() in POSSESSIVE_BRANDS


def _name_candidates(
    text: str,
) -> Iterator[tuple[re.Match[str], str, str, FirstName, bool]]:
    """Yield each word found in the name lexicon, and whether it is something else here."""
    book = name_book()
    words = list(WORD.finditer(text))
    previous_was_name = False
    for i, m in enumerate(words):
        base, clitic = _split_clitic(m.group(0))
        # Only a bare or possessive word can be a name: "Don't" is not "Don".
        possessive = clitic.replace("’", "'") in ("", "'s")
        known = book.lookup(base) if possessive and _is_title(base) else None
        if known is not None:
            yield (
                m,
                base,
                clitic,
                known,
                _names_something_else(text, words, i, clitic, previous_was_name),
            )
        previous_was_name = known is not None


@functools.lru_cache(maxsize=256)
def _left_alone(texts: tuple[str, ...]) -> frozenset[str]:
    """Names that some place in the example shows to be part of something else.

    Such a word stays everywhere in the example: in "Curious George" it is a title, so
    "George" elsewhere in the same example is most likely that title too.
    """
    return frozenset(
        base for text in texts for _, base, _, _, elsewise in _name_candidates(text) if elsewise
    )


@perturbation("names")
def swap_first_names(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Replace first names by names of another demographic group and the other gender.

    The choice depends on the example's seed and the name only, so a name gets the same
    replacement in every field and every place of one example.

    >>> swap_first_names("John met Mary in Chicago at Wendy's on Madison Avenue.",
    ...                  random.Random(0), ExampleScope(seed=1))
    "Vasana met Jeet in Chicago at Wendy's on Madison Avenue."
    """
    keep = scope.keep | _left_alone(scope.texts or (text,))
    edits = [
        (m, _pick(known, base, scope) + clitic)
        for m, base, clitic, known, elsewise in _name_candidates(text)
        if not elsewise and base not in keep
    ]
    return _replaced(text, edits)
