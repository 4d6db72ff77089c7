"""The demo's generative QA data, written for the project: short made-up stories and
questions whose answers are words of the story.

Every person, place, company and book is a made-up name built from syllables, so no
sentence comes from a corpus and a model cannot answer from memory: it must find the
answer in the context. The sets are drawn from one seeded generator, so every machine
writes the same bytes; each set draws its names with a seed of its own.

>>> example = qa_examples("round-1", 1)[0]
>>> sorted(example)
['context', 'question', 'references', 'uid']
>>> example["references"][0] in example["context"]
True
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

__all__ = ["GEN_SETS", "qa_examples", "write_jsonl"]

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "", "n", "r", "l", "s", "th")

#: (fact, question, answer slot): a fact's slots are filled from one row of names.
_FACTS = (
    ("{person} was born in {place}.", "Where was {person} born?", "place"),
    ("{person} was born in {place}.", "Who was born in {place}?", "person"),
    ("{person} founded {company} in {year}.", "Who founded {company}?", "person"),
    ("{person} founded {company} in {year}.", "When was {company} founded?", "year"),
    ("{company} is based in {place}.", "Where is {company} based?", "place"),
    ("{person} wrote the book {book}.", "Who wrote the book {book}?", "person"),
    ("{person} wrote the book {book}.", "Which book did {person} write?", "book"),
    ("The river {river} flows through {place}.", "Which river flows through {place}?", "river"),
    ("{person} moved to {place} in {year}.", "When did {person} move to {place}?", "year"),
)

#: Scored sets of the demo's generative task: name, examples, seed.
GEN_SETS: tuple[tuple[str, int, int], ...] = (("round-1", 60, 101), ("static", 40, 202))


def _name(rng: random.Random, syllables: int) -> str:
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
    return ("".join(parts) + rng.choice(_CODAS)).capitalize()


def _slots(rng: random.Random) -> dict[str, str]:
    n = rng.choice((2, 3))
    return {
        "person": f"{_name(rng, n)} {_name(rng, n)}",
        "place": _name(rng, n),
        "company": f"{_name(rng, n)} Works",
        "book": f"The {_name(rng, n)}",
        "river": _name(rng, n),
        "year": str(rng.randrange(1700, 2020)),
    }


def _example(rng: random.Random, uid: str) -> dict[str, Any]:
    facts = rng.sample(range(len(_FACTS)), 3)
    asked = rng.choice(facts)
    sentences, question, answer = [], "", ""
    for index in facts:
        fact, ask, slot = _FACTS[index]
        slots = _slots(rng)
        sentences.append(fact.format(**slots))
        if index == asked:
            question, answer = ask.format(**slots), slots[slot]
    return {
        "uid": uid,
        "context": " ".join(sentences),
        "question": question,
        "references": [answer],
    }


def qa_examples(name: str, count: int, *, seed: int | None = None) -> list[dict[str, Any]]:
    """``count`` examples of the set ``name``, drawn with ``seed`` (default: from the name)."""
    rng = random.Random(seed if seed is not None else sum(map(ord, name)))
    return [_example(rng, f"{name}-{i:04d}") for i in range(count)]


def write_jsonl(path: Path, examples: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for example in examples:
            handle.write(json.dumps(example, ensure_ascii=False) + "\n")
    return path
