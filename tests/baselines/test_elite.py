"""ELiTE and its trend-filtering solver: optimality against direct solves, published-data checks, contract."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import NotFittedError

import bayescal
from bayescal.baselines.elite import ELiTE
from bayescal.baselines.trend_filter import (
    fused_lasso_dp,
    lambda_max,
    objective,
    trend_filter,
    trend_filter_path,
    weighted_line,
)
from bayescal.data import ScoreSummary
from bayescal.metrics import ece


def second_difference(x: np.ndarray) -> np.ndarray:
    """Dense (n-2, n) second divided difference: changes of slope."""
    d1 = np.diff(np.eye(x.size), axis=0) / np.diff(x)[:, None]
    return np.diff(d1, axis=0)


def dense_trend_filter(x, y, w, lam):
    """Reference solve: the dual box QP max_z -1/2 z'DW^-1D'z + z'Dy, |z| <= lam; beta = y - W^-1 D'z."""
    D = second_difference(x)
    Dy = D @ y

    def f(z):
        v = D.T @ z / w
        return 0.5 * (D.T @ z) @ v - z @ Dy, D @ v - Dy

    res = minimize(
        f,
        np.zeros(x.size - 2),
        jac=True,
        method="L-BFGS-B",
        bounds=[(-lam, lam)] * (x.size - 2),
        options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 50000, "maxcor": 50},
    )
    return y - D.T @ res.x / w


def piecewise_truth(s):
    return np.interp(s, [0.0, 0.3, 0.6, 1.0], [0.05, 0.2, 0.8, 0.9])


# ---- solver --------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 8, 40])
@pytest.mark.parametrize("lam", [0.05, 0.5, 3.0])
def test_fused_lasso_dp_satisfies_kkt(rng, n, lam):
    # optimality certificate: z = cumsum(y - theta) is the dual; |z| <= lam, z = -lam * sign(jump) at jumps, z_n = 0
    y = rng.normal(size=n)
    theta = fused_lasso_dp(y, lam)
    z = np.cumsum(y - theta)
    assert abs(z[-1]) < 1e-10
    assert np.all(np.abs(z[:-1]) <= lam + 1e-10)
    jumps = np.diff(theta)
    at = np.abs(jumps) > 1e-12
    np.testing.assert_allclose(z[:-1][at], -lam * np.sign(jumps[at]), atol=1e-10)


def test_lambda_max_matches_kim_formula_and_its_weighted_version(rng):
    n = 30
    y = (rng.uniform(size=n) < 0.4).astype(float)
    x = np.arange(n, dtype=float)
    D = second_difference(x)
    kim = np.abs(np.linalg.solve(D @ D.T, D @ y)).max()  # unweighted, equally spaced (Kim et al. 2009)
    assert lambda_max(x, y, np.ones(n)) == pytest.approx(kim, rel=1e-7)
    # weighted, unequally spaced: ||(DD')^-1 D W (y - beta_LS)||_inf
    x = np.sort(rng.uniform(0, 5, n))
    w = rng.integers(1, 6, n).astype(float)
    D = second_difference(x)
    a, b = weighted_line(x, y, w)
    dense = np.abs(np.linalg.solve(D @ D.T, D @ (w * (y - a - b * x)))).max()
    assert lambda_max(x, y, w) == pytest.approx(dense, rel=1e-7)


def test_lambda_max_is_the_smallest_penalty_giving_a_line(rng):
    n = 25
    x = np.sort(rng.uniform(0, 1, n))
    y = (rng.uniform(size=n) < piecewise_truth(x)).astype(float)
    w = rng.integers(1, 4, n).astype(float)
    lm = lambda_max(x, y, w)
    a, b = weighted_line(x, y, w)
    at_max = trend_filter(x, y, w, lm, tol=1e-10, max_iter=100000)
    assert at_max.n_knots == 0
    np.testing.assert_allclose(at_max.beta, a + b * x, atol=1e-8)
    below = trend_filter(x, y, w, 0.9 * lm, tol=1e-10, max_iter=100000)
    assert below.n_knots >= 1
    assert np.abs(np.diff(np.diff(below.beta) / np.diff(x))).max() > 1e-6


@pytest.mark.parametrize("frac", [0.5, 0.1, 0.01])
def test_trend_filter_matches_direct_solve(rng, frac):
    n = 12
    x = np.sort(rng.uniform(0, 3, n))
    y = (rng.uniform(size=n) < 0.5).astype(float)
    w = rng.integers(1, 5, n).astype(float)
    lam = frac * lambda_max(x, y, w)
    fit = trend_filter(x, y, w, lam, tol=1e-11, max_iter=200000)
    ref = dense_trend_filter(x, y, w, lam)
    assert fit.converged
    np.testing.assert_allclose(fit.beta, ref, atol=1e-6)
    assert objective(x, y, w, fit.beta, lam) <= objective(x, y, w, ref, lam) + 1e-6
    # dense KKT certificate: lam D'z = W(y - beta) with |z| <= 1 and z = sign(D beta) at the knots
    D = second_difference(x)
    z, *_ = np.linalg.lstsq(lam * D.T, w * (y - fit.beta), rcond=None)
    np.testing.assert_allclose(lam * D.T @ z, w * (y - fit.beta), atol=1e-6)
    assert np.all(np.abs(z) <= 1 + 1e-6)
    knots = np.abs(D @ fit.beta) > 1e-6
    np.testing.assert_allclose(z[knots], np.sign(D @ fit.beta)[knots], atol=1e-6)


def test_trend_filter_rejects_bad_positions():
    with pytest.raises(ValueError, match="strictly increasing"):
        trend_filter(np.array([0.0, 1.0, 1.0, 2.0]), np.zeros(4), np.ones(4), 1.0)
    with pytest.raises(ValueError, match="at least 3"):
        trend_filter(np.array([0.0, 1.0]), np.zeros(2), np.ones(2), 1.0)


_X6, _Y6, _W6 = np.arange(6.0), np.array([0.0, 1.0, 0.0, 1.0, 1.0, 0.0]), np.ones(6)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: trend_filter(_X6, _Y6, np.zeros(6), 0.1), "w sums to zero"),  # was all NaN
        (lambda: trend_filter(_X6, _Y6, np.r_[-1.0, np.ones(5)], 0.1), "w has 1 negative value"),  # non-convex
        (lambda: trend_filter(_X6, _Y6, np.r_[0.0, np.ones(5)], 0.1), "w has 1 zero value.*positive weights"),
        (lambda: trend_filter(_X6, _Y6, np.r_[np.nan, np.ones(5)], 0.1), "w has NaN or infinite values"),
        (lambda: trend_filter(_X6, _Y6, _W6, np.inf), "lam=inf must be finite"),  # was all NaN
        (lambda: trend_filter(_X6, _Y6, _W6, 0.0), r"lam=0.0 must lie in \(0, inf\)"),
        (lambda: trend_filter(_X6, _Y6, np.ones(5), 0.1), "w has 5 values but there are 6"),  # a broadcast error
        (lambda: trend_filter(_X6, _Y6[:5], _W6, 0.1), "x has 6, y has 5"),
        (lambda: trend_filter(_X6, np.r_[np.nan, _Y6[1:]], _W6, 0.1), "y has 1 NaN value"),
        (lambda: lambda_max(_X6[:2], _Y6[:2], _W6[:2]), "x has 2 position.*at least 3"),  # a numpy reduction error
        (lambda: trend_filter_path(_X6, _Y6, _W6, [1.0, np.inf]), "lambdas has 1 infinite value"),
        (lambda: trend_filter_path(_X6, _Y6, _W6, [1.0, -1.0]), r"lambdas has 1 value\(s\) <= 0"),
        (lambda: objective(_X6, _Y6, _W6, _Y6[:5], 0.1), "x has 6, beta has 5"),
        (lambda: fused_lasso_dp(_Y6, -1.0), r"lam=-1.0 must lie in \[0, inf\)"),
    ],
)
def test_trend_filter_functions_refuse_bad_input_by_name(call, match):
    """The exported solvers check their input where it comes in: silent NaN fits, a non-convex
    problem solved as if convex, and numpy's broadcast or reduction errors became these messages."""
    with pytest.raises(ValueError, match=match):
        call()


