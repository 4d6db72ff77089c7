"""The loop: target models, adversarial collection, validation, rounds, the regression
suite and the release gate.

Leaderboard winners become the targets of a round; annotators write examples meant to
fool them; other annotators validate the ones that did; closing the round turns the
verified examples into the task's next dataset. Production feeds it too: failures
reported with their right answer, and the most shifted inputs of a drift check, which
validators label. Every example is a case with a history per lineage (which release first
passed it, which lost it); a versioned suite of them leaves the server as a file. The
release gate keeps a new model from getting wrong what the old one, or any earlier release
of its lineage, got right.
"""

from leaderboard.loop.access import may_annotate, may_send_traffic
from leaderboard.loop.answers import (
    check_gold,
    check_inputs,
    describe_rule,
    gold_value,
    is_model_wrong,
    is_right,
)
from leaderboard.loop.candidates import input_key
from leaderboard.loop.cases import DatasetCases, case_history, dataset_cases, gate_datasets
from leaderboard.loop.collection import (
    Collected,
    Predictor,
    collect_example,
    edit_example,
    explain_example,
    get_example,
    retract_example,
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
from leaderboard.loop.gate import (
    DatasetComparison,
    GateReport,
    Regression,
    compare,
    compare_history,
    run_gate,
)
from leaderboard.loop.history import CaseHistory, Verdict
from leaderboard.loop.lineage_gate import run_lineage_gate, run_suite_gate
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
from leaderboard.loop.suite_file import MAX_SUITE_BYTES, Suite, parse_suite, read_suite, suite_bytes
from leaderboard.loop.suites import (
    cut_suite,
    export_suite,
    get_suite_version,
    list_suite_versions,
)
from leaderboard.loop.targets import BundleSandboxes, SandboxFactory, TargetPool, warm_quietly
from leaderboard.loop.validation import (
    QueueCounts,
    decide,
    decide_label,
    queue_counts,
    validate_example,
    validation_queue,
    verdicts_of,
)
from leaderboard.loop.vmer import AnnotatorVmer, RoundVmer, round_vmer

__all__ = [
    "MAX_SUITE_BYTES",
    "AnnotatorVmer",
    "BundleSandboxes",
    "CaseHistory",
    "ClosedRound",
    "Collected",
    "DatasetCases",
    "DatasetComparison",
    "DriftOptions",
    "Failure",
    "GateReport",
    "Predictor",
    "QueueCounts",
    "Ranking",
    "Regression",
    "RoundVmer",
    "SandboxFactory",
    "Suite",
    "TargetPool",
    "Verdict",
    "TrafficTooLarge",
    "capture_failure",
    "capture_failures",
    "case_history",
    "check_gold",
    "check_drift",
    "check_inputs",
    "close_round",
    "collect_example",
    "compare",
    "compare_history",
    "current_round",
    "cut_suite",
    "dataset_cases",
    "dataset_name",
    "decide",
    "describe_rule",
    "edit_example",
    "decide_label",
    "explain_example",
    "export_suite",
    "gate_datasets",
    "get_example",
    "get_round",
    "get_suite_version",
    "get_drift_check",
    "gold_value",
    "input_key",
    "is_model_wrong",
    "is_right",
    "leaderboard_ranking",
    "list_drift_checks",
    "list_rounds",
    "list_suite_versions",
    "may_annotate",
    "may_send_traffic",
    "open_round",
    "parse_suite",
    "queue_counts",
    "read_failures",
    "read_suite",
    "retract_example",
    "read_traffic",
    "round_examples",
    "round_vmer",
    "run_gate",
    "run_lineage_gate",
    "run_suite_gate",
    "suite_bytes",
    "validate_example",
    "validation_queue",
    "verdicts_of",
    "warm_quietly",
]
