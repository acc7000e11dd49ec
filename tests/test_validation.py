"""Input handling shared by every entry point: accepted forms and every bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayescal._validation import check_labels, check_sample_weight, check_scores
from bayescal.baselines.platt import PlattScaling
from bayescal.data import PROB_EPS, ScoreSummary, from_working, prepare_data, to_working

rng = np.random.default_rng(7)
S = rng.random(60)
Y = (rng.random(60) < S).astype(int)
Y[:2] = [0, 1]


@pytest.mark.parametrize(
    "scores",
    [S.tolist(), S, pd.Series(S), S.reshape(-1, 1), pd.DataFrame({"s": S})],
    ids=["list", "numpy", "series", "column", "dataframe"],
)
def test_accepted_score_forms_give_the_same_fit(scores):
    ref = PlattScaling().fit(S, Y).predict_proba(S)
    np.testing.assert_allclose(PlattScaling().fit(scores, Y).predict_proba(scores), ref)


@pytest.mark.parametrize(
    "labels, pos_label",
    [
        (Y.astype(bool), None),
        (np.where(Y == 1, 1, -1), None),
        (np.where(Y == 1, "pos", "neg"), "pos"),
        (np.where(Y == 1, 7, 3), 7),
        (pd.Series(Y), None),
    ],
    ids=["bool", "minus-one", "strings", "ints-pos-label", "series"],
)
def test_accepted_label_forms(labels, pos_label):
    ref = PlattScaling().fit(S, Y).predict_proba(S)
    est = PlattScaling().fit(S, labels, pos_label=pos_label)
    np.testing.assert_allclose(est.predict_proba(S), ref)
    assert est.classes_[1] == (pos_label if pos_label is not None else np.unique(labels)[-1])


BAD_FIT_INPUTS = [
    # (scores, labels, weights, kwargs, message fragment)
    (np.r_[S[:-1], np.nan], Y, None, {}, "NaN"),
    (np.r_[S[:-1], np.inf], Y, None, {}, "infinite"),
    (np.r_[S[:-1], 1.5], Y, None, {}, r"outside \[0, 1\].*score_kind='decision'"),
    (np.r_[S[:-1], -0.1], Y, None, {}, r"outside \[0, 1\]"),
    (S, np.r_[Y[:-1], 2], None, {}, "Only binary classification is supported"),
    (S, np.linspace(0, 1, 60), None, {}, "continuous"),
    (S, np.zeros(60, int), None, {}, "single class"),
    (S[:1], Y[:1], None, {}, "single class|at least"),
    (S[:-1], Y, None, {}, "Mismatched lengths"),
    (S, Y, -np.ones(60), {}, "negative"),
    (S, Y, np.r_[np.ones(59), np.nan], {}, "sample_weight has NaN"),
    (S, Y, np.zeros(60), {}, "sums to zero"),
    (S, Y, np.ones(59), {}, "sample_weight has 59 values"),
    (np.c_[S, S], Y, None, {}, r"shape \(60, 2\).*proba\[:, 1\]"),
    (np.array(["a"] * 60), Y, None, {}, "non-numeric"),
    (np.array([object()] * 60), Y, None, {}, "non-numeric"),
    (S + 0j, Y, None, {}, "complex"),
    (np.array([]), np.array([]), None, {}, "empty"),
    (S, np.where(Y == 1, "a", "b"), None, {"pos_label": "c"}, "pos_label='c' is not one of"),
    (S, np.r_[Y[:-1].astype(float), np.nan], None, {}, "y has NaN"),
    (S, None, None, {}, "requires y"),
]


@pytest.mark.parametrize("scores, labels, weights, kwargs, message", BAD_FIT_INPUTS)
def test_bad_fit_input_raises_clear_error_and_leaves_input_alone(scores, labels, weights, kwargs, message):
    copies = [None if a is None else np.array(a, copy=True) for a in (scores, labels, weights)]
    with pytest.raises(ValueError, match=message):
        PlattScaling().fit(scores, labels, weights, **kwargs)
    for before, after in zip(copies, (scores, labels, weights)):
        if before is not None:
            np.testing.assert_array_equal(before, after)


def test_too_few_samples_names_the_method():
    class NeedsTen(PlattScaling):
        _min_samples = 10

    with pytest.raises(ValueError, match="NeedsTen needs at least 10 samples but got 4"):
        NeedsTen().fit([0.1, 0.2, 0.7, 0.8], [0, 1, 0, 1])


def test_predict_rejects_bad_scores_too():
    est = PlattScaling().fit(S, Y)
    with pytest.raises(ValueError, match="NaN"):
        est.predict_proba([0.2, np.nan])
    with pytest.raises(ValueError, match="outside"):
        est.predict_proba([0.2, 2.0])
    with pytest.raises(ValueError, match="threshold"):
        est.predict(S, threshold=1.5)
    with pytest.raises(ValueError, match="uses scores only"):
        est.predict_proba(S, X=np.ones((60, 2)))


def test_score_kind_is_checked():
    with pytest.raises(ValueError, match="score_kind='logits' is not one of"):
        PlattScaling(score_kind="logits").fit(S, Y)


def test_exact_zero_and_one_are_finite_on_the_working_scale():
    t = to_working(np.array([0.0, 0.5, 1.0]), "probability")
    assert np.all(np.isfinite(t))
    np.testing.assert_allclose(from_working(t, "probability"), [PROB_EPS, 0.5, 1 - PROB_EPS])
    est = PlattScaling().fit(np.r_[S, 0.0, 1.0], np.r_[Y, 0, 1])
    assert np.all(np.isfinite(est.predict_proba([0.0, 1.0])))


def test_working_scale_of_many_rows_is_computed_in_halves_with_the_same_result(monkeypatch):
    """Above ``THREADED_ROWS`` rows the logit runs on the two halves in two threads: the same
    values as one pass, and the caller's scores untouched."""
    from scipy.special import logit

    from bayescal import data as data_module

    s = np.r_[0.0, np.random.default_rng(0).random(1001), 1.0]
    kept = s.copy()
    monkeypatch.setattr(data_module, "THREADED_ROWS", 100)
    np.testing.assert_array_equal(to_working(s, "probability"), logit(np.clip(s, PROB_EPS, 1 - PROB_EPS)))
    np.testing.assert_array_equal(s, kept)