# ---- ELiTE on data with known truth and on the authors' data -------------------------------


def test_beats_isotonic_on_a_piecewise_linear_truth():
    grid = np.linspace(0.01, 0.99, 400)
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        s = rng.uniform(0, 1, 2000)
        y = (rng.uniform(size=s.size) < piecewise_truth(s)).astype(int)
        elite = ELiTE().fit(s, y)
        iso = bayescal.make_calibrator("isotonic").fit(s, y)
        mae_elite = np.abs(elite.predict_proba(grid)[:, 1] - piecewise_truth(grid)).mean()
        mae_iso = np.abs(iso.predict_proba(grid)[:, 1] - piecewise_truth(grid)).mean()
        assert mae_elite < mae_iso
        assert mae_elite < 0.03


def test_reference_svm_ece_at_most_isotonic(reference_dir):
    d = pd.read_csv(reference_dir / "naeini_quadratic_svm_scores.csv")
    tr, te = d[d.split == "train"], d[d.split == "test"]
    elite = ELiTE().fit(tr.score.to_numpy(), tr.label.to_numpy())
    iso = bayescal.make_calibrator("isotonic").fit(tr.score.to_numpy(), tr.label.to_numpy())
    e_elite = ece(te.label, elite.predict_proba(te.score.to_numpy())[:, 1], strategy="papers")
    e_iso = ece(te.label, iso.predict_proba(te.score.to_numpy())[:, 1], strategy="papers")
    assert e_elite <= e_iso
    assert e_elite < ece(te.label, te.score, strategy="papers")  # improves on the raw scores (0.0495)


