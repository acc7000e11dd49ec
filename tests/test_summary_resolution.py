"""ScoreSummary's equal-width bins and far outlying scores: the warning and the remedy it names."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from bayescal import make_calibrator
from bayescal.data import ASINH_BINS_PER_IQR, SUMMARY_MIN_MIDDLE_BINS, ScoreSummary

CONTAMINATION = 0.03


def contaminated(n: int, seed: int):
    """Decision values N(+-1, 1) with 3 % Cauchy(0, 10) contamination in each class, pi = 0.5,
    and the true map P(y=1 | t) of that mixture."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    t = np.where(rng.random(n) < CONTAMINATION, 10.0 * rng.standard_cauchy(n), rng.normal(2.0 * y - 1.0, 1.0))

    def true_map(x):
        tail = CONTAMINATION * stats.cauchy.pdf(x, scale=10.0)
        f1 = (1 - CONTAMINATION) * stats.norm.pdf(x, 1.0) + tail
        f0 = (1 - CONTAMINATION) * stats.norm.pdf(x, -1.0) + tail
        return f1 / (f1 + f0)

    return t, y, true_map


def quiet_summary(scores, y, **kwargs) -> ScoreSummary:
    """The summary, failing the test on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return ScoreSummary.from_arrays(scores, y, **kwargs)


def test_middle_half_of_evenly_spread_scores_spans_half_the_bins():
    t = np.linspace(-3.0, 3.0, 10_001)
    y = np.arange(t.size) % 2
    summary = quiet_summary(t, y, score_kind="decision", n_bins=200)
    assert summary.bins_across_middle_half() == pytest.approx(100.0, abs=1.0)


def equal_width(summary: ScoreSummary) -> bool:
    return np.allclose(np.diff(summary.edges), np.diff(summary.edges).mean())


@pytest.mark.parametrize(
    "shape",
    ["monotone", "piled_at_0_and_1", "student_t_decision", "few_distinct_scores"],
)
def test_summaries_of_usual_scores_keep_equal_width_bins_without_warning(shape):
    rng = np.random.default_rng(1)
    n = 100_000
    y = (rng.random(n) < 0.4).astype(int)
    if shape == "monotone":
        s, kind = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n)), "probability"
    elif shape == "piled_at_0_and_1":
        s, kind = np.where(y == 1, rng.beta(3, 0.3, n), rng.beta(0.3, 3, n)), "probability"
        s[:50] = 0.0  # exact 0/1 scores are atoms, outside the continuous range
        s[50:100] = 1.0
    elif shape == "student_t_decision":
        s, kind = rng.standard_t(3, n) + (2.0 * y - 1.0), "decision"
    else:  # a small forest's scores: most of the weight on a few values, far apart
        s, kind = np.where(y == 1, rng.choice([0.5, 0.8, 0.9], n), rng.choice([0.1, 0.2, 0.5], n)), "probability"
    summary = quiet_summary(s, y, score_kind=kind)
    assert equal_width(summary)


def test_far_outliers_put_the_bins_on_an_asinh_scale_and_the_fit_recovers_the_map():
    t, y, true_map = contaminated(10_000, seed=3)
    summary = quiet_summary(t, y, score_kind="decision")
    assert not equal_width(summary)
    assert summary.edges[0] < t.min() and summary.edges[-1] > t.max()
    assert summary.bins_across_middle_half() > 2 * SUMMARY_MIN_MIDDLE_BINS
    np.testing.assert_allclose(summary.total, [np.sum(y == 0), np.sum(y == 1)])
    with pytest.warns(UserWarning, match=r"middle half .* Leave lo and hi None"):
        stretched = ScoreSummary.from_arrays(t, y, score_kind="decision", lo=t.min() - 1.0, hi=t.max() + 1.0)
    assert equal_width(stretched)  # lo/hi given: equal-width, so that shards' summaries add

    bulk = np.linspace(-2.5, 2.5, 101)
    truth = true_map(bulk)
    on_asinh = make_calibrator("dpm", score_kind="decision", random_state=0).fit(summary)
    on_equal = make_calibrator("dpm", score_kind="decision", random_state=0).fit(stretched)
    on_rows = make_calibrator("dpm", score_kind="decision", random_state=0).fit(t, y)
    asinh_error = np.abs(on_asinh.predict_proba(bulk)[:, 1] - truth).mean()
    equal_error = np.abs(on_equal.predict_proba(bulk)[:, 1] - truth).mean()
    rows_error = np.abs(on_rows.predict_proba(bulk)[:, 1] - truth).mean()
    assert equal_error > 0.05  # the warning is about a real loss
    assert asinh_error < 0.02 and asinh_error < rows_error + 0.01
    band = on_asinh.calibration_map(bulk).quantile([0.025, 0.975], dim=("chain", "draw")).values
    assert np.mean((band[0] <= truth) & (truth <= band[1])) > 0.8


def test_the_asinh_summary_resolves_the_data_region_as_the_rows_compression_does():
    # at 10^5 scores the Cauchy rows reach ~10^5 from a bulk of unit spread; the asinh scale of
    # 4 robust standard deviations left the middle half in 20 of 1,024 bins, the scale chosen for
    # the data region (as the DPM's compression of rows chooses it) keeps every bin between the
    # 2.5 % and 97.5 % quantiles at most an interquartile range over 32 wide
    t, y, _ = contaminated(100_000, seed=3)
    summary = quiet_summary(t, y, score_kind="decision")
    q025, q1, q3, q975 = np.quantile(t, [0.025, 0.25, 0.75, 0.975])
    e = summary.edges
    region = (e[1:] > q025) & (e[:-1] < q975)
    assert np.diff(e)[region].max() <= (q3 - q1) / ASINH_BINS_PER_IQR
    assert summary.bins_across_middle_half() > 2 * ASINH_BINS_PER_IQR
    assert summary.edges[0] < t.min() and summary.edges[-1] > t.max() and e.size == 1025


def test_the_dask_route_chooses_the_same_bins():
    da = pytest.importorskip("dask.array")
    t, y, _ = contaminated(10_000, seed=3)
    in_memory = quiet_summary(t, y, score_kind="decision")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        on_dask = ScoreSummary.from_arrays(
            da.from_array(t, chunks=2_500), da.from_array(y, chunks=2_500), score_kind="decision"
        )
    assert not equal_width(on_dask)
    # the chunks' quantile sketches give the quartiles to within about 0.15 % of the weight
    np.testing.assert_allclose(on_dask.edges, in_memory.edges, rtol=0.02, atol=0.02)
    np.testing.assert_allclose(on_dask.total, in_memory.total)


@pytest.mark.parametrize("n, held_out", [(200_000, "every other row"), (1_000_000, "one fold of ten")])
def test_rows_held_out_by_weight_zero_leave_the_summary_of_the_rows_kept(n, held_out):
    """Rows held out by weight 0 in a regular pattern (round-robin folds) lay out the bins as if
    they were not there. The layout's quantiles are read from every k-th row above 100,000 rows:
    every k-th row of all rows met only held-out ones and left the bulk in about one bin."""
    rng = np.random.default_rng(0)
    t = rng.standard_t(1.5, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-np.clip(t, -30, 30)))).astype(int)
    w = (np.arange(n) % 2 == 1) if held_out == "every other row" else (np.arange(n) % 10 != 0)
    w = w.astype(float)
    summary = quiet_summary(t, y, sample_weight=w, score_kind="decision")
    kept = quiet_summary(t[w > 0], y[w > 0], score_kind="decision")
    np.testing.assert_array_equal(summary.edges, kept.edges)
    np.testing.assert_array_equal(summary.counts, kept.counts)
    assert summary.bins_across_middle_half() > 4 * SUMMARY_MIN_MIDDLE_BINS


def test_a_far_row_of_weight_zero_sets_neither_the_range_nor_the_bounds_check():
    rng = np.random.default_rng(0)
    t = rng.normal(size=20_000)
    y = (rng.random(t.size) < 1 / (1 + np.exp(-2 * t))).astype(int)
    corrupt = dict(scores=np.r_[t, 1e12], y=np.r_[y, 1], sample_weight=np.r_[np.ones(t.size), 0.0])
    with_row = quiet_summary(**corrupt, score_kind="decision")
    without = quiet_summary(t, y, score_kind="decision")
    np.testing.assert_array_equal(with_row.edges, without.edges)
    np.testing.assert_array_equal(with_row.counts, without.counts)
    given = quiet_summary(**corrupt, score_kind="decision", lo=-10, hi=10)  # encloses every weighted score
    np.testing.assert_array_equal(given.counts, quiet_summary(t, y, score_kind="decision", lo=-10, hi=10).counts)
    with pytest.raises(ValueError, match="do not enclose the data"):
        ScoreSummary.from_arrays(np.r_[t, 12.0], np.r_[y, 1], score_kind="decision", lo=-10, hi=10)
