"""The map's convergence diagnostics, computed for all points at once, are ArviZ's."""

import numpy as np
import pytest
from arviz_stats.base import array_stats

from bayescal.bayesian.convergence import ess_bulk, ess_tail, rhat_rank


def _chains(rng, C, D):
    """Points with slow and fast AR(1) chains, chains stuck apart, heavy ties, a constant and
    a point whose chains are near-constant: what map draws look like, good and bad."""
    pts = []
    for phi in (0.0, 0.5, 0.95, 0.995):
        e = rng.normal(size=(C, D))
        x = np.empty((C, D))
        x[:, 0] = e[:, 0]
        for t in range(1, D):
            x[:, t] = phi * x[:, t - 1] + np.sqrt(1 - phi**2) * e[:, t]
        pts.append(x)
    pts.append(rng.normal(size=(C, D)) + 3.0 * np.arange(C)[:, None])  # chains that disagree
    pts.append(np.round(rng.normal(size=(C, D)), 0))  # many ties
    pts.append(np.full((C, D), 0.3))  # constant (a map pinned at an atom)
    pts.append(0.3 + 1e-9 * rng.normal(size=(C, D)))
    return np.stack(pts)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # ArviZ on the constant point
@pytest.mark.parametrize(("C", "D"), [(2, 1000), (4, 257), (1, 400)])
def test_rhat_and_ess_equal_arviz_stats_point_by_point(C, D):
    draws = _chains(np.random.default_rng(C * D), C, D)
    np.testing.assert_allclose(
        ess_bulk(draws), array_stats.ess(draws, chain_axis=1, draw_axis=2, method="bulk"), rtol=1e-10
    )
    np.testing.assert_allclose(
        ess_tail(draws),
        array_stats.ess(draws, chain_axis=1, draw_axis=2, method="tail", prob=(0.05, 0.95)),
        rtol=1e-10,
    )
    if C > 1:
        ref = array_stats.rhat(draws, chain_axis=1, draw_axis=2)
        np.testing.assert_allclose(rhat_rank(draws), ref, rtol=1e-10)
        assert rhat_rank(draws)[4] > 1.5 > 1.01 > rhat_rank(draws)[0]  # the stuck chains are flagged


def test_diagnostics_are_nan_where_draws_are_nan():
    draws = _chains(np.random.default_rng(0), 2, 100)
    draws[1, 0, 5] = np.nan
    for fn in (ess_bulk, ess_tail, rhat_rank):
        out = fn(draws)
        assert np.isnan(out[1]) and np.all(np.isfinite(np.delete(out, [1, 6, 7])))
