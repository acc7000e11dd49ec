"""KDECalibrator and class_density: known truths, exact-vs-fast agreement, identities, weights,
behaviour away from the data, published numbers and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import expit

from bayescal.baselines.kde import DENSITY_FLOOR, KERNELS, KDECalibrator, class_density
from bayescal.data import ScoreSummary


def direct_density(x, w, h, kernel, points):
    """The O(N M) weighted KDE, written out independently of the module."""
    u = (points[:, None] - x[None, :]) / h
    if kernel == "gaussian":
        k = np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi)
    elif kernel == "boxcar":
        k = 0.5 * (np.abs(u) <= 1)
    else:
        k = 0.75 * np.clip(1 - u * u, 0, None)
    return (k * w).sum(axis=1) / (h * w.sum())


def direct_map(est, x, y, w, points):
    """Bayes' rule with direct class densities, the floor and the clamping the docstring defines."""
    q = np.clip(points, *est.kde_range_)
    f = [direct_density(x[y == c], w[y == c], est.bandwidth_[c], est.kernel, q) + est.density_floor_ for c in (0, 1)]
    return est.prior_ * f[1] / (est.prior_ * f[1] + (1 - est.prior_) * f[0])


def two_gaussians(n, seed, pi=0.3):
    """Decision values N(-1, 1) | y=0 and N(1, 1) | y=1: P(y=1 | t) = expit(2 t + logit(pi))."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < pi).astype(int)
    return np.where(y == 1, rng.normal(1, 1, n), rng.normal(-1, 1, n)), y


def messy(n, seed):
    """Unequal classes, unequal spreads, weights, and outliers on the logit scale."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    t = np.where(y == 1, rng.normal(1, 1.5, n), rng.normal(-1, 1, n))
    t[:4] = [8.0, -9.0, 12.0, -3.5]
    y[:4] = [1, 0, 1, 1]
    return t, y, rng.exponential(size=n)


# ---- known truths -----------------------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
def test_recovers_known_map_with_error_shrinking_in_n(kernel):
    grid = np.linspace(-2, 2, 81)
    truth = expit(2 * grid + np.log(0.3 / 0.7))
    mae = {}
    for n in (500, 50_000):
        errs = []
        for seed in (0, 1):
            t, y = two_gaussians(n, seed)
            est = KDECalibrator(kernel=kernel, score_kind="decision").fit(t, y)
            errs.append(np.abs(est.predict_proba(grid)[:, 1] - truth).mean())
        mae[n] = np.mean(errs)
    assert mae[50_000] < 0.01
    assert mae[50_000] < mae[500] / 3


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_few_far_outlying_decision_values_do_not_widen_the_bandwidth(kernel):
    # 2 % of each class's decision values from Cauchy(0, 10): the standard deviation grows by
    # orders of magnitude (Silverman's rule on it gave bandwidths of 1-10 and an error of 0.2-0.3),
    # the quartiles barely move
    rng = np.random.default_rng(4)
    t, y = two_gaussians(5000, 4)
    bad = rng.random(t.size) < 0.02
    t[bad] = 10 * rng.standard_cauchy(bad.sum())
    grid = np.linspace(-2, 2, 81)
    truth = expit(2 * grid + np.log(0.3 / 0.7))  # the outliers are label-independent: they barely move it
    est = KDECalibrator(kernel=kernel, score_kind="decision").fit(t, y)
    clean = KDECalibrator(kernel=kernel, score_kind="decision").fit(t[~bad], y[~bad])
    np.testing.assert_allclose(est.bandwidth_, clean.bandwidth_, rtol=0.1)
    assert np.abs(est.predict_proba(grid)[:, 1] - truth).mean() < 0.03


def test_the_probability_scale_keeps_the_standard_deviation_rule():
    # on [0, 1] no outlier can inflate the spread, and the quartiles of a class piled at 0
    # would undersmooth its tail: h = 1.06 sd N^(-1/5) per class, as Naeini et al.
    rng = np.random.default_rng(5)
    y = (rng.random(3000) < 0.3).astype(int)
    s = np.where(y == 1, rng.beta(4, 0.4, y.size), rng.beta(0.4, 4, y.size))
    est = KDECalibrator().fit(s, y)
    expected = [1.06 * s[y == c].std() * (y == c).sum() ** -0.2 for c in (0, 1)]
    np.testing.assert_allclose(est.bandwidth_, expected, rtol=1e-12)
    on_logits = KDECalibrator(scale="logit").fit(s, y)
    assert np.all(
        on_logits.bandwidth_ < [1.06 * np.std(np.log(s / (1 - s))[y == c]) * (y == c).sum() ** -0.2 for c in (0, 1)]
    )


