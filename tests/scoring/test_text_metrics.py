"""Text-generation metrics against the libraries everyone reports them with."""

from __future__ import annotations

import numpy as np
import pytest
import sacrebleu
from rouge_score.rouge_scorer import RougeScorer

from scoring import ScoringError, compute, delta, delta_metric, get_metric, statistics

OUTPUTS = [
    "The Normans gave their name to Normandy.",
    "in the 10th century",
    "Rollo",
    "",
    "They were descended from Norse raiders and pirates.",
]
# Variable numbers of references per example, as SQuAD's answers have.
REFERENCES = [
    ["The Normans gave their name to Normandy, a region in France.", "Normandy"],
    ["10th century", "the first half of the 10th century", "in the 10th and 11th centuries"],
    ["Rollo"],
    ["Denmark, Iceland and Norway"],
    ["Norse raiders and pirates from Denmark, Iceland and Norway", "Norse"],
]


def sacrebleu_streams() -> list[list[str | None]]:
    # sacrebleu's layout for several references: one stream per position, None for none.
    width = max(map(len, REFERENCES))
    return [[refs[k] if k < len(refs) else None for refs in REFERENCES] for k in range(width)]


def test_chrf_and_bleu_equal_sacrebleus_corpus_figures() -> None:
    streams = sacrebleu_streams()
    assert compute("chrf", OUTPUTS, REFERENCES) == sacrebleu.corpus_chrf(OUTPUTS, streams).score
    assert compute("bleu", OUTPUTS, REFERENCES) == sacrebleu.corpus_bleu(OUTPUTS, streams).score
    # and not a mean of sentence scores, which is a different number
    sentence_mean = np.mean(
        [sacrebleu.sentence_chrf(o, r).score for o, r in zip(OUTPUTS, REFERENCES, strict=True)]
    )
    assert compute("chrf", OUTPUTS, REFERENCES) != pytest.approx(sentence_mean)


def test_bootstrap_statistics_reduce_to_sacrebleus_figure_on_a_resample() -> None:
    idx = [0, 0, 2, 4, 4]
    outputs = [OUTPUTS[i] for i in idx]
    references = [REFERENCES[i] for i in idx]
    width = max(map(len, references))
    streams = [[r[k] if k < len(r) else None for r in references] for k in range(width)]
    stats = statistics("bleu", OUTPUTS, REFERENCES)
    value = float(get_metric("bleu").reduce(stats[idx].sum(axis=0), len(idx)))
    assert value == sacrebleu.corpus_bleu(outputs, streams).score


def test_rouge_l_is_rouge_scores_best_reference_f_measure() -> None:
    scorer = RougeScorer(["rougeL"])
    expected = np.mean(
        [
            max(scorer.score(ref, out)["rougeL"].fmeasure for ref in refs)
            for out, refs in zip(OUTPUTS, REFERENCES, strict=True)
        ]
    )
    assert compute("rouge_l", OUTPUTS, REFERENCES) == pytest.approx(100 * expected)


def test_exact_match_and_token_f1_normalise_and_take_the_best_reference() -> None:
    # "in the 10th century" vs "the first half...": EM 0; "Rollo" EM 1 -> 1 of 5.
    assert compute("exact_match", OUTPUTS, REFERENCES) == 20.0
    assert compute("exact_match", ["the ROLLO!"], [["Rollo"]]) == 100.0
    assert compute("text_f1", ["The 10th century"], [["x", "10th century"]]) == 100.0
    assert compute("text_f1", ["10th century"], [["in the 10th century"]]) == 80.0
    assert compute("text_f1", ["", "Rollo"], [["Rollo"], ["Rollo"]]) == 50.0


def test_text_delta_is_chrf_of_the_perturbed_output_against_the_original() -> None:
    for perf in ("chrf", "bleu", "rouge_l", "text_f1", "exact_match"):
        assert delta_metric(perf) == "chrf"
    same = delta("exact_match", ["Rollo the Viking"], ["Rollo the Viking"])
    assert same == 100.0
    reworded = delta("exact_match", ["Rollo, the viking"], ["Rollo the Viking"])
    expected = sacrebleu.sentence_chrf("Rollo, the viking", ["Rollo the Viking"]).score
    assert reworded == pytest.approx(expected)
    assert 0 < reworded < 100


@pytest.mark.parametrize("gold", [[], "Rollo", [None], [1]])
def test_a_gold_that_is_not_a_list_of_reference_strings_is_refused(gold: object) -> None:
    with pytest.raises(ScoringError, match="non-empty list of reference strings"):
        compute("chrf", ["Rollo"], [gold])
