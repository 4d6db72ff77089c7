"""Scoring: task metrics, delta metrics, the Dynascore, its uncertainty, and rankings.

Pure numpy: no database, no sandbox, no files, no web. Every metric value is x100.
The board's metric vocabulary (:data:`METRICS`) lives here, so every layer reads it.
"""

from scoring import classification as _classification  # noqa: F401  (registers metrics)
from scoring import squad as _squad  # noqa: F401  (registers metrics)
from scoring import text as _text  # noqa: F401  (registers metrics)
from scoring.aggregates import mean_win_rate, mean_z_score, pareto_front, pareto_fronts
from scoring.bootstrap import (
    BootstrapResult,
    Draws,
    Interval,
    Resamples,
    bootstrap,
    draw,
    resample,
)
from scoring.calibration import ReliabilityBin, calibration_error, reliability
from scoring.contributions import (
    DOMINANCE_SHARE,
    contribution_terms,
    contributions,
    dominant_term,
    dominant_term_array,
)
from scoring.delta import delta, delta_metric, delta_per_example
from scoring.dynascore import (
    AMRS_CUTOFF,
    DEFAULT_PERF_WEIGHT,
    NormalisedTable,
    average_datasets,
    default_weights,
    dynascore,
    normalise,
    normalise_array,
    order,
    rank,
    weighted_mean,
)
from scoring.floor import (
    BASELINE_TOLERANCE,
    floor_indices,
    floor_order,
    not_above_baseline,
    not_above_baselines,
    rank_interval,
)
from scoring.registry import (
    FloatArray,
    Metric,
    ScoringError,
    UnknownMetric,
    compute,
    get_metric,
    metric,
    metric_names,
    per_example,
    statistics,
)
from scoring.sensitivity import LeaderStability, WeightRange, weight_ranges
from scoring.shift import SHIFT_METHOD, ShiftTest, domain_shift, shift_features
from scoring.squad import normalize_answer
from scoring.text import TEXT_METRICS, sentence_chrfs
from scoring.vocabulary import (
    DEFAULT_WEIGHTS,
    DIRECTION_ARROWS,
    METRICS,
    WEIGHABLE_METRICS,
    BoardMetric,
    figure_arrays,
    fill_missing,
    fill_missing_array,
    goods_transform,
    rankable,
    rankable_present,
)
from scoring.weights import (
    REFERENCE_ROWS,
    InvalidWeightsError,
    check_dataset_weight,
    check_weights,
    default_dataset_weight,
    parse_weights,
)

__all__ = [
    "AMRS_CUTOFF",
    "BASELINE_TOLERANCE",
    "DEFAULT_PERF_WEIGHT",
    "DEFAULT_WEIGHTS",
    "DIRECTION_ARROWS",
    "Draws",
    "DOMINANCE_SHARE",
    "METRICS",
    "REFERENCE_ROWS",
    "SHIFT_METHOD",
    "TEXT_METRICS",
    "WEIGHABLE_METRICS",
    "BoardMetric",
    "BootstrapResult",
    "FloatArray",
    "Interval",
    "InvalidWeightsError",
    "LeaderStability",
    "Metric",
    "NormalisedTable",
    "ReliabilityBin",
    "Resamples",
    "ScoringError",
    "ShiftTest",
    "UnknownMetric",
    "WeightRange",
    "average_datasets",
    "bootstrap",
    "calibration_error",
    "check_dataset_weight",
    "check_weights",
    "compute",
    "contribution_terms",
    "contributions",
    "default_dataset_weight",
    "default_weights",
    "delta",
    "delta_metric",
    "delta_per_example",
    "domain_shift",
    "draw",
    "dominant_term",
    "dominant_term_array",
    "dynascore",
    "figure_arrays",
    "fill_missing",
    "fill_missing_array",
    "floor_indices",
    "floor_order",
    "get_metric",
    "goods_transform",
    "mean_win_rate",
    "mean_z_score",
    "metric",
    "metric_names",
    "normalise",
    "normalise_array",
    "normalize_answer",
    "not_above_baseline",
    "not_above_baselines",
    "order",
    "pareto_front",
    "pareto_fronts",
    "parse_weights",
    "per_example",
    "rank",
    "rank_interval",
    "rankable",
    "rankable_present",
    "reliability",
    "resample",
    "sentence_chrfs",
    "shift_features",
    "statistics",
    "weight_ranges",
    "weighted_mean",
]
