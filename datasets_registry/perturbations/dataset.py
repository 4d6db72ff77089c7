"""Perturbed copies of a dataset: which perturbations each family applies, and the seeds.

Every example is perturbed on its own, with an RNG seeded from a CRC32 of the seed, the
family, the example's uid and its texts, so the output does not depend on the order of
the examples, the process, or the machine (given the pinned versions of AugLy, nlpaug
and Faker; ``fingerprint`` names them).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import threading
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from typing import Any

import numpy as np

from datasets_registry.perturbations import fairness, robustness, wordlists
from datasets_registry.perturbations.names import name_book
from datasets_registry.perturbations.transform import WORD, ExampleScope, get_perturbation
from evalboard.core.errors import InvalidDataset, UsageError

__all__ = [
    "FAMILY_PERTURBATIONS",
    "PERTURBATION_FAMILIES",
    "fingerprint",
    "perturb_dataset",
    "perturb_example",
]

PERTURBATION_FAMILIES: tuple[str, ...] = ("robustness", "fairness")

FAMILY_PERTURBATIONS: dict[str, tuple[str, ...]] = {
    # A mild mix: one or two of these, in a seeded order, skipping any that change nothing.
    "robustness": (
        "typos",
        "keyboard",
        "misspelling",
        "case",
        "contraction",
        "punctuation",
        "whitespace",
    ),
    # All of these, in this order.
    "fairness": ("gender", "names"),
}

_GLOBAL_RANDOM = threading.Lock()


@contextmanager
def _global_random_kept() -> Iterator[None]:
    """Hold the global RNGs that nlpaug draws from, and give them back as they were."""
    with _GLOBAL_RANDOM:
        state = random.getstate()
        np_state = np.random.get_state()
        try:
            yield
        finally:
            random.setstate(state)
            np.random.set_state(np_state)


def _check_family(family: str) -> None:
    if family not in PERTURBATION_FAMILIES:
        known = ", ".join(PERTURBATION_FAMILIES)
        raise UsageError(f"Unknown perturbation family {family!r}; known: {known}")


def _texts(example: Mapping[str, Any], text_fields: Sequence[str]) -> dict[str, str]:
    if "uid" not in example:
        raise InvalidDataset(f"An example has no 'uid' field: {sorted(example)!r}")
    texts = {}
    for name in text_fields:
        value = example.get(name)
        if not isinstance(value, str):
            raise InvalidDataset(
                f"Example {example['uid']!r} has no text field {name!r} "
                f"(found {type(value).__name__}); text fields: {list(text_fields)!r}"
            )
        texts[name] = value
    return texts


def _kept_words(example: Mapping[str, Any], text_fields: Sequence[str]) -> frozenset[str]:
    """Capitalised words of the fields left alone (a QA context): names there must stay."""
    kept: set[str] = set()
    for key, value in example.items():
        if key not in text_fields and key != "uid" and isinstance(value, str):
            kept.update(w for w in WORD.findall(value) if w[:1].isupper())
    return frozenset(kept)


def perturb_example(
    example: Mapping[str, Any], *, family: str, text_fields: Sequence[str], seed: int = 0
) -> dict[str, Any] | None:
    """Perturb one example, or return None when the family finds nothing to change.

    Not thread-safe on its own with other users of the global RNGs; ``perturb_dataset``
    guards them.

    Args:
        example: ``uid``, the input fields and the gold output.
        family: One of ``PERTURBATION_FAMILIES``.
        text_fields: The input fields to perturb; the others are copied unchanged.
        seed: Mixed into every example's seed.

    Returns:
        A new example: ``uid`` is ``"<family>-<uid>"``, ``input_id`` the original uid,
        ``perturbation`` the perturbations applied joined by "+" (e.g. "typos+case").
    """
    _check_family(family)
    texts = _texts(example, text_fields)
    uid = example["uid"]
    key = f"{seed}:{family}:{uid}:" + json.dumps(list(texts.values()), ensure_ascii=False)
    example_seed = zlib.crc32(key.encode("utf-8"))
    scope = ExampleScope(
        seed=example_seed,
        keep=_kept_words(example, text_fields),
        texts=tuple(texts.values()),
    )
    rng = random.Random(example_seed)
    field_rngs = {name: random.Random(f"{example_seed}:{name}") for name in texts}

    names = FAMILY_PERTURBATIONS[family]
    if family == "robustness":
        wanted = rng.choice((1, 2))
        names = tuple(rng.sample(names, k=len(names)))
    else:
        wanted = len(names)

    current = dict(texts)
    applied: list[str] = []
    for name in names:
        perturb = get_perturbation(name)
        changed = {f: perturb(text, field_rngs[f], scope) for f, text in current.items()}
        if changed != current:
            current = changed
            applied.append(name)
            if len(applied) == wanted:
                break
    if current == texts:
        return None
    out = {"uid": f"{family}-{uid}"}
    out.update((k, v) for k, v in example.items() if k != "uid")
    out.update(current)
    out["input_id"] = uid
    out["perturbation"] = "+".join(applied)
    return out


def perturb_dataset(
    examples: list[dict[str, Any]], *, family: str, text_fields: list[str], seed: int = 0
) -> list[dict[str, Any]]:
    """Derive a family's perturbed copy of a dataset: only the examples it changed.

    Args:
        examples: Dicts with ``uid``, the task's input fields and the gold output
            (``label`` or ``answers``); they are not modified.
        family: ``"robustness"`` (typos, keyboard slips, misspellings, case,
            contractions, punctuation, whitespace) or ``"fairness"`` (gendered words and
            pronouns, first names across demographic groups).
        text_fields: The input fields to perturb. For QA pass only the question: the
            context stays as it is, so ``answers[].answer_start`` stays valid.
        seed: Mixed into every example's seed; the same seed gives the same bytes.

    Returns:
        The changed examples in input order, each linked to its original by ``input_id``.

    Raises:
        UsageError: ``family`` is not one of ``PERTURBATION_FAMILIES``, or
            ``text_fields`` is empty.
        InvalidDataset: An example lacks ``uid`` or one of ``text_fields``.
    """
    _check_family(family)
    if not text_fields:
        raise UsageError("perturb_dataset needs at least one text field to perturb")
    with _global_random_kept():
        results = (
            perturb_example(ex, family=family, text_fields=text_fields, seed=seed)
            for ex in examples
        )
        return [r for r in results if r is not None]


@functools.cache
def fingerprint() -> str:
    """A sha256 over everything the perturbed bytes depend on besides the input.

    Covers the word lists, the name book read from Faker, AugLy's misspelling dictionary
    and the versions of AugLy, nlpaug and Faker; record it with a derived dataset.
    """
    digest = hashlib.sha256()
    for dist in ("augly", "nlpaug", "faker"):
        digest.update(f"{dist}=={metadata.version(dist)}\n".encode())
    book = name_book()
    parts: list[Any] = [
        sorted(wordlists.GENDER_SWAPS.items()),
        sorted(wordlists.FUNCTION_WORDS),
        sorted(wordlists.NOT_NAMES),
        list(wordlists.CONTRACTIONS),
        sorted((f"{g}/{s}", list(n)) for (g, s), n in book.draw.items()),
        sorted(book.lexicon),
        sorted(robustness.misspellings().items()),
        FAMILY_PERTURBATIONS,
        fairness.__name__,
    ]
    digest.update(json.dumps(parts, ensure_ascii=False, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()