def test_linear_svm_scores_of_the_simulated_data(reference_dir):
    # the issue's bar for BBQ on this data (authors' BBQ: ECE 0.0438, AUC 0.8585); isotonic gets ECE 0.33
    from sklearn.metrics import roc_auc_score
    from sklearn.svm import SVC

    d = pd.read_csv(reference_dir / "naeini2014_simulated.csv")
    tr, te = d[d.split == "train"], d[d.split == "test"]
    svm = SVC(kernel="linear").fit(tr[["x1", "x2"]], tr.y)
    s_tr = 1 / (1 + np.exp(-svm.decision_function(tr[["x1", "x2"]])))
    s_te = 1 / (1 + np.exp(-svm.decision_function(te[["x1", "x2"]])))
    p = ELiTE().fit(s_tr, tr.y.to_numpy()).predict_proba(s_te)[:, 1]
    assert ece(te.y, p, strategy="papers") <= 0.06
    assert roc_auc_score(te.y, p) >= 0.83


# ---- the ensemble --------------------------------------------------------------------------


@pytest.fixture
def sim():
    rng = np.random.default_rng(7)
    s = rng.uniform(0, 1, 800)
    y = (rng.uniform(size=s.size) < piecewise_truth(s)).astype(int)
    return s, y


def test_path_and_weights(sim):
    m = ELiTE().fit(*sim)
    assert m.lambdas_.size == m.dof_.size == m.aicc_.size == m.model_weights_.size == 50
    np.testing.assert_allclose(m.lambdas_[-1] / m.lambdas_[0], 1e-4)
    assert m.dof_[0] == 2  # lambda_max gives a straight line
    assert np.all(m.dof_ >= 2)
    assert m.model_weights_.sum() == pytest.approx(1.0)
    best = np.argmin(m.aicc_)
    assert m.model_weights_[best] == m.model_weights_.max()
    sel = ELiTE(average=False).fit(*sim)
    assert sel.model_weights_[best] == 1.0


