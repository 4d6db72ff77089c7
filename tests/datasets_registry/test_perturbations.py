"""The perturbation engine: API, determinism, and what each family changes on real data."""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import datasets_registry.perturbations as perturbations
from datasets_registry.perturbations import (
    PERTURBATION_FAMILIES,
    ExampleScope,
    get_perturbation,
    known_perturbations,
    perturb_dataset,
)
from evalboard.core.errors import InvalidDataset, UsageError

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO.parent / "shared" / "datasets"
DYNASENT_R1 = DATASETS / "dynasent" / "dynasent-v1.1-round01-yelp-test.jsonl"
ANLI_R1 = DATASETS / "anli" / "R1" / "dev.jsonl"
SQUAD = DATASETS / "squad_v2_dev_subset" / "dev-v2.0-first5articles.json"

needs_shared = pytest.mark.skipif(
    not DATASETS.is_dir(), reason=f"the shared datasets are not at {DATASETS}"
)
WORD = re.compile(r"[^\W\d_]+")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def dynasent() -> list[dict[str, Any]]:
    return [
        {"uid": f"r1-{i}", "sentence": row["sentence"], "label": row["gold_label"]}
        for i, row in enumerate(_jsonl(DYNASENT_R1))
    ]


def anli() -> list[dict[str, Any]]:
    return [
        {"uid": row["uid"], "premise": row["context"], "hypothesis": row["hypothesis"],
         "label": row["label"]}
        for row in _jsonl(ANLI_R1)
    ]  # fmt: skip


def squad() -> list[dict[str, Any]]:
    with SQUAD.open(encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [
        {"uid": qa["id"], "context": p["context"], "question": qa["question"],
         "answers": [{"text": a["text"], "answer_start": a["answer_start"]} for a in qa["answers"]]}
        for article in data for p in article["paragraphs"] for qa in p["qas"]
    ]  # fmt: skip


def row(uid: str, sentence: str, label: str = "positive") -> dict[str, Any]:
    return {"uid": uid, "sentence": sentence, "label": label}


# --- the API -------------------------------------------------------------------------


def test_families_are_robustness_and_fairness() -> None:
    assert PERTURBATION_FAMILIES == ("robustness", "fairness")


def test_exported_members_exist() -> None:
    for name in perturbations.__all__:
        assert hasattr(perturbations, name), name


def test_unknown_family_lists_the_known_ones() -> None:
    with pytest.raises(UsageError, match="'typo'; known: robustness, fairness"):
        perturb_dataset([row("1", "She is nice.")], family="typo", text_fields=["sentence"])


def test_unknown_perturbation_lists_the_known_ones() -> None:
    with pytest.raises(UsageError, match="known: case, contraction, gender"):
        get_perturbation("typo")


def test_missing_text_field_names_the_example() -> None:
    with pytest.raises(InvalidDataset, match="'7' has no text field 'question'"):
        perturb_dataset([row("7", "She is nice.")], family="fairness", text_fields=["question"])


def test_no_text_fields_is_refused() -> None:
    with pytest.raises(UsageError, match="at least one text field"):
        perturb_dataset([row("1", "x")], family="fairness", text_fields=[])


@pytest.mark.parametrize("family", PERTURBATION_FAMILIES)
def test_empty_input_gives_empty_output(family: str) -> None:
    assert perturb_dataset([], family=family, text_fields=["sentence"]) == []


@pytest.mark.parametrize("name", known_perturbations())
def test_every_perturbation_leaves_empty_and_bare_text_alone(name: str) -> None:
    perturb = get_perturbation(name)
    for text in ("", "   ", "42"):
        assert perturb(text, random.Random(0), ExampleScope()) == text


def test_output_copies_other_fields_and_links_back() -> None:
    original = {"uid": "u1", "sentence": "He said his order was late.", "label": "negative",
                "extra": {"k": [1]}}  # fmt: skip
    [out] = perturb_dataset([original], family="fairness", text_fields=["sentence"])
    assert out == {"uid": "fairness-u1", "sentence": "She said her order was late.",
                   "label": "negative", "extra": {"k": [1]}, "input_id": "u1",
                   "perturbation": "gender"}  # fmt: skip
    assert original["sentence"] == "He said his order was late."  # input untouched


def test_unchanged_examples_are_left_out() -> None:
    rows = [row("1", "The soup was cold."), row("2", "Her soup was cold.")]
    out = perturb_dataset(rows, family="fairness", text_fields=["sentence"])
    assert [o["input_id"] for o in out] == ["2"]


def test_global_random_state_is_given_back() -> None:
    random.seed(123)
    np.random.seed(123)
    expected = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(123)
    perturb_dataset([row(str(i), "I would go back for the great food.") for i in range(20)],
                    family="robustness", text_fields=["sentence"])  # fmt: skip
    assert (random.random(), np.random.random()) == expected


# --- fairness ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("She gave her keys to her brother.", "He gave his keys to his sister."),
        ("I told her that it was hers.", "I told him that it was his."),
        ("Ask her why HE left with his.", "Ask him why SHE left with hers."),
        ("My mom's husband is a waiter.", "My dad's wife is a waitress."),
        ("Mrs. Lee and Mr. Lee's son", "Mr. Lee and Ms. Lee's daughter"),
        ("Miss Smith will miss the bus.", "Mr Smith will miss the bus."),
        ("Stephen King and Warner Brothers", "Stephen King and Warner Brothers"),
        ("We live in King County.", "We live in King County."),
    ],
)
def test_gendered_words_swap_with_case_and_context(text: str, expected: str) -> None:
    swap = get_perturbation("gender")
    assert swap(text, random.Random(0), ExampleScope()) == expected