@pytest.mark.parametrize("scale", ["probability", "logit"])
def test_recovers_beta_class_densities_on_either_scale(scale):
    # Beta(2,5) | y=0, Beta(5,2) | y=1, pi = 0.4: likelihood ratio (p / (1 - p))^3
    rng = np.random.default_rng(3)
    n = 20_000
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    p = np.linspace(0.1, 0.9, 81)
    r = (p / (1 - p)) ** 3
    truth = 0.4 * r / (0.4 * r + 0.6)
    est = KDECalibrator(scale=scale).fit(s, y)
    assert np.abs(est.predict_proba(p)[:, 1] - truth).mean() < 0.015
    assert est.prior_ == pytest.approx(y.mean())


def test_naeini_2014_table1_linear_and_quadratic_svm(reference_dir):
    from sklearn.metrics import roc_auc_score
    from sklearn.svm import SVC

    from bayescal.metrics import ece

    df = pd.read_csv(reference_dir / "naeini2014_simulated.csv")
    tr, te = df[df.split == "train"], df[df.split == "test"]
    svm = SVC(kernel="linear").fit(tr[["x1", "x2"]], tr.y)
    s_tr, s_te = (expit(svm.decision_function(d[["x1", "x2"]])) for d in (tr, te))
    assert ece(te.y, s_te, strategy="papers") == pytest.approx(0.2681, abs=1e-4)  # uncalibrated, as published
    p = KDECalibrator().fit(s_tr, tr.y).predict_proba(s_te)[:, 1]
    # Table 1: KDE ECE 0.03, AUC 0.85 (their own SVM run); we measure 0.039 and 0.862
    assert ece(te.y, p, strategy="papers") < 0.045
    assert roc_auc_score(te.y, p) > 0.85
    q = pd.read_csv(reference_dir / "naeini_quadratic_svm_scores.csv")
    qtr, qte = q[q.split == "train"], q[q.split == "test"]
    pq = KDECalibrator().fit(qtr.score, qtr.label).predict_proba(qte.score)[:, 1]
    # Table 1: KDE ECE 0.01 on the quadratic SVM (0.0495 uncalibrated); we measure 0.0014
    assert ece(qte.label, pq, strategy="papers") < 0.01


# ---- the fast routes against the direct O(N M) sum ------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("n", [200, 3000])
def test_fast_evaluation_matches_direct_sum(kernel, n):
    t, y, w = messy(n, seed=n)
    est = KDECalibrator(kernel=kernel, score_kind="decision").fit(t, y, sample_weight=w)
    q = np.linspace(-15, 15, 3001)  # beyond the data on both sides too
    got = est.predict_proba(q)[:, 1]
    want = direct_map(est, t, y, w, q)
    tol = 1e-4 if kernel == "gaussian" else 1e-10
    assert np.abs(got - want).max() < tol


@pytest.mark.parametrize("kernel", KERNELS)
def test_class_density_matches_direct_sum_and_integrates_to_one(kernel):
    t, _, w = messy(500, seed=5)
    grid = np.linspace(-20, 25, 9001)
    h = 0.4123  # no grid point sits exactly h from a score, where the boxcar's edge is a coin toss
    f = class_density(t, w, grid=grid, kernel=kernel, bandwidth=h)
    want = direct_density(t, w, h, kernel, grid)
    assert np.abs(f - want).max() < 1e-5 * want.max()
    assert f.min() >= 0
    tol = {"gaussian": 1e-6, "boxcar": 1e-3, "epanechnikov": 1e-5}[kernel]  # trapezoid error at kinks / jumps
    assert np.trapezoid(f, grid) == pytest.approx(1.0, abs=tol)
    # evaluation points in any order, Silverman's bandwidth by default
    perm = np.random.default_rng(0).permutation(grid.size)
    np.testing.assert_allclose(
        class_density(t, w, grid=grid[perm], kernel=kernel)[np.argsort(perm)],
        class_density(t, w, grid=grid, kernel=kernel),
        rtol=0,
        atol=1e-14,
    )


