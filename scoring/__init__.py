"""Scoring: task metrics, delta metrics, the Dynascore, its uncertainty, and rankings.

Pure numpy: no database, no sandbox, no files, no web. Every metric value is x100.
The board's metric vocabulary (:data:`METRICS`) lives here, so every layer reads it.
"""

from typing import TYPE_CHECKING

from evalboard.core.lazy import lazy_exports

# The metric modules register their metrics (scoring.metric) as they load: every metric
# name is known as soon as scoring is.
from scoring import classification as _classification  # noqa: F401
from scoring import squad as _squad  # noqa: F401
from scoring import text as _text  # noqa: F401

if TYPE_CHECKING:
    from scoring.aggregates import (
        mean_win_rate,
        mean_z_score,
        pareto_front,
        pareto_fronts,
        pareto_mask,
    )
    from scoring.bootstrap import (
        BootstrapResult,
        Draws,
        Interval,
        Resamples,
        bootstrap,
        dataset_shares,
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
        weighted_means,
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
        packed_figures,
        rankable,
        rankable_present,
        unpacked_figures,
    )
    from scoring.weighing import RowIntervals, Weighed, weigh
    from scoring.weights import (
        REFERENCE_ROWS,
        InvalidWeightsError,
        check_dataset_weight,
        check_weights,
        default_dataset_weight,
        parse_weights,
    )

# Names load on first use (evalboard.core.lazy): evaluate, which scores with the metrics,
# does not pay for the board's modules (bootstrap, shift, aggregates, sensitivity...).
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "scoring.aggregates": (
            "mean_win_rate",
            "mean_z_score",
            "pareto_front",
            "pareto_fronts",
            "pareto_mask",
        ),
        "scoring.bootstrap": (
            "BootstrapResult",
            "Draws",
            "Interval",
            "Resamples",
            "bootstrap",
            "dataset_shares",
            "draw",
            "resample",
        ),
        "scoring.calibration": ("ReliabilityBin", "calibration_error", "reliability"),
        "scoring.contributions": (
            "DOMINANCE_SHARE",
            "contribution_terms",
            "contributions",
            "dominant_term",
            "dominant_term_array",
        ),
        "scoring.delta": ("delta", "delta_metric", "delta_per_example"),
        "scoring.dynascore": (
            "AMRS_CUTOFF",
            "DEFAULT_PERF_WEIGHT",
            "NormalisedTable",
            "average_datasets",
            "default_weights",
            "dynascore",
            "normalise",
            "normalise_array",
            "order",
            "rank",
            "weighted_mean",
            "weighted_means",
        ),
        "scoring.floor": (
            "BASELINE_TOLERANCE",
            "floor_indices",
            "floor_order",
            "not_above_baseline",
            "not_above_baselines",
            "rank_interval",
        ),
        "scoring.registry": (
            "FloatArray",
            "Metric",
            "ScoringError",
            "UnknownMetric",
            "compute",
            "get_metric",
            "metric",
            "metric_names",
            "per_example",
            "statistics",
        ),
        "scoring.sensitivity": ("LeaderStability", "WeightRange", "weight_ranges"),
        "scoring.shift": ("SHIFT_METHOD", "ShiftTest", "domain_shift", "shift_features"),
        "scoring.squad": ("normalize_answer",),
        "scoring.text": ("TEXT_METRICS", "sentence_chrfs"),
        "scoring.vocabulary": (
            "DEFAULT_WEIGHTS",
            "DIRECTION_ARROWS",
            "METRICS",
            "WEIGHABLE_METRICS",
            "BoardMetric",
            "figure_arrays",
            "fill_missing",
            "fill_missing_array",
            "goods_transform",
            "packed_figures",
            "rankable",
            "rankable_present",
            "unpacked_figures",
        ),
        "scoring.weights": (
            "REFERENCE_ROWS",
            "InvalidWeightsError",
            "check_dataset_weight",
            "check_weights",
            "default_dataset_weight",
            "parse_weights",
        ),
        "scoring.weighing": ("RowIntervals", "Weighed", "weigh"),
    },
)