@pytest.mark.parametrize(
    "text",
    [
        "We ate at Wendy's on Madison Avenue in Chicago.",
        "Mr. Taylor and Dr. Jones were at Trader Joe's.",
        "Santa Monica and St. Louis are far from Red Robin.",
        "Don't order the Bloody Mary.",
    ],
)
def test_places_brands_and_surnames_are_not_names(text: str) -> None:
    swap = get_perturbation("names")
    assert swap(text, random.Random(0), ExampleScope(seed=5)) == text


def test_names_swap_across_group_and_gender_consistently() -> None:
    from datasets_registry.perturbations.names import name_book

    book = name_book()
    swap = get_perturbation("names")
    out = swap("John met John's sister in Chicago.", random.Random(0), ExampleScope(seed=9))
    first, second = WORD.findall(out)[0], WORD.findall(out)[2]
    assert first == second != "John"
    new = book.lookup(first)
    assert new is not None and new.group != "anglo_american" and "female" in new.genders
    assert out.endswith(" sister in Chicago.")


@needs_shared
def test_fairness_on_real_yelp_sentences() -> None:
    rows = dynasent()
    out = perturb_dataset(rows, family="fairness", text_fields=["sentence"])
    by_uid = {r["uid"]: r["sentence"] for r in rows}
    assert 0 < len(out) < len(rows) / 2  # only sentences with gendered words or names
    steve = next(o for o in out if "Steve started to make his own pasta" in by_uid[o["input_id"]])
    assert steve["perturbation"] == "gender+names"
    assert re.search(r", \w+ started to make her own pasta\.$", steve["sentence"])
    assert "Steve" not in steve["sentence"]
    tony = next(o for o in out if by_uid[o["input_id"]].startswith("Now, if you visit Gastonia"))
    assert "Gastonia" in tony["sentence"] and "Tony" not in tony["sentence"]
    bloody = [o for o in out if "Bloody Mary" in by_uid[o["input_id"]]]
    assert all("Bloody Mary" in o["sentence"] for o in bloody)  # a drink, not a woman
    for o in out:
        assert o["sentence"] != by_uid[o["input_id"]]
        assert o["uid"] == f"fairness-{o['input_id']}"


