"""Tie spreading (deterministic dequantisation) of scores that take few distinct values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bayescal.data import spread_counts, spread_ties


def test_untied_scores_do_not_move():
    t = np.array([-1.0, 0.3, 2.0, 5.0])
    np.testing.assert_array_equal(spread_ties(t, np.array([0, 1, 0, 1]), np.ones(4)), t)


def test_tied_rows_fill_their_cell_evenly_within_each_class():
    t = np.array([0.0, 1.0, 1.0, 1.0, 1.0, 2.0])
    y = np.array([0, 0, 0, 1, 1, 1])
    t0 = t.copy()
    out = spread_ties(t, y, np.ones(6))
    np.testing.assert_array_equal(t, t0)  # the input is not modified
    # the cell of 1.0 is [0.5, 1.5]; two rows per class sit at its quartiles
    np.testing.assert_allclose(np.sort(out[1:3]), [0.75, 1.25])
    np.testing.assert_allclose(np.sort(out[3:5]), [0.75, 1.25])
    assert out[0] == 0.0 and out[5] == 2.0


def test_weights_set_the_positions_and_the_end_cells_are_mirrored():
    t = np.array([1.0, 1.0, 3.0])
    out = spread_ties(t, np.array([0, 0, 1]), np.array([1.0, 3.0, 1.0]))
    # cell of 1.0 mirrored on the left: [0, 2]; weights 1 and 3 take the midpoints of their shares
    np.testing.assert_allclose(out[:2], [0.0 + 2 * 0.125, 0.0 + 2 * 0.625])
    assert out[2] == 3.0


def test_binned_counts_spread_over_empty_neighbours_and_keep_their_totals():
    counts = np.array([[0.0, 2, 0, 0, 4, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0, 0, 0, 0]])
    out = spread_counts(counts)
    np.testing.assert_allclose(out.sum(axis=1), counts.sum(axis=1))
    np.testing.assert_allclose(out[0, 1:3], [1.0, 1.0])  # bin 1's cell is bins 1-2
    np.testing.assert_allclose(out[0, 3:6], 4 / 3.5)  # bin 4's cell is bins 3-5 and half of 6
    dense = np.array([[1.0, 2, 3], [0, 1, 0]])
    np.testing.assert_array_equal(spread_counts(dense), dense)  # adjacent occupied bins stay


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_class_bin_counts_equal_numpy_bincount_of_the_same_bins(seed, threaded, monkeypatch):
    """The compiled binning of the compression and the atom search puts every row where numpy's
    ``int((t - lo) / width)`` does (edges, the outer bins' overflow and skipped rows included),
    also when it runs on the two halves of the rows in two threads (as above ``THREADED_ROWS``)."""
    from bayescal import data as data_module
    from bayescal.data import ScoreData, class_bin_counts

    if threaded:
        monkeypatch.setattr(data_module, "THREADED_ROWS", 100)
    rng = np.random.default_rng(seed)
    n, n_bins = 5000, 37
    lo, width = -2.0, 0.1
    t = np.concatenate([rng.normal(size=n - 40), lo + width * np.arange(40)])  # 40 rows on bin edges
    y = rng.integers(0, 2, t.size).astype(np.int8)
    w = rng.exponential(size=t.size)
    skip = rng.random(t.size) < 0.1
    data = ScoreData(scores=t, t=t, y=y, w=w, score_kind="decision", classes=np.array([0, 1]))
    rows, weights = class_bin_counts(data, lo, width, n_bins, skip=skip)
    j = np.clip(((t - lo) / width).astype(np.int64), 0, n_bins - 1)
    keep = ~skip
    flat = y[keep].astype(np.int64) * n_bins + j[keep]
    np.testing.assert_array_equal(rows.ravel(), np.bincount(flat, minlength=2 * n_bins))
    np.testing.assert_allclose(weights.ravel(), np.bincount(flat, weights=w[keep], minlength=2 * n_bins), rtol=1e-12)
    assert rows.sum() == keep.sum()


def test_asinh_bins_hold_every_row_and_keep_the_bulk_finely_binned():
    """Equal-width bins on u = asinh((t - m) / s): every row's weight lands in its bin (numpy's
    own binning of u), and an outlier 100 robust SDs out leaves most bins to the bulk."""
    from bayescal.data import ScoreData, asinh_bins

    rng = np.random.default_rng(0)
    t = np.append(rng.standard_t(3, size=20_000), 400.0)
    y = rng.integers(0, 2, t.size).astype(np.int8)
    w = rng.exponential(size=t.size)
    data = ScoreData(scores=t, t=t, y=y, w=w, score_kind="decision", classes=np.array([0, 1]))
    counts, centres = asinh_bins(data, 256)
    np.testing.assert_allclose(counts.sum(axis=1), [w[y == 0].sum(), w[y == 1].sum()], rtol=1e-12)
    assert np.all(np.diff(centres) > 0)
    edges = np.concatenate([[-np.inf], 0.5 * (centres[1:] + centres[:-1]), [np.inf]])
    bulk = (t > np.quantile(t, 0.025)) & (t < np.quantile(t, 0.975))
    occupied = np.unique(np.searchsorted(edges, t[bulk]))
    assert occupied.size > 40  # equal-width bins over [min, 400] leave about 4


def test_asinh_edges_bound_the_bins_of_asinh_bins():
    """The edges that asinh_edges gives are those asinh_bins bins on: numpy's histogram on them
    holds each class's rows as asinh_bins counts them, and every centre lies between its edges."""
    from bayescal.data import ScoreData, asinh_bins, asinh_edges

    rng = np.random.default_rng(1)
    t = np.append(rng.standard_t(3, size=5_000), [-60.0, 250.0])
    y = rng.integers(0, 2, t.size).astype(np.int8)
    data = ScoreData(scores=t, t=t, y=y, w=np.ones(t.size), score_kind="decision", classes=np.array([0, 1]))
    counts, centres = asinh_bins(data, 128)
    edges = asinh_edges(t, 128)
    assert edges.size == 129 and edges[0] < t.min() and edges[-1] > t.max()
    assert np.all((edges[:-1] < centres) & (centres < edges[1:]))
    for c in (0, 1):
        np.testing.assert_array_equal(np.histogram(t[y == c], edges)[0], counts[c])


