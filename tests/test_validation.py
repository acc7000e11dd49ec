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
    (np.array(["a"] * 60), Y, None, {}, "text, dates or time spans"),
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


def test_summaries_on_nearby_grids_do_not_add():
    """Decision values near 1e4: a grid shifted by 9 bins is within any relative tolerance of the
    scores, yet adding its counts would put 500 rows in the wrong bins."""
    s = 1e4 + rng.normal(size=2000)
    y = (rng.random(2000) < 0.5).astype(int)
    a = ScoreSummary.from_arrays(s[:1000], y[:1000], score_kind="decision", lo=1e4 - 5, hi=1e4 + 5)
    b = ScoreSummary.from_arrays(s[1000:], y[1000:], score_kind="decision", lo=1e4 - 5 + 0.09, hi=1e4 + 5 + 0.09)
    with pytest.raises(ValueError, match="different grids: build them with the same n_bins, lo and hi"):
        a + b
    same_grid = ScoreSummary.from_arrays(s[1000:], y[1000:], score_kind="decision", lo=1e4 - 5, hi=1e4 + 5)
    whole = ScoreSummary.from_arrays(s, y, score_kind="decision", lo=1e4 - 5, hi=1e4 + 5)
    np.testing.assert_array_equal((a + same_grid).counts, whole.counts)


def test_sum_of_a_list_of_summaries_adds_them():
    scores = rng.random(3000)
    y = (rng.random(3000) < scores).astype(int)
    shards = [ScoreSummary.from_arrays(scores[i::3], y[i::3], n_bins=64, lo=-10, hi=10) for i in range(3)]
    total = sum(shards)
    np.testing.assert_array_equal(total.counts, (shards[0] + shards[1] + shards[2]).counts)
    np.testing.assert_array_equal(total.total, [np.sum(y == 0), np.sum(y == 1)])
    with pytest.raises(TypeError):
        shards[0] + 1


@pytest.mark.parametrize(
    "labels, pos_label",
    [
        (None, None),
        ("bool", None),
        ("minus-one", None),
        ("strings", "yes"),
        ("ints-pos-label", 7),
    ],
    ids=["zero-one", "bool", "minus-one", "strings", "ints-pos-label"],
)
def test_a_shard_of_one_class_is_summarised_and_adds_to_the_others(labels, pos_label):
    """Rare positives: the first shard holds none. It is summarised (the positive label known from
    pos_label or the labels' kind), adds to the other shards' summaries to that of the whole, and
    fitting on it alone asks for both classes."""
    scores = rng.random(600)
    y = (rng.random(600) < 0.03).astype(int)
    y[:300] = 0
    y[350] = 1
    coded = {
        None: y,
        "bool": y.astype(bool),
        "minus-one": np.where(y == 1, 1, -1),
        "strings": np.where(y == 1, "yes", "no"),
        "ints-pos-label": np.where(y == 1, 7, 3),
    }[labels]
    grid = dict(n_bins=512, lo=-30, hi=30, pos_label=pos_label)
    whole = ScoreSummary.from_arrays(scores, coded, **grid)
    negatives_only = ScoreSummary.from_arrays(scores[:300], coded[:300], **grid)
    merged = negatives_only + ScoreSummary.from_arrays(scores[300:], coded[300:], **grid)
    np.testing.assert_array_equal(merged.counts, whole.counts)
    np.testing.assert_array_equal(merged.atom_counts, whole.atom_counts)
    assert merged.classes.tolist() == whole.classes.tolist()
    da = pytest.importorskip("dask.array")  # a shard in chunks is summarised as in memory
    assert negatives_only == ScoreSummary.from_arrays(
        da.from_array(scores[:300], chunks=70), da.from_array(coded[:300], chunks=70), **grid
    )
    with pytest.raises(ValueError, match="single class: calibration needs samples of both classes"):
        PlattScaling().fit(negatives_only)
    # a shard whose positives are all held out by weight 0 is a shard of negatives as well
    w = (coded[300:] != whole.classes[1]).astype(float)
    held_out = ScoreSummary.from_arrays(scores[300:], coded[300:], w, **grid)
    assert held_out.total[1] == 0 and held_out.total[0] == np.sum(y[300:] == 0)