@pytest.mark.parametrize("h", [1e-9, 1e-4, 0.3, 50.0])
def test_epanechnikov_is_exact_for_bandwidths_far_below_or_above_the_scores_spread(h):
    """Scores a thousand apart with tight clumps: windows far from the scores' mean lose nothing
    to round-off, whatever the bandwidth (the moments are taken about a local anchor)."""
    rng = np.random.default_rng(3)
    centres = np.array([-1000.0, -1.0, 0.0, 3.0, 1000.0])
    t = np.concatenate([c + h * rng.uniform(-3, 3, 40) for c in centres])
    w = rng.uniform(0.2, 2.0, t.size)
    points = np.concatenate([t + h * rng.uniform(-1.2, 1.2, t.size), centres])
    f = class_density(t, w, grid=points, kernel="epanechnikov", bandwidth=h)
    want = direct_density(t, w, h, "epanechnikov", points)
    np.testing.assert_allclose(f, want, rtol=1e-9, atol=1e-12 * want.max())


@pytest.mark.parametrize("kernel", KERNELS)
def test_density_of_probabilities_on_the_logit_scale_has_unit_mass_with_exact_zeros(kernel):
    """With exact 0 scores (their logit clipped at 1e-12) each class's density of s integrates to 1
    over (0, 1). It was the KDE at the clip divided by s(1 - s) below the clip, growing like 1/s
    (1.1e11 at 1e-12, 1.1e99 at 1e-100: mass 3.3 down to 1e-18, infinite in all)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    s = np.where(y == 1, rng.beta(5, 2, 400), rng.beta(2, 5, 400))
    s[:40] = 0.0
    cal = KDECalibrator(scale="logit", kernel=kernel).fit(s, y)
    x = np.linspace(-60.0, 60.0, 240_001)  # integrate on the logit scale: ds = s(1 - s) dx
    g = expit(x)
    dens = cal.density_map(g).values[0, 0]
    mass = np.trapezoid(dens * g * (1 - g), x, axis=-1)
    np.testing.assert_allclose(mass, 1.0, atol=2e-3)
    assert np.all(dens[:, g < 1e-20] < 1.0)


def test_gaussian_keeps_unit_mass_for_scores_10_to_the_8_bandwidths_apart():
    t = np.array([0.0, 1000.0])
    fine = np.linspace(-0.01, 0.01, 20_001)
    f = class_density(t, grid=np.concatenate([fine, 1000 + fine]), bandwidth=1e-5)
    for part in (f[: fine.size], f[fine.size :]):
        assert np.trapezoid(part, fine) == pytest.approx(0.5, rel=1e-4)
    want = direct_density(t, np.ones(2), 1e-5, "gaussian", np.concatenate([fine, 1000 + fine]))
    np.testing.assert_allclose(f, want, rtol=1e-12, atol=1e-13 * want.max())  # cut at 8 h: e^-32 of the peak
    # a class with almost no spread beside a wide one: still a finite map in [0, 1]
    rng = np.random.default_rng(9)
    s = np.concatenate([0.3 + 1e-9 * rng.random(50), rng.random(50)])
    y = np.repeat([0, 1], 50)
    p = KDECalibrator().fit(s, y).predict_proba(np.linspace(0, 1, 1001))[:, 1]
    assert np.all(np.isfinite(p)) and p.min() >= 0 and p.max() <= 1
    assert p[300] < 0.01 and p[900] > 0.99


@pytest.mark.parametrize("bulk", [300, 3000])
def test_far_outliers_leave_the_gaussian_as_accurate_as_without_them(bulk, tmp_path):
    # 1 % of each class from Cauchy(0, 10^6): the scores span ~10^8 bandwidths, far beyond any
    # one regular grid at h / 128 (2^20 points reach 2^13 bandwidths); the map must still be the direct sum's, in the bulk and at
    # the outliers themselves
    rng = np.random.default_rng(bulk)
    y = np.repeat([0, 1], bulk)
    t = np.where(y == 1, rng.normal(1, 1, 2 * bulk), rng.normal(-1, 1, 2 * bulk))
    far = rng.random(2 * bulk) < 0.01
    t[far] = 1e6 * rng.standard_cauchy(far.sum())
    w = rng.exponential(size=2 * bulk)
    est = KDECalibrator(score_kind="decision").fit(t, y, sample_weight=w)
    assert (t.max() - t.min()) / est.bandwidth_.min() > 2**20  # one grid would be 128 times too coarse
    q = np.concatenate([np.linspace(-4, 4, 2001), t[far], t[far] + est.bandwidth_[0]])
    got = est.predict_proba(q)[:, 1]
    assert np.abs(got - direct_map(est, t, y, w, q)).max() < 1e-4
    for c in (0, 1):
        f = est.density_map(q).sel(**{"class": c}).values.ravel()
        want = direct_density(t[y == c], w[y == c], est.bandwidth_[c], "gaussian", q)
        assert np.abs(f - want).max() < 1e-4 * want.max()
    assert sum(x.size for x in est.exact_support_) > 0  # the far scores are summed, not gridded
    path = tmp_path / "kde.nc"
    est.save(path)
    np.testing.assert_array_equal(KDECalibrator.load(path).predict_proba(q), est.predict_proba(q))


# ---- identities and invariances -------------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("bandwidth", ["shared", 0.5])
def test_shared_bandwidth_is_nadaraya_watson(kernel, bandwidth):
    t, y, w = messy(800, seed=1)
    est = KDECalibrator(kernel=kernel, bandwidth=bandwidth, score_kind="decision").fit(t, y, sample_weight=w)
    assert est.bandwidth_[0] == est.bandwidth_[1]
    h = est.bandwidth_[0]
    q = np.linspace(-2.5, 3.0, 301)  # well inside the data, where the floor is negligible
    u = (q[:, None] - t[None, :]) / h
    k = {
        "gaussian": np.exp(-0.5 * u * u),
        "boxcar": (np.abs(u) <= 1) * 1.0,
        "epanechnikov": np.clip(1 - u * u, 0, None),
    }[kernel] * w
    nw = (k * y).sum(axis=1) / k.sum(axis=1)
    got = est.predict_proba(q)[:, 1]
    assert np.abs(got - nw).max() < (1e-4 if kernel == "gaussian" else 1e-7)


@pytest.mark.parametrize("kernel", KERNELS)
def test_integer_weights_equal_repeated_rows_and_zero_weights_drop_rows(kernel):
    rng = np.random.default_rng(2)
    n = 300
    y = (rng.random(n) < 0.5).astype(int)
    s = np.where(y == 1, rng.beta(4, 2, n), rng.beta(2, 4, n))
    w = rng.integers(0, 4, n)
    w[:2] = 1  # both classes keep rows
    y[:2] = [0, 1]
    q = np.linspace(0, 1, 401)
    weighted = KDECalibrator(kernel=kernel).fit(s, y, sample_weight=w)
    repeated = KDECalibrator(kernel=kernel).fit(np.repeat(s, w), np.repeat(y, w))
    np.testing.assert_allclose(weighted.bandwidth_, repeated.bandwidth_, rtol=1e-12)
    np.testing.assert_allclose(weighted.predict_proba(q), repeated.predict_proba(q), rtol=0, atol=1e-10)


def test_summary_fit_matches_raw_fit():
    t, y = two_gaussians(20_000, seed=4)
    s = expit(t)
    q = np.linspace(0.05, 0.95, 91)
    raw = KDECalibrator().fit(s, y)
    summary = KDECalibrator().fit(ScoreSummary.from_arrays(s, y, n_bins=4096))
    np.testing.assert_allclose(summary.bandwidth_, raw.bandwidth_, rtol=0.02)
    assert np.abs(summary.predict_proba(q)[:, 1] - raw.predict_proba(q)[:, 1]).max() < 0.01


@pytest.mark.parametrize("kernel", KERNELS)
def test_mirroring_scores_and_labels_mirrors_the_map(kernel):
    t, y, w = messy(1000, seed=7)
    s = expit(t / 3)
    q = np.linspace(0, 1, 501)
    est = KDECalibrator(kernel=kernel).fit(s, y, sample_weight=w)
    mirrored = KDECalibrator(kernel=kernel).fit(1 - s, 1 - y, sample_weight=w)
    np.testing.assert_allclose(mirrored.predict_proba(1 - q)[:, 1], 1 - est.predict_proba(q)[:, 1], rtol=0, atol=1e-9)


def test_inputs_are_not_modified_and_save_load_round_trips(tmp_path):
    from bayescal import load

    t, y, w = messy(400, seed=8)
    copies = t.copy(), y.copy(), w.copy()
    for kernel in ("boxcar", "epanechnikov"):  # the state rebuilt by _restore (Gaussian: tests/test_contract.py)
        est = KDECalibrator(kernel=kernel, score_kind="decision").fit(t, y, sample_weight=w)
        est.save(tmp_path / f"{kernel}.nc")
        loaded = load(tmp_path / f"{kernel}.nc")
        np.testing.assert_array_equal(loaded.predict_proba(t), est.predict_proba(t))
    for a, b in zip((t, y, w), copies):
        np.testing.assert_array_equal(a, b)


# ---- away from the data ------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
def test_finite_far_from_data_gaps_shrink_to_prior_and_ends_are_clamped(kernel):
    # two clusters 10 apart with a bandwidth of 0.1: neither class reaches the middle
    t = np.array([-5.0, -4.95, -4.9, -4.9, 5.0, 5.05, 5.1, 5.1])
    y = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    est = KDECalibrator(kernel=kernel, bandwidth=0.1, score_kind="decision").fit(t, y)
    q = np.array([-1e6, -50.0, -5.2, 0.0, 2.0, 5.2, 50.0, 1e6])
    p = est.predict_proba(q)[:, 1]
    assert np.all(np.isfinite(p)) and p.min() >= 0 and p.max() <= 1
    assert p[3] == pytest.approx(0.5, abs=1e-6) and p[4] == pytest.approx(0.5, abs=1e-6)  # pi = 4/8
    end_lo, end_hi = est.predict_proba([-5.0, 5.1])[:, 1]
    assert p[0] == p[1] == end_lo and p[-1] == p[-2] == end_hi
    assert est.density_floor_ == pytest.approx(DENSITY_FLOOR / (10.1 + 0.2))


def test_exact_zero_and_one_probabilities_and_constant_scores():
    s = np.array([0.0, 0.0, 0.2, 0.3, 0.7, 1.0, 1.0, 0.9])
    y = np.array([0, 0, 0, 1, 0, 1, 1, 1])
    for kernel in KERNELS:
        for scale in ("probability", "logit"):
            p = KDECalibrator(kernel=kernel, scale=scale).fit(s, y).predict_proba(np.linspace(0, 1, 101))
            assert np.all(np.isfinite(p)) and p.min() >= 0 and p.max() <= 1
    const = KDECalibrator().fit(np.full(6, 0.4), [0, 1, 1, 0, 1, 1])
    np.testing.assert_allclose(const.predict_proba([0.0, 0.4, 1.0])[:, 1], 4 / 6, rtol=1e-9)


# ---- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"kernel": "triangle"}, "kernel='triangle' is not one of"),
        ({"bandwidth": "scott"}, "bandwidth='scott' is not one of"),
        ({"bandwidth": -0.1}, "must be a finite positive number"),
        ({"bandwidth": float("nan")}, "must be a finite positive number"),
        ({"bandwidth": True}, "neither a rule"),
        ({"bandwidth": [0.1, 0.2]}, "neither a rule"),
        ({"scale": "log"}, "scale='log' is not 'logit' or 'probability'"),
        ({"boundary": "renormalise"}, "boundary='renormalise' is not 'none' or 'reflect'"),
        ({"boundary": "reflect", "scale": "logit"}, "boundary='reflect' mirrors the kernels .* needs scale='probability'"),
    ],
)
def test_bad_parameters_raise_clear_errors(params, match):
    with pytest.raises(ValueError, match=match):
        KDECalibrator(**params).fit([0.1, 0.4, 0.6, 0.9], [0, 0, 1, 1])


def test_bad_data_raise_clear_errors():
    with pytest.raises(ValueError, match="sample_weight gives the (positive|negative) class .*zero total weight"):
        KDECalibrator().fit([0.1, 0.4, 0.6, 0.9], [0, 0, 1, 1], sample_weight=[1, 1, 0, 0])
    with pytest.raises(ValueError, match="outside"):
        KDECalibrator().fit([0.1, 0.4, 1.6, 0.9], [0, 0, 1, 1])
    with pytest.raises(ValueError, match="no spread"):
        class_density([1.0, 1.0, 1.0], grid=[0.0, 1.0])
    with pytest.raises(ValueError, match="kernel='tri'"):
        class_density([1.0, 2.0], grid=[0.0], kernel="tri")
    with pytest.raises(ValueError, match="grid has 1 NaN"):
        class_density([1.0, 2.0], grid=[np.nan, 0.0])


# ---- properties over arbitrary small data --------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(
    t=hnp.arrays(np.float64, st.integers(2, 30), elements=st.floats(-10, 10, allow_subnormal=False)),
    seed=st.integers(0, 2**16),
    kernel=st.sampled_from(KERNELS),
    bandwidth=st.sampled_from(["silverman", "shared", 0.02, 2.0]),
)
def test_any_data_gives_a_finite_map_that_mirrors(t, seed, kernel, bandwidth):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, t.size)
    y[:2] = [0, 1]
    w = rng.uniform(0.1, 3.0, t.size)
    q = np.concatenate([np.linspace(-40, 40, 81), t])
    est = KDECalibrator(kernel=kernel, bandwidth=bandwidth, score_kind="decision").fit(t, y, sample_weight=w)
    p = est.predict_proba(q)[:, 1]
    assert np.all(np.isfinite(p)) and p.min() >= 0 and p.max() <= 1
    mirrored = KDECalibrator(kernel=kernel, bandwidth=bandwidth, score_kind="decision").fit(-t, 1 - y, sample_weight=w)
    tol = 1e-4 if kernel == "gaussian" else 1e-7  # symmetric up to each route's round-off or binning error
    np.testing.assert_allclose(mirrored.predict_proba(-q)[:, 1], 1 - p, rtol=0, atol=tol)


def test_a_bandwidth_below_the_scores_resolution_still_gives_a_map_that_mirrors():
    """Found by the property test above: the shared Silverman bandwidth of these scores is 1.4e-65;
    with the Epanechnikov moments taken about the scores' mean the window sums cancelled terms of
    size (1 / 1.4e-65)^2 and the map at the low end was 2e-74 where the mirrored fit said 1."""
    t = np.array([2.709065805487284e-65, 1.0, 0.0, 0.0, 0.0])
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, t.size)
    y[:2] = [0, 1]
    w = rng.uniform(0.1, 3.0, t.size)
    q = np.concatenate([np.linspace(-40, 40, 81), t])
    p = KDECalibrator(kernel="epanechnikov", bandwidth="shared", score_kind="decision").fit(t, y, sample_weight=w)
    mirrored = KDECalibrator(kernel="epanechnikov", bandwidth="shared", score_kind="decision")
    mirrored.fit(-t, 1 - y, sample_weight=w)
    np.testing.assert_allclose(mirrored.predict_proba(-q)[:, 1], 1 - p.predict_proba(q)[:, 1], atol=1e-7)


@pytest.mark.parametrize("kernel", KERNELS)
def test_reflection_gives_unit_mass_and_leaves_the_map_alone_away_from_the_ends(kernel):
    """Scores piled near 0: without reflection each class keeps 0.85-0.92 of its mass on [0, 1];
    with it, all of it. Away from the ends (farther than any kernel reaches, with its mirror
    images) the two estimators are the same; integer weights still act as repeated rows, the
    mirrored data give the mirrored map, and the fit round-trips through a file."""
    rng = np.random.default_rng(0)
    n = 3000
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(0.6, 3, n), rng.beta(0.5, 6, n))
    g = np.linspace(0, 1, 20001)
    plain = KDECalibrator(kernel=kernel).fit(s, y)
    reflected = KDECalibrator(kernel=kernel, boundary="reflect").fit(s, y)
    mass = np.trapezoid(reflected.density_map(g).values[0, 0], g, axis=-1)
    np.testing.assert_allclose(mass, 1.0, atol=2e-3)
    assert np.all(np.trapezoid(plain.density_map(g).values[0, 0], g, axis=-1) < 0.95)
    reach = (8.0 if kernel == "gaussian" else 1.0) * reflected.bandwidth_.max()
    inside = np.linspace(reach, 1 - reach, 50)
    tol = 1e-4 if kernel == "gaussian" else 1e-9  # the Gaussian's grid spans the mirror images too
    np.testing.assert_allclose(reflected.predict_proba(inside), plain.predict_proba(inside), rtol=0, atol=tol)
    q = np.concatenate([np.linspace(0, 1, 41), s[:20]])
    mirrored = KDECalibrator(kernel=kernel, boundary="reflect").fit(1 - s, 1 - y)
    np.testing.assert_allclose(mirrored.predict_proba(1 - q)[:, 1], reflected.predict_proba(q)[:, 0], atol=1e-6)
    w = rng.integers(1, 4, 200).astype(float)
    weighted = KDECalibrator(kernel=kernel, boundary="reflect", bandwidth=0.05).fit(s[:200], y[:200], sample_weight=w)
    repeated = KDECalibrator(kernel=kernel, boundary="reflect", bandwidth=0.05).fit(
        np.repeat(s[:200], w.astype(int)), np.repeat(y[:200], w.astype(int))
    )
    np.testing.assert_allclose(weighted.predict_proba(q), repeated.predict_proba(q), atol=1e-6)


def test_a_reflected_fit_round_trips_through_a_file(tmp_path):
    import bayescal

    rng = np.random.default_rng(1)
    s, y = rng.beta(0.7, 2, 400), rng.integers(0, 2, 400)
    for kernel in KERNELS:
        est = KDECalibrator(kernel=kernel, boundary="reflect").fit(s, y)
        est.save(tmp_path / f"{kernel}.nc")
        loaded = bayescal.load(tmp_path / f"{kernel}.nc")
        assert loaded.boundary == "reflect"
        np.testing.assert_array_equal(loaded.predict_proba(s), est.predict_proba(s))


# ---- review mends ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("param", "value"), [("kernel", "boxcar"), ("kernel", "gaussian"), ("scale", "logit"), ("boundary", "reflect")]
)
def test_parameters_changed_after_the_fit_are_refused_by_name(param, value, tmp_path):
    """Prediction reads kernel, scale and boundary as the fit used them: a set_params after the fit
    would give a map of another estimator (or fail deep inside), so prediction, the density map
    and save refuse it by name, and setting the value back restores the fit."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    s = np.where(y == 1, rng.beta(4, 2, 300), rng.beta(2, 4, 300))
    est = KDECalibrator(kernel="epanechnikov" if value == "gaussian" else "gaussian").fit(s, y)
    before = est.predict_proba([0.2, 0.5, 0.8])
    fitted = getattr(est, param)
    est.set_params(**{param: value})
    for use in (
        lambda: est.predict_proba([0.2, 0.5, 0.8]),
        lambda: est.density_map([0.2, 0.5]),
        lambda: est.save(tmp_path / "m.nc"),
    ):
        with pytest.raises(ValueError, match=f"{param}='{value}' was set after this KDECalibrator was fitted"):
            use()
    est.set_params(**{param: fitted})
    np.testing.assert_array_equal(est.predict_proba([0.2, 0.5, 0.8]), before)


