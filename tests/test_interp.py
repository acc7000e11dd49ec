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


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("kind", ["uniform", "clustered", "ties", "two", "grid"])
def test_bucketed_search_and_interp_match_numpy(kind, side):
    from bayescal._interp import interp_sorted, search_sorted

    rng = np.random.default_rng(len(kind))
    knots = {
        "uniform": np.sort(rng.uniform(-5, 5, 300)),
        "clustered": np.sort(np.concatenate([rng.normal(0, 1e-6, 200), rng.uniform(-50, 50, 50)])),
        "ties": np.sort(rng.integers(0, 20, 300).astype(float)),
        "two": np.array([0.25, 0.75]),
        "grid": np.linspace(-0.3, 0.7, 101),
    }[kind]  # bucket starts fall on knots
    points = np.concatenate(
        [
            rng.uniform(knots[0] - 1, knots[-1] + 1, 20000),
            knots,
            np.nextafter(knots, -np.inf),
            np.nextafter(knots, np.inf),
        ]
    )
    np.testing.assert_array_equal(search_sorted(knots, points, side), np.searchsorted(knots, points, side=side))
    strict = np.unique(knots)
    values = rng.normal(size=strict.size)
    np.testing.assert_allclose(
        interp_sorted(points, strict, values), np.interp(points, strict, values), rtol=0, atol=1e-12
    )


def test_step_function_takes_its_knot_values_on_the_knots():
    from bayescal._interp import step_sorted

    rng = np.random.default_rng(3)
    knots = np.sort(rng.uniform(0, 1, 50))
    between, on_knot = rng.normal(size=51), rng.normal(size=50)
    points = np.concatenate([rng.uniform(-0.5, 1.5, 5000), knots, np.nextafter(knots, 2.0)])
    j = np.searchsorted(knots, points)
    want = np.where(np.isin(points, knots), on_knot[np.minimum(j, 49)], between[j])
    np.testing.assert_array_equal(step_sorted(points, knots, between, on_knot), want)
    np.testing.assert_array_equal(step_sorted(points[:10], knots, between, on_knot), want[:10])  # numpy route
