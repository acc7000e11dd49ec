"""Tests of bayescal.metrics: published values, hand-computed cases, known truths, invariants."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.special import expit
from scipy.stats import norm

from bayescal import metrics as M

BINNED = [M.ece, M.mce, M.calibration_error, M.confidence_ece]
ALL_METRICS = [
    M.ece,
    M.mce,
    M.confidence_ece,
    M.calibration_error,
    M.ece_sweep,
    M.smooth_ece,
    M.mvce,
    M.brier_score,
    M.rmse,
    M.log_loss,
    M.roc_auc,
    M.accuracy,
    M.brier_decomposition,
    M.corp_decomposition,
    M.bayes_error_bounds,
    M.reliability_curve,
]


@pytest.fixture
def miscalibrated(rng):
    """400 predictions whose true P(y=1 | p) is p**2 (over-confident positives)."""
    p = rng.uniform(0, 1, 400)
    y = (rng.uniform(size=p.size) < p**2).astype(int)
    return y, p


# ----------------------------------------------------------------------------- published values


def test_quadratic_svm_reproduces_published_uncalibrated_metrics(reference_dir):
    """Naeini et al.'s demo output for the quadratic SVM: ECE 0.0495, MCE 0.2463, RMSE 0.1263, ACC 0.991."""
    d = pd.read_csv(reference_dir / "naeini_quadratic_svm_scores.csv")
    test = d[d["split"] == "test"]
    y, p = test["label"].to_numpy(), test["score"].to_numpy()
    assert M.ece(y, p, strategy="papers") == pytest.approx(0.0495, abs=1e-4)
    assert M.mce(y, p, strategy="papers") == pytest.approx(0.2463, abs=1e-4)
    assert M.rmse(y, p) == pytest.approx(0.1263, abs=1e-4)
    assert M.accuracy(y, p) == pytest.approx(0.991, abs=1e-9)
    assert M.roc_auc(y, p) == pytest.approx(0.9999, abs=1e-4)


def test_corp_reproduces_published_niamey_emos(reference_dir):
    """Dimitriadis, Gneiting & Jordan (2021): EMOS on Niamey 2016 gives 0.232 / 0.0183 / 0.0305 / 0.244."""
    d = pd.read_csv(reference_dir / "precip_Niamey_2016.csv")
    out = M.corp_decomposition(d["obs"], d["EMOS"])
    assert round(out.score, 3) == 0.232
    assert round(out.mcb, 4) == 0.0183
    assert round(out.dsc, 4) == 0.0305
    assert round(out.unc, 3) == 0.244
    assert out.score == pytest.approx(out.mcb - out.dsc + out.unc, abs=1e-12)


# ----------------------------------------------------------------------------- binning


def test_papers_groups_first_remainder_groups_one_larger():
    p = np.linspace(0.01, 0.99, 23)
    y = np.zeros(23, dtype=int)
    curve = M.reliability_curve(y, p, n_bins=10, strategy="papers")
    assert curve["count"].values.tolist() == [3, 3, 3] + [2] * 7
    # quantile bins of the same predictions end at ceil(k N / B): 3, 5, 7, 10, 12, ...
    quantile = M.reliability_curve(y, p, n_bins=10, strategy="quantile")
    assert np.cumsum(quantile["count"].values).tolist() == [np.ceil(k * 23 / 10) for k in range(1, 11)]
    # groups are consecutive in sorted order: each group's range lies above the previous one
    assert np.all(curve["bin_lower"].values[1:] > curve["bin_upper"].values[:-1])


def test_papers_sorts_ties_by_label():
    # four equal predictions, two of each label, split into two groups: labels 0 go first
    p = np.full(4, 0.5)
    y = np.array([1, 0, 1, 0])
    curve = M.reliability_curve(y, p, n_bins=2, strategy="papers")
    assert curve["fraction_positive"].values.tolist() == [0.0, 1.0]
    # quantile keeps equal predictions together in one bin
    assert M.reliability_curve(y, p, n_bins=2, strategy="quantile")["count"].values.tolist() == [4.0]


def test_uniform_bins_are_half_open_and_last_is_closed_at_one():
    p = np.array([0.0, 0.1, 0.15, 0.2, 0.95, 1.0])
    y = np.array([0, 0, 1, 1, 1, 1])
    curve = M.reliability_curve(y, p, n_bins=10, strategy="uniform")
    assert curve["bin"].values.tolist() == [0, 1, 2, 9]
    assert curve["count"].values.tolist() == [1.0, 2.0, 1.0, 2.0]
    assert curve["bin_lower"].values.tolist() == pytest.approx([0.0, 0.1, 0.2, 0.9])
    assert curve["bin_upper"].values.tolist() == pytest.approx([0.1, 0.2, 0.3, 1.0])


def test_quantile_bins_have_equal_counts_for_distinct_predictions(rng):
    p = rng.uniform(size=1000)
    y = rng.integers(0, 2, 1000)
    curve = M.reliability_curve(y, p, n_bins=10, strategy="quantile")
    assert curve["count"].values.tolist() == [100.0] * 10
    assert M.ece(y, p, strategy="quantile") == pytest.approx(M.ece(y, p, strategy="papers"), abs=1e-15)


def _quantile_bins_exactly(p, w, n_bins):
    """Bin number of each sample and weight of each non-empty bin of "quantile", in exact rational
    arithmetic on the given floats: q_k = min{x : F_w(x) >= k/B}, bin k = (q_k, q_{k+1}]."""
    from fractions import Fraction

    weights = [Fraction(float(v)) for v in w]
    total = sum(weights)
    values = np.unique(p)
    below = [sum((v for v, x in zip(weights, p) if x <= value), Fraction(0)) for value in values]
    edges = [next(value for value, mass in zip(values, below) if mass * n_bins >= k * total) for k in range(1, n_bins)]
    ids = np.array([sum(q < x for q in edges) for x in p])
    mass = {b: sum((v for v, i in zip(weights, ids) if i == b), Fraction(0)) for b in set(ids.tolist())}
    return sorted(b for b, m in mass.items() if m > 0), [float(mass[b]) for b in sorted(mass) if mass[b] > 0]