def test_aicc_uses_clipped_bernoulli_likelihood():
    # labels exactly on a line: lambda_max = 0, one model; its AICc is checkable by hand
    s = np.array([0.2, 0.2, 0.5, 0.5, 0.8, 0.8])
    y = np.array([0, 0, 0, 1, 1, 1])
    m = ELiTE(clip_eps=1e-3).fit(s, y)
    p = np.clip([0.0, 0.5, 1.0], 1e-3, 1 - 1e-3)
    loglik = 2 * (np.log(1 - p[0]) + np.log(p[2])) + np.log(p[1]) + np.log(1 - p[1])
    k, n = 2, 6
    assert m.aicc_[0] == pytest.approx(-2 * loglik + 2 * k + 2 * k * (k + 1) / (n - k - 1))
    # interpolation is linear on the working (logit) scale between the training scores
    mid = np.interp(np.log(0.3 / 0.7), np.log([0.25, 1.0]), [0.0, 0.5])
    np.testing.assert_allclose(m.predict_proba([0.2, 0.3, 0.8])[:, 1], [0.0, mid, 1.0], atol=1e-12)


def test_degenerate_inputs():
    one = ELiTE().fit(np.full(6, 0.3), [0, 1, 1, 0, 1, 1])
    np.testing.assert_allclose(one.predict_proba([0.1, 0.3, 0.9])[:, 1], 4 / 6)
    two = ELiTE().fit([0.2, 0.2, 0.2, 0.7, 0.7], [0, 0, 1, 1, 1])
    np.testing.assert_allclose(two.predict_proba([0.2, 0.7])[:, 1], [1 / 3, 1.0])


def test_constant_extrapolation(sim):
    m = ELiTE().fit(*sim)
    lo, hi = sim[0].min(), sim[0].max()
    p = m.predict_proba([lo, lo / 10, hi, 1 - (1 - hi) / 10])[:, 1]
    assert p[0] == p[1] and p[2] == p[3]


def test_grouping_close_to_exact():
    rng = np.random.default_rng(3)
    s = rng.uniform(0, 1, 3000)
    y = (rng.uniform(size=s.size) < piecewise_truth(s)).astype(int)
    grid = np.linspace(0.02, 0.98, 200)
    exact = ELiTE(max_points=None).fit(s, y)
    grouped = ELiTE(max_points=500).fit(s, y)
    assert exact.nodes_t_.size == 3000 and grouped.nodes_t_.size == 500
    assert np.abs(exact.predict_proba(grid)[:, 1] - grouped.predict_proba(grid)[:, 1]).max() < 0.03


# decision scores 100 + k ulp: more distinct scores than max_points, packed so closely that a
# group's weighted mean used to round onto (or below) the previous node (the audit's e4, e5)
ULP_SCORES = 100.0 + np.spacing(100.0) * np.arange(9)
PACKED = {
    "weighted": (ULP_SCORES[:8], [0, 1, 0, 1, 0, 1, 1, 0], [0.7, 0.1, 3.0, 0.3, 0.1, 0.3, 1.0, 0.7], 5),
    "tie counts": (
        np.repeat(ULP_SCORES, [4, 5, 3, 4, 5, 2, 1, 2, 2]),
        np.resize([0, 1, 1], 28),
        None,
        8,
    ),
}


@pytest.mark.parametrize("case", PACKED)
def test_grouped_nodes_stay_in_their_group_and_increase(case, tmp_path):
    t, y, w, max_points = PACKED[case]
    m = ELiTE(score_kind="decision", max_points=max_points).fit(t, y, sample_weight=w)
    assert m.nodes_t_.size == max_points
    assert np.all(np.diff(m.nodes_t_) > 0)
    # each node lies within the span of its group of distinct scores (groups as in _group)
    u = np.unique(t)
    bounds = np.linspace(0, u.size, max_points + 1).round().astype(int)
    assert np.all((m.nodes_t_ >= u[bounds[:-1]]) & (m.nodes_t_ <= u[bounds[1:] - 1]))
    # every node's fitted value is reached, and the model saves and loads
    np.testing.assert_array_equal(m.predict_proba(m.nodes_t_)[:, 1], m.nodes_p_)
    m.save(tmp_path / "elite.nc")
    back = ELiTE.load(tmp_path / "elite.nc")
    np.testing.assert_array_equal(back.nodes_t_, m.nodes_t_)
    np.testing.assert_array_equal(back.predict_proba(t), m.predict_proba(t))


