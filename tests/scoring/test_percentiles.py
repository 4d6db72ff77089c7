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
