"""Interval ends: numpy's linear quantiles to the last bit, from one sort per column."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from scoring.percentiles import ends

VALUES = st.one_of(
    st.floats(-1e6, 1e6),
    st.sampled_from([0.0, 0.2, 0.4, 1.0]),  # ties, as resampled counts give
    st.just(np.nan),
    st.sampled_from([np.inf, -np.inf]),
)


@settings(max_examples=300, deadline=None)
@given(
    samples=arrays(
        np.float64,
        st.tuples(st.integers(1, 400), st.integers(1, 4)),
        elements=VALUES,
    ),
    level=st.one_of(st.sampled_from([0.95, 0.9, 0.5, 0.999]), st.floats(0.001, 0.999)),
)
def test_ends_are_numpys_linear_quantiles_to_the_last_bit(
    samples: np.ndarray, level: float
) -> None:
    tail = (1 - level) / 2
    with np.errstate(invalid="ignore"):  # inf - inf, in both
        expected = np.quantile(samples, [tail, 1 - tail], axis=0)
        found = ends(samples, level=level)
    assert found.shape == (2, samples.shape[1])
    assert np.array_equal(found, expected, equal_nan=True)


def test_a_column_with_nan_has_nan_ends_and_leaves_the_others() -> None:
    samples = np.array([[1.0, 2.0], [np.nan, 3.0], [2.0, 4.0]])
    found = ends(samples, level=0.5)
    assert np.isnan(found[:, 0]).all()
    assert found[:, 1].tolist() == [2.5, 3.5]
    assert not np.isnan(samples[:, 1]).any() and samples[1, 1] == 3.0  # the input kept


def test_a_boards_columns_split_over_the_cores_end_as_numpys() -> None:
    """1,000 resamples of 600 columns are sorted in parts (scoring.parallel): the same
    ends as numpy's, every column's, NaN and infinities where they are."""
    rng = np.random.default_rng(5)
    samples = rng.normal(size=(1000, 600))
    samples[rng.integers(0, 1000, 40), rng.integers(0, 600, 40)] = np.nan
    samples[:, 599] = np.inf
    samples[:3, 300] = -np.inf
    tail = (1 - 0.95) / 2  # as ends() makes it: 0.025000000000000022
    with np.errstate(invalid="ignore"):
        expected = np.quantile(samples, [tail, 1 - tail], axis=0)
    assert np.array_equal(ends(samples, level=0.95), expected, equal_nan=True)
