"""Robustness perturbations: the slips people make when they type.

Typos and keyboard slips come from nlpaug's ``RandomCharAug`` and ``KeyboardAug``, the
engines AugLy's ``simulate_typos`` wraps (Dynabench used AugLy), called one word at a time;
misspellings come from AugLy's misspelling dictionary, which ships inside the package.
Case, contractions, punctuation and whitespace are small hand-written rules, because
AugLy's versions of those are adversarial rather than natural (a punctuation mark between
every letter, the case of every n-th word) or one-way (contractions only).

nlpaug draws from the global ``random`` and ``numpy.random`` states; each call here seeds
both from the perturbation's own RNG right before it. The engine (dataset.py) saves and
restores the global states around a whole run and holds a lock while it does.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from datasets_registry.perturbations.transform import WORD, ExampleScope, match_case, perturbation
from datasets_registry.perturbations.wordlists import CONTRACTIONS

__all__ = [
    "change_case",
    "change_contractions",
    "change_punctuation",
    "change_whitespace",
    "simulate_keyboard_slips",
    "simulate_misspellings",
    "simulate_typos",
]

_MIN_TYPO_LETTERS = 4  # shorter words turn into other words ("the" -> "tie") too often
_ATTEMPTS = 5


@functools.cache
def _char_augmenters() -> dict[str, Any]:
    """nlpaug's typo engines, letters only, one character in one word per call."""
    from nlpaug.augmenter.char import KeyboardAug, RandomCharAug
    from nlpaug.util import Action

    common: dict[str, Any] = {
        "aug_char_min": 1,
        "aug_char_max": 1,
        "aug_word_min": 1,
        "aug_word_max": 1,
        "aug_word_p": 1.0,
        "min_char": _MIN_TYPO_LETTERS,
        "include_numeric": False,
        "include_upper_case": False,
    }
    augmenters: dict[str, Any] = {
        action: RandomCharAug(action=action, spec_char="", **common)
        for action in (Action.SWAP, Action.DELETE, Action.INSERT, Action.SUBSTITUTE)
    }
    augmenters["keyboard"] = KeyboardAug(include_special_char=False, **common)
    return augmenters


@functools.cache
def misspellings() -> dict[str, tuple[str, ...]]:
    """AugLy's dictionary of common misspellings (word -> misspelt forms), read once."""
    from augly.utils import MISSPELLING_DICTIONARY_PATH

    with open(MISSPELLING_DICTIONARY_PATH, encoding="utf-8") as f:
        raw: dict[str, list[str]] = json.load(f)
    return {word: tuple(forms) for word, forms in raw.items()}


def _seeded_call(rng: random.Random, augmenter: Any, word: str) -> str:
    seed = rng.getrandbits(32)
    random.seed(seed)
    np.random.seed(seed)
    # A list input takes nlpaug's single-threaded path (a str starts a thread pool).
    result = augmenter.augment([word])
    return str(result[0]) if result else word


def _replace_words(
    text: str, rng: random.Random, candidates: list[re.Match[str]], edit: Callable[[str], str]
) -> str:
    """Edit one word (two in longer texts) among ``candidates``, in place."""
    if not candidates:
        return text
    wanted = 2 if len(candidates) >= 8 and rng.random() < 0.5 else 1
    order = rng.sample(candidates, k=min(len(candidates), wanted + _ATTEMPTS))
    edits: dict[int, tuple[int, str]] = {}
    for m in order:
        new = edit(m.group(0))
        if new and new != m.group(0) and WORD.fullmatch(new):
            edits[m.start()] = (m.end(), new)
            if len(edits) == wanted:
                break
    for start in sorted(edits, reverse=True):
        end, new = edits[start]
        text = text[:start] + new + text[end:]
    return text


def _typo_candidates(text: str) -> list[re.Match[str]]:
    return [
        m
        for m in WORD.finditer(text)
        if len(m.group(0)) >= _MIN_TYPO_LETTERS and m.group(0).isascii() and m.group(0).isalpha()
    ]