@pytest.mark.parametrize("corrupt_share", [0.0, 0.03])
def test_asinh_bins_resolve_the_data_region_when_outliers_stretch_the_range(corrupt_share):
    """With ``bins_per_iqr`` no bin between the 2.5 % and 97.5 % quantiles is wider than the
    interquartile range over that many: far corrupt scores stretch the asinh scale, so the
    layout narrows its scale and adds bins (at most ASINH_MAX_BIN_FACTOR times) and ends finer
    over that region than without the rule; clean scores keep ``n_bins`` and the layout of
    ``spread`` robust standard deviations. The edges of asinh_edges stay those of asinh_bins."""
    from bayescal.data import ASINH_MAX_BIN_FACTOR, ScoreData, asinh_bins, asinh_edges

    rng = np.random.default_rng(2)
    n = 200_000
    y = rng.integers(0, 2, n).astype(np.int8)
    t = rng.normal(2.0 * y - 1.0, 1.0)
    corrupt = rng.random(n) < corrupt_share
    t[corrupt] = 10.0 * rng.standard_cauchy(corrupt.sum())
    data = ScoreData(scores=t, t=t, y=y, w=np.ones(n), score_kind="decision", classes=np.array([0, 1]))
    counts, _ = asinh_bins(data, 512, bins_per_iqr=32)
    edges = asinh_edges(t, 512, bins_per_iqr=32)
    plain = asinh_edges(t, 512)
    region = np.quantile(t, [0.025, 0.975])
    iqr = np.diff(np.quantile(t, [0.25, 0.75]))[0]

    def widest(e):  # the widest bin that overlaps the data region
        inside = (e[1:] > region[0]) & (e[:-1] < region[1])
        return np.diff(e)[inside].max()

    if corrupt_share:
        assert widest(plain) > iqr / 32  # the stretched range leaves the region coarse at 512 bins
        assert 512 <= counts.shape[1] <= 512 * ASINH_MAX_BIN_FACTOR
        assert widest(edges) <= iqr / 32 * 1.01 or counts.shape[1] == 512 * ASINH_MAX_BIN_FACTOR
        assert widest(edges) < widest(asinh_edges(t, 512 * counts.shape[1] // 512)) / 1.5  # the scale narrowed
    else:
        assert counts.shape[1] == 512 and widest(edges) <= iqr / 32
        np.testing.assert_array_equal(edges, plain)
    assert edges.size == counts.shape[1] + 1
    for c in (0, 1):
        np.testing.assert_array_equal(np.histogram(t[y == c], edges)[0], counts[c])


def test_integer_weights_prepare_the_same_points_as_repeated_rows():
    """Frequency weights: a row of integer weight k is prepared exactly as k repeated rows (the
    copies are tied rows, spread over their rounding cell, and count towards the atom rule),
    a row of weight 0 as no row; rows of weight w >= 2 keep their total weight."""
    from bayescal.bayesian.preparation import frequency_rows, prepare
    from bayescal.data import prepare_data

    rng = np.random.default_rng(3)
    s = np.round(rng.beta(2, 3, 150), 2)  # a lattice: many ties
    s[:5], s[5:8] = 0.0, 1.0  # atoms at the ends
    y = (rng.random(s.size) < s).astype(int)
    y[0], y[6] = 1, 0
    w = (rng.integers(0, 3, s.size) + 2 * y).astype(float)
    rep = np.repeat(np.arange(s.size), w.astype(int))
    options = dict(atom_threshold=0.01, atom_min_count=5, compress_above=2048, n_bins=1024)
    a = prepare(prepare_data(s, y, w), **options)
    b = prepare(prepare_data(s[rep], y[rep]), **options)
    np.testing.assert_array_equal(a.atoms_t, b.atoms_t)
    np.testing.assert_array_equal(a.atom_counts, b.atom_counts)
    for c in (0, 1):
        np.testing.assert_array_equal(a.xs[c], b.xs[c])
        np.testing.assert_array_equal(a.cs[c], b.cs[c])
    data = prepare_data(s, y, w + 0.5)
    split = frequency_rows(data)
    assert split.n == int(np.maximum(np.floor(w + 0.5), 1).sum())
    np.testing.assert_allclose(np.bincount(split.y, weights=split.w), np.bincount(data.y, weights=data.w))
    assert data.w.max() == w.max() + 0.5  # the input is not modified


def test_zero_weight_tied_rows_are_dropped_not_spread_into_nan():
    """Tied rows whose weights are all 0 carry no data: the DPM fits without them (they once
    gave NaN positions and a refusal from the sampler)."""
    from bayescal import make_calibrator

    s = np.array([0.1, 0.1, 0.2, 0.3, 0.3, 0.4, 0.5, 0.6, 0.7, 0.7])
    y = np.array([0, 0, 0, 1, 0, 1, 0, 1, 1, 1])
    w = np.array([0.0, 0, 1, 1, 1, 1, 1, 1, 1, 1])
    a = make_calibrator("dpm", random_state=0, draws=200).fit(s, y, w)
    b = make_calibrator("dpm", random_state=0, draws=200).fit(s[2:], y[2:])
    np.testing.assert_array_equal(a.predict_proba(s), b.predict_proba(s))


def test_tied_rows_of_zero_weight_stay_where_they_are():
    """A (value, class) group of tied rows whose weights are all 0 has no weight to share out: its
    rows keep their value (instead of becoming NaN with a warning), the other groups spread as usual."""
    t = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.3])
    y = np.array([0, 0, 1, 1, 0, 1])
    w = np.array([0.0, 0.0, 1.0, 2.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = spread_ties(t, y, w)
    np.testing.assert_array_equal(out[:2], [0.1, 0.1])
    np.testing.assert_array_equal(out[2:], spread_ties(t, y, np.r_[1.0, 1.0, w[2:]])[2:])


def test_tied_probabilities_near_an_end_stay_inside_the_unit_interval():
    """Three tied rows at 0.99999, the next score 0.9969, and exact 1s (an atom): the mirrored
    end cell reached past 1, so a row was clipped onto the working-scale value of the atom at 1
    (t = 27.63) and stretched the grid to the clip. The end cell now stops halfway to the bound."""
    from bayescal.bayesian.preparation import prepare
    from bayescal.data import prepare_data

    rng = np.random.default_rng(0)
    y = (rng.random(600) < 0.5).astype(int)
    s = np.where(y == 1, rng.beta(4, 2, 600), rng.beta(2, 4, 600))
    s = np.minimum(s, 0.99)
    ones = np.flatnonzero(y == 1)
    s[ones[:3]], s[ones[3:13]] = 0.99999, 1.0
    for low_end in (False, True):
        scores = 1.0 - s if low_end else s
        prepared = prepare(
            prepare_data(scores, y), atom_threshold=0.01, atom_min_count=5, compress_above=2048, n_bins=512
        )
        assert prepared.atoms_t.size == 1
        points = np.concatenate(prepared.xs)
        atom = prepared.atoms_t[0]
        assert np.all(points > atom) if low_end else np.all(points < atom)
        # the tied rows stay between their neighbour below and the bound, away from the clip
        assert np.max(np.abs(points)) < np.abs(np.log(0.99999 / 0.00001)) + 1.0
    t = np.array([0.5, 0.99, 0.99, 0.99])
    spread = spread_ties(t, np.zeros(4, int), np.ones(4), bounds=(0.0, 1.0))
    assert spread.max() < 1.0 and spread[1:].min() >= 0.745