@pytest.mark.parametrize("kind", ["same weight", "scaled integers", "integers", "floats"])
def test_quantile_edges_are_the_exact_weighted_quantiles(kind):
    """The edges are those of exact arithmetic on the weights meant: running float sums that round
    below k * W / B (weights all 0.3: 0.3 + 0.3 + 0.3 < 0.9) used to push an edge one row on. For
    weights c * k the weights meant are the integers k (c * k rounds, by less than the slack)."""
    rng = np.random.default_rng(3)
    for n in (6, 10, 29, 64):
        p = np.round(rng.uniform(size=n), 2)  # some ties
        y = rng.integers(0, 2, n)
        c = rng.choice([0.3, 0.1, 1 / n, 7.0, 1 / 3])
        k = rng.integers(0, 5, n).astype(float)
        k[0] = max(k[0], 1.0)  # a positive total
        floats = rng.uniform(0.1, 2.0, n)
        meant, given = {
            "same weight": (np.ones(n), np.full(n, c)),
            "scaled integers": (k, c * k),
            "integers": (k, k),
            "floats": (floats, floats),
        }[kind]
        for n_bins in (2, 3, 5, 7):
            index, mass = _quantile_bins_exactly(p, meant, n_bins)
            curve = M.reliability_curve(y, p, n_bins=n_bins, sample_weight=given)
            assert curve["bin"].values.tolist() == index, (n, n_bins)
            np.testing.assert_allclose(curve["count"].values, np.multiply(mass, given.sum() / meant.sum()), rtol=1e-12)


def test_an_edge_short_of_its_quantile_by_more_than_rounding_stays_put():
    """F_w(0.2) = 1/2 - 1e-13 is short of 1/2 by far more than rounding: 0.3 is the first edge."""
    w = np.array([0.5, 0.5 - 2e-13, 0.5, 0.5 + 2e-13])
    curve = M.reliability_curve([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], n_bins=2, sample_weight=w)
    assert curve["count"].values.tolist() == pytest.approx([1.5 - 2e-13, 0.5 + 2e-13], abs=1e-15)


QUANTILE_BINNED = {
    "ece": lambda y, p, **kw: M.ece(y, p, n_bins=5, **kw),
    "ece l2": lambda y, p, **kw: M.ece(y, p, n_bins=7, norm="l2", **kw),
    "mce": lambda y, p, **kw: M.mce(y, p, n_bins=4, **kw),
    "calibration_error": lambda y, p, **kw: M.calibration_error(y, p, n_bins=3, **kw),
    "calibration_error debias": lambda y, p, **kw: M.calibration_error(y, p, n_bins=3, norm="l2", debias=True, **kw),
    "confidence_ece": lambda y, p, **kw: M.confidence_ece(y, p, n_bins=3, strategy="quantile", **kw),
    "brier_decomposition": lambda y, p, **kw: M.brier_decomposition(y, p, n_bins=6, strategy="quantile", **kw),
    "ece_sweep": M.ece_sweep,
}


@pytest.mark.parametrize("name", sorted(QUANTILE_BINNED))
def test_the_same_weight_on_every_row_changes_no_quantile_binned_result(name):
    """Weights c on every row (0.3, 0.1, 1/n, 7) are no weights at all: the equal-mass bins, and so
    every result on them, are the unweighted ones (0.3 used to give bins of 4 + 2 rows, not 3 + 3)."""
    f = QUANTILE_BINNED[name]
    for n in (6, 15, 40, 97, 250):
        for seed in range(3):
            rng = np.random.default_rng(seed)
            p = rng.uniform(size=n) if seed else np.arange(1, n + 1) / (n + 1)
            y = (rng.uniform(size=n) < p).astype(int)
            ref = f(y, p)
            for c in (0.3, 0.1, 1 / n, 7.0):
                got = f(y, p, sample_weight=np.full(n, c))
                np.testing.assert_allclose(
                    np.ravel(_as_numbers(got)), np.ravel(_as_numbers(ref)), rtol=1e-12, atol=1e-15
                )


