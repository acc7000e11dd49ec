"""The compiled regular-grid interpolation behind KDE and DPM prediction."""

import numpy as np
import pytest

from bayescal._interp import interp_regular


@pytest.mark.parametrize("n", [2, 3, 1024])
def test_matches_numpy_interp_inside_and_beyond_the_grid(n):
    rng = np.random.default_rng(n)
    start, step = -3.7, 0.013
    values = rng.normal(size=(3, n))
    grid = start + step * np.arange(n)
    points = np.concatenate([rng.uniform(start - 1.0, grid[-1] + 1.0, 5000), grid, [start, grid[-1]]])
    got = interp_regular(points, start, step, values)
    want = np.array([np.interp(points, grid, v) for v in values])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(interp_regular(points, start, step, values[1]), got[1])


def test_input_is_not_modified_and_order_does_not_matter():
    values = np.linspace(0.0, 1.0, 11) ** 2
    points = np.array([0.95, 0.05, 0.5, 0.05])
    before = points.copy()
    out = interp_regular(points, 0.0, 0.1, values)
    np.testing.assert_array_equal(points, before)
    np.testing.assert_allclose(out, [0.905, 0.005, 0.25, 0.005], atol=1e-15)