def test_decision_scores_are_used_as_given():
    d = rng.normal(size=60) * 3
    data = prepare_data(d, Y, score_kind="decision")
    np.testing.assert_array_equal(data.t, d)


def test_label_and_weight_helpers_directly():
    y01, classes = check_labels([True, False, True])
    assert y01.tolist() == [1, 0, 1] and classes.tolist() == [False, True]
    with pytest.raises(ValueError, match="Only binary"):
        check_labels(["a", "b", "c"])
    np.testing.assert_array_equal(check_sample_weight(None, 3), np.ones(3))
    with pytest.raises(ValueError, match="scalar"):
        check_scores(0.3)


def test_score_summary_matches_the_raw_data_and_merges():
    scores = rng.random(5000)
    y = (rng.random(5000) < scores).astype(int)
    scores[:10] = 0.0
    whole = ScoreSummary.from_arrays(scores, y, n_bins=64, lo=-10, hi=10)
    halves = ScoreSummary.from_arrays(scores[:2500], y[:2500], n_bins=64, lo=-10, hi=10) + ScoreSummary.from_arrays(
        scores[2500:], y[2500:], n_bins=64, lo=-10, hi=10
    )
    np.testing.assert_allclose(whole.counts, halves.counts)
    np.testing.assert_allclose(whole.total, [np.sum(y == 0), np.sum(y == 1)])
    assert whole.atom_counts.sum() == 10
    with pytest.raises(ValueError, match="different grids"):
        whole + ScoreSummary.from_arrays(scores, y, n_bins=32, lo=-10, hi=10)
    # a weighted calibrator fitted on the summary agrees with the raw fit
    raw = PlattScaling().fit(scores, y).predict_proba([0.2, 0.5, 0.8])
    summ = PlattScaling().fit(whole).predict_proba([0.2, 0.5, 0.8])
    np.testing.assert_allclose(summ, raw, atol=5e-3)