def test_weights_of_three_tenths_keep_the_three_plus_three_bins():
    y, p = [0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    w = np.full(6, 0.3)
    expected = (abs(0.2 - 0.0) + abs(0.5 - 2 / 3)) / 2  # bins {.1, .2, .3} and {.4, .5, .6}
    assert M.ece(y, p, n_bins=2, sample_weight=w) == pytest.approx(expected, rel=1e-12)
    curve = M.reliability_curve(y, p, n_bins=2, sample_weight=w)
    assert curve["count"].values == pytest.approx([0.9, 0.9], rel=1e-12)


@pytest.mark.parametrize("c", [0.3, 0.1, 7.0, None])
def test_scaled_integer_weights_act_as_repeated_rows_in_quantile_bins(c):
    """Weights c * k (k an integer; None: normalised to sum 1) give the result of k repeated rows:
    the same bins, and in the sweep the same ties between bins' fractions (1/2 and 1/2 from sums
    that do not add up exactly used to count as a decrease)."""
    rng = np.random.default_rng(1)
    for _ in range(60):
        n = int(rng.integers(5, 120))
        p = np.round(rng.uniform(size=n), int(rng.integers(1, 4)))  # ties, many or few
        y = (rng.uniform(size=n) < p).astype(int)
        k = rng.integers(1, int(rng.choice([4, 6, 8])), n)  # largest weight 3, 5 or 7 (not a power of 2)
        w = k / k.sum() if c is None else c * k
        yr, pr = np.repeat(y, k), np.repeat(p, k)
        for n_bins in (2, 3, 7, 10):
            repeated = M.reliability_curve(yr, pr, n_bins=n_bins)
            assert M.reliability_curve(y, p, n_bins=n_bins, sample_weight=w)["bin"].equals(repeated["bin"])
            assert M.ece(y, p, n_bins=n_bins, sample_weight=w) == pytest.approx(M.ece(yr, pr, n_bins=n_bins), rel=1e-12)
        # the sweep's bins can outnumber the weighted rows, not the repeated ones: compare to weights k
        for strategy in ("quantile", "uniform"):
            integer = M.ece_sweep(y, p, sample_weight=k, strategy=strategy)
            got = M.ece_sweep(y, p, sample_weight=w, strategy=strategy)
            assert got == pytest.approx(integer, rel=1e-12, abs=1e-15)


def _as_numbers(result):
    """Every number of a metric's result (a float or a dataclass of numbers and names)."""
    if hasattr(result, "__dataclass_fields__"):
        values = [getattr(result, f) for f in result.__dataclass_fields__]
        return np.array([float(v) for v in values if not isinstance(v, str)])
    return np.asarray(result, dtype=float)


@pytest.mark.parametrize("strategy", ["quantile", "uniform", "papers"])
@pytest.mark.parametrize("weighted", [False, True])
def test_ece_equals_its_reliability_curve(miscalibrated, rng, strategy, weighted):
    y, p = miscalibrated
    w = rng.uniform(0.2, 3.0, p.size) if weighted else None
    curve = M.reliability_curve(y, p, n_bins=7, strategy=strategy, sample_weight=w)
    share = curve["count"] / curve["count"].sum()
    gap = np.abs(curve["fraction_positive"] - curve["mean_predicted"])
    expected = float((share * gap).sum())
    assert M.ece(y, p, n_bins=7, strategy=strategy, sample_weight=w) == pytest.approx(expected, rel=1e-12)
    assert M.mce(y, p, n_bins=7, strategy=strategy, sample_weight=w) == pytest.approx(float(gap.max()), rel=1e-12)
    assert float(curve["count"].sum()) == pytest.approx(p.size if w is None else w.sum())


def test_hand_computed_norms():
    # uniform, 2 bins: bin 0 = {0.2, 0.4} with labels {0, 1}; bin 1 = {0.9} * 2 with labels {1, 1}
    p = [0.2, 0.4, 0.9, 0.9]
    y = [0, 1, 1, 1]
    # bin 0: e = 0.3, o = 0.5, gap 0.2; bin 1: e = 0.9, o = 1, gap 0.1; shares 1/2 each
    assert M.ece(y, p, n_bins=2, strategy="uniform") == pytest.approx(0.15)
    assert M.ece(y, p, n_bins=2, strategy="uniform", norm="l2") == pytest.approx(np.sqrt(0.5 * 0.04 + 0.5 * 0.01))
    assert M.mce(y, p, n_bins=2, strategy="uniform") == pytest.approx(0.2)
    assert M.calibration_error(y, p, n_bins=2, strategy="uniform") == pytest.approx(0.15)


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
def test_integer_weights_equal_repeated_rows(miscalibrated, rng, strategy):
    y, p = miscalibrated
    w = rng.integers(1, 4, p.size)
    yr, pr = np.repeat(y, w), np.repeat(p, w)
    for f in (M.ece, M.mce, M.confidence_ece):
        assert f(y, p, strategy=strategy, sample_weight=w) == pytest.approx(f(yr, pr, strategy=strategy), rel=1e-12)
    assert M.smooth_ece(y, p, sample_weight=w) == pytest.approx(M.smooth_ece(yr, pr), rel=1e-9)
    for f in (M.brier_score, M.log_loss, M.roc_auc, M.accuracy):
        assert f(y, p, sample_weight=w) == pytest.approx(f(yr, pr), rel=1e-12)
    weighted, repeated = M.corp_decomposition(y, p, sample_weight=w), M.corp_decomposition(yr, pr)
    for field in ("score", "mcb", "dsc", "unc"):
        assert getattr(weighted, field) == pytest.approx(getattr(repeated, field), rel=1e-12)


# ----------------------------------------------------------------------------- confidence ECE


def _confidence_table_items():
    """100 items from a table of (bin, count, mean confidence, correct) built by hand.

    Each row's items have confidences spread symmetrically around the row's mean; the first half
    of a row predict class 1 (p = confidence), the rest class 0 (p = 1 - confidence); the first
    ``correct`` items of a row are right.

    ==========  =====  ==========  =======  ========  ==================
    bin         count  mean conf   correct  accuracy  count/N * |gap|
    ==========  =====  ==========  =======  ========  ==================
    [0.5, 0.6)  20     0.55        10       0.50      0.20 * 0.05 = 0.010
    [0.6, 0.7)  20     0.65        16       0.80      0.20 * 0.15 = 0.030
    [0.7, 0.8)  10     0.75         5       0.50      0.10 * 0.25 = 0.025
    [0.8, 0.9)  20     0.85        14       0.70      0.20 * 0.15 = 0.030
    [0.9, 1.0]  30     0.95        27       0.90      0.30 * 0.05 = 0.015
    ==========  =====  ==========  =======  ========  ==================

    ECE = 0.010 + 0.030 + 0.025 + 0.030 + 0.015 = 0.110; MCE = 0.25.
    """
    table = [(20, 0.55, 10), (20, 0.65, 16), (10, 0.75, 5), (20, 0.85, 14), (30, 0.95, 27)]
    probs, labels = [], []
    for count, conf, n_correct in table:
        offsets = np.linspace(-0.03, 0.03, count)  # symmetric: the row mean stays `conf`
        for k in range(count):
            c = conf + offsets[k]
            predicts_one = k < count // 2
            correct = k < n_correct
            probs.append(c if predicts_one else 1.0 - c)
            labels.append(int(predicts_one == correct))
    return np.array(labels), np.array(probs)


def test_confidence_ece_rebuilds_hand_table():
    y, p = _confidence_table_items()
    assert p.size == 100
    assert M.confidence_ece(y, p) == pytest.approx(0.110, abs=1e-12)
    assert M.confidence_ece(y, p, norm="max") == pytest.approx(0.25, abs=1e-12)
    # the class-1 ECE of the same items is a different number
    assert M.ece(y, p, strategy="uniform") > 0.2


def test_confidence_ece_binned_on_p_reproduces_the_notes_worked_example(reference_dir):
    """The note's 100 items (10 bins of p; per bin its count, mean p and the accuracy of the
    predicted label) give CE 0.1571. Rebuilt as items (each bin's items at its mean p, its
    accuracy times its count of them correct), ``bin_on="probability"`` gives the note's sum
    with the accuracies the rebuilt items have (the table's are rounded to two decimals);
    binning the confidences instead merges the bins k and 9 - k into a different number."""
    table = pd.read_csv(reference_dir / "confidence_ece_example.csv")
    upper = table["avg_p"] >= 0.5
    confidence = np.where(upper, table["avg_p"], 1.0 - table["avg_p"])
    weights = table["count"] / table["count"].sum()
    assert float(np.sum(weights * np.abs(confidence - table["accuracy"]))) == pytest.approx(0.1571, abs=1e-4)
    n_correct = np.round(table["accuracy"] * table["count"]).astype(int)
    p = np.repeat(table["avg_p"].to_numpy(), table["count"])
    correct = np.concatenate([np.arange(n) < k for n, k in zip(table["count"], n_correct, strict=True)])
    predicted = np.repeat(upper.to_numpy().astype(int), table["count"])
    y = np.where(correct, predicted, 1 - predicted)
    exact = float(np.sum(weights * np.abs(confidence - n_correct / table["count"])))
    assert M.confidence_ece(y, p, bin_on="probability") == pytest.approx(exact, abs=1e-12)
    assert exact == pytest.approx(0.1571, abs=1e-3)
    assert abs(M.confidence_ece(y, p) - exact) > 0.005  # the confidences' bins: another number
    with pytest.raises(ValueError, match="bin_on"):
        M.confidence_ece(y, p, bin_on="p")


def test_confidence_ece_is_symmetric_in_class_labels(miscalibrated):
    y, p = miscalibrated
    assert M.confidence_ece(1 - y, 1 - p) == pytest.approx(M.confidence_ece(y, p), abs=1e-12)


# ----------------------------------------------------------------------------- debiased l2


def test_debiased_l2_is_closer_to_the_truth_than_plugin():
    """Kumar et al. 2019: predictions at 10 bin centres, true P(y=1|p) = p + 0.04 * sign."""
    rng = np.random.default_rng(7)
    centres = (np.arange(10) + 0.5) / 10
    truth_q = np.clip(centres + 0.04 * np.where(np.arange(10) % 2 == 0, 1, -1), 0, 1)
    true_l2 = np.sqrt(np.mean((truth_q - centres) ** 2))  # bins have equal mass
    plug, deb = [], []
    for _ in range(200):
        k = rng.integers(0, 10, 1000)
        p = centres[k]
        y = (rng.uniform(size=k.size) < truth_q[k]).astype(int)
        plug.append(M.calibration_error(y, p, n_bins=10, strategy="uniform", norm="l2"))
        deb.append(M.calibration_error(y, p, n_bins=10, strategy="uniform", norm="l2", debias=True))
    plug, deb = np.array(plug), np.array(deb)
    # the plug-in is biased upwards by about sum_b o_b(1 - o_b) / N; the debiased estimate
    # (clipped at 0, then square-rooted) is nearly unbiased and closer on average
    assert np.mean(np.abs(deb - true_l2)) < np.mean(np.abs(plug - true_l2))
    assert abs(np.mean(deb) - true_l2) < 0.3 * (np.mean(plug) - true_l2)


def test_debiased_l2_depends_only_on_weight_ratios(miscalibrated, rng):
    """The correction uses the effective size (sum w)^2 / sum w^2, not the bin's weight: weights
    normalised to sum 1 give the estimate of the same weights unnormalised (with the bin's
    weight as its size every bin would be under 1 sample and the estimate 0)."""
    y, p = miscalibrated
    w = rng.uniform(0.5, 2.0, p.size)
    kw = {"n_bins": 5, "norm": "l2", "debias": True}
    ref = M.calibration_error(y, p, sample_weight=w, **kw)
    assert ref > 0.05
    assert M.calibration_error(y, p, sample_weight=w / w.sum(), **kw) == pytest.approx(ref, rel=1e-9)
    unweighted = M.calibration_error(y, p, **kw)
    assert M.calibration_error(y, p, sample_weight=np.full(p.size, 1 / p.size), **kw) == pytest.approx(unweighted)


def test_debias_needs_l2():
    with pytest.raises(ValueError, match="norm='l2'"):
        M.calibration_error([0, 1], [0.2, 0.7], debias=True)


# ----------------------------------------------------------------------------- sweep


@pytest.mark.parametrize("case", ["miscalibrated", "separated"])
def test_ece_sweep_uses_largest_monotone_equal_mass_binning(miscalibrated, case):
    y, p = miscalibrated
    if case == "separated":  # every equal-mass binning is monotone: the sweep goes to n bins
        y, p = (p[:60] > 0.5).astype(int), p[:60]
    best = 1
    for b in range(2, p.size + 1):
        curve = M.reliability_curve(y, p, n_bins=b, strategy="quantile")
        if np.any(np.diff(curve["fraction_positive"].values) < 0):
            break
        best = b
    assert best > 1
    assert M.ece_sweep(y, p) == pytest.approx(M.ece(y, p, n_bins=best, strategy="quantile"), rel=1e-12)
    assert M.ece_sweep(y, p, norm="l2") == pytest.approx(
        M.ece(y, p, n_bins=best, strategy="quantile", norm="l2"), rel=1e-12
    )


def _sweep_by_definition(y, p, strategy, w):
    """b* straight from the definition: bin for every b until the fractions of positives decrease."""
    best = 1
    for b in range(2, p.size + 1):
        curve = M.reliability_curve(y, p, n_bins=b, strategy=strategy, sample_weight=w)
        if np.any(np.diff(curve["fraction_positive"].values) < 0):
            break
        best = b
    return best


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
@pytest.mark.parametrize("weights", ["none", "integer", "float", "some zero"])
@pytest.mark.parametrize("scores", ["continuous", "tied", "on bin edges", "nearly separable"])
def test_ece_sweep_matches_its_definition(strategy, weights, scores):
    rng = np.random.default_rng(7)
    n = 240
    p = {
        "continuous": rng.uniform(size=n),
        "tied": np.round(rng.uniform(size=n), 1),
        "on bin edges": rng.integers(0, 13, size=n) / 12.0,  # edges of 2, 3, 4, 6 and 12 uniform bins
        "nearly separable": expit(rng.normal(0.0, 6.0, size=n)),
    }[scores]
    y = (rng.uniform(size=n) < p).astype(int)
    w = {
        "none": None,
        "integer": rng.integers(1, 4, size=n).astype(float),
        "float": rng.uniform(0.1, 2.0, size=n),
        "some zero": rng.choice([0.0, 0.5, 1.5], size=n),
    }[weights]
    best = _sweep_by_definition(y, p, strategy, w)
    expected = M.ece(y, p, n_bins=best, strategy=strategy, sample_weight=w)
    assert M.ece_sweep(y, p, strategy=strategy, sample_weight=w) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_ece_sweep_single_bin_when_two_bins_break_monotonicity():
    p = np.array([0.1, 0.2, 0.8, 0.9])
    y = np.array([1, 1, 0, 0])
    assert M.ece_sweep(y, p) == pytest.approx(abs(0.5 - 0.5))
    assert M.ece_sweep(y, p) == pytest.approx(M.ece(y, p, n_bins=1))


# ----------------------------------------------------------------------------- smooth ECE


def _smece_by_quadrature(y, p, sigma):
    r = y - p

    def rhat(t):  # the reflected kernel, images within 8 periods
        k = sum(norm.pdf(t - p - 2 * j, scale=sigma) + norm.pdf(t + p - 2 * j, scale=sigma) for j in range(-8, 9))
        return abs(np.mean(r * k))

    return integrate.quad(rhat, 0, 1, limit=400, epsabs=1e-10)[0]


@pytest.mark.parametrize("sigma", [0.05, 0.2, 0.7])
@pytest.mark.parametrize("at_ends", [False, True])
def test_smooth_ece_matches_direct_quadrature(rng, sigma, at_ends):
    p = rng.uniform(size=40)
    if at_ends:  # predictions exactly 0 and 1 are their own mirror images
        p[:10], p[10:20] = 0.0, 1.0
    y = (rng.uniform(size=40) < p**1.5).astype(float)
    assert M.smooth_ece(y, p, sigma=sigma) == pytest.approx(_smece_by_quadrature(y, p, sigma), abs=5e-4)


@pytest.mark.parametrize("sigma", [0.01, 0.3, 1.0, None])
def test_smooth_ece_of_one_signed_residuals_is_their_mean(sigma):
    # every residual negative: smoothing cannot cancel any, so smECE = mean |y - p| at every bandwidth
    p = np.random.default_rng(0).uniform(0.85, 0.95, 200)
    y = np.zeros(200)
    assert M.smooth_ece(y, p, sigma=sigma) == pytest.approx(p.mean(), rel=1e-9)


def test_smooth_ece_refuses_a_bandwidth_finer_than_its_grid():
    """sigma=1e-14 asked for a grid of 2e15 points (numpy's memory error); 2e-5 is the floor."""
    with pytest.raises(ValueError, match=r"sigma=1e-14 must be a number in \[2e-05, 1\].*or sigma=None"):
        M.smooth_ece([0, 1, 1], [0.2, 0.6, 0.9], sigma=1e-14)
    with pytest.raises(ValueError, match=r"sigma=1.9e-05 must be a number in \[2e-05, 1\]"):
        M.smooth_ece([0, 1, 1], [0.2, 0.6, 0.9], sigma=1.9e-5)
    # the floor itself works: residuals of one sign give their mean at every bandwidth
    assert M.smooth_ece([1, 1, 1], [0.2, 0.6, 0.9], sigma=2e-5) == pytest.approx(np.mean([0.8, 0.4, 0.1]))


def test_smooth_ece_constant_forecast_is_the_bias():
    # p = 0.5 everywhere, 70% positives: r_hat = 0.2 * reflected kernel, whose mass on [0, 1] is ~1
    y = np.array([1] * 70 + [0] * 30)
    p = np.full(100, 0.5)
    assert M.smooth_ece(y, p) == pytest.approx(0.2, abs=1e-3)


def test_smooth_ece_is_its_own_bandwidth_and_near_zero_when_calibrated(miscalibrated, rng):
    y, p = miscalibrated
    value = M.smooth_ece(y, p)
    assert M.smooth_ece(y, p, sigma=value) == pytest.approx(value, abs=2e-3)
    assert 0.05 < value < 0.3
    q = rng.uniform(size=20000)
    yq = (rng.uniform(size=q.size) < q).astype(int)
    assert M.smooth_ece(yq, q) < 0.02


# ----------------------------------------------------------------------------- MVCE


def test_mvce_formula_and_reproducibility(miscalibrated):
    y, p = miscalibrated
    rng = np.random.default_rng(3)
    sizes = np.full(8, p.size // 8)
    sizes[: p.size % 8] += 1
    values = []
    for _ in range(5):
        perm = rng.permutation(p.size)
        chunks = np.split(perm, np.cumsum(sizes)[:-1])
        values.append(np.sqrt(sum(len(c) / p.size * (p[c].mean() - y[c].mean()) ** 2 for c in chunks)))
    got = M.mvce(y, p, n_bins=8, n_shuffles=5, p=2, random_state=3)
    assert got == pytest.approx(np.mean(values), rel=1e-12)
    assert M.mvce(y, p, random_state=11) == M.mvce(y, p, random_state=11)
    assert M.mvce(y, p, random_state=11) != M.mvce(y, p, random_state=12)


def test_mvce_one_bin_is_calibration_in_the_large(miscalibrated):
    y, p = miscalibrated
    assert M.mvce(y, p, n_bins=1, n_shuffles=3, random_state=0) == pytest.approx(abs(p.mean() - y.mean()))


def test_mvce_grows_with_miscalibration(rng):
    q = rng.uniform(0.1, 0.9, 3000)
    y = (rng.uniform(size=q.size) < q).astype(int)
    base = M.mvce(y, q, random_state=0)
    assert base < M.mvce(y, np.clip(q + 0.1, 0, 1), random_state=0)
    assert base < M.mvce(y, np.clip(q + rng.normal(0, 0.3, q.size), 0, 1), random_state=0)


# ----------------------------------------------------------------------------- scores


def test_scores_match_their_formulas(miscalibrated, rng):
    y, p = miscalibrated
    w = rng.uniform(0.5, 2.0, p.size)
    brier = np.average((y - p) ** 2, weights=w)
    assert M.brier_score(y, p, sample_weight=w) == pytest.approx(brier, rel=1e-12)
    assert M.rmse(y, p, sample_weight=w) == pytest.approx(np.sqrt(brier), rel=1e-12)
    ll = -np.average(y * np.log(p) + (1 - y) * np.log(1 - p), weights=w)
    assert M.log_loss(y, p, sample_weight=w) == pytest.approx(ll, rel=1e-12)
    assert M.accuracy(y, p, sample_weight=w) == pytest.approx(np.average((p > 0.5) == y, weights=w), rel=1e-12)
    pos, neg = p[y == 1], p[y == 0]
    auc = np.mean((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :]))
    assert M.roc_auc(y, p) == pytest.approx(auc, rel=1e-12)


def test_log_loss_clips_certain_mistakes():
    value = M.log_loss([1, 0], [0.0, 1.0])
    assert np.isfinite(value)
    assert value == pytest.approx(-np.log(np.finfo(float).eps), rel=1e-6)


def test_accuracy_tie_at_half_predicts_negative():
    assert M.accuracy([0, 1], [0.5, 0.5]) == 0.5
    assert M.accuracy([0], [0.5]) == 1.0


def test_single_class_allowed_except_auc():
    assert M.brier_score([1, 1], [0.9, 0.8]) == pytest.approx((0.01 + 0.04) / 2)
    assert M.ece([1, 1], [0.9, 0.8], n_bins=1) == pytest.approx(0.15)
    with pytest.raises(ValueError, match="single class"):
        M.roc_auc([1, 1], [0.9, 0.8])


def test_roc_auc_says_that_roc_auc_needs_both_classes():
    with pytest.raises(ValueError, match=r"y_true has a single class \(1\): ROC AUC needs samples of both classes"):
        M.roc_auc([1, 1, 1], [0.2, 0.7, 0.4])
    with pytest.raises(ValueError, match="positive class zero total weight: ROC AUC needs weight on both classes"):
        M.roc_auc([0, 1, 0], [0.2, 0.7, 0.4], sample_weight=[1, 0, 1])


# ----------------------------------------------------------------------------- decompositions


def test_brier_decomposition_is_exact_over_distinct_values(rng):
    p = rng.choice([0.1, 0.25, 0.5, 0.7, 0.9], 500)
    y = (rng.uniform(size=p.size) < p**0.8).astype(int)
    w = rng.uniform(0.5, 2, p.size)
    out = M.brier_decomposition(y, p, sample_weight=w)
    assert not out.binned and out.n_groups == 5
    assert out.brier == pytest.approx(M.brier_score(y, p, sample_weight=w), rel=1e-12)
    assert out.reliability - out.resolution + out.uncertainty == pytest.approx(out.brier, abs=1e-14)
    assert out.calibration + out.refinement == pytest.approx(out.brier, abs=1e-14)
    assert out.calibration == out.reliability
    ybar = np.average(y, weights=w)
    assert out.uncertainty == pytest.approx(ybar * (1 - ybar), rel=1e-12)
    # hand check of REL and RES for the first group
    grp = p == 0.1
    o1 = np.average(y[grp], weights=w[grp])
    share = w[grp].sum() / w.sum()
    assert out.reliability >= share * (0.1 - o1) ** 2
    assert out.resolution >= share * (o1 - ybar) ** 2


def test_brier_decomposition_drops_forecast_values_of_zero_weight_silently():
    """A forecast value held only by rows of weight 0 is no group (and used to warn of 0 / 0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = M.brier_decomposition([0, 1, 1], [0.2, 0.5, 0.7], sample_weight=[0, 1, 1])
    ref = M.brier_decomposition([1, 1], [0.5, 0.7])
    assert out.n_groups == ref.n_groups == 2
    np.testing.assert_allclose(_as_numbers(out), _as_numbers(ref), rtol=1e-12, atol=1e-15)


def test_binned_brier_decomposition_says_so(miscalibrated):
    y, p = miscalibrated
    out = M.brier_decomposition(y, p, n_bins=10)
    assert out.binned and out.n_groups == 10
    assert out.reliability == pytest.approx(M.ece(y, p, n_bins=10, strategy="uniform", norm="l2") ** 2, rel=1e-12)
    with pytest.raises(AttributeError):
        out.brier = 0.0  # frozen


def test_corp_properties(miscalibrated):
    y, p = miscalibrated
    for score in ("brier", "log"):
        out = M.corp_decomposition(y, p, score=score)
        assert out.mcb >= 0 and out.dsc >= 0
        assert out.score == pytest.approx(out.mcb - out.dsc + out.unc, abs=1e-12)
        assert out.score_name == score
    assert M.corp_decomposition(y, p).score == pytest.approx(M.brier_score(y, p), rel=1e-12)
    # forecasts equal to the event rate of their (monotone) groups are already PAV-calibrated
    groups = np.repeat([0.2, 0.5, 0.75], [10, 4, 8])
    labels = np.r_[[1] * 2 + [0] * 8, [1, 0, 1, 0], [1] * 6 + [0] * 2]
    assert M.corp_decomposition(labels, groups).mcb == pytest.approx(0.0, abs=1e-15)


def test_bayes_error_bounds_hold_on_calibrated_simulation(rng):
    """x ~ N(+-1, 1), equal priors: eta(x) = expit(2x) and the Bayes error is Phi(-1)."""
    n = 40000
    y = rng.integers(0, 2, n)
    x = rng.normal(np.where(y == 1, 1.0, -1.0), 1.0)
    bayes = norm.cdf(-1.0)
    exact = M.bayes_error_bounds(y, expit(2 * x))
    # a coarser calibrated forecast: P(y=1 | which of 6 x-bins), known in closed form
    edges = np.array([-np.inf, -1.5, -0.5, 0.0, 0.5, 1.5, np.inf])
    k = np.searchsorted(edges, x) - 1
    m1 = norm.cdf(edges[1:] - 1) - norm.cdf(edges[:-1] - 1)
    m0 = norm.cdf(edges[1:] + 1) - norm.cdf(edges[:-1] + 1)
    coarse = M.bayes_error_bounds(y, (m1 / (m0 + m1))[k])
    tol = 3 * np.sqrt(bayes * (1 - bayes) / n)
    for out in (exact, coarse):
        assert out.lower <= out.expected_error_rate <= out.upper
        assert out.refinement <= out.lower
        assert out.lower - tol <= out.error_rate <= out.upper + tol
        assert bayes <= out.error_rate + tol
        assert out.expected_error_rate == pytest.approx(out.error_rate, abs=tol)
    assert exact.expected_error_rate == pytest.approx(bayes, abs=tol)
    assert coarse.refinement > exact.refinement  # coarser forecasts are less refined


# ----------------------------------------------------------------------------- input handling


def _call(f, y, p, **kw):
    if f is M.mvce:
        kw.setdefault("n_bins", 1)
    return f(y, p, **kw)


@pytest.mark.parametrize("f", ALL_METRICS, ids=lambda f: f.__name__)
def test_bad_inputs_are_rejected_with_clear_messages(f):
    with pytest.raises(ValueError, match=r"y_prob has 1 NaN"):
        _call(f, [0, 1, 1], [0.2, np.nan, 0.7])
    with pytest.raises(ValueError, match=r"y_prob has 1 value\(s\) outside \[0, 1\]"):
        _call(f, [0, 1, 1], [0.2, 1.3, 0.7])
    with pytest.raises(ValueError, match="y_true has 3 distinct values"):
        _call(f, [0, 1, 2], [0.2, 0.3, 0.7])
    with pytest.raises(ValueError, match="Mismatched lengths: y_true has 2, y_prob has 3"):
        _call(f, [0, 1], [0.2, 0.3, 0.7])
    with pytest.raises(ValueError, match="sample_weight has 1 negative"):
        _call(f, [0, 1, 1], [0.2, 0.3, 0.7], sample_weight=[1, -1, 1])


@pytest.mark.parametrize("f", [M.ece, M.mce, M.confidence_ece, M.calibration_error, M.reliability_curve])
def test_bad_binning_parameters(f):
    with pytest.raises(ValueError, match="n_bins=0 is not a positive integer"):
        f([0, 1], [0.2, 0.7], n_bins=0)
    with pytest.raises(ValueError, match="strategy='equal' is not one of"):
        f([0, 1], [0.2, 0.7], strategy="equal")


def test_bad_parameters_of_other_metrics():
    with pytest.raises(ValueError, match="norm='l3' is not one of"):
        M.ece([0, 1], [0.2, 0.7], norm="l3")
    with pytest.raises(ValueError, match=r"sigma=0 must be a number in \[2e-05, 1\]"):
        M.smooth_ece([0, 1], [0.2, 0.7], sigma=0)
    with pytest.raises(ValueError, match="p=0.5 must be a finite number >= 1"):
        M.mvce([0, 1], [0.2, 0.7], n_bins=1, p=0.5)
    with pytest.raises(ValueError, match="n_bins=5 exceeds the 2 samples"):
        M.mvce([0, 1], [0.2, 0.7], n_bins=5)
    with pytest.raises(ValueError, match="score='crps' is not one of"):
        M.corp_decomposition([0, 1], [0.2, 0.7], score="crps")
    with pytest.raises(ValueError, match="strategy='papers' is not one of"):
        M.ece_sweep([0, 1], [0.2, 0.7], strategy="papers")


@pytest.mark.parametrize("f", ALL_METRICS, ids=lambda f: f.__name__)
def test_inputs_not_modified_and_plain_floats_returned(f, miscalibrated):
    y, p = miscalibrated
    y_list = y.tolist()
    p_series = pd.Series(p.copy())
    w = np.ones(p.size)
    out = _call(f, y_list, p_series, sample_weight=w)
    assert y_list == y.tolist()
    np.testing.assert_array_equal(p_series.to_numpy(), p)
    np.testing.assert_array_equal(w, np.ones(p.size))
    if f in (M.brier_decomposition, M.corp_decomposition, M.bayes_error_bounds, M.reliability_curve):
        return
    assert type(out) is float


@pytest.mark.parametrize("scale", [1e-120, 1e300])
@pytest.mark.parametrize("f", [f for f in ALL_METRICS if f is not M.reliability_curve], ids=lambda f: f.__name__)
def test_metrics_of_weight_ratios_take_weights_of_any_scale_silently(f, scale, miscalibrated):
    """Only the ratios of the weights matter to these metrics: 1e-120 or 1e300 on every row is the
    unweighted result, without the warning about weights that cannot act as counts."""
    y, p = miscalibrated
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _call(f, y, p, sample_weight=np.full(p.size, scale))
    np.testing.assert_allclose(_as_numbers(got), _as_numbers(_call(f, y, p)), rtol=1e-12, atol=1e-15)


def test_reliability_curve_counts_in_the_units_of_the_weights(miscalibrated):
    """Its count is the bins' weight, not a ratio: the weights keep their scale."""
    y, p = miscalibrated
    curve = M.reliability_curve(y, p, sample_weight=np.full(p.size, 2.5))
    assert float(curve["count"].sum()) == pytest.approx(2.5 * p.size)
    assert curve["count"].values == pytest.approx(2.5 * M.reliability_curve(y, p)["count"].values)


@pytest.mark.parametrize("f", ALL_METRICS, ids=lambda f: f.__name__)
def test_text_labels_need_pos_label_and_score_the_class_it_names(f):
    """Text labels are scored against the class pos_label names (the greater word was taken
    silently, which inverted every metric of a model fitted with pos_label="fraud"); without
    pos_label they, and a lone label other than -1, 0 and 1, are refused."""
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    p = np.array([0.1, 0.8, 0.6, 0.3, 0.9, 0.2, 0.55, 0.4])
    words = np.where(y == 1, "fraud", "ok")
    expected = _call(f, y, p)
    got = _call(f, words, p, pos_label="fraud")
    if isinstance(expected, float):
        assert got == pytest.approx(expected)
    with pytest.raises(ValueError, match="text labels.*pos_label="):
        _call(f, words, p)
    if f is not M.roc_auc:  # one class has no ROC either way
        with pytest.raises(ValueError, match="text labels \\('yes'\\)"):
            _call(f, ["yes"] * 3, [0.9, 0.8, 0.7])
        with pytest.raises(ValueError, match="single value 2"):
            _call(f, [2, 2, 2], [0.9, 0.8, 0.7])
        _call(f, ["yes"] * 3, [0.9, 0.8, 0.7], pos_label="yes")


def test_labels_in_minus_one_one_are_accepted():
    assert M.brier_score([-1, 1], [0.2, 0.9]) == pytest.approx((0.04 + 0.01) / 2)


def test_importing_metrics_loads_neither_pymc_nor_matplotlib():
    code = "import sys, bayescal.metrics; print(any(m in sys.modules for m in ('pymc', 'matplotlib')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 1), st.floats(0, 1)), min_size=1, max_size=60),
    n_bins=st.integers(1, 12),
    strategy=st.sampled_from(["quantile", "uniform", "papers"]),
)
def test_binned_error_invariants(data, n_bins, strategy):
    y = np.array([d[0] for d in data])
    p = np.array([d[1] for d in data])
    l1 = M.ece(y, p, n_bins=n_bins, strategy=strategy)
    l2 = M.ece(y, p, n_bins=n_bins, strategy=strategy, norm="l2")
    worst = M.mce(y, p, n_bins=n_bins, strategy=strategy)
    assert 0.0 <= l1 <= l2 + 1e-12 <= worst + 2e-12 <= 1.0 + 2e-12
    # one bin: calibration in the large; the binned error never exceeds the mean absolute residual
    assert M.ece(y, p, n_bins=1) == pytest.approx(abs(y.mean() - p.mean()), abs=1e-12)
    assert l1 <= np.mean(np.abs(y - p)) + 1e-12
    curve = M.reliability_curve(y, p, n_bins=n_bins, strategy=strategy)
    assert float(curve["count"].sum()) == len(data)
    assert np.all(np.diff(curve["mean_predicted"].values) >= -1e-12)


