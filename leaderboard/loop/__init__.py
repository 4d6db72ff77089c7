"""The loop: target models, adversarial collection, validation, rounds and the release gate.

Leaderboard winners become the targets of a round; annotators write examples meant to
fool them; other annotators validate the ones that did; closing the round turns the
verified examples into the task's next dataset. Production feeds it too: failures
reported with their right answer, and the most shifted inputs of a drift check, which
validators label. The release gate keeps a new model from
getting wrong what the old one got right.
"""

from leaderboard.loop.access import may_annotate, may_send_traffic
from leaderboard.loop.answers import check_gold, check_inputs, gold_value, is_model_wrong
from leaderboard.loop.candidates import input_key
from leaderboard.loop.collection import (
    Collected,
    Predictor,
    collect_example,
    explain_example,
    get_example,
)
from leaderboard.loop.drift import (
    DriftOptions,
    TrafficTooLarge,
    check_drift,
    get_drift_check,
    list_drift_checks,
    read_traffic,
)
from leaderboard.loop.failures import Failure, capture_failure, capture_failures, read_failures
from leaderboard.loop.gate import DatasetComparison, GateReport, Regression, compare, run_gate
from leaderboard.loop.ranking import leaderboard_ranking
from leaderboard.loop.rounds import (
    ClosedRound,
    Ranking,
    close_round,
    current_round,
    dataset_name,
    get_round,
    list_rounds,
    open_round,
    round_examples,
)
from leaderboard.loop.targets import BundleSandboxes, SandboxFactory, TargetPool, warm_quietly
from leaderboard.loop.validation import (
    decide,
    decide_label,
    validate_example,
    validation_queue,
    verdicts_of,
)
from leaderboard.loop.vmer import AnnotatorVmer, RoundVmer, round_vmer

__all__ = [
    "AnnotatorVmer",
    "BundleSandboxes",
    "ClosedRound",
    "Collected",
    "DatasetComparison",
    "DriftOptions",
    "Failure",
    "GateReport",
    "Predictor",
    "Ranking",
    "Regression",
    "RoundVmer",
    "SandboxFactory",
    "TargetPool",
    "TrafficTooLarge",
    "capture_failure",
    "capture_failures",
    "check_gold",
    "check_drift",
    "check_inputs",
    "close_round",
    "collect_example",
    "compare",
    "current_round",
    "dataset_name",
    "decide",
    "decide_label",
    "explain_example",
    "get_example",
    "get_round",
    "get_drift_check",
    "gold_value",
    "input_key",
    "is_model_wrong",
    "leaderboard_ranking",
    "list_drift_checks",
    "list_rounds",
    "may_annotate",
    "may_send_traffic",
    "open_round",
    "read_failures",
    "read_traffic",
    "round_examples",
    "round_vmer",
    "run_gate",
    "validate_example",
    "validation_queue",
    "verdicts_of",
    "warm_quietly",
]