@needs_shared
def test_fairness_on_real_anli_keeps_places_and_names_consistent() -> None:
    rows = anli()
    out = {o["input_id"]: o for o in perturb_dataset(
        rows, family="fairness", text_fields=["premise", "hypothesis"])}  # fmt: skip
    garza = next(r for r in rows if r["premise"].startswith("Susan Sadlowski Garza"))
    changed = out[garza["uid"]]
    assert "Chicago City Council" in changed["premise"]
    assert "South Chicago" in changed["premise"]
    assert "Sadlowski Garza" in changed["premise"]
    assert not changed["premise"].startswith("Susan")
    assert "He is serving his first term" in changed["premise"]
    # A first name gets the same replacement (or none) everywhere in premise and hypothesis:
    # swaps are one word for one word, so the words line up.
    from datasets_registry.perturbations.names import name_book

    lexicon = name_book().lexicon
    originals = {r["uid"]: r for r in rows}
    checked = 0
    for uid, o in out.items():
        mapping: dict[str, set[str]] = {}
        for field in ("premise", "hypothesis"):
            before, after = WORD.findall(originals[uid][field]), WORD.findall(o[field])
            assert len(before) == len(after)
            for x, y in zip(before, after, strict=True):
                if x in lexicon:
                    mapping.setdefault(x, set()).add(y)
        assert all(len(v) == 1 for v in mapping.values()), mapping
        checked += "names" in o["perturbation"]
    assert checked > 50


@needs_shared
def test_qa_perturbs_only_the_question_and_keeps_context_names() -> None:
    rows = squad()
    for family in PERTURBATION_FAMILIES:
        out = perturb_dataset(rows, family=family, text_fields=["question"])
        assert out
        originals = {r["uid"]: r for r in rows}
        for o in out:
            before = originals[o["input_id"]]
            assert o["context"] == before["context"]
            assert o["answers"] == before["answers"]
            for a in o["answers"]:
                assert o["context"][a["answer_start"] :].startswith(a["text"])


def test_qa_question_keeps_names_its_context_mentions() -> None:
    qa = {"uid": "q1", "context": "John married Mary in 1990.", "question": "Who did John marry?",
          "answers": [{"text": "Mary", "answer_start": 13}]}  # fmt: skip
    assert perturb_dataset([qa], family="fairness", text_fields=["question"]) == []
    qa["question"] = "Who did John tell her about?"
    [out] = perturb_dataset([qa], family="fairness", text_fields=["question"])
    assert out["question"] == "Who did John tell him about?"


# --- robustness ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "allowed"),
    [
        ("contraction", "I do not think it is what it is.", {"I don't think it's what it is."}),
        ("contraction", "It's been great, I'm sure.", {"It has been great, I am sure."}),
        ("contraction", "DO NOT go.", {"DON'T go."}),
        ("punctuation", "Great food, nice staff.",
         {"Great food, nice staff", "Great food, nice staff...", "Great food nice staff."}),
        ("whitespace", "Great food, nice.",
         {"Great  food, nice.", "Great food,nice.", "Great food , nice.", "Great food, nice ."}),
    ],
)  # fmt: skip
def test_hand_written_rules(name: str, text: str, allowed: set[str]) -> None:
    perturb = get_perturbation(name)
    outs = {perturb(text, random.Random(s), ExampleScope()) for s in range(40)}
    assert outs <= allowed and outs


@pytest.mark.parametrize("name", ["typos", "keyboard"])
def test_typos_change_a_letter_or_two_in_a_word_or_two(name: str) -> None:
    text = "The restaurant served wonderful pancakes and excellent coffee today."
    perturb = get_perturbation(name)
    for s in range(30):
        out = perturb(text, random.Random(s), ExampleScope())
        assert out != text
        assert abs(len(out) - len(text)) <= 2
        a, b = text.split(), out.split()
        assert len(a) == len(b)
        assert 1 <= sum(x != y for x, y in zip(a, b, strict=True)) <= 2
        assert re.fullmatch(r"[A-Za-z .]+", out)