def test_uniform_bins_put_a_prediction_on_an_edge_in_the_bin_it_opens():
    """Bin k of B is [k/B, (k+1)/B): 0.29 is in bin 29 of 100, although 0.29 * 100 is
    28.999999999999996 in floating point (floor put it in bin 28, and the ECE of these three
    rows came out 0.3767 instead of 0.5633). The sweep's kernel cuts at the same edges."""
    y, p = np.array([0, 1, 1]), np.array([0.28, 0.29, 0.30])
    curve = M.reliability_curve(y, p, n_bins=100, strategy="uniform")
    np.testing.assert_array_equal(curve["bin"], [28, 29, 30])
    assert M.ece(y, p, n_bins=100, strategy="uniform") == pytest.approx((0.28 + 0.71 + 0.70) / 3, abs=1e-12)
    grid = np.round(np.arange(1, 100) / 100, 2)  # every two-decimal probability inside (0, 1)
    ids = M.reliability_curve(np.arange(grid.size) % 2, grid, n_bins=100, strategy="uniform")["bin"]
    np.testing.assert_array_equal(ids, np.arange(1, 100))


def test_ece_sweep_ignores_rows_of_weight_zero():
    y, p = np.array([0, 0, 1, 1]), np.array([0.1, 0.3, 0.6, 0.8])
    w = np.array([3.0, 1.0, 1.0, 1.0])
    base = M.ece_sweep(y, p, sample_weight=w)
    assert M.ece_sweep(np.r_[y, 1], np.r_[p, 0.9], sample_weight=np.r_[w, 0.0]) == base
    assert M.ece_sweep(np.r_[y, 0], np.r_[p, 0.5], sample_weight=np.r_[w, 0.0]) == base


def test_papers_groups_do_not_depend_on_the_order_of_weighted_ties():
    """The groups are cut by row count, here through the positives at 0.2: which of them falls
    on which side was their input order (0.7582 forward, 0.7545 reversed)."""
    p = np.full(11, 0.2)
    y = np.r_[np.zeros(5), np.ones(6)].astype(int)
    w = np.r_[np.ones(10), 100.0]
    forward = M.ece(y, p, n_bins=2, strategy="papers", sample_weight=w)
    backward = M.ece(y[::-1], p[::-1], n_bins=2, strategy="papers", sample_weight=w[::-1])
    assert forward == backward


def test_corp_components_are_never_negative():
    rng = np.random.default_rng(3)
    for _ in range(50):
        p = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], 40)
        y = (rng.random(40) < p).astype(int)
        d = M.corp_decomposition(y, p)
        assert d.mcb >= 0 and d.dsc >= 0
