"""The input-shift test: its AUC, its permutation p-value and its interval."""

from __future__ import annotations

import numpy as np
import pytest

from scoring import ScoringError, domain_shift, shift_features
from scoring.shift import _aucs, _folds, _permuted

_WORDS = "food staff table menu price wait drink dessert plate order".split()
_OTHER = "film plot actor scene script score cast camera ending sequel".split()


def _sentences(words: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, size=8)) for _ in range(n)]


def _brute_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    pos, neg = scores[positive], scores[~positive]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def test_auc_counts_ties_half_as_mann_whitney_does() -> None:
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 4, size=(40, 6)).astype(float)  # many ties
    positive = np.zeros((40, 6), dtype=bool)
    positive[:15] = True
    for column in range(6):
        rng.shuffle(positive[:, column])
    expected = [_brute_auc(scores[:, c], positive[:, c]) for c in range(6)]
    assert _aucs(scores, positive) == pytest.approx(expected)


def test_permutations_shuffle_within_each_fold_and_keep_its_counts() -> None:
    is_traffic = np.arange(50) < 20
    rng = np.random.default_rng(0)
    fold = _folds(is_traffic, 5, rng)
    labels = _permuted(is_traffic.astype(float), fold, 30, rng)
    assert (labels[:, 0] == is_traffic).all()
    for k in range(5):
        counts = labels[fold == k].sum(axis=0)
        assert (counts == counts[0]).all() and counts[0] == 4
    assert not (labels[:, 1:] == labels[:, [0]]).all(axis=0).any()  # each one moved


def test_inputs_from_another_domain_are_shifted() -> None:
    test = domain_shift(_sentences(_OTHER + _WORDS[:3], 60, 1), _sentences(_WORDS, 80, 2))
    assert test.auc.estimate > 0.9
    assert test.auc.low <= test.auc.estimate <= test.auc.high
    assert test.p_value == pytest.approx(1 / 1000)  # the smallest a 999-permutation test gives
    assert (test.n_traffic, test.n_reference, test.folds) == (60, 80, 5)
    assert test.traffic_scores.shape == (60,) and test.reference_scores.shape == (80,)
    assert test.traffic_scores.mean() > test.reference_scores.mean()


def test_inputs_of_the_same_distribution_are_not() -> None:
    pooled = _sentences(_WORDS, 160, 4)
    test = domain_shift(pooled[:80], pooled[80:])
    assert test.p_value > 0.05
    assert abs(test.auc.estimate - 0.5) < 0.1


def test_the_test_holds_its_level_under_the_null() -> None:
    # Thirty splits of one distribution: a valid test rejects at 0.1 in about 10% of them.
    p_values = [
        domain_shift(
            (pooled := _sentences(_WORDS, 60, seed))[:30], pooled[30:], n_permutations=99
        ).p_value
        for seed in range(30)
    ]
    assert sum(p < 0.1 for p in p_values) <= 7  # P(> 7 of 30 | level 0.1) < 0.03


def test_the_same_inputs_and_seed_give_the_same_answer() -> None:
    traffic, reference = _sentences(_OTHER, 30, 5), _sentences(_WORDS, 30, 6)
    first = domain_shift(traffic, reference, seed=3)
    again = domain_shift(traffic, reference, seed=3)
    assert (first.auc, first.p_value) == (again.auc, again.p_value)
    assert np.array_equal(first.traffic_scores, again.traffic_scores)


def test_fields_are_told_apart() -> None:
    # The same words, in the other field: only field-tagged features see the shift.
    words = _sentences(_WORDS, 40, 7)
    reference = [(w, "question") for w in words[:20]]
    traffic = [("question", w) for w in words[20:]]
    assert domain_shift(traffic, reference, n_permutations=99).p_value == pytest.approx(0.01)
    assert shift_features([("a b", "c"), ("a b", "c")]).shape[1] == 4  # 0:a, 0:b, 0:a b, 1:c


@pytest.mark.parametrize(
    ("traffic", "reference", "words"),
    [
        (["one"] * 4, ["two"] * 30, "at least 5 inputs on each side"),
        (["one"] * 30, [], "at least 5 inputs on each side"),
    ],
)
def test_too_few_inputs_are_refused(traffic: list[str], reference: list[str], words: str) -> None:
    with pytest.raises(ScoringError, match=words):
        domain_shift(traffic, reference)


def test_inputs_with_no_shared_word_give_no_evidence() -> None:
    traffic = [f"t{i}" for i in range(20)]
    reference = [f"r{i}" for i in range(20)]
    test = domain_shift(traffic, reference, n_permutations=99)
    assert test.features == 0 and test.auc.estimate == 0.5 and test.p_value == 1.0
