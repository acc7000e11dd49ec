"""Property tests over every registered calibrator (issue "Reliability", part 1).

Every test is parametrised over ``bayescal.calibrators()``, so a new calibrator is tested
by being registered. Class attributes choose which properties apply: ``monotone``,
``supports_weights``, ``feature_aware`` (features are generated and passed as ``X=``),
``_min_samples`` / ``_min_per_class`` (the smallest legal data), and whether the calibrator
has a ``random_state`` / ``random_seed`` parameter (a *stochastic* calibrator).

Properties (the number after each is the count used in the report):

1. outputs: ``predict_proba`` finite, in [0, 1], rows summing to 1, shape ``(m, 2)``, the
   same for scores given as ``(m,)``, ``(m, 1)`` or a list;
   ``predict`` shape ``(m,)`` with values in ``classes_``; the calibration map
   ``(chain, draw, score)`` finite in [0, 1]; on arbitrary legal data (hypothesis);
2. monotone calibrators are non-decreasing in the score;
3. row order does not change the fit (to 1e-7, the tolerance of the iterative solvers, for deterministic calibrators; a
   stochastic one draws its random split / sampler stream per row position, so a
   permutation gives another draw of the same procedure: the Bayesian map then stays
   within its credible band, and the random-split ones (scaling_binning, mbct) are equal
   in distribution over seeds: fits of the two kinds are no further apart on average than
   fits of one kind with different seeds, x 1.25 + 0.01);
4. integer ``sample_weight`` (0 to 4) equals repeating rows, 0 meaning dropping the row
   (tolerances as in 3; a random split sends a row of weight k to one side whole, while
   its k copies are split one by one, so for scaling_binning and mbct the weighted fit is
   checked to be, on average over seeds, closer to the repeated-rows fit than the
   unweighted fit is);
5. predicting (``predict_proba``, ``predict``, ``calibration_map``, ``credible_band``)
   does not change a fitted calibrator (every attribute compared before and after), and
   each row's prediction does not depend on the other rows of the call (order, batch);
6. the same seed gives identical results; for the Bayesian calibrator two seeds give
   posterior-mean maps within the credible band of each other;
7. degenerate but legal data (all scores equal, two distinct scores, 99.9 % of one class,
   scores exactly 0 and 1, heavy ties, N at ``_min_samples``) gives finite probabilities
   in [0, 1] that are sensible (close to the class frequency where the data pin it), or a
   ``ValueError`` with a message; never NaN;
8. inference failures of the Bayesian calibrator (forced with monkeypatch): a NaN ELBO is
   retried, then reported with a clear error and no half-fitted state; chains that disagree
   on the calibration map, or sampler divergences, warn with the numbers; well-mixed draws
   do not warn.

Hypothesis runs the ``"ci"`` profile registered here, applied to each test rather than loaded
globally so other modules keep their own settings (few examples, no deadline,
derandomised so CI is reproducible); set ``BAYESCAL_HYPOTHESIS_PROFILE=dev`` for a longer
search. The DPM calibrator runs with small sampler settings and fewer examples.
"""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest
import xarray as xr
from _calibrators import FAST_PARAMS, SEED_PARAMS, build, features, simulated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bayescal
from bayescal._registry import get_calibrator_class