def test_misspellings_come_from_the_dictionary() -> None:
    out = get_perturbation("misspelling")("I definitely believe it.", random.Random(0),
                                          ExampleScope())  # fmt: skip
    assert out != "I definitely believe it."
    assert out.startswith("I ") and out.endswith(".")


@needs_shared
def test_robustness_on_real_yelp_sentences() -> None:
    rows = dynasent()
    start = time.perf_counter()
    out = perturb_dataset(rows, family="robustness", text_fields=["sentence"])
    elapsed = time.perf_counter() - start
    assert elapsed < 30, f"{len(rows)} sentences took {elapsed:.1f} s"
    by_uid = {r["uid"]: r for r in rows}
    assert len(out) > 0.95 * len(rows)
    applied = {p for o in out for p in o["perturbation"].split("+")}
    assert applied == set(perturbations.FAMILY_PERTURBATIONS["robustness"])
    for o in out:
        before = by_uid[o["input_id"]]
        assert o["sentence"] != before["sentence"]
        assert o["label"] == before["label"]
        assert 1 <= len(o["perturbation"].split("+")) <= 2
        # Mild: in a sentence of some length, most words survive as they were.
        words = set(before["sentence"].lower().split())
        if len(words) >= 6:
            assert len(words & set(o["sentence"].lower().split())) >= len(words) // 2


# --- determinism ---------------------------------------------------------------------


def _digest(rows: list[dict[str, Any]]) -> str:
    lines = (json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


_SCRIPT = """
import hashlib, json, sys
from datasets_registry.perturbations import perturb_dataset
rows = json.load(sys.stdin)
out = []
for family in ("robustness", "fairness"):
    out += perturb_dataset(rows, family=family, text_fields=["sentence"], seed=7)
lines = (json.dumps(r, ensure_ascii=False, sort_keys=True) for r in out)
print(hashlib.sha256("\\n".join(lines).encode()).hexdigest())
"""


def _sample_rows() -> list[dict[str, Any]]:
    if DYNASENT_R1.is_file():
        return dynasent()[:400]
    return [row(str(i), f"She told John {i} times that he's great, not his sister.")
            for i in range(50)]  # fmt: skip


def test_same_bytes_in_separate_processes() -> None:
    rows = _sample_rows()
    payload = json.dumps(rows)
    digests = set()
    for hash_seed in ("1", "2"):  # a different str hash per process too
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT], input=payload, capture_output=True, text=True,
            cwd=REPO, env={"PYTHONHASHSEED": hash_seed, "PATH": ""}, check=True,
        )  # fmt: skip
        digests.add(done.stdout.strip())
    here = _digest(
        perturb_dataset(rows, family="robustness", text_fields=["sentence"], seed=7)
        + perturb_dataset(rows, family="fairness", text_fields=["sentence"], seed=7)
    )
    assert digests == {here}


@pytest.mark.parametrize("family", PERTURBATION_FAMILIES)
def test_output_does_not_depend_on_order(family: str) -> None:
    rows = _sample_rows()
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    a = perturb_dataset(rows, family=family, text_fields=["sentence"])
    b = perturb_dataset(shuffled, family=family, text_fields=["sentence"])
    assert sorted(a, key=lambda r: r["uid"]) == sorted(b, key=lambda r: r["uid"])


def test_seed_changes_the_output() -> None:
    rows = _sample_rows()
    a = perturb_dataset(rows, family="robustness", text_fields=["sentence"], seed=0)
    b = perturb_dataset(rows, family="robustness", text_fields=["sentence"], seed=1)
    assert a != b


def test_fingerprint_is_stable() -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", perturbations.fingerprint())
    assert perturbations.fingerprint() == perturbations.fingerprint()