def test_warns_when_admm_stops_at_max_iter(sim):
    with pytest.warns(UserWarning, match=r"stopped at max_iter=3 before .* tol=0.0001 for \d+ of 50 penalties"):
        ELiTE(max_iter=3).fit(*sim)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default cap is far above what these data need
        m = ELiTE().fit(*sim)
    assert m.n_iter_.max() < 2000


# ---- contract ------------------------------------------------------------------------------


def test_contract_outputs(sim):
    s, y = sim
    s0, y0 = s.copy(), y.copy()
    m = ELiTE().fit(s, y)
    np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(y, y0)
    proba = m.predict_proba(np.r_[0.0, s, 1.0])
    assert proba.shape == (s.size + 2, 2)
    assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    cmap = m.calibration_map(50)
    assert cmap.dims == ("chain", "draw", "score") and cmap.shape == (1, 1, 50)
    again = ELiTE().fit(s, y)
    np.testing.assert_array_equal(again.predict_proba(s), m.predict_proba(s))


def test_integer_weights_equal_repeated_rows(rng):
    s = rng.uniform(0, 1, 300)
    y = (rng.uniform(size=s.size) < piecewise_truth(s)).astype(int)
    k = rng.integers(1, 4, s.size)
    weighted = ELiTE().fit(s, y, sample_weight=k)
    repeated = ELiTE().fit(np.repeat(s, k), np.repeat(y, k))
    grid = np.linspace(0, 1, 101)
    np.testing.assert_allclose(weighted.predict_proba(grid), repeated.predict_proba(grid), atol=1e-10)
    np.testing.assert_array_equal(weighted.dof_, repeated.dof_)


def test_decision_scores_and_summary(sim):
    s, y = sim
    d = np.log(s / (1 - s))
    prob = ELiTE().fit(s, y)
    dec = ELiTE(score_kind="decision").fit(d, y)
    np.testing.assert_allclose(dec.predict_proba(d), prob.predict_proba(s), atol=1e-9)
    summ = ELiTE().fit(ScoreSummary.from_arrays(s, y, n_bins=256))
    grid = np.linspace(0.05, 0.95, 50)
    assert np.abs(summ.predict_proba(grid)[:, 1] - prob.predict_proba(grid)[:, 1]).max() < 0.1


def test_save_load_roundtrip(sim, tmp_path):
    m = ELiTE().fit(*sim)
    m.save(tmp_path / "elite.nc")
    back = ELiTE.load(tmp_path / "elite.nc")
    np.testing.assert_array_equal(back.predict_proba(sim[0]), m.predict_proba(sim[0]))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_lambdas": 0}, "n_lambdas"),
        ({"lambda_min_ratio": 1.5}, "lambda_min_ratio"),
        ({"clip_eps": 0.0}, "clip_eps"),
        ({"max_points": 2}, "max_points"),
        ({"tol": -1.0}, "tol"),
        ({"max_iter": 0}, "max_iter"),
        ({"clip_eps": None}, "clip_eps=None must be a real number"),
        ({"tol": "x"}, "tol='x' must be a real number"),
        ({"lambda_min_ratio": "1e-4"}, "lambda_min_ratio='1e-4' must be a real number"),
        ({"average": "no"}, "average='no' must be True or False"),
        ({"n_lambdas": True}, "n_lambdas=True must be an integer"),
        ({"tol": np.inf}, "tol=inf must be finite"),
    ],
)
def test_bad_params(sim, params, match):
    with pytest.raises(ValueError, match=match):
        ELiTE(**params).fit(*sim)


def test_bad_inputs_and_unfitted(sim):
    s, y = sim
    with pytest.raises(NotFittedError):
        ELiTE().predict_proba(s)
    with pytest.raises(ValueError):
        ELiTE().fit(np.r_[s[:-1], np.nan], y)
    with pytest.raises(ValueError):
        ELiTE().fit(s, y[:-1])
    with pytest.raises(ValueError):
        ELiTE().fit(s, np.zeros_like(y))
    with pytest.raises(ValueError):
        ELiTE().fit(s + 1.0, y)