settings.register_profile(
    "ci",
    max_examples=8,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
PROFILE = settings.get_profile(os.environ.get("BAYESCAL_HYPOTHESIS_PROFILE", "ci"))
# the Bayesian calibrator costs ~0.3 s a fit: a third of the examples
SLOW_PROFILE = settings(PROFILE, max_examples=max(2, PROFILE.max_examples // 3))

# the small sampler settings below leave the DPM's chains short: its convergence warning is
# expected here (section 8 tests the warning itself)
pytestmark = pytest.mark.filterwarnings("ignore:The chains disagree on the calibration map:UserWarning")

NAMES = bayescal.calibrators()


def _cls(name: str) -> type:
    return get_calibrator_class(name)


def _params(name: str) -> dict:
    return _cls(name)().get_params()


def _stochastic(name: str) -> bool:
    return any(k in _params(name) for k in SEED_PARAMS)


def _bayesian(name: str) -> bool:
    return issubclass(_cls(name), bayescal.BayesianCalibrator)


def fit(est, s, y, w=None, X=None):
    return est.fit(s, y, w, **({"X": X} if est.feature_aware else {}))


def proba(est, s, X=None):
    return est.predict_proba(s, **({"X": X} if est.feature_aware else {}))


# Query points: the ends of the probability scale, values next to them, and a grid.
QUERY = np.r_[0.0, 5e-324, 1e-300, 1e-12, np.linspace(0.0, 1.0, 41), 1 - 1e-12, np.nextafter(1.0, 0.0), 1.0]


@st.composite
def legal_data(draw, name: str, max_n: int = 60, score_kind: str = "probability"):
    """Arbitrary legal calibration data for calibrator ``name``.

    Scores are hypothesis floats in [0, 1] (so exact 0 and 1, subnormals and repeats
    appear), or Beta draws, or Beta draws rounded to one decimal (heavy ties). Labels are
    Bernoulli(score) with at least ``_min_per_class`` of each class. With
    ``score_kind="decision"`` the same values are mapped to decision values of any size:
    ``(s - 1/2) * 10**e`` with ``e`` from -3 to 8.
    """
    cls = _cls(name)
    per_class = cls._min_per_class
    n = draw(st.integers(max(cls._min_samples, 2 * per_class), max_n))
    kind = draw(st.sampled_from(["floats", "beta", "ties"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if kind == "floats":
        s = np.array(draw(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=n, max_size=n)))
    else:
        s = rng.beta(0.7, 0.7, n)
        if kind == "ties":
            s = np.round(s, 1)
    y = (rng.random(n) < s).astype(int)
    if score_kind == "decision":
        s = (s - 0.5) * 10.0 ** draw(st.integers(-3, 8))
    idx = rng.permutation(n)
    y[idx[:per_class]] = 0
    y[idx[per_class : 2 * per_class]] = 1
    return s, y, features(n, seed)


def assert_valid_output(est, s_query, X=None):
    p = proba(est, s_query, X)
    m = len(s_query)
    assert p.shape == (m, 2)
    assert np.all(np.isfinite(p)), f"non-finite probabilities at {s_query[~np.isfinite(p).all(axis=1)]}"
    assert p.min() >= 0.0 and p.max() <= 1.0
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # a column (m, 1) and a list are the same scores
    np.testing.assert_array_equal(proba(est, s_query[:, None], X), p)
    np.testing.assert_array_equal(proba(est, s_query.tolist(), X), p)
    labels = est.predict(s_query, **({"X": X} if est.feature_aware else {}))
    assert labels.shape == (m,) and set(np.unique(labels)) <= set(est.classes_.tolist())
    if not est.feature_aware:
        cmap = est.calibration_map(np.linspace(0.0, 1.0, 11))
        assert cmap.dims == ("chain", "draw", "score") and cmap.sizes["score"] == 11
        assert np.all(np.isfinite(cmap.values)) and cmap.min() >= 0 and cmap.max() <= 1
    return p


def fit_or_clear_error(est, s, y, w=None, X=None) -> bool:
    """Fit; a ValueError must carry a message. Returns whether the fit succeeded."""
    try:
        fit(est, s, y, w, X)
    except ValueError as exc:
        assert len(str(exc)) > 20, f"unclear error: {exc!r}"
        return False
    return True


def _profile(name: str):
    return SLOW_PROFILE if _bayesian(name) else PROFILE


# ---- 1. outputs on arbitrary legal data ---------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_outputs_are_probabilities_on_arbitrary_legal_data(name):
    @_profile(name)
    @given(legal_data(name))
    def check(data):
        s, y, X = data
        est = build(name)
        if not fit_or_clear_error(est, s, y, X=X):
            # only a documented limitation may refuse legal data: the Bayesian mixture needs
            # two distinct continuous scores per class
            assert _bayesian(name), f"{name} refused legal data"
            return
        query = np.r_[QUERY, s]
        Xq = np.r_[features(QUERY.size, 1), X] if est.feature_aware else None
        assert_valid_output(est, query, Xq)

    check()


QUERY_DECISION = np.r_[-1e300, -1e8, -30.0, np.linspace(-3, 3, 13), 30.0, 1e8, 1e300]


@pytest.mark.parametrize("name", [n for n in NAMES if "score_kind" in _params(n)])
def test_outputs_are_probabilities_for_decision_scores_of_any_size(name):
    @_profile(name)
    @given(legal_data(name, score_kind="decision"))
    def check(data):
        s, y, X = data
        est = build(name, score_kind="decision")
        if not fit_or_clear_error(est, s, y, X=X):
            assert _bayesian(name), f"{name} refused legal data"
            return
        query = np.r_[QUERY_DECISION, s]
        Xq = np.r_[features(QUERY_DECISION.size, 1), X] if est.feature_aware else None
        p = proba(est, query, Xq)
        assert p.shape == (query.size, 2) and np.all(np.isfinite(p)), f"non-finite at {query[~np.isfinite(p[:, 1])]}"
        assert p.min() >= 0 and p.max() <= 1
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        if _cls(name).monotone:
            order = np.argsort(query, kind="stable")
            assert np.all(np.diff(p[order, 1]) >= -1e-12)

    check()


# ---- 2. monotone ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in NAMES if _cls(n).monotone])
def test_monotone_calibrators_are_non_decreasing(name):
    @_profile(name)
    @given(legal_data(name, max_n=80))
    def check(data):
        s, y, _ = data
        est = fit(build(name), s, y)
        grid = np.unique(np.r_[QUERY, s, np.linspace(0, 1, 1001)])
        p = est.predict_proba(grid)[:, 1]
        assert np.all(np.diff(p) >= -1e-12), f"decreases by {-np.diff(p).min():.3g}"

    check()


def _band_halfwidth(est, grid) -> np.ndarray:
    band = est.credible_band(grid, ci_prob=0.95)
    return (band.sel(ci_bound="upper") - band.sel(ci_bound="lower")).values / 2


def _mean_distance(pa: list, pb: list) -> float:
    """Mean absolute difference between predictions of two lists of fits (pairs of distinct fits)."""
    return float(np.mean([np.mean(np.abs(a - b)) for a in pa for b in pb if a is not b]))


def _assert_same_fit(name, make_a, make_b, s_query, X=None, *, make_ref=None):
    """``make_a(seed)`` and ``make_b(seed)`` (two ways of fitting) give the same fit.

    Deterministic calibrators: equal to 1e-7 (the tolerance of the iterative solvers).
    Bayesian: posterior means within the sum of the two 95 % band half-widths at 95 % of
    the points (the two posteriors are the same, approximated by short chains). Random-split
    calibrators, whose split depends on row positions: with ``make_ref`` (a fit that ignores
    what a and b share, e.g. the weights), the mean fit of a over 8 seeds is closer to that
    of b than the mean fit of ``make_ref`` is (ratio < 1; typically 0.2-0.7, up to 0.97 for
    MBCT in a 200-example search, and exactly 1 when the calibrator ignores the weights);
    without it, a and b are equal in
    distribution: fits of one kind are on average no further from fits of the other than
    fits of one kind are from each other (x 1.25 + 0.01, for the noise of 6 seeds each).
    """
    if _stochastic(name) and not _bayesian(name):
        if make_ref is not None:
            mean = {
                k: np.mean([proba(make(seed), s_query, X)[:, 1] for seed in range(8)], axis=0)
                for k, make in (("a", make_a), ("b", make_b), ("ref", make_ref))
            }
            gap, ref_gap = np.mean(np.abs(mean["a"] - mean["b"])), np.mean(np.abs(mean["ref"] - mean["b"]))
            assert gap < ref_gap, f"gap {gap:.3g}, gap of the reference fit {ref_gap:.3g}"
            return
        pa = [proba(make_a(seed), s_query, X)[:, 1] for seed in range(6)]
        pb = [proba(make_b(seed), s_query, X)[:, 1] for seed in range(6)]
        within = max(_mean_distance(pa, pa), _mean_distance(pb, pb))
        across = _mean_distance(pa, pb)
        assert across <= 1.25 * within + 0.01, f"across {across:.3g}, within {within:.3g}"
        return
    est_a, est_b = make_a(0), make_b(0)
    pa, pb = proba(est_a, s_query, X)[:, 1], proba(est_b, s_query, X)[:, 1]
    if _bayesian(name):  # two posteriors approximated by short chains: allow 5 % of points out
        tol = _band_halfwidth(est_a, s_query) + _band_halfwidth(est_b, s_query)
        outside = np.abs(pa - pb) > tol
        assert outside.mean() <= 0.05, f"{outside.mean():.0%} of points apart by more than the bands"
    else:
        np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-7)


# ---- 3. row order ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_row_order_does_not_change_the_fit(name):
    @_profile(name)
    @given(st.integers(0, 2**32 - 1))
    def check(seed):
        s, y, X = simulated(200, seed % 1000)
        perm = np.random.default_rng(seed).permutation(s.size)
        _assert_same_fit(
            name,
            lambda sd: fit(build(name, sd), s, y, X=X),
            lambda sd: fit(build(name, sd), s[perm], y[perm], X=X[perm]),
            s,
            X,
        )

    check()


# ---- 4. integer weights = repeated rows -----------------------------------------------------
@pytest.mark.parametrize("name", [n for n in NAMES if _cls(n).supports_weights])
def test_integer_weights_equal_repeated_rows(name):
    @_profile(name)
    @given(st.integers(0, 2**32 - 1))
    def check(seed):
        s, y, X = simulated(150, seed % 1000)
        # 0 drops the row; positives weigh more, so that weights change the fit markedly
        w = np.random.default_rng(seed).integers(0, 3, s.size) + 2 * y
        rep = np.repeat(np.arange(s.size), w)
        _assert_same_fit(
            name,
            lambda sd: fit(build(name, sd), s, y, w.astype(float), X=X),
            lambda sd: fit(build(name, sd), s[rep], y[rep], X=X[rep]),
            s,
            X,
            make_ref=lambda sd: fit(build(name, sd), s, y, X=X),
        )

    check()


# ---- 5. predicting leaves the calibrator unchanged -----------------------------------------
def _assert_equal_state(a, b, path="est"):
    assert type(a) is type(b), path
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, (xr.DataArray, xr.Dataset, xr.DataTree)):
        xr.testing.assert_identical(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _assert_equal_state(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b)):
            _assert_equal_state(u, v, f"{path}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), path
    elif hasattr(a, "__dict__") and not callable(a):
        _assert_equal_state(vars(a), vars(b), path)
    else:
        assert a == b, path


@pytest.mark.parametrize("name", NAMES)
def test_predicting_does_not_change_a_fitted_calibrator(name):
    s, y, X = simulated(200, 3)
    est = fit(build(name), s, y, X=X)
    before = copy.deepcopy(vars(est))
    p1 = proba(est, s, X)
    est.predict(s, **({"X": X} if est.feature_aware else {}))
    if not est.feature_aware:
        est.calibration_map()
        est.credible_band(ci_prob=0.9)
    assert vars(est).keys() == before.keys()
    for key in before:
        _assert_equal_state(before[key], vars(est)[key], key)
    np.testing.assert_array_equal(proba(est, s, X), p1)


@pytest.mark.parametrize("name", NAMES)
def test_each_prediction_is_independent_of_the_other_rows_of_the_call(name):
    s, y, X = simulated(200, 4)
    est = fit(build(name), s, y, X=X)
    query = np.r_[QUERY, s]
    Xq = np.r_[features(QUERY.size, 1), X]
    whole = proba(est, query, Xq)
    rev = slice(None, None, -1)
    np.testing.assert_allclose(proba(est, query[rev], Xq[rev])[rev], whole, rtol=0, atol=1e-15)
    for part in np.array_split(np.arange(query.size), 7):
        np.testing.assert_allclose(proba(est, query[part], Xq[part]), whole[part], rtol=0, atol=1e-15)


# ---- 6. seeds --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in NAMES if _stochastic(n)])
def test_same_seed_gives_identical_results(name):
    s, y, X = simulated(300, 5)
    a = fit(build(name, seed=11), s, y, X=X)
    b = fit(build(name, seed=11), s, y, X=X)
    np.testing.assert_array_equal(proba(a, QUERY, features(QUERY.size, 2)), proba(b, QUERY, features(QUERY.size, 2)))
    if not a.feature_aware:
        xr.testing.assert_identical(a.calibration_map(), b.calibration_map())


@pytest.mark.parametrize("name", [n for n in NAMES if _bayesian(n)])
def test_different_seeds_agree_within_the_band(name):
    """Two seeds' posterior means agree within the 95 % band, at the calibrator's default sampler
    size: the equal-tailed band's ends are the 2.5 / 97.5 % quantiles of the draws, which the fast
    settings' 100 draws a chain rest on two or three draws, so at the lowest score, where the map's
    draws are skewed towards 0, two seeds' fits there differ by more than the band on two or three of
    the four seed pairs 1-2 .. 7-8 with either scale prior of the DPM; with the default size on none."""
    s, y, X = simulated(300, 5)
    defaults = get_calibrator_class(name)().get_params()
    full = {k: defaults[k] for k in FAST_PARAMS.get(name, {})}
    a = fit(build(name, seed=1, **full), s, y, X=X)
    b = fit(build(name, seed=2, **full), s, y, X=X)
    grid = np.linspace(s.min(), s.max(), 41)
    pa, pb = a.predict_proba(grid)[:, 1], b.predict_proba(grid)[:, 1]
    assert not np.array_equal(pa, pb), "the seed has no effect"
    half = _band_halfwidth(a, grid)
    assert np.all(np.abs(pa - pb) <= half), f"max |diff| - half-width: {np.max(np.abs(pa - pb) - half):.3g}"


# ---- 7. degenerate legal data --------------------------------------------------------------
def _degenerate(case: str, name: str):
    """(scores, labels, {score: expected P(y=1) where the data pin it}, tolerance)."""
    rng = np.random.default_rng(2026)
    n = 200
    if case == "all_equal":
        y = (rng.random(n) < 0.3).astype(int)
        return np.full(n, 0.42), y, {0.42: y.mean()}, 0.05
    if case == "two_values":
        s = np.repeat([0.2, 0.8], n // 2)
        y = (rng.random(n) < np.where(s < 0.5, 0.1, 0.7)).astype(int)
        return s, y, {0.2: y[s == 0.2].mean(), 0.8: y[s == 0.8].mean()}, 0.1
    if case == "rare_class":  # 99.9 % negatives
        n = 4000
        s = rng.beta(2, 8, n)
        y = np.zeros(n, int)
        y[np.argsort(s)[-4:]] = 1
        return s, y, {}, None
    if case == "exact_0_and_1":
        s = np.r_[np.zeros(60), np.ones(60), rng.random(80)]
        y = np.r_[(rng.random(60) < 0.05), (rng.random(60) < 0.95), (rng.random(80) < 0.5)].astype(int)
        return s, y, {0.0: y[:60].mean(), 1.0: y[60:120].mean()}, 0.1
    if case == "only_0_and_1":
        s = np.repeat([0.0, 1.0], n // 2)
        y = (rng.random(n) < np.where(s == 0, 0.1, 0.9)).astype(int)
        return s, y, {0.0: y[s == 0].mean(), 1.0: y[s == 1].mean()}, 0.1
    if case == "heavy_ties":
        s = np.round(rng.beta(2, 2, n), 1)
        y = (rng.random(n) < s).astype(int)
        return s, y, {}, None
    if case == "min_samples":
        cls = _cls(name)
        m = max(cls._min_samples, 2 * cls._min_per_class)
        k = cls._min_per_class
        y = np.r_[np.zeros(m - k, int), np.ones(k, int)]
        return np.linspace(0.1, 0.9, m), y, {}, None
    raise AssertionError(case)


DEGENERATE = ["all_equal", "two_values", "rare_class", "exact_0_and_1", "only_0_and_1", "heavy_ties", "min_samples"]


@pytest.mark.parametrize("case", DEGENERATE)
@pytest.mark.parametrize("name", NAMES)
def test_degenerate_legal_data_gives_a_sensible_fit_or_a_clear_error(name, case):
    s, y, pinned, tol = _degenerate(case, name)
    X = features(s.size, 0)
    est = build(name)
    if not fit_or_clear_error(est, s, y, X=X):
        return
    Xq = np.r_[features(QUERY.size, 1), X] if est.feature_aware else None
    p = assert_valid_output(est, np.r_[QUERY, s], Xq)[:, 1]
    for score, freq in pinned.items():  # mean over the rows at that score (features may vary)
        got = p[QUERY.size :][s == score].mean()
        assert abs(got - freq) <= tol, f"P(y=1 | {score}) = {got:.3f}, class frequency there {freq:.3f}"
    if case == "rare_class" and not est.fixed_midpoint:  # temperature scaling cannot move the base rate
        assert p[QUERY.size :].mean() < 0.02


# ---- 8. failure handling in inference (the Bayesian calibrator) -----------------------------
# The inference code belongs to bayescal/bayesian/; these tests force its failures with
# monkeypatch and check what the user sees.
def _dpm_data():
    s, y, _ = simulated(120, 9)
    return s, y


def test_diverging_variational_fit_is_retried_then_reported(monkeypatch):
    """A NaN ELBO once: retried and the fit succeeds (diagnostics say so); always: RuntimeError."""
    import warnings

    from bayescal.bayesian import pymc_model

    s, y = _dpm_data()
    real = pymc_model._run_advi
    calls = {"n": 0}

    def nan_first(engine, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            return np.array([1.0, np.nan]), False, True
        return real(engine, *args, **kwargs)

    est = build("dpm", inference="advi", n_components=3, draws=50, route_options={"max_iterations": 200})
    monkeypatch.setattr(pymc_model, "_run_advi", nan_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 200 iterations do not converge: not under test
        est.fit(s, y)
    diag = est.diagnostics_["gaussian"]
    assert diag["class_0"]["retried"] and not diag["class_1"]["retried"]
    assert np.all(np.isfinite(est.predict_proba(QUERY)))
    monkeypatch.setattr(pymc_model, "_run_advi", lambda *a, **k: (np.array([np.nan]), False, True))
    fresh = build("dpm", inference="advi", n_components=3, draws=50)
    with pytest.raises(RuntimeError, match=r"NaN.*ELBO.*retry"):
        fresh.fit(s, y)
    assert not hasattr(fresh, "idata_"), "a failed fit left a half-fitted calibrator"


def _wrapped_gibbs(monkeypatch, route: str, corrupt):
    """Make ``route`` run the Gibbs sampler and pass its result through ``corrupt``."""
    from bayescal.bayesian import routes
    from bayescal.bayesian.gibbs import fit_gibbs as real

    def fake(*args, **kwargs):
        kwargs.pop("target_accept", None)
        return corrupt(real(*args, **kwargs))

    monkeypatch.setitem(routes.ROUTES, route, fake)


def test_chains_that_disagree_on_the_map_give_a_warning_with_rhat(monkeypatch):
    def shift_second_chain(fit):
        post = fit.posterior.copy()
        post["mu"] = post["mu"] + xr.DataArray([0.0, 1.5], dims="chain")  # chain 1 sits elsewhere
        fit.posterior = post
        return fit

    _wrapped_gibbs(monkeypatch, "gibbs", shift_second_chain)
    s, y = _dpm_data()
    with pytest.warns(UserWarning, match=r"(?i)r-?hat.*\d\.\d") as caught:
        model = build("dpm", components="gaussian").fit(s, y)
    conv = model.diagnostics_["map"]
    assert 0 < conv["chain_gap_at_rhat_max"] <= 1 and conv["band_width_at_rhat_max"] >= conv["chain_gap_at_rhat_max"]
    assert f"differ by {conv['chain_gap_at_rhat_max']:.3g}" in str(caught[0].message)


def test_sampler_divergences_give_a_warning_with_their_count(monkeypatch):
    def diverge(fit):
        div = np.zeros((fit.posterior.sizes["chain"], fit.posterior.sizes["draw"]), dtype=bool)
        div[0, :7] = True
        fit.sample_stats = fit.sample_stats.assign(diverging=(("chain", "draw"), div))
        fit.diagnostics = {**fit.diagnostics, "divergences": 7}
        return fit

    _wrapped_gibbs(monkeypatch, "nuts", diverge)
    s, y = _dpm_data()
    with pytest.warns(UserWarning, match=r"(?i)\b14\b.*divergen|divergen.*\b14\b"):
        build("dpm", inference="nuts", components="gaussian").fit(s, y)


def test_well_mixed_chains_give_no_convergence_warning(monkeypatch):
    """Control for the two tests above: draws shuffled across chains and iterations (so the
    chains agree and carry no autocorrelation) must not warn."""
    import warnings

    def shuffle_draws(fit):
        post = fit.posterior.transpose("chain", "draw", ...)
        n = post.sizes["chain"] * post.sizes["draw"]
        order = np.random.default_rng(0).permutation(n)
        fit.posterior = post.copy(
            data={name: v.values.reshape(n, *v.shape[2:])[order].reshape(v.shape) for name, v in post.data_vars.items()}
        )
        return fit

    _wrapped_gibbs(monkeypatch, "gibbs", shuffle_draws)
    s, y = _dpm_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est = build("dpm", components="gaussian", draws=200, tune=200).fit(s, y)
    assert est.idata_["posterior"]["mu"].dims[:2] == ("chain", "draw")


def test_default_gibbs_fit_mixes_on_the_map():
    """400 scores, 2 chains of 500 draws (the default keeps one sweep in 30-40): R-hat below 1.02 and
    bulk ESS above 100 at the 1 % .. 99 % quantiles of the scores. Before the default thinning, 500
    unthinned draws gave R-hat 1.35 and ESS 5 at the 1 % quantile on these data."""
    from arviz_stats.base.array import array_stats

    s, y, _ = simulated(400, 1)
    est = build("dpm", draws=500, tune=500, n_components=20).fit(s, y)
    m = est.calibration_map(np.quantile(s, [0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99])).values
    rhat = array_stats.rhat(m, chain_axis=0, draw_axis=1)
    ess = array_stats.ess(m, chain_axis=0, draw_axis=1)
    assert rhat.max() < 1.02 and ess.min() > 100, f"map R-hat up to {rhat.max():.3f}, bulk ESS down to {ess.min():.0f}"