def test_gaussian_map_stays_accurate_when_one_class_has_a_far_smaller_bandwidth():
    """Decision values of class 0 within 1e-3 of 0, of class 1 spread over +-100: the bandwidths
    differ by 3e4. On one grid shared by both classes the step was set by the wide class's span
    and was coarser than class 0's bandwidth, which turned class 0's density into a histogram
    (map 0.44 where the direct sum gives 0.89); each class's own grid keeps the error bound."""
    rng = np.random.default_rng(0)
    t = np.r_[rng.normal(0, 1e-3, 1000), rng.normal(0, 30, 1000)]
    y = np.r_[np.zeros(1000, int), np.ones(1000, int)]
    w = np.ones(t.size)
    est = KDECalibrator(score_kind="decision").fit(t, y)
    assert est.bandwidth_[1] / est.bandwidth_[0] > 1e4
    q = np.r_[np.quantile(t[:1000], np.linspace(0.01, 0.99, 99)), 4.03e-3]
    np.testing.assert_allclose(est.predict_proba(q)[:, 1], direct_map(est, t, y, w, q), rtol=0, atol=1e-4)


def test_each_class_grid_round_trips_and_a_damaged_one_is_refused(tmp_path):
    import bayescal

    t, y, w = messy(2000, seed=3)
    est = KDECalibrator(score_kind="decision").fit(t, y, sample_weight=w)
    est.save(tmp_path / "m.nc")
    np.testing.assert_array_equal(bayescal.load(tmp_path / "m.nc").predict_proba(t), est.predict_proba(t))
    est.class_density_[1] = est.class_density_[1][:-1]  # no longer the grid of its knots and bandwidth
    with pytest.raises(ValueError, match="density grid of class 1"):
        est.save(tmp_path / "damaged.nc")
