"""The map's convergence diagnostics, computed for all points at once, are ArviZ's."""

import warnings

import numpy as np
import pytest
from arviz_stats.base import array_stats

from bayescal.bayesian.convergence import (
    CHECK_POINTS,
    RHAT_TARGET,
    check_points,
    ess_bulk,
    ess_tail,
    map_convergence,
    mcse_mean,
    remedy,
    rhat_rank,
    warn_convergence,
)


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
    np.testing.assert_allclose(
        mcse_mean(draws), array_stats.mcse(draws, chain_axis=1, draw_axis=2, method="mean"), rtol=1e-10
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


def _map_check(draws_cpd):
    """map_convergence on (chains, draws, points) map draws, every grid point in the data region."""
    C, D, P = draws_cpd.shape
    grid = np.linspace(-1.0, 1.0, P)
    return map_convergence(draws_cpd.reshape(C * D, P), (C, D), grid, np.array([-1.0, 1.0]), lambda t: t)


def test_the_map_check_of_draws_that_never_vary_reports_rhat_undefined():
    # every draw the same at every point (a map the data pin down, or a degenerate fit): R-hat is
    # undefined there, which the check reports as NaN and not converged, instead of raising
    grid = np.linspace(-3.0, 3.0, 50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        conv = map_convergence(np.full((400, 50), 0.3), (2, 200), grid, np.array([-2.0, 2.0]), lambda t: t)
    assert np.isnan(conv["rhat_max"]) and conv["meets_target"] is False


def test_the_check_reads_the_same_points_from_the_whole_grid_as_from_its_own_points():
    """A pilot fit's map is drawn only at the points the check reads (components="select"): the
    check must then find exactly those points again and report what it reports from the grid."""
    rng = np.random.default_rng(7)
    grid = np.linspace(-4.0, 5.0, 1024)
    region = np.array([-1.3, 2.2])
    pick = check_points(grid, region)
    assert pick.size == CHECK_POINTS
    assert np.all((grid[pick] >= region[0]) & (grid[pick] <= region[1]))
    np.testing.assert_array_equal(check_points(grid[pick], region), np.arange(CHECK_POINTS))
    draws = rng.normal(size=(2 * 300, grid.size)).cumsum(axis=0) / 30.0  # slow chains: a check with content
    whole = map_convergence(draws, (2, 300), grid, region, lambda t: t)
    assert whole == map_convergence(draws[:, pick], (2, 300), grid[pick], region, lambda t: t)
    outside = np.array([9.0, 10.0])  # no grid point in the region: the check reads the whole grid's spread
    np.testing.assert_array_equal(check_points(grid[check_points(grid, outside)], outside), np.arange(CHECK_POINTS))


def test_meets_target_only_when_every_point_has_small_rhat_and_enough_effective_draws():
    rng = np.random.default_rng(4)
    good = _map_check(rng.normal(size=(4, 1000, 8)))
    assert good["meets_target"] and good["rhat_max"] <= RHAT_TARGET
    apart = rng.normal(size=(4, 1000, 8))
    apart[1, :, 3] += 0.5  # one chain off at one point
    assert not _map_check(apart)["meets_target"]
    few = rng.normal(size=(4, 60, 8))  # well mixed but 240 draws: too few for ESS 400
    assert not _map_check(few)["meets_target"]


def test_the_map_check_reports_where_the_mean_map_carries_the_most_monte_carlo_error():
    """An autocorrelated point's mean is estimated from fewer effective draws, so its Monte Carlo
    standard error, sd / sqrt(ESS), is the largest, and it is reported with its score."""
    rng = np.random.default_rng(5)
    draws = rng.normal(size=(2, 1000, 8))
    for t in range(1, 1000):  # point 5: an AR(1) chain with phi = 0.99, same spread
        draws[:, t, 5] = 0.99 * draws[:, t - 1, 5] + np.sqrt(1 - 0.99**2) * draws[:, t, 5]
    conv = _map_check(draws)
    assert conv["mcse_mean_max_score"] == pytest.approx(np.linspace(-1.0, 1.0, 8)[5])
    assert conv["mcse_mean_max"] > 3 * (1.0 / np.sqrt(2000))  # iid draws would give about 0.022


def test_warning_names_the_long_trajectories_for_the_sampler_and_more_draws_otherwise():
    conv = {"rhat_max": 1.3, "rhat_max_score": 0.2, "chain_gap_at_rhat_max": 0.05, "band_width_at_rhat_max": 0.1}
    conv |= {"ess_bulk_min": 8.0, "ess_bulk_median": 30.0, "ess_tail_min": 20.0, "meets_target": False}
    gibbs = {"gaussian": {"class_0": {}, "class_1": {}, "map": conv}, "map": conv, "divergences": 0}
    assert remedy() == ({"hmc_steps": 300}, {"draws": 1000})
    with pytest.warns(UserWarning, match=r"draws=1000, route_options=\{'hmc_steps': 300\} runs Hamiltonian moves"):
        warn_convergence(gibbs, "gibbs")
    # the fit's own options are kept beside the remedy's, but not the numpy backend, on which the moves do not run
    own = {"thin": 6, "backend": "numpy"}
    with pytest.warns(UserWarning, match=r"route_options=\{'thin': 6, 'hmc_steps': 300\} runs Hamiltonian"):
        warn_convergence(gibbs, "gibbs", own)
    assert own == {"thin": 6, "backend": "numpy"}
    nuts = {"gaussian": {"class_0": {}, "class_1": {}, "map": conv}, "map": conv, "divergences": 0}
    with pytest.warns(UserWarning, match="More draws, tune and chains"):
        warn_convergence(nuts, "nuts")
    quiet = {**gibbs, "map": conv | {"rhat_max": 1.05}}  # below MAP_RHAT_WARN: recorded, not warned
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_convergence(quiet, "gibbs")


def test_one_sampling_chain_with_few_effective_draws_warns():
    """R-hat is undefined with one chain, so a single badly mixing chain (bulk ESS 1.7 of 30
    draws) once fitted silently where two chains warned of R-hat 1.55."""
    conv = {"rhat_max": float("nan"), "rhat_max_score": float("nan"), "chain_gap_at_rhat_max": float("nan")}
    conv |= {"band_width_at_rhat_max": float("nan"), "ess_bulk_min": 12.0, "ess_bulk_median": 40.0}
    conv |= {"ess_tail_min": 30.0, "meets_target": False}
    one_chain = {"map": conv, "divergences": 0}
    for route in ("gibbs", "nuts"):
        with pytest.warns(UserWarning, match="One chain cannot show .* bulk ESS of only 12"):
            warn_convergence(one_chain, route)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_convergence(one_chain, "advi")  # independent draws of an approximation: no chains to compare
        warn_convergence({**one_chain, "map": conv | {"ess_bulk_min": 150.0}}, "gibbs")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The chains disagree on the calibration map:UserWarning")
def test_the_named_remedy_makes_a_compressed_fit_converge():
    """The refit the convergence warning names meets R-hat <= 1.01 and ESS >= 400 where
    the default fit does not (the README's monotone truth, 3,000 scores; about a minute)."""
    from bayescal import DPMCalibrator

    rng = np.random.default_rng(0)
    y = (rng.random(3000) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, y.size), rng.beta(2, 5, y.size))
    default = DPMCalibrator(random_state=0).fit(s, y)
    assert default.idata_.attrs["compressed"] and not default.diagnostics_["map"]["meets_target"]
    options, params = remedy()
    remedied = DPMCalibrator(random_state=0, route_options=options, **params).fit(s, y)
    assert remedied.diagnostics_["map"]["meets_target"], remedied.diagnostics_["map"]
    assert remedied.diagnostics_["map"]["rhat_max"] <= RHAT_TARGET