def test_a_shard_of_one_class_whose_other_label_is_unknown_is_refused():
    scores = rng.random(20)
    with pytest.raises(ValueError, match=r"only the positive class \(1\).*booleans"):
        ScoreSummary.from_arrays(scores, np.ones(20, dtype=int), n_bins=16, lo=-30, hi=30)
    with pytest.raises(ValueError, match=r"single class \('no'\).*pass pos_label="):
        ScoreSummary.from_arrays(scores, np.full(20, "no"), n_bins=16, lo=-30, hi=30)
    with pytest.raises(ValueError, match="single class"):  # fitting still needs both classes
        PlattScaling().fit(scores, np.zeros(20, dtype=int))


def test_decision_scores_too_large_to_bin_around_name_the_scores():
    with pytest.raises(ValueError, match=r"scores all equal 1e\+17 .* Centre the decision values") as info:
        ScoreSummary.from_arrays(np.full(50, 1e17), np.arange(50) % 2, score_kind="decision")
    assert "lo=" not in str(info.value)


def test_text_labels_from_pandas_give_the_same_messages_and_diagnostics_as_from_numpy():
    """A pandas Series of strings makes classes_ an object array; its values are str, not numpy
    scalars, and the one-class and zero-weight messages and the diagnostics raised AttributeError."""
    from bayescal import diagnostics

    s4 = np.array([0.1, 0.4, 0.6, 0.9])
    with pytest.raises(ValueError, match=r"y has a single class \('ham'\)"):
        PlattScaling().fit(s4, pd.Series(["ham"] * 4))
    with pytest.raises(ValueError, match=r"positive class \('spam'\) zero total weight"):
        PlattScaling().fit(s4, pd.Series(["ham", "spam", "ham", "spam"]), sample_weight=[1, 0, 1, 0])
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1, 300)
    y = pd.Series(np.where(rng.random(300) < s, "spam", "ham"))
    cal = PlattScaling().fit(s, y)
    assert cal.classes_.tolist() == ["ham", "spam"]
    assert "ece" in diagnostics.ppc_calibration(cal, s, y, random_state=0).statistic.values


@pytest.mark.parametrize(
    "scores",
    [["0.2", "0.7"], np.array(["2020-01-01", "2021-01-01"], dtype="datetime64[D]"),
     np.array([1, 2], dtype="timedelta64[s]"), np.array(["0.2", 0.7], dtype=object)],
)  # fmt: skip
def test_text_and_dates_are_not_read_as_scores(scores):
    """float() reads "0.2" as a number and a date as a day count: both fitted silently."""
    with pytest.raises(ValueError, match="scores has non-numeric values, text, dates or time spans"):
        check_scores(scores)


def test_numbers_beyond_the_float_range_and_numpy_booleans_are_named():
    from bayescal._validation import check_number

    with pytest.raises(ValueError, match="scores has values too large for a float"):
        check_scores([10**400, 1])
    with pytest.raises(ValueError, match="threshold must be finite"):
        check_number(10**400, "threshold")
    with pytest.raises(ValueError, match="cost_fp=np.True_ must be a real number"):
        check_number(np.True_, "cost_fp")


def test_missing_dates_as_labels_are_refused():
    """NaT != NaT, so NaT was a class of its own whose rows were read as negatives."""
    y = np.array(["2020-01-01", "NaT", "2020-01-01"], dtype="datetime64[D]")
    with pytest.raises(ValueError, match=r"y has 1 missing value\(s\) \(NaT; first at index 1\)"):
        check_labels(y)


def test_row_messages_keep_braces_in_the_names_of_the_inputs():
    """A column named with braces is quoted as it is (the messages are templates for the row)."""
    from bayescal._validation import check_labels_present

    with pytest.raises(ValueError, match=r"^column 'a\{b\}' has 1 NaN value\(s\) \(first at index 1\)"):
        check_scores([0.1, np.nan], score_kind="probability", name="column 'a{b}'")
    with pytest.raises(ValueError, match=r"^column 'x\}' has NaN or infinite values \(1, first at index 1\)"):
        check_labels_present(np.array([1.0, np.nan]), "column 'x}'")