@perturbation("typos")
def simulate_typos(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Swap, drop, add or replace one letter in a word or two ("great" -> "graet")."""
    augmenters = _char_augmenters()
    actions = sorted(k for k in augmenters if k != "keyboard")

    def edit(word: str) -> str:
        return match_case(word, _seeded_call(rng, augmenters[rng.choice(actions)], word))

    return _replace_words(text, rng, _typo_candidates(text), edit)


@perturbation("keyboard")
def simulate_keyboard_slips(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Hit a neighbouring key for one letter in a word or two ("food" -> "fopd")."""
    keyboard = _char_augmenters()["keyboard"]

    def edit(word: str) -> str:
        return match_case(word, _seeded_call(rng, keyboard, word))

    return _replace_words(text, rng, _typo_candidates(text), edit)


@perturbation("misspelling")
def simulate_misspellings(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Replace a word or two by a common misspelling ("definitely" -> "definately")."""
    book = misspellings()

    def forms(word: str) -> tuple[str, ...]:
        return book.get(word) or book.get(word.lower()) or ()

    candidates = [m for m in WORD.finditer(text) if forms(m.group(0))]

    def edit(word: str) -> str:
        return match_case(word, rng.choice(forms(word)))

    return _replace_words(text, rng, candidates, edit)


@perturbation("case")
def change_case(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Lower-case the text, its first letter, or shout one word."""
    options: list[Callable[[], str]] = []
    if text.lower() != text:
        options.append(text.lower)
    first = WORD.search(text)
    if first and first.group(0)[:1].isupper() and first.group(0) != "I":
        if not first.group(0).isupper() or len(first.group(0)) == 1:
            options.append(
                lambda: (
                    text[: first.start()] + text[first.start()].lower() + text[first.start() + 1 :]
                )
            )
    quiet = [m for m in WORD.finditer(text) if len(m.group(0)) >= 3 and m.group(0).islower()]
    if quiet:

        def shout() -> str:
            m = rng.choice(quiet)
            return text[: m.start()] + m.group(0).upper() + text[m.end() :]

        options.append(shout)
    return rng.choice(options)() if options else text


_EXPANDED = {expanded: contracted for expanded, contracted in CONTRACTIONS}
_CONTRACTED: dict[str, str] = {}
for _expanded, _contracted in CONTRACTIONS:
    _CONTRACTED.setdefault(_contracted, _expanded)

_EXPANDED_RE = re.compile(
    r"\b(" + "|".join(re.escape(e) for e in _EXPANDED) + r")\b",
    re.IGNORECASE,
)
_CONTRACTED_RE = re.compile(
    r"\b(" + "|".join(re.escape(c).replace("'", "['’]") for c in _CONTRACTED) + r")\b",
    re.IGNORECASE,
)
_WORD_FOLLOWS = re.compile(r" +[^\W\d_]")
_HAS_AFTER = re.compile(r"\s+(been|got|gotten|had)\b", re.IGNORECASE)


def _case_like(template: str, phrase: str) -> str:
    if len(template) > 1 and template.replace("'", "").replace("’", "").isupper():
        return phrase.upper()
    if template[:1].isupper():
        return phrase[:1].upper() + phrase[1:]
    return phrase


def _contract(text: str) -> str:
    apostrophe = "’" if "’" in text else "'"

    def sub(m: re.Match[str]) -> str:
        expanded = m.group(1)
        contracted = _EXPANDED[expanded.lower()]
        # Only "n't" may end a clause: "what it is." cannot become "what it's."
        if not contracted.endswith("n't") and not _WORD_FOLLOWS.match(text, m.end()):
            return expanded
        return _case_like(expanded, contracted).replace("'", apostrophe)

    return _EXPANDED_RE.sub(sub, text)


def _expand(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        found = m.group(1)
        key = found.lower().replace("’", "'")
        expanded = _CONTRACTED[key]
        follows_has = _HAS_AFTER.match(text, m.end())
        if follows_has and key.endswith("'s"):
            expanded = expanded.rsplit(" ", 1)[0] + " has"
        elif follows_has and key.endswith("'d"):
            expanded = expanded.rsplit(" ", 1)[0] + " had"
        return _case_like(found, expanded)

    return _CONTRACTED_RE.sub(sub, text)


@perturbation("contraction")
def change_contractions(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Contract ("do not" -> "don't") or expand ("it's" -> "it is") where it reads right."""
    outcomes = {out for out in (_contract(text), _expand(text)) if out != text}
    return rng.choice(sorted(outcomes)) if outcomes else text


_FINAL_MARK = re.compile(r"[.!?]+(?=[\"'”’)\s]*$)")
_COMMA = re.compile(r",(?=\s)")
_INNER_APOSTROPHE = re.compile(r"(?<=[^\W\d_])['’](?=[^\W\d_])")


@perturbation("punctuation")
def change_punctuation(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Drop or add the final stop, drop a comma, or drop an apostrophe ("don't" -> "dont")."""
    options: list[Callable[[], str]] = []
    final = _FINAL_MARK.search(text)
    if final:
        options.append(lambda: text[: final.start()] + text[final.end() :])
        if final.group(0) == ".":
            options.append(lambda: text[: final.end()] + ".." + text[final.end() :])
    elif text.rstrip() and text.rstrip()[-1].isalpha():
        stripped = text.rstrip()
        options.append(lambda: stripped + "." + text[len(stripped) :])
    for pattern in (_COMMA, _INNER_APOSTROPHE):
        found = list(pattern.finditer(text))
        if found:

            def drop(found: list[re.Match[str]] = found) -> str:
                m = rng.choice(found)
                return text[: m.start()] + text[m.end() :]

            options.append(drop)
    return rng.choice(options)() if options else text


_BETWEEN_WORDS = re.compile(r"(?<=\w) (?=\w)")
_AFTER_COMMA = re.compile(r"(?<=,) (?=\w)")
_BEFORE_MARK = re.compile(r"(?<=\w)(?=[,.!?])")


@perturbation("whitespace")
def change_whitespace(text: str, rng: random.Random, scope: ExampleScope) -> str:
    """Double a space, drop the space after a comma, or add one before a mark."""
    options: list[tuple[re.Pattern[str], str]] = []
    for pattern, replacement in (
        (_BETWEEN_WORDS, "  "),
        (_AFTER_COMMA, ""),
        (_BEFORE_MARK, " "),
    ):
        if pattern.search(text):
            options.append((pattern, replacement))
    if not options:
        return text
    pattern, replacement = rng.choice(options)
    m = rng.choice(list(pattern.finditer(text)))
    return text[: m.start()] + replacement + text[m.end() :]
