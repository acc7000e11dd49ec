"""MBCT, the feature-aware calibrator: quality against isotonic and histogram binning,
exact leaf factors, aggregation, weights, unseen values, persistence and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from sklearn.metrics import roc_auc_score

import bayescal
from bayescal.baselines import mbct as mbct_module
from bayescal.baselines.mbct import MBCT
from bayescal.data import to_working
from bayescal.metrics import mvce


def simulate(n: int, seed: int, slope: str):
    """Base scores that ignore a binary segment, three noise features, and the truth.

    ``slope="segment"``: the true logit is 0.5 z in segment 0 (the score is over-confident)
    and 2 z in segment 1 (under-confident); otherwise the same slope everywhere, so the
    features carry no information.
    """
    rng = np.random.default_rng(seed)
    z = rng.normal(-1.0, 1.5, n)
    segment = rng.integers(0, 2, n)
    noise = rng.integers(0, 4, (n, 3))
    a = np.where(segment == 0, 0.5, 2.0) if slope == "segment" else float(slope)
    p_true = expit(a * z)
    y = (rng.random(n) < p_true).astype(int)
    return expit(z), y, np.column_stack([segment, noise]), p_true


def fine_mvce(y, p):
    """MVCE with bins of 50 rows, so that errors of single segments are not averaged away."""
    return mvce(y, p, n_bins=y.size // 50, n_shuffles=20, p=2, random_state=0)


@pytest.mark.parametrize("seed", [0, 1])
def test_feature_dependent_miscalibration_beats_score_only_calibrators(seed):
    s, y, X, _ = simulate(60_000, 10 + seed, "segment")
    s_new, y_new, X_new, p_true = simulate(40_000, 100 + seed, "segment")
    p = MBCT(random_state=seed).fit(s, y, X=X).predict_proba(s_new, X=X_new)[:, 1]
    iso = bayescal.make_calibrator("isotonic").fit(s, y).predict_proba(s_new)[:, 1]
    for other in (s_new, iso):
        assert fine_mvce(y_new, p) < fine_mvce(y_new, other) - 1e-3
        assert roc_auc_score(y_new, p) > roc_auc_score(y_new, other) + 0.02
    # much closer to the truth than isotonic regression, the best monotone map of the score
    assert np.mean(np.abs(p - p_true)) < 0.5 * np.mean(np.abs(iso - p_true))


@pytest.mark.parametrize("slope", ["0.5", "2.0"])
def test_without_informative_features_no_worse_than_histogram_binning(slope):
    s, y, X, _ = simulate(60_000, 3, slope)
    s_new, y_new, X_new, _ = simulate(40_000, 4, slope)
    est = MBCT(random_state=0).fit(s, y, X=X)
    p = est.predict_proba(s_new, X=X_new)[:, 1]
    hist = bayescal.make_calibrator("histogram").fit(s, y).predict_proba(s_new)[:, 1]
    assert fine_mvce(y_new, p) <= 1.005 * fine_mvce(y_new, hist)
    assert fine_mvce(y_new, p) < 0.8 * fine_mvce(y_new, s_new)  # it did calibrate
    assert roc_auc_score(y_new, p) >= roc_auc_score(y_new, hist) - 0.002
    # the significance margin keeps most splits off the noise features (columns 0-3)
    used = est.node_feature_[est.node_feature_ >= 0]
    assert np.mean(used == X.shape[1]) > 0.5


def test_leaf_factors_are_label_sum_over_prediction_sum():
    rng = np.random.default_rng(5)
    n = 4000
    seg = rng.integers(0, 2, n)
    s = rng.uniform(0.05, 0.6, n)
    y = (rng.random(n) < np.where(seg == 1, 1.5 * s, 0.5 * s)).astype(int)
    w = rng.uniform(0.5, 2.0, n)
    est = MBCT(n_estimators=1, max_depth=1, n_score_bins=1, random_state=0).fit(s, y, w, X=seg)
    assert est.node_feature_[0] == 0  # the split is on the segment
    p = est.predict_proba(s, X=seg)[:, 1]
    for g in (0, 1):
        m = seg == g
        k = np.sum(w[m] * y[m]) / np.sum(w[m] * s[m])
        np.testing.assert_allclose(p[m], np.clip(k * s[m], 0, 1), rtol=1e-12)
    # a segment never seen in fit stops at the root: the global factor
    k_root = np.sum(w * y) / np.sum(w * s)
    np.testing.assert_allclose(est.predict_proba([0.3], X=[[7]])[:, 1], 0.3 * k_root, rtol=1e-12)


def test_root_only_is_a_global_rescale_and_outputs_are_clipped():
    rng = np.random.default_rng(6)
    s = rng.uniform(0.01, 0.9, 500)
    y = (rng.random(500) < np.minimum(1.0, 2.0 * s)).astype(int)
    est = MBCT(max_depth=0, random_state=0).fit(s, y, X=np.zeros((500, 1)))
    assert est.tree_roots_.size == 1
    k = y.sum() / s.sum()
    assert k > 1.3
    p = est.predict_proba(s, X=np.zeros((500, 1)))[:, 1]
    np.testing.assert_allclose(p, np.minimum(k * s, 1.0), rtol=1e-12)
    assert p.max() == 1.0 and np.all(np.isfinite(p))


def test_integer_weights_are_split_as_repeated_rows():
    """A row of weight k is k rows also in the training/validation split: a binomial share of
    its units is validation, each unit counts once in the validation variance, and a row of
    weight 1 is split as before. Split whole, rows of weight 5 grew trees of 19 nodes (mean of
    8 seeds) against 55 for the same rows repeated 5 times: the split test saw a fifth of the
    evidence."""
    u = np.array([0.1, 0.5, 0.2, 0.9, 0.1, 0.9])
    w = np.array([1.0, 1.0, 1000.0, 1000.0, 2.5, 2.5])
    parts = mbct_module._split_weights(w, u, 0.3)
    (wt, sq_t), (wv, sq_v) = parts["t"], parts["v"]
    np.testing.assert_array_equal(wv[[0, 1, 4, 5]], [1.0, 0.0, 2.5, 0.0])  # weight 1 and 2.5: whole rows
    np.testing.assert_array_equal(wt + wv, w)
    assert (
        300 < wv[2] < 325 and 275 < wv[3] < 300
    )  # inversion: u = 0.2, 0.9 -> quantiles 0.8, 0.1 of Binomial(1000, 0.3)
    np.testing.assert_array_equal(sq_v[[2, 3]], wv[[2, 3]])  # one squared unit weight per unit row
    np.testing.assert_array_equal(sq_v[[0, 4]], [1.0, 6.25])
    np.testing.assert_array_equal(sq_t[[1, 5]], [1.0, 6.25])
    many = mbct_module._split_weights(np.full(20_000, 10.0), np.random.default_rng(0).random(20_000), 0.3)
    v = many["v"][0]
    assert abs(v.mean() - 3.0) < 0.05 and abs(v.var() - 10 * 0.3 * 0.7) < 0.15  # Binomial(10, 0.3) per row

    s, y, X, _ = simulate(2000, 7, "segment")
    weighted, repeated = [], []
    for seed in range(4):
        weighted.append(MBCT(random_state=seed).fit(s, y, np.full(s.size, 5.0), X=X).node_feature_.size)
        rows = MBCT(random_state=seed).fit(np.repeat(s, 5), np.repeat(y, 5), X=np.repeat(X, 5, axis=0))
        repeated.append(rows.node_feature_.size)
    assert abs(np.mean(weighted) - np.mean(repeated)) < 0.3 * np.mean(repeated), (weighted, repeated)


def test_rows_of_zero_weight_are_rows_left_out():
    """Rows of weight 0 (held out by a fold, say) change no bin edge, no column's kind and no
    tree: the weighted quantiles that place the edges of the scores and of a continuous feature
    counted them as points (one such row moved an edge from 0.075 to 0.076)."""
    s, y, X, _ = simulate(6000, 12, "segment")
    rng = np.random.default_rng(0)
    X = np.column_stack([X, rng.normal(size=s.size)])  # a continuous noise feature
    m = 300
    s_out = rng.uniform(0.001, 0.999, m)
    X_out = np.column_stack([rng.integers(0, 2, m), rng.integers(4, 40, (m, 3)), 5.0 + rng.normal(size=m)])
    s2, X2 = np.concatenate([s, s_out]), np.concatenate([X, X_out])
    y2 = np.concatenate([y, rng.integers(0, 2, m)])
    w2 = np.concatenate([np.ones(s.size), np.zeros(m)])
    base = MBCT(random_state=5).fit(s, y, X=X)
    padded = MBCT(random_state=5).fit(s2, y2, w2, X=X2)
    np.testing.assert_array_equal(padded.score_edges_, base.score_edges_)
    np.testing.assert_allclose(padded.predict_proba(s, X=X), base.predict_proba(s, X=X), rtol=1e-12, atol=1e-12)


def test_decision_values_are_read_through_the_logistic():
    s, y, X, _ = simulate(6000, 16, "segment")
    t = np.log(s / (1 - s))
    prob = MBCT(random_state=2).fit(s, y, X=X).predict_proba(s, X=X)
    dec = MBCT(score_kind="decision", random_state=2).fit(t, y, X=X).predict_proba(t, X=X)
    np.testing.assert_allclose(dec, prob, rtol=1e-9, atol=1e-12)


def test_deterministic_and_inputs_untouched():
    s, y, X, _ = simulate(6000, 8, "segment")
    copies = s.copy(), y.copy(), X.copy()
    a = MBCT(random_state=11).fit(s, y, X=X).predict_proba(s, X=X)
    b = MBCT(random_state=11).fit(s, y, X=X).predict_proba(s, X=X)
    np.testing.assert_array_equal(a, b)
    for orig, copy in zip((s, y, X), copies):
        np.testing.assert_array_equal(orig, copy)


def test_aggregation_counts_combinations_and_key_fallback_agrees(monkeypatch):
    s, y, X, _ = simulate(5000, 9, "segment")
    est = MBCT(random_state=0).fit(s, y, X=X)
    bins = np.searchsorted(est.score_edges_, np.log(s / (1 - s)), side="right")
    assert est.n_combinations_ == np.unique(np.column_stack([X, bins]), axis=0).shape[0]
    p = est.predict_proba(s, X=X)
    monkeypatch.setattr(mbct_module, "_MAX_KEY", 1)  # force numpy.unique(axis=0)
    slow = MBCT(random_state=0).fit(s, y, X=X)
    np.testing.assert_array_equal(slow.node_feature_, est.node_feature_)
    np.testing.assert_allclose(slow.predict_proba(s, X=X), p, rtol=1e-12)


def test_mixed_string_and_continuous_features():
    import pandas as pd

    rng = np.random.default_rng(12)
    n = 20_000
    s = expit(rng.normal(-0.5, 1.2, n))
    region = rng.choice(["north", "south", "east"], n)
    age = rng.uniform(18, 80, n)
    k = np.where(region == "south", 1.4, 0.8) * np.where(age > 50, 1.2, 0.9)
    y = (rng.random(n) < np.minimum(k * s, 1)).astype(int)
    X = pd.DataFrame({"region": region, "age": age})
    est = MBCT(random_state=0).fit(s, y, X=X)
    assert est.feature_kinds_ == ["categorical", "continuous"]
    assert list(est.feature_levels_[0]) == ["east", "north", "south"]
    assert est.feature_edges_[1].size == est.n_feature_bins - 1
    used = set(est.node_feature_[est.node_feature_ >= 0].tolist())
    assert {0, 1} <= used
    p = est.predict_proba(s, X=X)[:, 1]
    assert np.mean(np.abs(p - np.minimum(k * s, 1))) < 0.5 * np.mean(np.abs(s - np.minimum(k * s, 1)))
    # an unseen region and an age beyond the training range still give valid probabilities
    new = pd.DataFrame({"region": ["west", "south"], "age": [120.0, -5.0]})
    q = est.predict_proba([0.3, 0.3], X=new)[:, 1]
    assert np.all((q >= 0) & (q <= 1))


def test_text_that_reads_as_numbers_is_categorical():
    # "1", "01" and "001" are three levels (codes, zip codes), not the number 1
    rng = np.random.default_rng(0)
    s = rng.uniform(0.05, 0.95, 6000)
    code = rng.choice(["1", "01", "001"], 6000)
    factor = np.where(code == "1", 1.6, np.where(code == "01", 0.5, 1.0))
    y = (rng.random(6000) < np.clip(s * factor, 0, 1)).astype(int)
    est = MBCT(random_state=0, min_samples_leaf=50).fit(s, y, X=code)
    assert est.feature_kinds_ == ["categorical"] and list(est.feature_levels_[0]) == ["001", "01", "1"]
    p = est.predict_proba(np.full(3, 0.5), X=np.array([["1"], ["01"], ["zz"]]))[:, 1]  # "zz": the unseen level
    assert p[0] > p[1] + 0.2 and np.all((p >= 0) & (p <= 1))


def test_frame_columns_are_checked_by_name_at_prediction(tmp_path):
    # features are matched by position: the same columns in another order moved predictions by
    # up to 0.47 without a word
    import pandas as pd

    rng = np.random.default_rng(1)
    n = 3000
    s = rng.uniform(0.05, 0.95, n)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    y = (rng.random(n) < np.clip(s * (1 + 0.5 * np.sign(X["a"])), 0, 1)).astype(int)
    est = MBCT(random_state=0).fit(s, y, X=X)
    assert est.feature_names_x_.tolist() == ["a", "b"]
    with pytest.raises(ValueError, match=r"columns \['b', 'a'\] but MBCT was fitted on \['a', 'b'\]"):
        est.predict_proba(s, X=X[["b", "a"]])
    np.testing.assert_array_equal(est.predict_proba(s, X=X.to_numpy()), est.predict_proba(s, X=X))
    est.save(tmp_path / "m.nc")
    assert bayescal.load(tmp_path / "m.nc").feature_names_x_.tolist() == ["a", "b"]
    assert not hasattr(est.fit(s, y, X=X.to_numpy()), "feature_names_x_")  # a refit on an array forgets them


def test_random_bin_criterion_also_finds_the_segment():
    s, y, X, _ = simulate(60_000, 13, "segment")
    est = MBCT(mvce_bins=2048, mvce_shuffles=4, random_state=0).fit(s, y, X=X)
    assert 0 in est.node_feature_
    again = MBCT(mvce_bins=2048, mvce_shuffles=4, random_state=0).fit(s, y, X=X)
    np.testing.assert_array_equal(again.node_factor_, est.node_factor_)


def test_save_load_round_trip(tmp_path):
    import pandas as pd

    s, y, X, _ = simulate(5000, 14, "segment")
    frame = pd.DataFrame({"segment": X[:, 0].astype(str), "noise": X[:, 1], "age": np.linspace(0, 1, s.size)})
    est = MBCT(random_state=0).fit(s, y, X=frame)
    assert est.feature_kinds_ == ["categorical", "categorical", "continuous"]
    est.save(tmp_path / "mbct.nc")
    loaded = bayescal.load(tmp_path / "mbct.nc")
    assert loaded.feature_kinds_ == est.feature_kinds_
    np.testing.assert_array_equal(loaded.predict_proba(s, X=frame), est.predict_proba(s, X=frame))


def test_bad_inputs():
    s, y, X, _ = simulate(1000, 15, "segment")
    with pytest.raises(ValueError, match="X is None"):
        MBCT().fit(s, y)
    est = MBCT(random_state=0).fit(s, y, X=X)
    with pytest.raises(ValueError, match="X is None"):
        est.predict_proba(s)
    with pytest.raises(ValueError, match="X has 999 rows"):
        est.predict_proba(s, X=X[:-1])
    with pytest.raises(ValueError, match="X has 3 columns but MBCT was fitted with 4"):
        est.predict_proba(s, X=X[:, :3])
    Xn = X.astype(float)
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MBCT().fit(s, y, X=Xn)
    with pytest.raises(ValueError, match="NaN"):
        est.predict_proba(s, X=Xn)
    cont = MBCT(random_state=0).fit(s, y, X=s[:, None] * 10)
    with pytest.raises(ValueError, match="X column 0 was numeric in fit"):
        cont.predict_proba(s[:2], X=np.array([["a"], ["b"]], dtype=object))
    with pytest.raises(ValueError, match="no 1-D calibration map"):
        est.calibration_map()
    for bad in (
        {"n_estimators": 0},
        {"max_depth": -1},
        {"mvce_bins": 0},
        {"n_feature_bins": 1.5},
        {"validation_fraction": 1.0},
        {"min_samples_leaf": "5"},
        {"min_gain_z": -1.0},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            MBCT(**bad).fit(s, y, X=X)


def _with_exact_extremes(n: int, seed: int):
    """Scores Beta(2, 2) with truth s^2, and 5 % of the rows an exact 0 (truth 0) or 1 (truth 1),
    as vote-share classifiers give."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n, 1)).astype(float)
    s = rng.beta(2, 2, n)
    extreme = rng.random(n) < 0.05
    s[extreme] = rng.integers(0, 2, extreme.sum()).astype(float)
    truth = s**2
    y = (rng.random(n) < truth).astype(int)
    return s, y, X, truth, extreme


def test_exact_zero_and_one_scores_fall_in_the_end_bins_and_keep_the_resolution():
    """The score bins span the scores strictly inside (0, 1): exact 0 and 1 (at the working scale's
    clip, +-27.6) stretched them so that the other scores used 6 of the 20 bins, and the map on them
    was nearly twice as far from the truth."""
    s, y, X, truth, extreme = _with_exact_extremes(20_000, 0)
    est = MBCT(random_state=0).fit(s, y, X=X)
    score_bin = np.searchsorted(est.score_edges_, to_working(s, "probability"), side="right")
    assert np.unique(score_bin[~extreme]).size == est.n_score_bins
    np.testing.assert_array_equal(score_bin[extreme], np.where(s[extreme] == 0, 0, est.n_score_bins - 1))
    p = est.predict_proba(s, X=X)[:, 1]
    assert np.mean(np.abs(p - truth)[~extreme]) < 0.025
